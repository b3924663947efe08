"""The flag room's tables and guards: where each file a flag names lives, the health paths anonymous requests may
reach, the gate names Karmada v1.18.2 knows, and the refusals of timings and gates a binary would not run with."""

from __future__ import annotations

import pytest

from components.karmada.flags import common, descheduler, etcd
from components.karmada.flags.common import FailoverSettings, LeaderElection

PKI_FILES = [
    "ca.crt", "ca.key",
    "etcd/ca.crt", "etcd/server.crt", "etcd/server.key", "etcd/peer.crt", "etcd/peer.key",
    "etcd/backup-client.crt", "etcd/backup-client.key", "etcd/member-client.crt", "etcd/member-client.key",
    "etcd/maintenance-client.crt", "etcd/maintenance-client.key",
    "front-proxy-ca.crt", "front-proxy-client.crt", "front-proxy-client.key",
    "apiserver.crt", "apiserver.key", "apiserver-etcd-client.crt", "apiserver-etcd-client.key",
    "aggregated-apiserver.crt", "aggregated-apiserver.key",
    "aggregated-apiserver-etcd-client.crt", "aggregated-apiserver-etcd-client.key",
    "webhook.crt", "webhook.key", "scheduler-estimator.crt", "scheduler-estimator.key",
    "scheduler-estimator-client.crt", "scheduler-estimator-client.key",
    "descheduler-estimator-client.crt", "descheduler-estimator-client.key",
    "search.crt", "search.key", "search-etcd-client.crt", "search-etcd-client.key",
    "sa.pub", "sa.key",
]


def test_every_path_a_flag_names() -> None:
    assert dict(common.PATHS) == {
        **{name: f"/etc/karmada/pki/{name}" for name in PKI_FILES},
        "kubeconfig": "/etc/karmada/config/karmada.config",
        "member-kubeconfig": "/etc/karmada/member/kubeconfig",
        "agent-kubeconfig": "/etc/kubeconfig/karmada-kubeconfig",
        "audit-policy": "/etc/karmada/audit/policy.yaml",
        "audit-log": "/var/log/karmada/audit.log",
        "encryption-config": "/etc/karmada/encryption/encryption-config.yaml",
        "authentication-config": "/etc/karmada/authn/authentication-config.yaml",
        "etcd-data": "/var/lib/etcd",
        "etcd-config": "/run/etcd/etcd.conf.yaml",
        "capi-kubeconfig": "/etc/karmada/capi/kubeconfig",
    }


def test_anonymous_requests_reach_only_the_health_paths() -> None:
    assert common.HEALTH_PATHS == ("/livez", "/readyz", "/healthz")


def test_the_gates_karmada_v1_18_2_knows() -> None:
    """karmada v1.18.2 pkg/features/features.go DefaultFeatureGates, and the component-base logging gates."""
    assert {
        "Failover", "GracefulEviction", "PropagateDeps", "CustomizedClusterResourceModeling",
        "PropagationPolicyPreemption", "MultiClusterService", "ResourceQuotaEstimate", "StatefulFailoverInjection",
        "PriorityBasedScheduling", "FederatedQuotaEnforcement", "LoggingAlphaOptions", "LoggingBetaOptions",
        "ContextualLogging", "MultiplePodTemplatesScheduling", "ControllerPriorityQueue", "WorkloadAffinity",
        "SchedulingOvercommitProtection"} == common.KARMADA_GATES
    assert dict(common.FAILOVER_GATES) == {"Failover": True, "GracefulEviction": True}
    assert dict(common.QUOTA_GATES) == {"FederatedQuotaEnforcement": True}


