"""The version-skew report: every component/version pair the fleet depends on, and whether it is allowed.

Config validation already refuses a stack whose hub or members fall outside the matrix, one error at a
time. This room lists *all* pairs at once (for `hubctl plan` and PR comments), so an upgrade can be
planned by looking at one table. The ranges live only in `components/versions.py`; this
module calls its `check_*` functions and reports what they say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components import versions

if TYPE_CHECKING:  # config imports pulumi; the report must stay importable without it
    from components.config import FleetConfig


@dataclass(frozen=True)
class SkewRow:
    """One pair: `component` at `version`, checked against `against`; `problem` is None when allowed."""

    component: str
    version: str
    against: str
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def status(self) -> str:
        return "ok" if self.problem is None else self.problem


@dataclass(frozen=True)
class MemberVersions:
    """What the skew check needs of a member, as plain values."""

    name: str
    kubernetes_version: str
    sync_mode: str = "Push"
    agent_version: str | None = None
    """karmada-agent image tag (Pull only); None means the Karmada version, which is what we deploy."""


def _problem(check: Callable[[], None]) -> str | None:
    try:
        check()
    except ValueError as exc:
        return str(exc)
    return None


def _range(karmada: str, which: str) -> str:
    """`v1.28..v1.35` from the matrix, or `unknown` if the Karmada version is not in it."""
    try:
        lo, hi = getattr(versions.release(karmada), which)
    except ValueError:
        return "unknown"
    return f"{lo}..{hi}"


def version_skew_rows(karmada: str, hub_k3s: str | None, members: Iterable[MemberVersions]) -> list[SkewRow]:
    """The skew rows from plain version strings (lets tests try versions that config validation refuses)."""
    rows: list[SkewRow] = []
    known = _problem(lambda: versions.release(karmada))
    if known is not None:
        rows.append(SkewRow("Karmada control plane", karmada, "compatibility matrix", known))
    if hub_k3s is not None:
        rows.append(SkewRow(
            "hub k3s", hub_k3s, f"Karmada {karmada} host {_range(karmada, 'hub_kubernetes')}",
            _problem(lambda: versions.check_hub_kubernetes(karmada, hub_k3s)),
        ))
    member_range = f"Karmada {karmada} members {_range(karmada, 'member_kubernetes')}"
    for m in members:
        rows.append(SkewRow(
            f"member {m.name} Kubernetes", m.kubernetes_version, member_range,
            _problem(lambda m=m: versions.check_member_kubernetes(karmada, m.kubernetes_version)),
        ))
        if m.sync_mode == "Pull":
            agent = m.agent_version or karmada
            rows.append(SkewRow(
                f"karmada-agent on {m.name}", agent, f"control plane {karmada}",
                _problem(lambda agent=agent: versions.check_agent(karmada, agent)),
            ))
    return rows


def skew_rows(config: FleetConfig) -> list[SkewRow]:
    """One row per pair in the stack: hub k3s, each member's Kubernetes, each Pull member's agent.

    The agent's image tag is the Karmada version (this program deploys them together), so its row can
    only fail if the matrix's agent rule changes; it is listed so the table shows every running piece.
    """
    return version_skew_rows(
        config.karmada.version,
        None if config.hub is None else config.hub.k3s_version,
        [MemberVersions(m.name, m.kubernetes_version, m.sync_mode) for m in config.members],
    )


def format_skew(rows: Iterable[SkewRow]) -> str:
    """A fixed-width table: component, version, checked against, status (ok or the problem)."""
    listed = list(rows)
    header = ("component", "version", "against", "status")
    cells = [header] + [(r.component, r.version, r.against, r.status) for r in listed]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    lines = []
    for i, c in enumerate(cells):
        lines.append("  ".join(f"{c[j]:<{widths[j]}}" for j in range(3)) + f"  {c[3]}")
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  ------")
    bad = sum(not r.ok for r in listed)
    lines.append(f"{len(listed)} pairs, {bad} problem{'s' if bad != 1 else ''}")
    return "\n".join(lines)
