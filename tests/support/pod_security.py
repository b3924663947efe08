"""The Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards, as enforced by the
PodSecurity admission plugin of the pinned Kubernetes: k8s.io/pod-security-admission/policy/check_*.go), applied to
a rendered pod spec: which checks of `baseline` and `restricted` it fails.

A test aid, not a full re-implementation: it covers every check the admission plugin runs for these two levels at
version "latest", with the fields this program can render.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

LEVEL_LABEL = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")

_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                  "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
"""check_capabilities_baseline.go: capabilities a baseline pod may add."""
_SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                 "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                 "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                 "net.ipv4.tcp_keepalive_probes"}
_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret"}
"""check_restrictedVolumes.go: the only volume types a restricted pod may use."""


def containers(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from pod.get("initContainers") or []
    yield from pod.get("containers") or []
    yield from pod.get("ephemeralContainers") or []


def baseline_violations(pod: Mapping[str, Any]) -> list[str]:
    out = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            out.append(f"{field}: true")
    for v in pod.get("volumes") or []:
        if "hostPath" in v:
            out.append(f"hostPath volume {v['name']}")
    for key in ("appArmorProfile",):
        profile = (pod.get("securityContext") or {}).get(key) or {}
        if profile.get("type") == "Unconfined":
            out.append("appArmorProfile Unconfined")
    for s in (pod.get("securityContext") or {}).get("sysctls") or []:
        if s["name"] not in _SAFE_SYSCTLS:
            out.append(f"sysctl {s['name']}")
    pod_seccomp = ((pod.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    if pod_seccomp == "Unconfined":
        out.append("seccompProfile Unconfined")
    for c in containers(pod):
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("privileged"):
            out.append(f"{name}: privileged")
        added = set((sc.get("capabilities") or {}).get("add") or [])
        if added - _BASELINE_CAPS:
            out.append(f"{name}: adds {sorted(added - _BASELINE_CAPS)}")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                out.append(f"{name}: hostPort {p['hostPort']}")
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(f"{name}: seccompProfile Unconfined")
        if sc.get("procMount") not in (None, "Default"):
            out.append(f"{name}: procMount")
        if (sc.get("seLinuxOptions") or {}).get("type") not in (None, "", "container_t", "container_init_t",
                                                                  "container_kvm_t", "container_engine_t"):
            out.append(f"{name}: seLinuxOptions")
    return out


def restricted_violations(pod: Mapping[str, Any]) -> list[str]:
    out = baseline_violations(pod)
    psc = pod.get("securityContext") or {}
    for v in pod.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            out.append(f"volume {v['name']} of type {sorted(kinds)}")
    for c in containers(pod):
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation is not false")
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            out.append(f"{name}: runAsNonRoot is not true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccompProfile not RuntimeDefault/Localhost")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{name}: adds {sorted(set(caps['add']) - {'NET_BIND_SERVICE'})}")
    return out


def violations(pod: Mapping[str, Any], level: str) -> list[str]:
    if level == "privileged":
        return []
    if level == "baseline":
        return baseline_violations(pod)
    if level == "restricted":
        return restricted_violations(pod)
    raise ValueError(f"unknown Pod Security level {level!r}")


def pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec of a workload object (Pod, Deployment, DaemonSet, StatefulSet, Job, CronJob), else None."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"):
        return (spec.get("template") or {}).get("spec")
    if kind == "CronJob":
        return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")
    return None
