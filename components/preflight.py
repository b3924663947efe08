"""Checks that need the whole validated config and must stop a run before any resource exists.

Called by `__main__.py` (so `pulumi preview/up` refuse) and by `hubctl plan` (so the offline plan
refuses the same things). Each failure is a `ConfigError` with one line naming the key and the fix.
"""

from __future__ import annotations

from components.budget import check_rto, failover_budget
from components.config import ConfigError, FleetConfig
from components.skew import skew_rows


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
