"""Checks that need the whole validated config and must stop a run before any resource exists.

Called by `__main__.py` (so `pulumi preview/up` refuse) and by `hubctl plan` (so the offline plan
refuses the same things). Each failure is a `ConfigError` with one line naming the key and the fix.

The hub stack decides what is fleet-wide: feature gates (karmada.featureGates), the scheduler's estimators and
the controller-manager's failover flags (karmada/features.py). It exports them as `fleetContract`
(`hub_contract`); every region stack checks itself against it (`check_hub_contract`), and an all-in-one stack
against its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components import versions
from components.config import ConfigError, FleetConfig
from components.fleet import whatif
from components.karmada import addons_docs, features
from components.operations import capacity, names
from components.operations.budget import check_rto, failover_budget
from components.operations.region_intents import RegionIntent, fleet_members, region_intents
from components.operations.skew import skew_rows

THIS_STACK = "this stack"
"""How an all-in-one stack's messages name its own hub side."""


def check(config: FleetConfig, stack_file: str) -> None:
    this_stack = stack_file.rsplit("/", 1)[-1].removeprefix("Pulumi.").removesuffix(".yaml")
    intents = region_intents(config, this_stack)  # a hub's region stack files must be readable and its own
    check_hub_gates(config, intents, stack_file)
    for row in skew_rows(config):
        if not row.ok:
            raise ConfigError(f"{stack_file}: karmada-hub:members: version skew: {row.component} {row.version}: "
                              f"{row.status}")
    check_tenant_groups(config, stack_file)
    if config.failover.rto_seconds is not None and config.members:
        try:
            check_rto(failover_budget(config), config.failover.rto_seconds)
        except ValueError as exc:
            raise ConfigError(f"{stack_file}: karmada-hub:{exc}") from None
    capacity.check(config, stack_file)  # first: it bounds the counts (servers, members) names.check walks
    names.check(config, stack_file)
    check_addons(config, stack_file)
    check_whatif(config, stack_file)
    if config.role == "all-in-one":  # its own hub: the same agreement a region stack checks
        check_hub_contract(config, hub_contract(config), stack_file, THIS_STACK, stack_file)
    if config.role == "region":
        check_region_identity(config, stack_file)


def check_tenant_groups(config: FleetConfig, stack_file: str) -> None:
    """Every affinity group a tenant names by region has a member to name: placement lists members by name
    (policy_docs `_affinity_region`), and a group of regions without members would be an empty cluster list, which
    Karmada reads as every cluster. Typical after removing a region's last member (docs/runbooks/members.md)."""
    if not config.members:
        return
    have = {m.region for m in config.members}
    for i, tenant in enumerate(config.tenants):
        groups = [("preferredRegions", tenant.placement.preferred_regions)]
        groups += [(f"overflow[{j}].regions", g.regions) for j, g in enumerate(tenant.placement.overflow)]
        for key, regions in groups:
            if regions and not set(regions) & have:
                raise ConfigError(f"{stack_file}: karmada-hub:tenants[{i}].placement.{key}: no member in "
                                  f"{', '.join(regions)} (tenant {tenant.name}); add a member there or remove the "
                                  "region from the list")


def check_region_identity(config: FleetConfig, stack_file: str) -> None:
    """A region stack's own CSR is one its hub accepts, and its `identityKey` is that CSR's key (else the hub's
    certificates would not work with it: one line now instead of a TLS error at the first API call). The offline
    planner has no secrets: its placeholder is not checked."""
    from cryptography.hazmat.primitives import serialization

    from components.config import IDENTITY_KEY, OFFLINE_PLACEHOLDER
    from components.kube.region_csr import check_region_csr

    assert config.region is not None and config.identity_csr is not None, "FleetConfig checks both for regions"
    stack = stack_file.rsplit("/", 1)[-1].removeprefix("Pulumi.").removesuffix(".yaml")
    fix = f"make a key and CSR with `hubctl region-key {stack}` and commit the CSR it prints"
    try:
        csr = check_region_csr(config.identity_csr, config.region)
    except ValueError as err:
        raise ConfigError(f"{stack_file}: karmada-hub:identityCsr: {err}; {fix}") from None
    key_pem = config.secrets[IDENTITY_KEY]
    if key_pem.startswith(OFFLINE_PLACEHOLDER):
        return
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError(f"{stack_file}: karmada-hub:{IDENTITY_KEY}: is not an unencrypted PEM private key; {fix}"
                          ) from None
    if key.public_key().public_bytes(*fmt) != csr.public_key.public_bytes(*fmt):
        raise ConfigError(f"{stack_file}: karmada-hub:{IDENTITY_KEY}: is not the key of karmada-hub:identityCsr; "
                          f"commit the CSR `hubctl region-key {stack}` printed with this key, or {fix}")


