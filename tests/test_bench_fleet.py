"""Smoke test of the fleet-size benchmark (bench/fleet.py): its generator at 3 members plans, and its replay
registers exactly the resources the plan recorded, each after its parent, provider and dependencies.

The benchmark itself (timings, ratios) is not part of the suite: `python -m bench.fleet`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from bench import fleet, fleet_stack
from tests.support.tools import REPO


def _stack_config(members: int) -> Any:
    return fleet_stack.stack_config(members)


@pytest.fixture(scope="module")
def fleet3() -> Any:
    from hubctl.plan import run_program

    return run_program(REPO, _stack_config(3))


def test_generated_stacks_are_valid_configs() -> None:
    from components.config import FleetConfig
    from components.operations import preflight

    for members in (3, 30):
        stack_cfg = _stack_config(members)
        raw, secrets = stack_cfg.project_values()
        config = FleetConfig.from_mapping(raw, "generated", secrets)
        preflight.check(config, "generated")
        assert len(config.members) == members
        assert {m.sync_mode for m in config.members} == {"Push", "Pull"}
        assert all(m.scheduler_estimator for m in config.members)
        assert len({m.region for m in config.members}) == 3 and len(config.tenants) == 4
    assert fleet_stack.render(30) == fleet_stack.render(30), "the generator must be deterministic"


def test_generated_fleet_of_three_plans(fleet3: Any) -> None:
    members = sorted(r.name.removeprefix("member-") for r in fleet3.records if r.type.endswith(":MemberCluster"))
    assert members == [fleet_stack.member_name(i) for i in range(3)]
    estimators = [r for r in fleet3.records if r.type == "kubernetes:apps/v1:Deployment"
                  and r.inputs["metadata"]["name"].startswith("karmada-scheduler-estimator-")]
    assert len(estimators) == 3


def _out_of_order(order: list[dict[str, Any]], urns: set[str]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    late = []
    for reg in order:
        late += [(reg["urn"], u) for u in (reg["parent"], reg["provider"], *reg["dependencies"])
                 if u and u in urns and u not in seen]
        seen.add(reg["urn"])
    return late


def test_replay_order_registers_everything_after_what_it_needs(fleet3: Any) -> None:
    urns = {r.urn for r in fleet3.records}
    order = fleet.replay_order(fleet3.records)
    assert sorted(r["urn"] for r in order) == sorted(urns)
    assert _out_of_order(order, urns) == []
    assert _out_of_order(list(reversed(order)), urns), "the check must catch an order that is wrong"


def test_replay_order_is_a_plain_copy_of_the_records(fleet3: Any) -> None:
    order = {r["urn"]: r for r in fleet.replay_order(fleet3.records)}
    for record in fleet3.records:
        reg = order[record.urn]
        for field in ("type", "name", "custom", "parent", "provider", "dependencies", "inputs", "options"):
            assert reg[field] == getattr(record, field)
    assert dataclasses.is_dataclass(fleet3.records[0])


def test_replay_registers_what_the_plan_recorded(fleet3: Any) -> None:
    """The engine side of the ratio registers the very resources the plan did: replayed under the plan's own
    recording monitor, every record comes back with the same type, parent, provider, dependencies and options
    (aliases included), and the same inputs."""
    from hubctl.plan import RecordingMonitor

    monitor = RecordingMonitor(fleet.EchoMocks())  # type: ignore[arg-type]
    fleet.replay(fleet.replay_order(fleet3.records), monitor=monitor, stack=fleet3.stack)
    replayed = monitor.records
    assert set(replayed) == {r.urn for r in fleet3.records}
    fields = ("type", "name", "custom", "parent", "provider", "dependencies", "options", "inputs")
    differ = [(r.urn, f) for r in fleet3.records for f in fields if getattr(replayed[r.urn], f) != getattr(r, f)]
    assert differ == []
    assert any("aliasParents" in r.options for r in fleet3.records), "the fleet has moved objects to replay"
