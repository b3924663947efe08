"""kube-controller-manager command line (namespaces, GC, SA tokens, bootstrap tokens, CSR signing)."""

from __future__ import annotations

from collections.abc import Sequence

from components.karmada.flags.common import KUBECONFIG_PATH, PATHS, SERVICE_CLUSTER_IP_RANGE, LeaderElection

KCM_CONTROLLERS = (
    "namespace", "garbagecollector", "serviceaccount-token", "ttl-after-finished",
    "tokencleaner", "csrcleaner", "csrsigning", "clusterrole-aggregation",
)
"""Ref §2.5: only what a control plane without nodes needs — namespace deletion, owner-reference GC, SA tokens,
tokencleaner (deletes expired Pull-join bootstrap tokens), csrsigning (signs the agents' CSRs with the Karmada CA
once agentcsrapproving approved them) and csrcleaner. Upstream also runs `bootstrapsigner`, which only signs
`kube-public/cluster-info` for `karmadactl register`'s anonymous discovery; the Pull join here pins the hub CA
from the hub's outputs and the karmada-apiserver runs without anonymous auth, so there is nothing to sign."""
AGENT_SIGNING_HOURS = 720
"""The longest client certificate csrsigning issues (30 days): only agents' CSRs are approved here."""


def kube_controller_manager_args(
    *,
    controllers: Sequence[str] = KCM_CONTROLLERS,
    service_cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
    leader_election: LeaderElection = LeaderElection(),
    cluster_signing_duration_h: int = AGENT_SIGNING_HOURS,
    verbosity: int = 2,
) -> list[str]:
    """kube-controller-manager v1.35 against karmada-apiserver (ref §2.5).

    It is the only component holding the Karmada CA key (csrsigning for pull-mode agents). The
    node-IPAM flags upstream passes are dropped: no nodeipam controller runs, so they do nothing.
    """
    if not controllers:
        raise ValueError("kube-controller-manager needs at least one controller")
    if "csrsigning" not in controllers and "*" not in controllers:
        signing: list[str] = []
    else:
        signing = [
            f"--cluster-signing-cert-file={PATHS['ca.crt']}",
            f"--cluster-signing-key-file={PATHS['ca.key']}",
            f"--cluster-signing-duration={cluster_signing_duration_h}h",
        ]
    return [
        f"--kubeconfig={KUBECONFIG_PATH}",
        f"--authentication-kubeconfig={KUBECONFIG_PATH}",
        f"--authorization-kubeconfig={KUBECONFIG_PATH}",
        "--bind-address=0.0.0.0",
        f"--client-ca-file={PATHS['ca.crt']}",
        f"--requestheader-client-ca-file={PATHS['front-proxy-ca.crt']}",
        "--cluster-name=karmada",
        *signing,
        f"--controllers={','.join(controllers)}",
        f"--root-ca-file={PATHS['ca.crt']}",
        f"--service-account-private-key-file={PATHS['sa.key']}",
        f"--service-cluster-ip-range={service_cluster_ip_range}",
        "--use-service-account-credentials=true",
        "--profiling=false",
        "--tls-min-version=VersionTLS13",
        *leader_election.args(),
        f"--v={verbosity}",
    ]
