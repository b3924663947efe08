"""Tests for components/karmada/flags.py: every rendered flag exists in the pinned binary, and the
HA / failover / quota switches land on the components that consume them."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from components.config import FailoverConfig
from components.karmada import flags as f
from components.karmada.pki_spec import FRONT_PROXY_CLIENT_CN, cert_specs

Builder = Callable[[], list[str]]

# Every builder under several switch settings: (component, label, thunk)
CASES: list[tuple[str, str, Builder]] = [
    ("etcd", "3", lambda: f.etcd_args(3, "tok")),
    ("etcd", "5-quota", lambda: f.etcd_args(5, "tok", quota_backend_bytes=8 * 2**30, log_level="warn")),
    ("karmada-apiserver", "default", lambda: f.karmada_apiserver_args()),
    ("karmada-apiserver", "plain", lambda: f.karmada_apiserver_args(encryption_at_rest=False,
                                                                     feature_gates={"APIServerTracing": False})),
    ("karmada-aggregated-apiserver", "default", lambda: f.aggregated_apiserver_args(
        feature_gates={"CustomizedClusterResourceModeling": True})),
    ("kube-controller-manager", "default", lambda: f.kube_controller_manager_args()),
    ("karmada-scheduler", "estimator", lambda: f.scheduler_args(
        enable_estimator=True, feature_gates={"SchedulingOvercommitProtection": True, "WorkloadAffinity": True})),
    ("karmada-scheduler", "plain", lambda: f.scheduler_args(enable_estimator=False)),
    ("karmada-controller-manager", "all", lambda: f.controller_manager_args(
        enable_failover=True, quota_enforcement=True, cluster_api_kubeconfig=f.CAPI_KUBECONFIG_PATH)),
    ("karmada-controller-manager", "none", lambda: f.controller_manager_args(
        enable_failover=False, quota_enforcement=False)),
    ("karmada-webhook", "all", lambda: f.webhook_args(allow_no_execute_taint_policy=True, quota_enforcement=True)),
    ("karmada-webhook", "none", lambda: f.webhook_args(allow_no_execute_taint_policy=False,
                                                       quota_enforcement=False)),
    ("karmada-agent", "default", lambda: f.agent_args("dev-hel1-a", "https://dev-hel1-a.example.com:6443",
                                                     region="eu-hel", zones=["hel1"])),
    ("karmada-scheduler-estimator", "default", lambda: f.scheduler_estimator_args("dev-fsn1-a")),
    ("karmada-scheduler-estimator", "overcommit", lambda: f.scheduler_estimator_args(
        "dev-fsn1-a", feature_gates={"SchedulingOvercommitProtection": True, "ResourceQuotaEstimate": True})),
    ("karmada-descheduler", "default", lambda: f.descheduler_args()),
    ("karmada-search", "default", lambda: f.search_args()),
]
IDS = [f"{c}-{label}" for c, label, _ in CASES]


def gates(args: list[str]) -> dict[str, bool]:
    values = [a for a in args if a.startswith("--feature-gates=")]
    assert len(values) <= 1, "feature gates must be one flag"
    if not values:
        return {}
    body = values[0].split("=", 1)[1]
    pairs = [p.split("=") for p in body.split(",")]
    assert [k for k, _ in pairs] == sorted(k for k, _ in pairs), "gates must be sorted"
    return {k: v == "true" for k, v in pairs}


@pytest.mark.parametrize(("component", "label", "build"), CASES, ids=IDS)
def test_every_flag_is_known_and_not_removed(component: str, label: str, build: Builder) -> None:
    args = build()
    binary = f.BINARY[component]
    assert args and not args[0].startswith("/") and args[0] not in f.COMMANDS[component], "args never repeat binary"
    names = f.flag_names(args)  # raises unless every arg is --name[=value]
    unknown = sorted(set(names) - f.KNOWN_FLAGS[binary])
    assert not unknown, f"{binary} does not accept {unknown}"
    removed = sorted(set(names) & set(f.REMOVED_FLAGS.get(binary, {})))
    assert not removed, f"{binary} removed {removed}"
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"flags given twice: {dupes}"
    assert all("=" in a for a in args), "explicit values keep the rendered command unambiguous"


@pytest.mark.parametrize(("component", "label", "build"), CASES, ids=IDS)
def test_paths_and_env(component: str, label: str, build: Builder) -> None:
    args = build()
    for value in f.flag_values(args).values():
        for path in re.findall(r"(?<![\w.])/(?:etc|var)/[\w./-]+", value):
            assert path in f.PATHS.values() or path == f.PKI_DIR, f"{path} is not in PATHS (so nobody mounts it)"
    assert f.env_refs(args) <= {"POD_NAME", "POD_IP"}
    if component == "etcd":
        assert f.env_refs(args) == {"POD_NAME", "POD_IP"}


def test_removed_flags_are_not_known() -> None:
    for binary, removed in f.REMOVED_FLAGS.items():
        assert not (set(removed) & f.KNOWN_FLAGS[binary]), binary
    assert "failover-eviction-timeout" in f.REMOVED_FLAGS["karmada-controller-manager"]
    assert "default-not-ready-toleration-seconds" in f.REMOVED_FLAGS["karmada-webhook"]


def test_etcd_flags_are_in_all_supported_etcd_versions() -> None:
    # 3.4-only / 3.6-new flags must not sneak into the shared set
    assert "enable-v2" not in f.KNOWN_FLAGS["etcd"]
    assert "tls-min-version" not in f.KNOWN_FLAGS["etcd"]  # 3.5+ only: Debian's 3.4 would exit
    assert {"peer-client-cert-auth", "listen-metrics-urls", "initial-cluster-token"} <= f.KNOWN_FLAGS["etcd"]


def test_etcd_renders_no_flag_deprecated_in_the_pinned_release() -> None:
    """etcd v3.6.6 server/embed/config.go: --snapshot-count "Deprecated in v3.6 and will be decommissioned in
    v3.7"; its 3.6 default (server/etcdserver/server.go DefaultSnapshotCount = 10000) is what was rendered."""
    assert "snapshot-count" not in f.flag_names(f.etcd_args(3, "t"))


