"""The rendered etcd pod, ready for the netns harness: what the dev plan's StatefulSet runs, per container.

`rendered_etcd_pod(plan, workdir)` reads the `etcd` StatefulSet's pod template and gives the harness exactly
that: the `prepare` init container's args (with the etcd flags after `--`) and etcd's own args, the files of
the `pki` Secret volume at the paths its items name, and the `prepare` program as the ConfigMap holds it.
The only substitutions are the ones the harness records: container paths -> temp files, the container's
`python3` -> this interpreter (the pinned image's CPython 3.12 and any >= 3.11 run the stdlib-only agent)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.karmada.flags import PKI_DIR
from tests.integration.etcd_harness import InitStep
from tests.support.rendered import find, secret_files


@dataclass(frozen=True)
class RenderedPod:
    main_args: list[str]
    init: InitStep
    files: dict[str, bytes]
    path_map: dict[str, str]
    client_cert: bytes
    client_key: bytes
    """The karmada-apiserver's etcd client certificate (SAN-less, etcd CA): how the tests talk to members."""
    template: dict[str, Any]


def rendered_etcd_pod(plan: Any, workdir: Path) -> RenderedPod:
    sts = find(plan, "host", "StatefulSet", "etcd")
    spec = sts["spec"]["template"]["spec"]
    main = next(c for c in spec["containers"] if c["name"] == "etcd")
    (init,) = spec["initContainers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    pki = volumes["pki"]["secret"]
    secret = secret_files(find(plan, "host", "Secret", pki["secretName"]))
    files = {item["key"]: secret[item["key"]].encode() for item in pki["items"]}
    path_map = {f"{PKI_DIR}/{item['path']}": item["key"] for item in pki["items"]}
    script_mount = next(m for m in init["volumeMounts"] if m["name"] == "script")
    configmap = find(plan, "host", "ConfigMap", volumes["script"]["configMap"]["name"])
    command = list(init["command"])
    assert command[0] == "python3", command
    script = command[-1]
    assert script.startswith(script_mount["mountPath"] + "/"), script
    local = workdir / script.rsplit("/", 1)[1]
    local.write_text(configmap["data"][script.rsplit("/", 1)[1]])
    api = secret_files(find(plan, "host", "Secret", "karmada-apiserver-pki"))
    return RenderedPod(
        main_args=list(main["args"]), init=InitStep([sys.executable, *command[1:-1], str(local)], list(init["args"])),
        files=files, path_map=path_map, client_cert=api["apiserver-etcd-client.crt"].encode(),
        client_key=api["apiserver-etcd-client.key"].encode(), template=sts["spec"]["template"])
