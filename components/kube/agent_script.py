"""Agent scripts: how a stdlib-only program from `agents/` runs in a pod.

The file is the program. A ConfigMap holds its text, a pinned Python image runs it from a read-only
mount, and a checksum of the text on the pod template rolls the pods when the program changes (a
ConfigMap edit alone would not). Used by the status refresher and the etcd backup upload.
"""

from __future__ import annotations

import hashlib
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


def source(filename: str) -> str:
    return (AGENTS_DIR / filename).read_text()


def configmap(metadata: dict[str, Any], filename: str, text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {filename: text}}


def command(filename: str) -> list[str]:
    return ["python3", "-u", f"{MOUNT_DIR}/{filename}"]


def volume(configmap_name: str) -> dict[str, Any]:
    return {"name": VOLUME, "configMap": {"name": configmap_name}}


def mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}


def pod_annotations(text: str) -> dict[str, str]:
    return {CHECKSUM_ANNOTATION: hashlib.sha256(text.encode()).hexdigest()}