# ------------------------------------------------------------------------------------ leader election


@pytest.mark.parametrize(("component", "label", "build"), CASES, ids=IDS)
def test_leader_election_where_expected(component: str, label: str, build: Builder) -> None:
    values = f.flag_values(build())
    lease = f.LEADER_ELECTION[component]
    if lease is None:
        assert not any(k.startswith("leader-elect") for k in values), component
    else:
        assert values["leader-elect"] == "true"
        assert values["leader-elect-resource-namespace"] == lease.namespace == f.NAMESPACE


def test_leader_election_covers_every_component() -> None:
    assert set(f.LEADER_ELECTION) == set(f.COMMANDS) == set(f.BINARY)
    assert f.LEADER_ELECTION["karmada-webhook"] is None
    assert f.LEADER_ELECTION["karmada-apiserver"] is None


def test_leader_election_timing_is_validated() -> None:
    with pytest.raises(ValueError, match="lease_duration"):
        f.LeaderElection(lease_duration_s=10, renew_deadline_s=10)
    values = f.flag_values(f.kube_controller_manager_args(leader_election=f.LeaderElection(30, 20, 4)))
    assert (values["leader-elect-lease-duration"], values["leader-elect-renew-deadline"],
            values["leader-elect-retry-period"]) == ("30s", "20s", "4s")


# ------------------------------------------------------------------------------------ failover / quota


def test_failover_flags_present_only_when_enabled() -> None:
    on = f.controller_manager_args(enable_failover=True, quota_enforcement=False)
    off = f.controller_manager_args(enable_failover=False, quota_enforcement=False)
    assert set(f.flag_names(on)) >= f.FAILOVER_FLAGS
    assert not (f.FAILOVER_FLAGS & set(f.flag_names(off)))
    assert gates(on)["Failover"] is True and gates(on)["GracefulEviction"] is True
    assert "Failover" not in gates(off)
    assert f.flag_values(on)["enable-no-execute-taint-eviction"] == "true"


def test_failover_values_come_from_config() -> None:
    cfg = FailoverConfig(cluster_status_update_frequency=7, cluster_failure_threshold=45, cluster_monitor_period=3,
                         cluster_monitor_grace_period=55, cluster_lease_duration=60, resource_eviction_rate=2.5,
                         graceful_eviction_timeout=900, purge_mode="Directly", cluster_success_threshold=20)
    settings = f.FailoverSettings.from_config(cfg)
    cm = f.flag_values(f.controller_manager_args(enable_failover=True, quota_enforcement=False, failover=settings))
    assert cm["cluster-status-update-frequency"] == "7s"
    assert cm["cluster-failure-threshold"] == "45s"
    assert cm["cluster-success-threshold"] == "20s"
    assert cm["cluster-monitor-period"] == "3s"
    assert cm["cluster-monitor-grace-period"] == "55s"
    assert cm["resource-eviction-rate"] == "2.5"
    assert cm["graceful-eviction-timeout"] == "900s"
    assert cm["no-execute-taint-eviction-purge-mode"] == "Directly"
    agent = f.flag_values(f.agent_args("m1", "https://m1:6443", region="r", failover=settings))
    assert agent["cluster-status-update-frequency"] == "7s"
    assert agent["cluster-lease-duration"] == "60s"  # the agent, not the controller-manager, owns the lease


