"""karmada-agent command line (runs in a Pull member)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from components.karmada.flags.common import (
    AGENT_KUBECONFIG_PATH,
    CLUSTER_NAMESPACE,
    FailoverSettings,
    LeaderElection,
    check_gates,
    feature_gates_flag,
)


def agent_args(
    cluster_name: str,
    api_endpoint: str,
    *,
    region: str,
    zones: Sequence[str] = (),
    provider: str = "hetzner",
    failover: FailoverSettings = FailoverSettings(),
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    verbosity: int = 2,
) -> list[str]:
    """karmada-agent for a pull-mode member (ref §5.4). The agent's status and lease timing must
    fit the controller-manager's grace period, so both come from the same FailoverSettings. It finds the Cluster the
    hub made for it (same spec, `spec.id` = its kube-system namespace's UID) and writes only its status, renews its
    own certificate, reports no secrets."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    if not api_endpoint.startswith("https://"):
        raise ValueError(f"api_endpoint must be an https:// URL (got {api_endpoint!r})")
    check_gates("karmada-agent", feature_gates or {})
    args = [
        f"--karmada-kubeconfig={AGENT_KUBECONFIG_PATH}",
        f"--cluster-name={cluster_name}",
        f"--cluster-api-endpoint={api_endpoint}",
        f"--cluster-provider={provider}",
        f"--cluster-region={region}",
    ]
    if zones:
        args.append(f"--cluster-zones={','.join(zones)}")
    args += [
        f"--cluster-namespace={CLUSTER_NAMESPACE}",
        # certRotation is off by default (cmd/agent/app/agent.go controllersDisabledByDefault): the agent renews
        # its own client certificate through the CSR API; the member keeps the key.
        "--controllers=*,certRotation",
        # No member token goes to the hub (the default KubeCredentials,KubeImpersonator creates an all-access
        # member service account and uploads its token: pkg/util/credential.go); the hub never dials a Pull member.
        "--report-secrets=None",
        f"--cluster-status-update-frequency={failover.status_update_frequency_s}s",
        f"--cluster-lease-duration={failover.lease_duration_s}s",
        f"--cluster-failure-threshold={failover.failure_threshold_s}s",
        f"--cluster-success-threshold={failover.success_threshold_s}s",
        *leader_election.args(),
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10357",
        *feature_gates_flag(feature_gates or {}),
        f"--v={verbosity}",
    ]
    return args
