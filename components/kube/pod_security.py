"""The one restricted container securityContext every pod this program renders runs with, and the pod-level
one of the pods that run our own programs (agent_script.pod_template).

Pod Security "restricted" plus a fixed non-root UID: upstream Karmada images (alpine) and the
registry.k8s.io images would otherwise run as root; none of them needs it.
"""

from __future__ import annotations

from typing import Any

NON_ROOT_UID = 65532
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted",
              "pod-security.kubernetes.io/warn": "restricted",
              "pod-security.kubernetes.io/audit": "restricted"}
"""The Pod Security labels of every namespace the program creates and runs pods in (the hub's and the members'):
a pod that is not `restricted` is refused at admission, whoever creates it (security review 2, M6)."""


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


def pod_security_context() -> dict[str, Any]:
    """Non-root with the fixed UID, volumes group-owned by it (fsGroup: the 0440 Secret files stay readable),
    the runtime's default seccomp profile."""
    return {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "fsGroup": NON_ROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"}}