def test_quota_gate_on_controller_manager_and_webhook() -> None:
    cm = f.controller_manager_args(enable_failover=False, quota_enforcement=True)
    wh = f.webhook_args(allow_no_execute_taint_policy=False, quota_enforcement=True)
    assert gates(cm).get("FederatedQuotaEnforcement") is True
    assert gates(wh).get("FederatedQuotaEnforcement") is True
    assert "FederatedQuotaEnforcement" not in gates(f.controller_manager_args(enable_failover=False,
                                                                                quota_enforcement=False))
    assert "FederatedQuotaEnforcement" not in gates(f.webhook_args(allow_no_execute_taint_policy=False,
                                                                     quota_enforcement=False))


def test_no_execute_policy_switch_on_webhook() -> None:
    assert "allow-no-execute-taint-policy" in f.flag_names(
        f.webhook_args(allow_no_execute_taint_policy=True, quota_enforcement=False))
    assert "allow-no-execute-taint-policy" not in f.flag_names(
        f.webhook_args(allow_no_execute_taint_policy=False, quota_enforcement=False))


def test_contradicting_gates_are_refused() -> None:
    with pytest.raises(ValueError, match="Failover"):
        f.controller_manager_args(enable_failover=True, quota_enforcement=False, feature_gates={"Failover": False})
    with pytest.raises(ValueError, match="enable_failover"):
        f.controller_manager_args(enable_failover=False, quota_enforcement=False, feature_gates={"Failover": True})
    with pytest.raises(ValueError, match="quota_enforcement"):
        f.webhook_args(allow_no_execute_taint_policy=False, quota_enforcement=False,
                       feature_gates={"FederatedQuotaEnforcement": True})
    with pytest.raises(ValueError, match="estimator"):
        f.scheduler_args(enable_estimator=False, feature_gates={"SchedulingOvercommitProtection": True})


def test_feature_gates_flag_is_sorted_and_single() -> None:
    assert f.feature_gates_flag({}) == []
    assert f.feature_gates_flag({"WorkloadAffinity": True, "Failover": False}) == [
        "--feature-gates=Failover=false,WorkloadAffinity=true"]
    with pytest.raises(ValueError):
        f.feature_gates_flag({"not a gate": True})


def test_scheduler_estimator_flags_follow_switch() -> None:
    on = f.flag_values(f.scheduler_args(enable_estimator=True))
    off = f.flag_values(f.scheduler_args(enable_estimator=False))
    assert on["enable-scheduler-estimator"] == "true"
    assert on["scheduler-estimator-cert-file"] == f.PATHS["scheduler-estimator-client.crt"]
    assert not any(k.startswith("scheduler-estimator") or k == "enable-scheduler-estimator" for k in off)


# ------------------------------------------------------------------------------------ apiserver / KCM


def test_apiserver_hardening_and_wiring() -> None:
    v = f.flag_values(f.karmada_apiserver_args())
    # anonymous access comes only from the authentication config (health paths); the flag would conflict with it
    assert "anonymous-auth" not in v and v["authentication-config"] == f.AUTHENTICATION_CONFIG_PATH
    assert v["profiling"] == "false"
    assert v["secure-port"] == "5443"
    assert v["etcd-servers"] == "https://etcd-client.karmada-system.svc.cluster.local:2379"
    assert v["authorization-mode"] == "Node,RBAC"
    assert v["enable-bootstrap-token-auth"] == "true"
    assert v["encryption-provider-config"] == f.ENCRYPTION_CONFIG_PATH
    assert v["audit-policy-file"] == f.AUDIT_POLICY_PATH and v["audit-log-path"] == f.AUDIT_LOG_PATH
    assert int(v["audit-log-maxage"]) > 0 and int(v["audit-log-maxbackup"]) > 0 and int(v["audit-log-maxsize"]) > 0
    assert v["service-account-key-file"] == f.PATHS["sa.pub"]
    assert v["service-account-signing-key-file"] == f.PATHS["sa.key"]
    # the aggregator's client identity must be the one the apiserver allows to assert users
    front_proxy = next(s for s in cert_specs([], [], 3) if s.name == "front-proxy-client")
    assert v["requestheader-allowed-names"] == FRONT_PROXY_CLIENT_CN == front_proxy.common_name
    assert v["requestheader-client-ca-file"] == f.PATHS["front-proxy-ca.crt"]
    assert "encryption-provider-config" not in f.flag_values(f.karmada_apiserver_args(encryption_at_rest=False))
    custom = f.flag_values(f.karmada_apiserver_args(etcd_servers=["https://a:2379", "https://b:2379"]))
    assert custom["etcd-servers"] == "https://a:2379,https://b:2379"