def test_gates_are_rendered_on_their_readers_only() -> None:
    assert common.gates_for("karmada-scheduler", ["WorkloadAffinity", "StatefulFailoverInjection"]) == {
        "WorkloadAffinity": True}
    common.check_gates("karmada-controller-manager", {"StatefulFailoverInjection": True, "PropagateDeps": True})
    with pytest.raises(ValueError, match="'PriorityBasedPreemptiveScheduling' is not a feature gate"):
        common.check_gates("karmada-scheduler", {"PriorityBasedPreemptiveScheduling": True})
    with pytest.raises(ValueError, match="read only by karmada-controller-manager, karmada-scheduler-estimator"):
        common.check_gates("karmada-scheduler", {"ResourceQuotaEstimate": True})


@pytest.mark.parametrize(("lease", "renew", "retry", "ok"), [
    (15, 10, 2, True), (3, 2, 1, True), (10, 10, 2, False), (15, 2, 2, False), (15, 10, 0, False), (2, 10, 1, False),
])
def test_leader_election_needs_lease_over_renew_over_retry_over_zero(lease: int, renew: int, retry: int,
                                                                     ok: bool) -> None:
    if ok:
        assert LeaderElection(lease, renew, retry, "ns").args() == [
            "--leader-elect=true", f"--leader-elect-lease-duration={lease}s",
            f"--leader-elect-renew-deadline={renew}s", f"--leader-elect-retry-period={retry}s",
            "--leader-elect-resource-namespace=ns"]
    else:
        with pytest.raises(ValueError, match=f"got {lease}/{renew}/{retry}"):
            LeaderElection(lease, renew, retry)


def test_failover_settings_refuse_what_the_controller_manager_would_not_run() -> None:
    FailoverSettings(purge_mode="Directly", resource_eviction_rate=0.01)
    with pytest.raises(ValueError, match="purge_mode must be Gracefully or Directly"):
        FailoverSettings(purge_mode="Never")  # type: ignore[arg-type]
    for rate in (0, -1):
        with pytest.raises(ValueError, match="resource_eviction_rate must be > 0"):
            FailoverSettings(resource_eviction_rate=rate)
    assert FailoverSettings().client_env() == []
    assert FailoverSettings(client_read_idle_s=10, client_ping_timeout_s=5).client_env() == [
        {"name": "HTTP2_READ_IDLE_TIMEOUT_SECONDS", "value": "10"},
        {"name": "HTTP2_PING_TIMEOUT_SECONDS", "value": "5"}]


@pytest.mark.parametrize(("interval", "threshold", "ok"), [(1, 1, True), (0, 300, False), (120, 0, False)])
def test_the_descheduler_needs_a_positive_interval_and_threshold(interval: int, threshold: int, ok: bool) -> None:
    if ok:
        args = descheduler.descheduler_args(interval_s=interval, unschedulable_threshold_s=threshold)
        assert f"--descheduling-interval={interval}s" in args and f"--unschedulable-threshold={threshold}s" in args
    else:
        with pytest.raises(ValueError, match="must be > 0"):
            descheduler.descheduler_args(interval_s=interval, unschedulable_threshold_s=threshold)


def test_etcdctl_and_the_prepare_step_command_lines() -> None:
    assert etcd.etcdctl_flags() == [
        "--endpoints=https://etcd-client.karmada-system.svc.cluster.local:2379",
        "--cacert=/etc/karmada/pki/etcd/ca.crt", "--cert=/etc/karmada/pki/etcd/backup-client.crt",
        "--key=/etc/karmada/pki/etcd/backup-client.key", "--dial-timeout=10s", "--command-timeout=300s"]
    assert etcd.ETCDCTL_SNAPSHOT_SAVE == ("snapshot", "save", "/backup/snapshot.db")
    assert etcd.etcd_prepare_args(["--name=x"]) == [
        "--config-file=/run/etcd/etcd.conf.yaml", "--client-cert=/etc/karmada/pki/etcd/member-client.crt",
        "--client-key=/etc/karmada/pki/etcd/member-client.key", "--remind-seconds=300", "--", "--name=x"]
    with pytest.raises(ValueError, match="must not contain a bare --"):
        etcd.etcd_prepare_args(["--name=x", "--"])
    assert etcd.etcd_config_file_args() == ["--config-file=/run/etcd/etcd.conf.yaml"]
