"""Checks that need the whole validated config and must stop a run before any resource exists.

Called by `__main__.py` (so `pulumi preview/up` refuse) and by `hubctl plan` (so the offline plan
refuses the same things). Each failure is a `ConfigError` with one line naming the key and the fix.

The hub stack decides what is fleet-wide (karmada/features.py): feature gates, the scheduler's estimators and the
controller-manager's failover flags. It exports them as `fleetContract` (`hub_contract`); every region stack
checks itself against it (`check_hub_contract`), and an all-in-one stack against its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components import versions
from components.config import ConfigError, FleetConfig
from components.karmada import features, flags
from components.operations.budget import check_rto, failover_budget
from components.operations.skew import skew_rows

THIS_STACK = "this stack"
"""How an all-in-one stack's messages name its own hub side."""


def check(config: FleetConfig, stack_file: str) -> None:
    for row in skew_rows(config):
        if not row.ok:
            raise ConfigError(f"{stack_file}: karmada-hub:members: version skew: {row.component} {row.version}: "
                              f"{row.status}")
    _check_declared_features(config, stack_file)
    if config.role in ("all-in-one", "hub"):
        _check_control_plane_flags(config, stack_file)
    if config.role == "all-in-one":  # its own hub: the same agreement a region stack checks
        check_hub_contract(config, hub_contract(config), stack_file, THIS_STACK, stack_file)
    if config.failover.rto_seconds is not None and config.members:
        try:
            check_rto(failover_budget(config), config.failover.rto_seconds)
        except ValueError as exc:
            raise ConfigError(f"{stack_file}: karmada-hub:{exc}") from None


def hub_contract(config: FleetConfig) -> dict[str, Any]:
    """What a hub stack promises its region stacks (exported as `fleetContract`): the values a region must
    agree with but cannot read from its own config."""
    dns = config.dns
    return {
        "karmadaVersion": config.karmada.version,
        "schedulerEstimators": config.karmada.scheduler_estimators,
        "schedulerEstimatorsForPull": config.karmada.scheduler_estimators and flags.ESTIMATORS_FOR_PULL,
        "featureGates": dict(sorted(config.karmada.features.items())),
        "failover": features.controller_manager_failover(config.failover),
        "dns": None if dns is None else {"ttl": dns.ttl, "intervalSeconds": dns.interval_seconds,
                                         "refreshSeconds": dns.refresh_seconds},
    }


def check_hub_contract(config: FleetConfig, contract: Mapping[str, Any], stack_file: str, hub_stack: str,
                       hub_file: str | None = None) -> None:
    """A region stack against its hub's `fleetContract`: agents within the control plane's skew, estimators
    exactly where the hub's scheduler dials them, tenants' and agents' feature gates as the hub runs them, the
    controller-manager's failover values and the budget's DNS terms equal to what the hub's binaries do."""
    if hub_file is None and config.hub_stack is not None and config.hub_stack.plan_stack:
        hub_file = f"stacks/Pulumi.{config.hub_stack.plan_stack}.yaml"
    hub_where = hub_file or hub_stack

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{stack_file}: karmada-hub:{key}: {message}")

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
    _check_features(config, contract, fail, hub_stack, hub_where)
    _check_failover(config, contract, fail, hub_stack, hub_where)
    hub_dns = contract.get("dns")
    if config.dns is None:
        return
    if hub_dns is None:
        raise fail("dns", f"{hub_stack} runs no external-dns (no dns section); add it there first")
    for key, value in (("ttl", config.dns.ttl), ("intervalSeconds", config.dns.interval_seconds),
                       ("refreshSeconds", config.dns.refresh_seconds)):
        if hub_dns.get(key) != value:
            raise fail(f"dns.{key}", f"{value} here but {hub_stack}'s external-dns uses {hub_dns.get(key)}; the "
                       f"failover budget must count the hub's value (set dns.{key}: {hub_dns.get(key)})")


def _members_here(config: FleetConfig) -> list[tuple[int, Any]]:
    """The members this stack joins (a region stack joins its region's only)."""
    return [(i, m) for i, m in enumerate(config.members)
            if config.role != "region" or m.region == config.region]