def test_agent_rotates_its_certificate_and_reports_no_secrets() -> None:
    v = f.flag_values(f.agent_args("m1", "https://m1.example.com:6443", region="eu"))
    assert v["controllers"] == "*,certRotation" and v["report-secrets"] == "None"
    assert v["karmada-kubeconfig"] == f.AGENT_KUBECONFIG_PATH


def test_kube_controller_manager_controllers_and_lease() -> None:
    v = f.flag_values(f.kube_controller_manager_args())
    assert v["controllers"].split(",") == list(f.KCM_CONTROLLERS)
    assert {"csrsigning", "csrcleaner", "tokencleaner", "garbagecollector", "namespace"} <= set(
        v["controllers"].split(","))
    assert "bootstrapsigner" not in v["controllers"]  # it signs cluster-info only, which the Pull join never reads
    assert v["cluster-signing-duration"] == "720h"  # agents ask for 30 days; nothing signs longer
    assert v["leader-elect-resource-namespace"] == "karmada-system"
    assert v["cluster-signing-key-file"] == f.PATHS["ca.key"]
    no_signing = f.flag_values(f.kube_controller_manager_args(controllers=("namespace", "garbagecollector")))
    assert "cluster-signing-key-file" not in no_signing, "without csrsigning the CA key must not be needed"


# ------------------------------------------------------------------------------------ etcd


@pytest.mark.parametrize("replicas", [1, 3, 5])
def test_etcd_initial_cluster_and_advertised_names_match_certs(replicas: int) -> None:
    args = f.etcd_args(replicas, "tok")
    v = f.flag_values(args)
    initial = dict(item.split("=", 1) for item in v["initial-cluster"].split(","))
    assert list(initial) == [f"etcd-{i}" for i in range(replicas)]
    specs = {s.name: s for s in cert_specs([], [], replicas)}
    for pod in initial:
        advertised_peer = v["initial-advertise-peer-urls"].replace("$(POD_NAME)", pod)
        advertised_client = v["advertise-client-urls"].replace("$(POD_NAME)", pod)
        assert advertised_peer == initial[pod], "a member must advertise the URL the others dial"
        peer_host = re.match(r"https://([^:]+):2380$", advertised_peer)
        client_host = re.match(r"https://([^:]+):2379$", advertised_client)
        assert peer_host and client_host
        assert specs["etcd-peer"].covers(peer_host.group(1))
        assert specs["etcd-server"].covers(client_host.group(1))
    assert specs["etcd-server"].covers("etcd-client.karmada-system.svc.cluster.local")


def test_etcd_full_tls_on_both_listeners() -> None:
    v = f.flag_values(f.etcd_args(3, "tok"))
    assert v["client-cert-auth"] == "true" and v["peer-client-cert-auth"] == "true"
    assert v["listen-client-urls"].startswith("https://") and v["listen-peer-urls"].startswith("https://")
    assert v["listen-metrics-urls"] == "http://$(POD_IP):2381"  # plain HTTP for probes, not on every interface
    assert v["trusted-ca-file"] == v["peer-trusted-ca-file"] == f.PATHS["etcd/ca.crt"]
    assert v["data-dir"] == "/var/lib/etcd"
    assert all(s.startswith("TLS_ECDHE_") for s in v["cipher-suites"].split(","))


def test_etcd_args_validate_inputs() -> None:
    with pytest.raises(ValueError):
        f.etcd_args(0, "tok")
    with pytest.raises(ValueError):
        f.etcd_args(3, "has space")
    other = f.flag_values(f.etcd_args(3, "tok", namespace="other", cluster_domain="example.internal"))
    assert "etcd-0.etcd.other.svc.example.internal:2380" in other["initial-cluster"]


