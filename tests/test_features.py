"""Fleet-wide settings beside the gates: which binary reads each failover flag (components/karmada/features.py),
and where each gate of flags.GATE_READERS is read (the sources docs/upstream-contract.md cites)."""

from __future__ import annotations

from components.config import FailoverConfig
from components.karmada import features, flags


def test_every_gate_with_readers_has_its_upstream_call_sites() -> None:
    assert set(features.GATE_SOURCES) == set(flags.GATE_READERS)
    assert all(features.GATE_SOURCES.values())


def test_failover_readers_name_the_flags_the_builders_render() -> None:
    cm = set(flags.flag_names(flags.controller_manager_args(enable_failover=True, quota_enforcement=False)))
    agent = set(flags.flag_names(flags.agent_args("a", "https://a.example:6443", region="r")))
    for key, (readers, flag) in features.FAILOVER_READERS.items():
        name = flag.removeprefix("--")
        assert (name in cm) == (features.CM in readers), key
        assert (name in agent) == (features.AGENT in readers), key


def test_the_hub_contract_carries_exactly_the_controller_manager_values() -> None:
    values = features.controller_manager_failover(FailoverConfig(resource_eviction_rate=2))
    assert values["resourceEvictionRate"] == 2 and "clusterLeaseDuration" not in values
    assert set(values) == {k for k, (readers, _) in features.FAILOVER_READERS.items() if features.CM in readers}
