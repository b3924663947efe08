"""Agent scripts: how a stdlib-only program from `agents/` runs in a pod.

The file is the program, with the helper modules of `agents/` it imports (`import _incluster`, at the top of
the file: `program`). A ConfigMap holds their text, a pinned Python image runs the script from a read-only
mount (Python puts the script's directory first on sys.path, so the helpers beside it import), and a checksum
of all of it on the pod template rolls the pods when the program or a helper changes (a ConfigMap edit alone
would not). Used by every agent: the status refresher, the failover controller, the hub exporter, the etcd
backup upload and defragmentation, the Pull join.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.versions import AGENT_PYTHON_IMAGE

AGENTS_DIR = Path(__file__).resolve().parents[2] / "agents"
MOUNT_DIR = "/opt/karmada-hub"
VOLUME = "script"
CHECKSUM_ANNOTATION = "karmada-hub.io/script-sha256"
IMAGE = AGENT_PYTHON_IMAGE
ENV = ({"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},)
"""The mount is read-only, so Python must not try to write bytecode next to the script."""
_HELPER_IMPORT = re.compile(r"^(?:import|from) (_[a-z0-9_]+)\b", re.MULTILINE)
"""A top-level import of an underscore module; it is a helper when `agents/<name>.py` exists (tests/test_layout.py
checks, with `ast`, that every sibling import of an agent is one of these)."""


def source(filename: str) -> str:
    return (AGENTS_DIR / filename).read_text()


def helpers(text: str) -> dict[str, str]:
    """The helper files of `agents/` a script's text imports, and the helpers they import: {file name: text}."""
    found: dict[str, str] = {}
    pending = [text]
    while pending:
        for module in _HELPER_IMPORT.findall(pending.pop()):
            name = f"{module}.py"
            if name not in found and (AGENTS_DIR / name).is_file():
                found[name] = source(name)
                pending.append(found[name])
    return dict(sorted(found.items()))


def program(filename: str, text: str) -> dict[str, str]:
    """What the pod needs of one agent: the script (as `filename`) and its helpers, by file name."""
    files = helpers(text)
    if filename in files:
        raise ValueError(f"{filename} is a helper of itself")
    return {filename: text, **files}


def configmap(metadata: dict[str, Any], filename: str, text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": program(filename, text)}


def command(filename: str) -> list[str]:
    return ["python3", "-u", f"{MOUNT_DIR}/{filename}"]


def volume(configmap_name: str) -> dict[str, Any]:
    return {"name": VOLUME, "configMap": {"name": configmap_name}}


def mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}


def digest(script: str, helper_files: Mapping[str, str]) -> str:
    """sha256 of the script, then of every helper as NUL, name, NUL, length, NUL, text (sorted by name). Python
    source cannot contain NUL, so the first NUL ends the script and no two programs share a digest; a script
    without helpers hashes to the sha256 of its text alone (what this annotation has always been)."""
    sha = hashlib.sha256(script.encode())
    for name in sorted(helper_files):
        data = helper_files[name].encode()
        sha.update(f"\0{name}\0{len(data)}\0".encode())
        sha.update(data)
    return sha.hexdigest()


def pod_annotations(text: str) -> dict[str, str]:
    """The checksum of the whole program (script and helpers) the pod runs."""
    return {CHECKSUM_ANNOTATION: digest(text, helpers(text))}