def test_etcd_quota_and_compaction_are_parameters() -> None:
    plain = f.flag_values(f.etcd_args(3, "tok"))
    assert not {"quota-backend-bytes", "auto-compaction-mode", "auto-compaction-retention"} & set(plain)
    v = f.flag_values(f.etcd_args(3, "tok", quota_backend_bytes=4 * 2**30, auto_compaction_mode="periodic",
                                  auto_compaction_retention="1h"))
    assert (v["quota-backend-bytes"], v["auto-compaction-mode"], v["auto-compaction-retention"]) == (
        str(4 * 2**30), "periodic", "1h")
    assert {"quota-backend-bytes", "auto-compaction-mode", "auto-compaction-retention"} <= f.KNOWN_FLAGS["etcd"]
    for bad in ({"quota_backend_bytes": 9 * 2**30}, {"quota_backend_bytes": 0}, {"auto_compaction_mode": "periodic"},
                {"auto_compaction_mode": "periodic", "auto_compaction_retention": "100"},
                {"auto_compaction_mode": "revision", "auto_compaction_retention": "1h"}):
        with pytest.raises(ValueError):
            f.etcd_args(3, "tok", **bad)  # type: ignore[arg-type]


def test_agent_and_estimator_identity() -> None:
    v = f.flag_values(f.agent_args("dev-hel1-a", "https://x:6443", region="eu-hel", zones=["hel1", "hel2"]))
    assert (v["cluster-name"], v["cluster-provider"], v["cluster-region"], v["cluster-zones"]) == (
        "dev-hel1-a", "hetzner", "eu-hel", "hel1,hel2")
    assert "cluster-zones" not in f.flag_values(f.agent_args("a", "https://x:6443", region="r"))
    with pytest.raises(ValueError):
        f.agent_args("Bad_Name", "https://x", region="r")
    with pytest.raises(ValueError):
        f.agent_args("ok", "http://x", region="r")
    e = f.flag_values(f.scheduler_estimator_args("dev-fsn1-a"))
    assert e["cluster-name"] == "dev-fsn1-a" and e["grpc-client-ca-file"] == f.PATHS["ca.crt"]


def test_flag_parsing_helpers() -> None:
    assert f.flag_name("--a-b=c=d") == "a-b"
    assert f.flag_values(["--x", "--y=1", "--y=2"]) == {"x": "true", "y": "2"}
    with pytest.raises(ValueError):
        f.flag_name("-v=2")
    assert f.env_refs(["--a=$(POD_IP):1", "--b=$(POD_NAME).x"]) == {"POD_IP", "POD_NAME"}


# ------------------------------------------------------------------------------------ tenant feature gates

ALL_TENANT_GATES = frozenset(f.TENANT_GATES)
READERS_BUILT: dict[str, Callable[[frozenset[str]], list[str]]] = {
    "karmada-scheduler": lambda g: f.scheduler_args(enable_estimator=True,
                                                    feature_gates=f.gates_for("karmada-scheduler", g)),
    "karmada-controller-manager": lambda g: f.controller_manager_args(
        enable_failover=True, quota_enforcement="FederatedQuotaEnforcement" in g,
        feature_gates=f.gates_for("karmada-controller-manager", g)),
    "karmada-webhook": lambda g: f.webhook_args(
        allow_no_execute_taint_policy=True, quota_enforcement="FederatedQuotaEnforcement" in g,
        feature_gates=f.gates_for("karmada-webhook", g)),
    "karmada-scheduler-estimator": lambda g: f.scheduler_estimator_args(
        "m1", feature_gates=f.gates_for("karmada-scheduler-estimator", g)),
    "karmada-agent": lambda g: f.agent_args("m1", "https://m1:6443", region="r",
                                            feature_gates=f.gates_for("karmada-agent", g)),
    "karmada-descheduler": lambda g: f.descheduler_args(),
}


@pytest.mark.parametrize("gate", sorted(ALL_TENANT_GATES | {"Failover", "GracefulEviction"}))
def test_each_gate_appears_exactly_on_the_binaries_that_read_it(gate: str) -> None:
    """With every tenant gate on, a gate is on a binary's command line iff upstream reads it there."""
    readers = f.GATE_READERS[gate]
    for binary, build in READERS_BUILT.items():
        on = gates(build(ALL_TENANT_GATES)).get(gate) is True
        assert on == (binary in readers), f"{gate} on {binary}: rendered {on}, read upstream {binary in readers}"


def test_no_tenant_gate_rendered_when_the_fleet_enables_none() -> None:
    for binary, build in READERS_BUILT.items():
        assert not (set(gates(build(frozenset()))) & ALL_TENANT_GATES), binary