def _check_estimators(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub: str, hub_where: str) -> None:
    """The scheduler dials `karmada-scheduler-estimator-<cluster>` for every Cluster it asks (pkg/scheduler
    `establishEstimatorConnections`): each of those must exist, and no estimator may run that nobody asks."""
    here = _members_here(config)
    wants = [m.name for _, m in here if m.scheduler_estimator]
    if wants and not contract.get("schedulerEstimators"):
        raise fail("members", f"{', '.join(wants)} set schedulerEstimator but {hub} has "
                   "karmada.schedulerEstimators off, so its scheduler would never ask them")
    if not contract.get("schedulerEstimators"):
        return
    for i, m in here:
        if m.sync_mode == "Pull" and m.scheduler_estimator and not contract.get("schedulerEstimatorsForPull"):
            raise fail(f"members[{i}].schedulerEstimator", f"{m.name} is a Pull member, and {hub}'s scheduler skips "
                       "Pull members' estimators (--disable-scheduler-estimator-in-pull-mode): remove "
                       "schedulerEstimator")
        if m.sync_mode == "Push" and not m.scheduler_estimator:
            raise fail(f"members[{i}].schedulerEstimator", f"{hub}'s scheduler asks every Push member's estimator "
                       f"(karmada.schedulerEstimators: true in {hub_where}) and would dial "
                       f"karmada-scheduler-estimator-{m.name}, which nothing creates: set schedulerEstimator: true "
                       f"on {m.name}, or karmada.schedulerEstimators: false in {hub_where}")


def _rendered_here(config: FleetConfig) -> set[str]:
    """The Karmada binaries whose gates this stack renders besides the control plane: agents and estimators."""
    here = [m for _, m in _members_here(config)]
    return ({features.AGENT} if any(m.sync_mode == "Pull" for m in here) else set()) | (
        {features.ESTIMATOR} if any(m.scheduler_estimator for m in here) else set())


def _check_features(config: FleetConfig, contract: Mapping[str, Any], fail: Any, hub: str, hub_where: str) -> None:
    hub_gates: Mapping[str, bool] = contract.get("featureGates") or {}
    for t_i, key, gate in features.tenant_needs(config.tenants):
        if not features.effective(gate, hub_gates):
            raise fail(f"tenants[{t_i}].{key}", f"needs feature gate {gate}, which {hub} does not run (its "
                       f"{', '.join(sorted(features.GATES[gate].reads))} would ignore it): set "
                       f"karmada.features.{gate}: true in {hub_where}")
    if config.role != "region":
        return  # the hub side is this very stack
    rendered = _rendered_here(config)
    mine = config.karmada.features
    for gate in sorted(mine):
        readers = features.GATES[gate].readers
        if not readers & rendered:
            raise fail(f"karmada.features.{gate}", f"no binary this stack renders reads it "
                       f"({', '.join(sorted(readers))} run in {hub}); declare it in {hub_where} only")
    for gate in sorted(features.GATES):
        if not features.GATES[gate].readers & rendered:
            continue
        here, there = features.effective(gate, mine), features.effective(gate, hub_gates)
        if here != there:
            readers = ", ".join(sorted(features.GATES[gate].readers & rendered))
            raise fail(f"karmada.features.{gate}", f"{str(here).lower()} here but {hub} runs {gate}="
                       f"{str(there).lower()}; this stack's {readers} must agree with the hub's binaries (set "
                       f"karmada.features.{gate}: {str(there).lower()})")


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


def _check_declared_features(config: FleetConfig, stack_file: str) -> None:
    """Every declared gate is one of the release's (an unknown name makes every binary exit) and not one the
    hub's failover is built on."""
    for gate in config.karmada.features:
        key = f"{stack_file}: karmada-hub:karmada.features.{gate}"
        if gate not in features.GATES:
            raise ConfigError(f"{key}: not a feature gate of Karmada {features.GATES_RELEASE} (one of: "
                              f"{', '.join(sorted(features.GATES))}); an unknown gate makes the binaries exit")
        if gate in features.ALWAYS_ON:
            raise ConfigError(f"{key}: always on (the hub's cluster failover is built on it); remove it")


def _check_control_plane_flags(config: FleetConfig, stack_file: str) -> None:
    """The control plane's command lines refuse contradictions (e.g. a gate one flag builder cannot honour);
    build them here so such a stack stops with one line, not a traceback mid-run."""
    declared = config.karmada.features
    try:
        flags.scheduler_args(enable_estimator=config.karmada.scheduler_estimators,
                             feature_gates=features.component_gates(features.SCHEDULER, declared))
        flags.controller_manager_args(
            enable_failover=True, quota_enforcement=features.effective("FederatedQuotaEnforcement", declared),
            failover=flags.FailoverSettings.from_config(config.failover),
            feature_gates=features.component_gates(features.CM, declared))
        flags.webhook_args(allow_no_execute_taint_policy=True,
                           quota_enforcement=features.effective("FederatedQuotaEnforcement", declared),
                           feature_gates=features.component_gates(features.WEBHOOK, declared))
    except ValueError as exc:
        raise ConfigError(f"{stack_file}: karmada-hub:karmada.features: {exc}") from None
