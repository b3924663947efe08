"""Every version the hub runs, pinned in one place, with the compatibility matrix that checks them.

Stacks may override a version only within what this matrix allows; `check_*` functions raise
`ConfigError`-friendly `ValueError`s that name what is supported. Sources: karmada-io/karmada v1.18.2
(chart/operator defaults for etcd and kube-apiserver images), the Karmada compatibility table, k3s
release channels, kubernetes-sigs/external-dns v0.22.0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KARMADA_VERSION = "v1.18.2"
"""The Karmada release this program deploys (images `docker.io/karmada/<component>:<tag>`, CRDs)."""

K3S_VERSION = "v1.34.1+k3s1"
"""k3s on the hub servers; the hub's Kubernetes minor (schemas, skew) follows from it."""


@dataclass(frozen=True)
class KarmadaRelease:
    """What one Karmada release ships with and supports."""

    version: str
    kube_apiserver: str
    """kube-apiserver / kube-controller-manager tag the release defaults to (chart, operator, init)."""
    etcd: str
    """registry.k8s.io/etcd tag the release defaults to."""
    member_kubernetes: tuple[str, str]
    """Inclusive range of member Kubernetes minors the release is tested against."""
    hub_kubernetes: tuple[str, str]
    """Inclusive range of host-cluster Kubernetes minors the control plane may run on."""
    agent_skew_minors: int = 1
    """karmada-agent may lag the control plane by at most this many minors (never lead it)."""
    dashboard: str = ""
    """The karmada-io/dashboard release built against this Karmada minor (its go.mod requires it): the opt-in
    dashboard addon runs this tag. karmada-search is part of the Karmada release itself (`cmd/karmada-search`)."""


RELEASES: dict[str, KarmadaRelease] = {
    "v1.18.2": KarmadaRelease(
        version="v1.18.2",
        # Karmada v1.18.2's installers default to v1.35.2; v1.35.4 is the nearest patch the Go module proxy serves
        # whole (k8s.io/externaljwt v0.35.2 is refused), so the images and the binaries the tests run agree.
        kube_apiserver="v1.35.4",
        etcd="3.6.6-0",
        member_kubernetes=("v1.28", "v1.35"),
        hub_kubernetes=("v1.28", "v1.35"),
        # karmada-io/dashboard v0.4.0 (2026-06-29) is the release whose go.mod requires karmada v1.18.0; v0.3.0
        # requires v1.17.0 (its release plan, karmada-io/dashboard#298: "works with karmada v1.16").
        dashboard="v0.4.0",
    ),
}

RELEASES["v1.17.1"] = KarmadaRelease(
    version="v1.17.1",
    # The previous minor, rendered only by the upgrade rehearsal (bench/upgrade_real.py) and by a stack that still
    # runs it. v1.17.1, not v1.17.5: the Go module proxy here serves karmada-io/karmada v1.17.1 and refuses
    # v1.17.0 and v1.17.2..v1.17.5 (403), and the rehearsal runs the binaries built from the module. Its installers
    # (charts/karmada/values.yaml, operator/pkg/constants/constants.go, pkg/karmadactl/cmdinit) default to
    # kube-apiserver v1.35.2 and etcd 3.6.6-0, like v1.18.2: the same nearest served patch v1.35.4 applies.
    kube_apiserver="v1.35.4",
    etcd="3.6.6-0",
    # README.md "Kubernetes compatibility" at v1.17.1 (row "HEAD") and at v1.18.2 (row "Karmada v1.17"): 1.26..1.35
    member_kubernetes=("v1.26", "v1.35"),
    hub_kubernetes=("v1.26", "v1.35"),
    # karmada-io/dashboard v0.3.0 requires karmada v1.17.0 (its go.mod)
    dashboard="v0.3.0",
)

ADDED_IN: dict[str, str] = {
    # karmada-io/karmada v1.18.2 pkg/features/features.go: "alpha: v1.18"; absent from v1.17.1's gate set, so a
    # v1.17 binary exits with "unrecognized feature gate"
    "SchedulingOvercommitProtection": "v1.18",
    # PropagationPolicy placement.clusterAffinities[].overflowAffinities: pkg/apis/policy/v1alpha1/
    # propagation_types.go and the CRD schema have it from v1.18.0, not at v1.17.1 (the v1.17 CRD prunes it)
    "overflowAffinities": "v1.18",
}
"""Features the program renders that older rows of RELEASES lack: feature -> first Karmada minor with it."""


def supports(karmada: str, feature: str) -> bool:
    """Whether Karmada `karmada` has `feature` (a gate or a field named in ADDED_IN; anything else: yes)."""
    since = ADDED_IN.get(feature)
    return since is None or minor_of(karmada) >= minor_of(since)


EXTERNAL_DNS_VERSION = "v0.22.0"
EXTERNAL_DNS_IMAGE = f"registry.k8s.io/external-dns/external-dns:{EXTERNAL_DNS_VERSION}"
"""v0.22 reads the `external-dns.kubernetes.io/` annotation prefix and requires `--policy`."""
EXTERNAL_DNS_ANNOTATION_PREFIX = "external-dns.kubernetes.io/"
HETZNER_WEBHOOK_IMAGE = "docker.io/hetzner/external-dns-hetzner-webhook:v0.3.4"
KNOT_VERSION = "v3.2.6"
KNOT_IMAGE = f"docker.io/cznic/knot:{KNOT_VERSION}"
"""The fleet's own authoritative nameservers (dns.mode self-hosted), CZ.NIC's image (repository Dockerfile: knotd in
/sbin, user knot uid 53, /config /rundir /storage). The same upstream release as Debian bookworm's `knot` 3.2.6,
which CI runs the rendered configuration with (tests/integration/test_dns_lab.py): bump both together. Pinned
by tag, not digest: no digest of it is published where this checkout can read it (Docker Hub is not reachable
offline); `docker buildx imagetools inspect` gives it, and the runbook pins it at deploy
(docs/runbooks/self-hosted-dns.md)."""
AGENT_PYTHON_IMAGE = "docker.io/library/python:3.12.8-slim-bookworm"
"""Runs the stdlib-only programs in agents/ (mounted from ConfigMaps); any CPython >= 3.11 works."""