def test_gate_readers_cover_exactly_the_tenant_and_failover_gates() -> None:
    assert set(f.GATE_READERS) == ALL_TENANT_GATES | {"Failover", "GracefulEviction"}
    assert set(f.GATE_READERS) <= f.KARMADA_GATES
    for gate, readers in f.GATE_READERS.items():
        assert readers <= set(f.BINARY) - {"karmada-descheduler"}, gate


def test_a_gate_where_upstream_never_reads_it_is_refused() -> None:
    with pytest.raises(ValueError, match="read only by karmada-controller-manager, karmada-scheduler"):
        f.webhook_args(allow_no_execute_taint_policy=True, quota_enforcement=False,
                       feature_gates={"WorkloadAffinity": True})
    with pytest.raises(ValueError, match="karmada-scheduler, karmada-scheduler-estimator"):
        f.controller_manager_args(enable_failover=True, quota_enforcement=False,
                                  feature_gates={"SchedulingOvercommitProtection": True})
    with pytest.raises(ValueError, match="read only by"):
        f.scheduler_estimator_args("m1", feature_gates={"PriorityBasedScheduling": True})
    with pytest.raises(ValueError, match="read only by"):
        f.agent_args("m1", "https://m1:6443", region="r", feature_gates={"WorkloadAffinity": True})


@pytest.mark.parametrize("name", ["PriorityBasedPreemptiveScheduling", "WorkloadAfinity", "APIServerTracing"])
def test_a_name_the_binary_does_not_know_is_refused(name: str) -> None:
    """Any non-Karmada gate name makes a Karmada binary exit at flag parsing."""
    with pytest.raises(ValueError, match=r"not a feature gate of Karmada v1\.18\.2"):
        f.scheduler_args(enable_estimator=True, feature_gates={name: True})


def test_descheduler_takes_no_feature_gates_and_leases_its_fixed_name() -> None:
    args = f.descheduler_args(interval_s=60, unschedulable_threshold_s=240)
    values = f.flag_values(args)
    assert "feature-gates" not in f.KNOWN_FLAGS["karmada-descheduler"]
    assert "leader-elect-resource-name" not in f.KNOWN_FLAGS["karmada-descheduler"]
    assert f.LEADER_ELECTION["karmada-descheduler"] == f.Lease("karmada-descheduler")
    assert values["descheduling-interval"] == "60s" and values["unschedulable-threshold"] == "240s"
    assert values["health-probe-bind-address"] == f"$(POD_IP):{f.DESCHEDULER_HEALTH_PORT}"
    # its own gRPC client cert, never the scheduler's
    assert values["scheduler-estimator-cert-file"] == f.PATHS["descheduler-estimator-client.crt"]
    assert values["scheduler-estimator-ca-file"] == f.PATHS["ca.crt"]
    with pytest.raises(ValueError):
        f.descheduler_args(interval_s=0)


def test_client_health_check_env_is_rendered_by_default_and_null_keeps_upstreams() -> None:
    """client-go's HTTP/2 health check (HTTP2_READ_IDLE_TIMEOUT_SECONDS, HTTP2_PING_TIMEOUT_SECONDS): 10 s + 5 s by
    default (a hub server lost without a reset must not stall a lease renewal past the grace period); null keeps
    upstream's 30/15 and renders nothing; bounds refuse disabling the check."""
    from pydantic import ValidationError

    assert f.FailoverSettings.from_config(FailoverConfig()).client_env() == [
        {"name": "HTTP2_READ_IDLE_TIMEOUT_SECONDS", "value": "10"},
        {"name": "HTTP2_PING_TIMEOUT_SECONDS", "value": "5"}]
    unset = FailoverConfig(client_read_idle_seconds=None, client_ping_timeout_seconds=None)
    assert f.FailoverSettings.from_config(unset).client_env() == []
    tuned = f.FailoverSettings.from_config(FailoverConfig(client_read_idle_seconds=20, client_ping_timeout_seconds=7))
    assert tuned.client_env() == [{"name": "HTTP2_READ_IDLE_TIMEOUT_SECONDS", "value": "20"},
                                  {"name": "HTTP2_PING_TIMEOUT_SECONDS", "value": "7"}]
    for bad in ({"client_read_idle_seconds": 0}, {"client_read_idle_seconds": 61}, {"client_ping_timeout_seconds": 0},
                {"client_ping_timeout_seconds": 61}):
        with pytest.raises(ValidationError):
            FailoverConfig(**bad)
