"""Tests for the version-skew report; versions outside the range are derived from the matrix, not hard-coded."""

from __future__ import annotations

from components import versions
from components.operations.skew import MemberVersions, SkewRow, format_skew, skew_rows, version_skew_rows
from tests.support.tools import load_stack

KARMADA = versions.KARMADA_VERSION
REL = versions.release(KARMADA)


def _minor(bound: str, delta: int, suffix: str = "") -> str:
    """A patch version `delta` minors away from a matrix bound, e.g. (`v1.28`, -1) -> `v1.27.0`."""
    major, minor = versions.minor_of(bound)
    return f"v{major}.{minor + delta}.0{suffix}"


def test_dev_stack_rows_all_ok() -> None:
    # dev: hub k3s v1.34.1+k3s1, dev-fsn1-a Push v1.33.4, dev-hel1-a Pull v1.34.1 (+ its agent) -> 4 rows
    rows = skew_rows(load_stack())
    assert [(r.component, r.version) for r in rows] == [
        ("hub k3s", "v1.34.1+k3s1"),
        ("member dev-fsn1-a Kubernetes", "v1.33.4"),
        ("member dev-hel1-a Kubernetes", "v1.34.1"),
        ("karmada-agent on dev-hel1-a", KARMADA),
    ]
    assert all(r.ok for r in rows), format_skew(rows)
    lo, hi = REL.member_kubernetes
    assert rows[1].against == f"Karmada {KARMADA} members {lo}..{hi}"


def test_range_bounds_are_inclusive() -> None:
    lo, hi = REL.member_kubernetes
    members = [MemberVersions("a", _minor(lo, 0)), MemberVersions("b", _minor(hi, 0))]
    hub = _minor(REL.hub_kubernetes[1], 0, "+k3s1")
    assert all(r.ok for r in version_skew_rows(KARMADA, hub, members))


def test_member_out_of_range_both_sides() -> None:
    lo, hi = REL.member_kubernetes
    below, above = _minor(lo, -1), _minor(hi, +1)
    rows = version_skew_rows(KARMADA, None, [MemberVersions("old", below), MemberVersions("new", above)])
    assert [r.ok for r in rows] == [False, False]
    assert rows[0].problem == (
        f"Kubernetes {below} is outside what Karmada {KARMADA} supports for members ({lo}..{hi})"
    )
    assert rows[1].status.startswith(f"Kubernetes {above} is outside")


def test_hub_out_of_range() -> None:
    hub = _minor(REL.hub_kubernetes[1], +1, "+k3s1")
    [row] = version_skew_rows(KARMADA, hub, [])
    assert row.component == "hub k3s" and not row.ok
    assert "supports as host" in row.status


def test_agent_rows_only_for_pull_members() -> None:
    rows = version_skew_rows(KARMADA, None, [MemberVersions("p", "v1.33.0", "Push"), MemberVersions("q", "v1.33.0",
                                                                                                     "Pull")])
    assert [r.component for r in rows] == ["member p Kubernetes", "member q Kubernetes", "karmada-agent on q"]


def test_agent_skew() -> None:
    major, minor = versions.minor_of(KARMADA)
    skew = REL.agent_skew_minors
    trailing_ok = f"v{major}.{minor - skew}.0"  # exactly agent_skew_minors behind: allowed
    too_old = f"v{major}.{minor - skew - 1}.0"  # one more: refused
    newer = f"v{major}.{minor + 1}.0"  # never ahead of the control plane
    cases = {trailing_ok: True, too_old: False, newer: False, KARMADA: True}
    for agent, ok in cases.items():
        [_, row] = version_skew_rows(KARMADA, None, [MemberVersions("q", "v1.33.0", "Pull", agent)])
        assert row.ok is ok, (agent, row.status)


def test_unknown_karmada_version() -> None:
    rows = version_skew_rows("v1.99.0", "v1.34.1+k3s1", [MemberVersions("a", "v1.33.0")])
    assert rows[0].component == "Karmada control plane" and not rows[0].ok
    assert "not in the compatibility matrix" in rows[0].status
    assert all(not r.ok for r in rows)
    assert "unknown" in rows[1].against


def test_format_skew() -> None:
    rows = [
        SkewRow("hub k3s", "v1.34.1+k3s1", "host", None),
        SkewRow("member x Kubernetes", "v1.20.0", "members", "too old"),
    ]
    lines = format_skew(rows).splitlines()
    assert lines[0].split() == ["component", "version", "against", "status"]
    assert lines[2].split()[-1] == "ok"
    assert lines[3].endswith("  too old")
    # the status column starts at the same offset on every row
    col = lines[0].index("status")
    assert lines[2][col:] == "ok" and lines[3][col:] == "too old"
    assert lines[-1] == "2 pairs, 1 problem"
