"""What the mutation run covers: the safety-critical modules, each with the focused tests that exercise it.

A target names its files (globs from the repo root), optionally the definitions inside a file that are in scope
(top-level functions, classes, `Class.method`, module constants; a renamed one stops the run with a line naming
it), and the tests that are run against each of its mutants: unit tests only, so one mutant costs seconds. The
integration tests (real cloud-init, etcd, network namespaces) are left out on purpose: they cost tens of
seconds each, and anything they alone would catch is worth a unit test.

`NAMED` holds the spot check's hand-made mutants (issue 28): exact text replacements that must each fail at least
one test of their target. A replacement that no longer matches the code is reported as stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Target:
    name: str
    title: str
    paths: tuple[str, ...]
    tests: tuple[str, ...]
    scope: dict[str, tuple[str, ...]] = field(default_factory=dict)
    select: str = ""
    """A pytest `-k` expression over `tests` (empty: all of them)."""

    @property
    def pytest_args(self) -> tuple[str, ...]:
        return (*self.tests, *(("-k", self.select) if self.select else ()))

    def files(self, root: Path) -> list[str]:
        out: list[str] = []
        for pattern in self.paths:
            matched = sorted(str(p.relative_to(root)) for p in root.glob(pattern) if p.is_file())
            if not matched:
                raise SystemExit(f"bench/mutation/targets.py: target {self.name}: nothing matches {pattern}")
            out += [m for m in matched if m not in out and not m.endswith("__init__.py")]
        return out


@dataclass(frozen=True)
class NamedMutant:
    target: str
    name: str
    path: str
    old: str
    new: str


TARGETS: tuple[Target, ...] = (
    Target(
        "pki", "PKI and signing",
        ("components/karmada/pki_spec.py", "components/kube/tls.py"),
        ("tests/test_pki_spec.py", "tests/test_tls.py"),
    ),
    Target(
        "flags", "Component flags",
        ("components/karmada/flags/*.py",),
        ("tests/test_flags.py", "tests/test_features.py", "tests/test_flag_defaults.py",
         "tests/test_flag_tables.py"),
        # table.py: its parser only. KNOWN_FLAGS / REMOVED_FLAGS (and the sets they are built from) are the tests'
        # record of what the pinned binaries accept; the program never reads them, and a flag it renders that is
        # missing there fails tests/test_flags.py.
        scope={"components/karmada/flags/table.py": ("_FLAG", "flag_name", "flag_names", "flag_values", "env_refs",
                                                     "file_paths")},
    ),
    Target(
        "cloud-init", "cloud-init and the hub firewall",
        ("components/hetzner/cloud_init.py", "components/hetzner/hub_cluster.py"),
        ("tests/test_cloud_init_unit.py",),
        scope={"components/hetzner/hub_cluster.py": ("K3S_API_PORT", "KARMADA_API_NODE_PORT", "karmada_api_cidrs",
                                                     "firewall_rules")},
    ),
    Target(
        "netpol-rbac", "NetworkPolicies and RBAC builders",
        ("components/kube/flows.py", "components/trust/network_policy.py", "components/trust/region_rbac.py"),
        ("tests/test_region_rbac.py",),
        scope={"components/trust/network_policy.py": ("apiserver_clients", "host_workloads", "namespaces",
                                                      "host_network_policies")},
    ),
    Target(
        "config", "Config bounds",
        ("components/config.py",),
        ("tests/test_config_bounds.py", "tests/test_config.py"),
        scope={"components/config.py": (
            "Seconds", "_network", "_NOT_PUBLIC", "GLOBAL_V6", "ADMIN_MAX_PUBLIC", "public_addresses",
            "FirewallConfig", "NetworkConfig", "SshKeyConfig", "HubConfig", "ReplicaConfig", "EtcdBackupConfig",
            "_five_field_cron", "ETCD_MAX_QUOTA", "EtcdConfig", "PkiConfig", "HealthCheckConfig",
            "DnsFailoverConfig", "DnsConfig", "FailoverConfig", "FleetConfig._cross_checks",
            "FleetConfig._check_dns", "FleetConfig._require_secret")},
        select="not test_cli_",
    ),
    Target(
        "budget", "Failover budget",
        ("components/operations/budget.py",),
        ("tests/test_budget_terms.py", "tests/test_budget.py"),
        scope={"components/operations/budget.py": (
            "PROBE_TIMEOUT_SECONDS", "SCHEDULING_SECONDS", "EVICTION_WORKERS", "EXTERNAL_DNS_EVENT_FLOOR_SECONDS",
            "EXTERNAL_DNS_TICK_SECONDS", "EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS", "CONTROLLER_DECISION_SECONDS",
            "API_WRITE_SECONDS", "ZONE_UPDATE_SECONDS", "SECONDARY_TRANSFER_SECONDS", "_Clock",
            "Budget",
            "push_detection_seconds", "pull_lease_detection_seconds", "eviction_queue_seconds",
            "max_toleration_seconds", "lb_detection_seconds", "_detection_term", "_dispatch_term", "_mode_terms",
            "compute_budget", "TrafficBudget", "traffic_budget", "TenantRto", "FailoverReport",
            "tenant_rtos", "failover_budget", "check_rto")},
    ),
    Target(
        "dns-failover", "DNS failover controller decisions",
        ("agents/traffic_failover.py",),
        ("tests/test_traffic_failover_decisions.py",),
        scope={"agents/traffic_failover.py": (
            "ABSENT_LISTS_BEFORE_DELETE", "REGION_GRACE_PERIODS", "CLOCK_SKEW_SECONDS", "published_hosts",
            "REGION_CONFIGMAP_PREFIX", "region_addresses", "Counter", "obs_key", "majority", "decide", "pending",
            "region_record_name", "region_dnsendpoint", "dnsendpoint", "endpoint_state", "Controller.merge_regions",
            "Controller.fresh_votes", "Controller.decide_all", "Controller.write_decision",
            "Controller.write_region_records", "Controller.absent_names")},
    ),
    Target(
        "etcd-prepare", "etcd member prepare",
        ("agents/etcd_member_prepare.py",),
        ("tests/test_etcd_member_prepare.py",),
    ),
    Target(
        "backup", "Backup encryption and upload",
        ("agents/etcd_backup_upload.py",),
        ("tests/test_etcd_backup_unit.py", "tests/test_etcd_backup.py"),
        select="not rendered and not memory and not backup_client_cert",
    ),
)

NAMED: tuple[NamedMutant, ...] = (
    NamedMutant("cloud-init", "k3s write-kubeconfig-mode 0600 -> 0644", "components/hetzner/cloud_init.py",
                '"write-kubeconfig-mode": "0600"', '"write-kubeconfig-mode": "0644"'),
    NamedMutant("cloud-init", "SSH firewall rule given the API CIDRs", "components/hetzner/hub_cluster.py",
                "ssh = [str(c) for c in hub.firewall.ssh_cidrs]", "ssh = [str(c) for c in hub.firewall.api_cidrs]"),
    NamedMutant("config", "backup encryption key minimum length lowered", "components/config.py",
                "if len(self.secrets[backup.encryption_key_config_key].strip()) < 32:",
                "if len(self.secrets[backup.encryption_key_config_key].strip()) < 16:"),
    NamedMutant("etcd-prepare", 'the "formed cluster" decision: any member started -> all started',
                "agents/etcd_member_prepare.py",
                'if state.kind == "members" and any(m.client_urls for m in state.members):',
                'if state.kind == "members" and all(m.client_urls for m in state.members):'),
    NamedMutant("cloud-init", "metadata guard's owner match inverted", "components/hetzner/cloud_init.py",
                "-m owner ! --uid-owner 0", "-m owner --uid-owner 0"),
)


def by_name(names: list[str] | None) -> list[Target]:
    if not names:
        return list(TARGETS)
    known = {t.name: t for t in TARGETS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown target {', '.join(unknown)} (one of: {', '.join(known)})")
    return [known[n] for n in names]
