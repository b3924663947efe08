"""The hub/region contract is one declaration (components/roles.py HUB_OUTPUTS), and the plans keep to it."""

from __future__ import annotations

from typing import Any

from components.roles import HUB_OUTPUTS, stand_in
from hubctl.plan import REDACTED


def test_the_hub_stack_exports_exactly_the_declared_outputs_with_their_secrecy(rendered_prod_hub: Any) -> None:
    assert set(rendered_prod_hub.outputs) == set(HUB_OUTPUTS)
    for name, secret in HUB_OUTPUTS.items():
        assert (rendered_prod_hub.outputs[name] == REDACTED) is secret, name


def test_all_in_one_exports_the_hub_outputs_and_its_regions(rendered_dev: Any) -> None:
    assert set(rendered_dev.outputs) == {*HUB_OUTPUTS, "regionalLoadBalancers", "pullClusterIds"}


def test_the_offline_stand_in_reads_only_declared_outputs() -> None:
    planned = {name: f"value-of-{name}" for name in HUB_OUTPUTS} | {"somethingElse": "x"}
    outputs, secret = stand_in(planned)
    assert set(outputs) == set(HUB_OUTPUTS)
    assert secret == sorted(n for n, s in HUB_OUTPUTS.items() if s)
