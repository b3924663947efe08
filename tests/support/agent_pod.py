"""An agent's container, as the kubelet would start it, on this machine: its rendered ConfigMap mounted the way
the kubelet's atomic writer lays a ConfigMap volume out, and its rendered command pointed at that mount.

The atomic writer (kubernetes pkg/volume/util/atomic_writer.go, `AtomicWriter.Write`) puts the files in a
timestamped directory `..<time>`, points the symlink `..data` at it, and makes every key a symlink
`<key> -> ..data/<key>`. So the script the container names is a symlink, and what Python finds beside it (the
helpers it imports) is what the ConfigMap carries, nothing else: the checkout's `agents/` is not on the path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.kube import agent_script
from tests.support.rendered import find


def mount_configmap(configmap: Mapping[str, Any], dest: Path) -> Path:
    """`configmap`'s data under `dest` in the kubelet's layout; returns `dest` (the mount point)."""
    data = configmap.get("data") or {}
    assert data, f"ConfigMap {configmap['metadata']['name']} carries no files"
    dest.mkdir(parents=True, exist_ok=True)
    stamp = dest / "..2025_01_01_00_00_00.000000001"
    stamp.mkdir()
    for key, text in data.items():
        (stamp / key).write_text(text)
    (dest / "..data").symlink_to(stamp.name)
    for key in data:
        (dest / key).symlink_to(f"..data/{key}")
    return dest


def configmap_of(plan: Any, target: str, pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The rendered ConfigMap behind the pod's script volume (agent_script.VOLUME), in the pod's namespace."""
    (volume,) = [v for v in pod_spec["volumes"] if v["name"] == agent_script.VOLUME]
    return find(plan, target, "ConfigMap", volume["configMap"]["name"])


def command(container: Mapping[str, Any], mount: Path) -> list[str]:
    """The container's rendered command with the script mount moved to `mount` and `python3` being this
    interpreter. Fails unless the command runs a script from the mount the container really has."""
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    mount_path = mounts[agent_script.VOLUME]
    binary, *rest = container["command"]
    assert binary == "python3", container["command"]
    assert rest and rest[-1].startswith(mount_path + "/"), (rest, mount_path)
    return [sys.executable, *rest[:-1], str(mount) + rest[-1].removeprefix(mount_path)]


def env(container: Mapping[str, Any], **extra: str) -> dict[str, str]:
    """The container's literal env (PYTHONDONTWRITEBYTECODE ...) over this process's, without PYTHONPATH (so
    nothing but the mount can supply a helper), plus `extra`."""
    out = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out.update({e["name"]: e["value"] for e in container.get("env") or [] if "value" in e})
    out.update(extra)
    return out


def prepare(plan: Any, target: str, pod_spec: Mapping[str, Any], dest: Path, container: str | None = None
            ) -> tuple[list[str], dict[str, str]]:
    """Mount the pod's rendered script ConfigMap under `dest`; the command and env that start `container` (default:
    the first) from it. The caller adds or substitutes arguments, and runs it with `cwd` outside the checkout."""
    chosen = next(c for c in pod_spec["containers"] if container is None or c["name"] == container)
    mount = mount_configmap(configmap_of(plan, target, pod_spec), dest)
    return command(chosen, mount), env(chosen)