def check_addons(config: FleetConfig, stack_file: str) -> None:
    """The search addon caches only members the hub can read (Push members of the fleet), never Secrets."""
    if config.role == "region" or not config.karmada.addons.search.enabled:
        return
    try:
        addons_docs.search_members(config, fleet_members(config, region_intents(config, None)), stack_file)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def check_hub_gates(config: FleetConfig, intents: Sequence[RegionIntent], stack_file: str) -> None:
    """A hub switches each alpha gate on for the whole fleet: one its region stacks' tenants use may not go off
    here first (the hub is rolled out before its regions, and a policy whose gate is off is accepted and does
    nothing)."""
    from components.config import _GATE_FEATURE

    gates = set(config.karmada.feature_gates)
    for intent in intents:
        for t_i, tenant in enumerate(intent.config.tenants):
            for gate in sorted(tenant.feature_gates() - gates):
                raise ConfigError(f"{stack_file}: karmada-hub:karmada.featureGates: {gate} is off, but tenant "
                                  f"{tenant.name} of stacks/Pulumi.{intent.stack}.yaml needs it (tenants[{t_i}]."
                                  f"{_GATE_FEATURE[gate]}); keep it on while a region stack's tenant uses it")


def check_whatif(config: FleetConfig, stack_file: str) -> None:
    """Refuse a placement the what-if table shows losing a workload to a placement rule: upstream #7455 (the
    first group tried has no feasible member and no later group succeeds, so the old copy is purged), or a
    workload that can never be placed at all."""
    index = {t.name: i for i, t in enumerate(config.tenants)}
    for row in whatif.fleet_whatif(config).refused():
        where = f"{stack_file}: karmada-hub:tenants[{index[row.tenant]}].placement"
        what = f"{row.tenant}/{row.workload}"
        if row.outcome == "UNPLACEABLE":
            raise ConfigError(f"{where}: {what} can never be placed ({row.note}); give its groups more members or "
                              "shrink the workload group")
        raise ConfigError(f"{where}: {row.scenario.split(' (')[0].replace('lose', 'losing', 1)} deletes {what} "
                          f"({row.note}); give its groups a member that survives this loss, shrink the workload "
                          "group, or set failover: manual")


def check_k3s_pinned(config: FleetConfig, stack_file: str) -> str | None:
    """A protected (production) hub installs k3s only against a checksum its operator recorded
    (`hub.k3sSha256`), not against the one the same release serves next to the binary (security review 2, M5):
    refused with one line at `pulumi preview`/`up`. The offline planner installs nothing (and the example prod-hub
    carries no checksum anyone verified): there the message is returned, not raised, and not printed."""
    import os

    from components.kube.cert_schedule import OFFLINE_ENV

    hub = config.hub
    if hub is None or not hub.protect or hub.k3s_sha256:
        return None
    message = (f"{stack_file}: karmada-hub:hub.k3sSha256: a protected (production) hub installs k3s {hub.k3s_version} "
               "only against a checksum recorded here: set it to the sha256 of that release's k3s binary (its "
               "sha256sum-amd64.txt, checked against the release's signature)")
    if os.environ.get(OFFLINE_ENV) == "1":
        return message
    raise ConfigError(message)


def check_deployed(config: FleetConfig, stack_file: str) -> list[str]:
    """What this `up` would change on the running hub, from what Hetzner reports (hetzner/changes.py): refuse a
    dangerous change with one line naming the key and the fix, warn about what will roll. Runs inside the
    program only (it makes provider invokes), after `check`; returns the notices it warned about."""
    if config.hub is None or config.role == "region":
        return []
    import pulumi

    from components.hetzner import changes, live

    check_k3s_pinned(config, stack_file)
    try:
        plan = changes.plan_hub(config.hub, config.karmada.etcd, live.read_deployed(config.hub))
    except changes.UnsafeChange as exc:
        raise ConfigError(f"{stack_file}: karmada-hub:{exc.key}: {exc}") from None
    for notice in plan.notices:
        pulumi.log.warn(notice)
    return list(plan.notices)


def region_served(intent: RegionIntent) -> dict[str, Any]:
    """What the hub set up for one region stack: the members and tenant namespaces its identity may write for."""
    return {"stack": intent.stack,
            "members": sorted(f"{m.name}:{m.sync_mode}" for m in intent.members),
            "estimators": sorted(m.name for m in intent.members if m.scheduler_estimator),
            "tenants": sorted(t.namespace for t in intent.tenants)}


