"""What Hetzner Cloud and k3s allow, as dated data with the source of every number.

The authoritative per-type figures are on hetzner.com/cloud and behind Hetzner's API (`GET /server_types`,
`GET /load_balancer_types`, pulumi-hcloud's `get_server_type`/`get_load_balancer_type` invokes), neither of
which the offline plan can read. So the numbers are vendored here with the date they were collected and
where each came from; `verified=False` marks a number no stored authoritative source confirms. Where
sources disagree the lower figure is used: the checks built on it (operations/capacity.py) then refuse
more fleets than Hetzner would, never fewer. Refresh the table (and AS_OF) from the API when types change.
"""

from __future__ import annotations

from dataclasses import dataclass

AS_OF = "2026-12-01"

_CNAP = "[3rd] docs.cnap.tech/compute/providers/hetzner (instance-type table)"
_VDHOME = "[3rd] docs.vdhome.be/reference/costs (cx33, cx53 specs)"
_UNSTORED = "not in any stored source: Hetzner's CX/CPX/CAX/CCX line-up as announced (hetzner.com/cloud)"


@dataclass(frozen=True)
class ServerType:
    name: str
    vcpus: int
    memory_gb: int
    """As Hetzner lists it; counted as 10^9 bytes (about what the kernel reports of a Hetzner VM's RAM)."""
    arch: str
    source: str
    verified: bool = False

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9


def _types(*rows: ServerType) -> dict[str, ServerType]:
    return {row.name: row for row in rows}


SERVER_TYPES: dict[str, ServerType] = _types(
    # Shared vCPU, cost-optimized (CX gen 3, Intel/AMD x86), since 2025-10.
    ServerType("cx23", 2, 4, "x86", f"{_CNAP}; {_VDHOME}"),
    ServerType("cx33", 4, 8, "x86", f"{_CNAP}; {_VDHOME}"),
    ServerType("cx43", 8, 16, "x86", _CNAP),
    ServerType("cx53", 16, 32, "x86", _VDHOME),
    # Shared vCPU, regular performance (CPX gen 2, AMD x86).
    ServerType("cpx22", 2, 4, "x86", f"{_CNAP} says 3 vCPU, [3rd] gist derhuerst/4ef9a832 says 2: the lower is used"),
    ServerType("cpx32", 4, 8, "x86", _CNAP),
    ServerType("cpx42", 8, 16, "x86", _UNSTORED),
    ServerType("cpx52", 12, 24, "x86", _UNSTORED),
    ServerType("cpx62", 16, 32, "x86", _UNSTORED),
    # Shared vCPU, Arm (Ampere).
    ServerType("cax11", 2, 4, "arm64", _CNAP),
    ServerType("cax21", 4, 8, "arm64", _CNAP),
    ServerType("cax31", 8, 16, "arm64", _CNAP),
    ServerType("cax41", 16, 32, "arm64", _UNSTORED),
    # Dedicated vCPU (CCX, AMD x86).
    ServerType("ccx13", 2, 8, "x86", _UNSTORED),
    ServerType("ccx23", 4, 16, "x86", _UNSTORED),
    ServerType("ccx33", 8, 32, "x86", _UNSTORED),
    ServerType("ccx43", 16, 64, "x86", _UNSTORED),
    ServerType("ccx53", 32, 128, "x86", _UNSTORED),
    ServerType("ccx63", 48, 192, "x86", _UNSTORED),
)
"""Current server types (the deprecated CX gen 2 / CPX gen 1 are refused by config.py)."""


@dataclass(frozen=True)
class LoadBalancerType:
    name: str
    max_targets: int
    max_services: int
    source: str
    verified: bool = False


_HCLOUD_PYTHON = ("[src] hetznercloud/hcloud-python@c920c341 tests/unit/load_balancer_types/conftest.py (API-shaped "
                  "fixture with the real prices); third-party [3rd] docs of cdk-x say lb21 takes 100 targets")

LOAD_BALANCER_TYPES: dict[str, LoadBalancerType] = {
    "lb11": LoadBalancerType("lb11", max_targets=25, max_services=5, source=_HCLOUD_PYTHON),
    "lb21": LoadBalancerType("lb21", max_targets=75, max_services=15, source=_HCLOUD_PYTHON),
    "lb31": LoadBalancerType("lb31", max_targets=150, max_services=30,
                             source="not in any stored source (hetzner.com/cloud/load-balancer lists 150 targets, "
                                    "30 services; [3rd] cdk-x docs say 500 targets): the lower is used"),
}

LABEL_SELECTOR_TARGETS_COUNT_EACH_SERVER = True
"""Unverified and conservative: every server a `label_selector` target matches counts against the type's
`max_targets`. The API returns such a target with the servers it resolved (`targets[]`), and Hetzner's cloud
controller counts targets against `LoadBalancerType.MaxTargets` (hcloud-cloud-controller-manager PR #570), but
no stored document says how selector matches count."""

SPREAD_PLACEMENT_GROUP_MAX_SERVERS = 10
"""docs.hetzner.com/cloud/placement-groups/overview: "Up to 10 servers per Placement Group (type Spread)"."""

LABEL_VALUE_MAX = 63
"""Hetzner resource label values (and label key names): 63 characters, as Kubernetes (hcloud-go
`ValidateResourceLabels` accepts 64; the lower is used)."""

SERVER_NAME_LABEL_MAX = 63
"""A server name "must be a valid hostname as per RFC 1123" (pulumi_hcloud server.py `name`): labels of 63."""


# ------------------------------------------------------------------------------------------------- k3s

K3S_MAX_PODS = 110
"""Pods per node: the kubelet's `maxPods` default (k8s.io/kubelet config/v1beta1 types.go "Default: 110";
kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1). k3s's own kubelet defaults
(pkg/daemons/agent defaultKubeletConfig) do not set it, and cloud_init.py passes no `max-pods`."""

K3S_SERVER_RESERVE_MILLICPU = 500
K3S_SERVER_RESERVE_BYTES = 2 * 2**30
"""What each hub server keeps for k3s itself (apiserver, embedded etcd, containerd) and the OS, outside every
pod. k3s reserves nothing for it (no kube-/system-reserved in its kubelet defaults), so the capacity check
does: docs.k3s.io/reference/resource-profiling measures a k3s server with embedded etcd and a workload at
1606 M of RAM and 6 % of a core; 2 GiB and half a core leave the OS and a busy control plane room."""


@dataclass(frozen=True)
class PackagedPod:
    name: str
    replicas: int
    millicpu: int
    memory_bytes: int
    source: str


K3S_PACKAGED_PODS: tuple[PackagedPod, ...] = (
    PackagedPod("kube-system/coredns", 1, 100, 70 * 2**20, "[src] k3s-io/k3s manifests/coredns.yaml: requests "
                "cpu 100m, memory 70Mi (the same in every stored version)"),
    PackagedPod("kube-system/metrics-server", 1, 100, 70 * 2**20,
                "k3s-io/k3s manifests/metrics-server/metrics-server-deployment.yaml (the stored old version has no "
                "requests; counted as CoreDNS's 100m/70Mi, unverified for v1.34)"),
    PackagedPod("kube-system/local-path-provisioner", 1, 0, 0, "[src] k3s-io/k3s manifests/local-storage.yaml: no "
                "requests"),
)
"""The pods k3s deploys itself on the hub (traefik and servicelb are disabled by cloud_init.py)."""