SYSTEM_UPGRADE_CONTROLLER_VERSION = "v0.20.1"
SYSTEM_UPGRADE_CONTROLLER_IMAGE = f"docker.io/rancher/system-upgrade-controller:{SYSTEM_UPGRADE_CONTROLLER_VERSION}"
"""Rolls k3s upgrades one hub server at a time (its release assets use this tag; the repo's own manifest at
v0.20.1 still says v0.14.0, rancher/system-upgrade-controller `scripts/package-controller`)."""
SYSTEM_UPGRADE_KUBECTL_IMAGE = "docker.io/rancher/kubectl:v1.30.3"
"""The cordon step of an upgrade Job (system-upgrade-controller v0.20.1 `pkg/upgrade/job/job.go` default). Against
the hub's v1.34 API this is outside kubectl's one-minor skew; the step only runs `kubectl cordon <node>` (nodes
get/patch, stable since v1), so the upstream default stays until a newer tag of the image is verified."""
K3S_UPGRADE_IMAGE = "docker.io/rancher/k3s-upgrade"
"""Tag = the Plan's version with `+` -> `-` (system-upgrade-controller `pkg/upgrade/plan/plan.go` MungeVersion)."""

KWOK_VERSION = "v0.8.0"
"""kwok/kwokctl for the member clusters of the local real fleet (tests only: simulated nodes and pod lifecycle)."""

KARMADA_IMAGE_REGISTRY = "docker.io/karmada"

DASHBOARD_COMPONENTS = ("karmada-dashboard-api", "karmada-dashboard-web")
"""The dashboard addon's two images, `docker.io/karmada/<component>:<release.dashboard>` (karmada-io/dashboard
v0.4.0 `.github/workflows` push both per tag; `artifacts/dashboard/*.yaml` name them)."""


def karmada_image(component: str, version: str) -> str:
    """`docker.io/karmada/<component>:<version>`: every Karmada binary ships as its own image per tag."""
    return f"{KARMADA_IMAGE_REGISTRY}/{component}:{version}"

KUBE_IMAGE_REGISTRY = "registry.k8s.io"

_SEMVER = re.compile(r"^v(\d+)\.(\d+)(?:\.(\d+))?")


def etcd_release(tag: str) -> str:
    """`3.6.6-0` (registry.k8s.io/etcd image tag) -> `v3.6.6` (the go.etcd.io module version it is built from)."""
    match = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-\d+)?", tag)
    if not match:
        raise ValueError(f"'{tag}' is not an etcd image tag like 3.6.6-0")
    return f"v{match.group(1)}"


def minor_of(version: str) -> tuple[int, int]:
    """`v1.34.1+k3s1` -> (1, 34). Raises ValueError on anything that is not a `vMAJOR.MINOR…` tag."""
    match = _SEMVER.match(version)
    if not match:
        raise ValueError(f"'{version}' is not a version like v1.34.1")
    return int(match.group(1)), int(match.group(2))


def release(version: str) -> KarmadaRelease:
    """The matrix row for a Karmada version; ValueError names the supported ones."""
    try:
        return RELEASES[version]
    except KeyError:
        supported = ", ".join(sorted(RELEASES))
        raise ValueError(f"Karmada {version} is not in the compatibility matrix (supported: {supported})") from None


def _in_range(version: str, bounds: tuple[str, str]) -> bool:
    return minor_of(bounds[0]) <= minor_of(version) <= minor_of(bounds[1])


def check_member_kubernetes(karmada: str, member: str) -> None:
    """A member cluster's Kubernetes version must be one the pinned Karmada release supports."""
    rel = release(karmada)
    if not _in_range(member, rel.member_kubernetes):
        lo, hi = rel.member_kubernetes
        raise ValueError(f"Kubernetes {member} is outside what Karmada {karmada} supports for members ({lo}..{hi})")


def check_hub_kubernetes(karmada: str, hub: str) -> None:
    rel = release(karmada)
    if not _in_range(hub, rel.hub_kubernetes):
        lo, hi = rel.hub_kubernetes
        raise ValueError(f"hub Kubernetes {hub} is outside what Karmada {karmada} supports as host ({lo}..{hi})")


def check_agent(karmada: str, agent: str) -> None:
    """karmada-agent may trail the control plane by `agent_skew_minors` and never lead it."""
    rel = release(karmada)
    cp, ag = minor_of(karmada), minor_of(agent)
    if ag > cp or cp[0] != ag[0] or cp[1] - ag[1] > rel.agent_skew_minors:
        raise ValueError(
            f"karmada-agent {agent} must be within {rel.agent_skew_minors} minor of Karmada {karmada} and not newer"
        )


def check_dashboard(karmada: str, dashboard: str) -> None:
    """The dashboard addon must run the release built against the pinned Karmada (the matrix's `dashboard`)."""
    rel = release(karmada)
    if dashboard != rel.dashboard:
        raise ValueError(f"karmada-dashboard {dashboard} is not the release built for Karmada {karmada} "
                         f"({rel.dashboard or 'none known'})")


def kubernetes_minor(version: str) -> str:
    """`v1.34.1+k3s1` -> `1.34` (the form kubernetes-validate and skew tables use)."""
    major, minor = minor_of(version)
    return f"{major}.{minor}"
