"""Members join in parallel: the `pulumi up` critical path of a fleet does not grow with its members.

The graph is plan.json's (hubctl/graph.py): every resource waits for its dependencies, its provider (explicit,
or the engine's default one, now in plan.json) and its parent; readiness gates weigh their own timeout. The
same chain, step for step, bounds a 3-member and a 100-member first `up`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bench import fleet_stack
from hubctl import graph
from hubctl.plan import plan_document, run_program
from tests.support.tools import REPO

MEMBER = re.compile(r"eu-(fsn|hel|nbg)-m\d{3}")


def _plan(members: int) -> dict[str, Any]:
    return json.loads(json.dumps(plan_document(run_program(REPO, fleet_stack.stack_config(members)))))


@pytest.fixture(scope="module")
def fleets() -> dict[int, dict[str, Any]]:
    return {n: _plan(n) for n in (3, 100)}


def _shape(path: graph.CriticalPath) -> list[str]:
    """The chain with member names blanked: which member's steps carry it is a tie, not a difference."""
    return [MEMBER.sub("<member>", urn.split("::", 2)[2]) for urn in path.urns]


def test_the_critical_path_is_the_same_for_3_and_100_members(fleets: dict[int, dict[str, Any]]) -> None:
    small, large = (graph.steps(fleets[n]) for n in (3, 100))
    assert len(large) > 8 * len(small) / 3, "the 100-member fleet should have far more resources"
    a, b = graph.critical_path(small), graph.critical_path(large)
    assert (a.seconds, a.steps) == (b.seconds, b.steps)
    assert _shape(a) == _shape(b)


def test_the_critical_path_runs_through_the_gates_and_the_providers(fleets: dict[int, dict[str, Any]]) -> None:
    steps = graph.steps(fleets[3])
    path = graph.critical_path(steps)
    on_path = {steps[u].type for u in path.urns}
    assert graph.READINESS_TYPE in on_path, "a readiness gate waits for the API; it must be on the chain"
    assert {"pulumi:providers:kubernetes", "pulumi:providers:hcloud"} <= on_path
    by_urn = {r["urn"]: r for r in fleets[3]["resources"]}
    # readiness gates are the dynamic resources with a timeout (a Pull member's PullJoin is dynamic too)
    gates = [u for u in path.urns if steps[u].type == graph.READINESS_TYPE and "timeoutSeconds" in by_urn[u]["inputs"]]
    assert [u.rsplit("::", 1)[1] for u in gates] == ["hub-api-ready", "karmada-apiserver-ready"]
    # the gates weigh their own timeout (worst case), read from the plan
    assert sum(steps[u].seconds for u in gates) == sum(by_urn[u]["inputs"]["timeoutSeconds"] for u in gates)


def test_members_that_waited_for_each_other_would_be_caught(fleets: dict[int, dict[str, Any]]) -> None:
    """The check above can fail: make each member's provider wait for everything of the previous member and the
    path grows with the members."""
    plan = fleets[3]
    components = sorted(r["urn"] for r in plan["resources"] if r["type"].endswith(":MemberCluster"))
    assert len(components) == 3
    children = {c: [r["urn"] for r in plan["resources"] if r["parent"] == c] for c in components}
    provider_of = {c: next(u for u in children[c] if "pulumi:providers:kubernetes" in u) for c in components}
    waits = {provider_of[c]: children[components[i - 1]] for i, c in enumerate(components) if i}
    chained = {**plan, "resources": [{**r, "dependencies": [*r["dependencies"], *waits.get(r["urn"], [])]}
                                     for r in plan["resources"]]}
    assert graph.critical_path(graph.steps(chained)).seconds > graph.critical_path(graph.steps(plan)).seconds


def test_every_wait_is_on_a_resource_of_the_plan(fleets: dict[int, dict[str, Any]]) -> None:
    plan = fleets[3]
    broken = {**plan, "resources": [r for r in plan["resources"] if not r["name"].startswith("default_")]}
    with pytest.raises(ValueError, match="which the plan does not have"):
        graph.steps(broken)


def test_a_cycle_is_refused() -> None:
    steps = {"a": graph.Step("a", "t", 1.0, ("b",)), "b": graph.Step("b", "t", 1.0, ("a",))}
    with pytest.raises(ValueError, match="cycle"):
        graph.critical_path(steps)


def test_parallelism_bounds_a_large_fleet_too(fleets: dict[int, dict[str, Any]]) -> None:
    """With `--parallel` P the first `up` takes at least max(critical path, work / P): printed for the docs."""
    steps = graph.steps(fleets[100])
    path = graph.critical_path(steps).seconds
    assert graph.lower_bound_seconds(steps, 10_000) == path
    assert graph.lower_bound_seconds(steps, 1) == graph.work_seconds(steps) > path