def hub_contract(config: FleetConfig, intents: Sequence[RegionIntent] = ()) -> dict[str, Any]:
    """What a hub stack promises its region stacks (exported as `fleetContract`): the values a region must
    agree with but cannot read from its own config, and what it serves each region."""
    dns = config.dns
    return {
        "karmadaVersion": config.karmada.version,
        "schedulerEstimators": config.karmada.scheduler_estimators,
        "featureGates": sorted(config.karmada.feature_gates),
        "priorityClasses": {c.name: c.value for c in config.karmada.priority_classes},
        "failover": features.controller_manager_failover(config.failover),
        "dns": None if dns is None else {"mode": dns.mode, "ttl": dns.record_ttl,
                                         "intervalSeconds": dns.interval_seconds,
                                         "refreshSeconds": dns.refresh_seconds,
                                         "failover": dns.failover.model_dump(by_alias=True)},
        "regions": {i.region: region_served(i) for i in intents},
    }


def check_hub_contract(config: FleetConfig, contract: Mapping[str, Any], stack_file: str, hub_stack: str,
                       hub_file: str | None = None) -> None:
    """A region stack against its hub's `fleetContract`: agents within the control plane's skew, estimators
    exactly where the hub's scheduler and descheduler dial them and on servers with room for them, the fleet's
    gates and priority table, the
    controller-manager's failover values and the budget's DNS terms equal to what the hub's binaries do."""
    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{stack_file}: karmada-hub:{key}: {message}")

    if hub_file is None and config.hub_stack is not None and config.hub_stack.plan_stack:
        hub_file = f"stacks/Pulumi.{config.hub_stack.plan_stack}.yaml"
    hub_where = hub_file or hub_stack

    hub_version = str(contract.get("karmadaVersion"))
    if hub_version not in versions.RELEASES:
        raise fail("karmada.version", f"{hub_stack} runs Karmada {hub_version}, which this checkout's compatibility "
                   "matrix (components/versions.py) does not know; update the checkout first")
    try:
        versions.check_agent(hub_version, config.karmada.version)
    except ValueError as exc:
        raise fail("karmada.version", f"{config.karmada.version} here but {hub_stack} runs Karmada {hub_version}: "
                   f"{exc} (set karmada.version: {hub_version})") from None
    _check_estimators(config, contract, fail, hub_stack, hub_where)
    _check_tenant_contract(config, contract, fail, hub_stack)
    _check_failover(config, contract, fail, hub_stack, hub_where)
    if config.role == "region":  # an all-in-one stack serves itself
        _check_served(config, contract, fail, hub_stack)
    hub_dns = contract.get("dns")
    if config.dns is None:
        return
    if hub_dns is None:
        raise fail("dns", f"{hub_stack} has no dns section (it writes no failover names); add it there first")
    # A hub from before the failover controller promises no `failover` values: a region stack may then go first
    # (it only publishes its LB address for the controller), which is the safe migration order
    # (docs/runbooks/failover-drill.md).
    hub_mode = hub_dns.get("mode", "hetzner")  # a hub from before dns.mode ran external-dns
    if hub_mode != config.dns.mode:
        raise fail("dns.mode", f"{config.dns.mode} here but {hub_stack} runs mode {hub_mode}; the region's drill "
                   f"record and the budget follow the hub (set dns.mode: {hub_mode})")
    failover = config.dns.failover.model_dump(by_alias=True) if "failover" in hub_dns else {}
    for key, value in (("ttl", config.dns.record_ttl), ("intervalSeconds", config.dns.interval_seconds),
                       ("refreshSeconds", config.dns.refresh_seconds),
                       *((f"failover.{k}", v) for k, v in failover.items())):
        hub_value = (hub_dns.get("failover") or {}).get(key.split(".", 1)[1]) if key.startswith("failover.") else (
            hub_dns.get(key))
        if hub_value != value:
            raise fail(f"dns.{key}", f"{value} here but {hub_stack} uses {hub_value}; the "
                       f"failover budget must count the hub's value (set dns.{key}: {hub_value})")


def _check_served(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub_stack: str) -> None:
    """The hub set up exactly this region's members, estimators and tenant namespaces (it reads this stack's file);
    a region ahead of its hub would be refused by the hub's RBAC halfway through its `up`."""
    served = (contract.get("regions") or {}).get(config.region or "")
    if served is None:
        raise fail("region", f"{hub_stack} does not serve region {config.region}: add this stack to its "
                   "karmada-hub:regionStacks and up it first")
    mine = region_served(RegionIntent(stack=served.get("stack", ""), region=config.region or "", config=config))
    for key in ("members", "estimators", "tenants"):
        if sorted(served.get(key) or []) != mine[key]:
            raise fail(key, f"{hub_stack} serves {', '.join(served.get(key) or []) or 'none'}, this stack declares "
                       f"{', '.join(mine[key]) or 'none'}; up the hub stack first (it reads this file)")


