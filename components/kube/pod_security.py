"""The one restricted container securityContext every pod this program renders runs with.

Pod Security "restricted" plus a fixed non-root UID: upstream Karmada images (alpine) and the
registry.k8s.io images would otherwise run as root; none of them needs it.
"""

from __future__ import annotations

from typing import Any

NON_ROOT_UID = 65532


def container_security_context(read_only_root: bool = True) -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "runAsNonRoot": True,
        "runAsUser": NON_ROOT_UID,
        "runAsGroup": NON_ROOT_UID,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
