"""karmada-controller-manager command line, with the failover and quota switches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.karmada.flags.common import (
    FAILOVER_GATES,
    KUBECONFIG_PATH,
    QUOTA_GATES,
    FailoverSettings,
    LeaderElection,
    _num,
    check_gates,
    feature_gates_flag,
    merge_gates,
)

CONTROLLERS = ("*", "-agentcsrapproving")
"""Every default controller but agentcsrapproving, which approves any agent-shaped CSR whose requester may create
`certificatesigningrequests/clusteragent` without tying the request to a member (karmada v1.18.2
pkg/controllers/certificate/approver/agent_csr_approving.go `isAgentCSR`; `-name` disables a controller:
cmd/controller-manager/app/controllermanager.go, the `controllers` map). The hub's own approver decides instead
(components/fleet/csr_approver_docs.py)."""

FAILOVER_FLAGS = frozenset(
    {"enable-no-execute-taint-eviction", "no-execute-taint-eviction-purge-mode", "resource-eviction-rate",
     "graceful-eviction-timeout"}
)
"""controller-manager flags that only mean something with `Failover=true`; rendered only then."""


def controller_manager_args(
    *,
    enable_failover: bool,
    quota_enforcement: bool,
    failover: FailoverSettings = FailoverSettings(),
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    controllers: Sequence[str] = CONTROLLERS,
    cluster_api_kubeconfig: str | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-controller-manager (ref §2.7) with the failover and quota switches.

    Failover = gate `Failover` + `--enable-no-execute-taint-eviction` (the cluster controller only adds
    NoSchedule taints; NoExecute comes from a ClusterTaintPolicy, which also needs the webhook's
    `--allow-no-execute-taint-policy`). `--failover-eviction-timeout` is gone since v1.15 and
    `--cluster-lease-duration` since v1.18: passing either would crash the binary.
    """
    gates = merge_gates(
        FAILOVER_GATES if enable_failover else {},
        QUOTA_GATES if quota_enforcement else {},
        feature_gates or {},
    )
    if not enable_failover and gates.get("Failover"):
        raise ValueError("feature gate Failover=true needs enable_failover=True (it also sets the eviction flags)")
    if not quota_enforcement and gates.get("FederatedQuotaEnforcement"):
        raise ValueError("FederatedQuotaEnforcement=true needs quota_enforcement=True (webhook must get it too)")
    check_gates("karmada-controller-manager", gates)
    f = failover
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10357",
        f"--controllers={','.join(controllers)}",
        *leader_election.args(),
        f"--cluster-status-update-frequency={f.status_update_frequency_s}s",
        f"--cluster-monitor-period={f.monitor_period_s}s",
        f"--cluster-monitor-grace-period={f.monitor_grace_period_s}s",
        f"--cluster-startup-grace-period={f.startup_grace_period_s}s",
        f"--cluster-failure-threshold={f.failure_threshold_s}s",
        f"--cluster-success-threshold={f.success_threshold_s}s",
    ]
    if enable_failover:
        args += [
            "--enable-no-execute-taint-eviction=true",
            f"--no-execute-taint-eviction-purge-mode={f.purge_mode}",
            f"--resource-eviction-rate={_num(f.resource_eviction_rate)}",
            f"--graceful-eviction-timeout={f.graceful_eviction_timeout_s}s",
        ]
    if cluster_api_kubeconfig:
        args.append(f"--cluster-api-kubeconfig={cluster_api_kubeconfig}")
    args += feature_gates_flag(gates)
    args.append(f"--v={verbosity}")
    return args