def _check_tenant_contract(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub_stack: str) -> None:
    """The gates and the priority table live on the hub: a region's list must equal the hub's (its estimators get
    the same gates as the hub's scheduler), and its tenants may only name priority classes the hub created."""
    hub_gates = sorted(contract.get("featureGates") or [])
    if sorted(config.karmada.feature_gates) != hub_gates:
        raise fail("karmada.featureGates", f"{sorted(config.karmada.feature_gates)} here but {hub_stack} switches on "
                   f"{hub_gates}; a gate is on or off for the whole fleet (set karmada.featureGates: {hub_gates})")
    classes: Mapping[str, int] = contract.get("priorityClasses") or {}
    estimators = bool(contract.get("schedulerEstimators"))
    for t_i, tenant in enumerate(config.tenants):
        for key, name in (("priorityClass", tenant.priority_class),
                          ("critical.priorityClass", tenant.critical and tenant.critical.priority_class)):
            if name is not None and name not in classes:
                raise fail(f"tenants[{t_i}].{key}", f"'{name}' is not in {hub_stack}'s karmada.priorityClasses "
                           f"({', '.join(classes) or 'none'}); add it there first")
        if tenant.critical is not None:
            base = classes.get(tenant.priority_class or "", 0)
            if classes[tenant.critical.priority_class] <= base:
                raise fail(f"tenants[{t_i}].critical.priorityClass", f"'{tenant.critical.priority_class}' must be "
                           f"higher than the tenant's own priority ({base})")
        if tenant.placement.overcommit_protection and not estimators:
            raise fail(f"tenants[{t_i}].placement.overcommitProtection", f"needs {hub_stack} to run "
                       "scheduler-estimators (karmada.schedulerEstimators: true)")


def _members_here(config: FleetConfig) -> list[tuple[int, Any]]:
    """The members this stack joins (a region stack joins its region's only)."""
    return [(i, m) for i, m in enumerate(config.members)
            if config.role != "region" or m.region == config.region]


def _check_estimators(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub: str, hub_where: str) -> None:
    """With estimators on, the hub's scheduler and its descheduler dial `karmada-scheduler-estimator-<cluster>`
    for every Cluster (karmada v1.18.2 pkg/scheduler/scheduler.go establishEstimatorConnections,
    pkg/descheduler/descheduler.go, pkg/estimator/client/service.go resolveCluster; the descheduler has no
    Pull-mode opt-out): each must exist, and none may run that nobody asks."""
    here = _members_here(config)
    wants = [m.name for _, m in here if m.scheduler_estimator]
    if wants and not contract.get("schedulerEstimators"):
        raise fail("members", f"{', '.join(wants)} set schedulerEstimator but {hub} has "
                   "karmada.schedulerEstimators off, so its scheduler would never ask them")
    if not contract.get("schedulerEstimators"):
        return
    for i, m in here:
        if not m.scheduler_estimator:
            raise fail(f"members[{i}].schedulerEstimator", f"{hub}'s scheduler asks every member's estimator "
                       f"(karmada.schedulerEstimators: true in {hub_where}) and would dial "
                       f"karmada-scheduler-estimator-{m.name}, which nothing creates: set schedulerEstimator: true "
                       f"on {m.name}, or karmada.schedulerEstimators: false in {hub_where}")


def _check_failover(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub: str, hub_where: str) -> None:
    """Controller-manager flags run only in the hub: a region's value for one must be the hub's, or its budget
    counts a rate or period no binary runs. Values the agents read too only bind regions with Push members."""
    hub_values: Mapping[str, Any] = contract.get("failover") or {}
    mine = features.controller_manager_failover(config.failover)
    has_push = any(m.sync_mode == "Push" for _, m in _members_here(config))
    for key, hub_value in hub_values.items():
        readers, flag = features.FAILOVER_READERS[key]
        if features.AGENT in readers and not has_push:
            continue  # this stack's agents run with its own value
        value = mine.get(key)
        same = value == hub_value if isinstance(hub_value, str) else float(value) == float(hub_value)
        if not same:
            raise fail(f"failover.{key}", f"{_fmt(value)} here but {hub}'s karmada-controller-manager runs "
                       f"{flag}={_fmt(hub_value)} for every member; the failover budget must count the hub's value "
                       f"(set failover.{key}: {_fmt(hub_value)} here, or change it in {hub_where})")


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
