"""Checks that need the whole validated config and must stop a run before any resource exists.

Called by `__main__.py` (so `pulumi preview/up` refuse) and by `hubctl plan` (so the offline plan
refuses the same things). Each failure is a `ConfigError` with one line naming the key and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components import versions
from components.config import ConfigError, FleetConfig
from components.operations.budget import check_rto, failover_budget
from components.operations.skew import skew_rows


def check(config: FleetConfig, stack_file: str) -> None:
    for row in skew_rows(config):
        if not row.ok:
            raise ConfigError(f"{stack_file}: karmada-hub:members: version skew: {row.component} {row.version}: "
                              f"{row.status}")
    if config.failover.rto_seconds is not None and config.members:
        try:
            check_rto(failover_budget(config), config.failover.rto_seconds)
        except ValueError as exc:
            raise ConfigError(f"{stack_file}: karmada-hub:{exc}") from None


def check_deployed(config: FleetConfig, stack_file: str) -> list[str]:
    """What this `up` would change on the running hub, from what Hetzner reports (hetzner/changes.py): refuse a
    dangerous change with one line naming the key and the fix, warn about what will roll. Runs inside the
    program only (it makes provider invokes), after `check`; returns the notices it warned about."""
    if config.hub is None or config.role == "region":
        return []
    import pulumi

    from components.hetzner import changes, live

    try:
        plan = changes.plan_hub(config.hub, config.karmada.etcd, live.read_deployed(config.hub))
    except changes.UnsafeChange as exc:
        raise ConfigError(f"{stack_file}: karmada-hub:{exc.key}: {exc}") from None
    for notice in plan.notices:
        pulumi.log.warn(notice)
    return list(plan.notices)


def hub_contract(config: FleetConfig) -> dict[str, Any]:
    """What a hub stack promises its region stacks (exported as `fleetContract`): the values a region must
    agree with but cannot read from its own config."""
    dns = config.dns
    return {
        "karmadaVersion": config.karmada.version,
        "schedulerEstimators": config.karmada.scheduler_estimators,
        "dns": None if dns is None else {"ttl": dns.ttl, "intervalSeconds": dns.interval_seconds,
                                         "refreshSeconds": dns.refresh_seconds},
    }


def check_hub_contract(config: FleetConfig, contract: Mapping[str, Any], stack_file: str, hub_stack: str) -> None:
    """A region stack against its hub's `fleetContract`: agents within the control plane's skew, estimators
    only if the hub's scheduler asks them, and the budget's DNS terms equal to what the hub's external-dns does."""
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
    wants = [m.name for m in config.members if m.scheduler_estimator]
    if wants and not contract.get("schedulerEstimators"):
        raise fail("members", f"{', '.join(wants)} set schedulerEstimator but {hub_stack} has "
                   "karmada.schedulerEstimators off, so its scheduler would never ask them")
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
