"""The fleets the contract checks run on: dev (all-in-one, dns.mode self-hosted), dev in dns.mode hetzner (the
external-dns path, which no example stack runs any more), and prod-hub with every region stack planned against
prod-hub's outputs (the offline stand-in for their StackReference, as tests/test_stack_plans.py does)."""

from __future__ import annotations

from typing import Any

import pytest

from hubctl.commands import load_config
from hubctl.plan import run_program
from tests.contract.fleet import Fleet
from tests.support.tools import REPO

PROD_REGIONS = ("prod-fsn1", "prod-hel1", "prod-ash")


@pytest.fixture(scope="session")
def dev_fleet(rendered_dev: Any) -> Fleet:
    return Fleet.from_plans("dev", {"dev": rendered_dev})


@pytest.fixture(scope="session")
def prod_fleet(rendered_prod_hub: Any) -> Fleet:
    plans = {"prod-hub": rendered_prod_hub}
    for stack in PROD_REGIONS:
        cfg, config = load_config(REPO, stack)
        assert config.hub_stack is not None
        plans[stack] = run_program(REPO, cfg, {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()})
    return Fleet.from_plans("prod", plans)


@pytest.fixture(scope="session")
def hetzner_fleet(rendered_dev_hetzner: Any) -> Fleet:
    return Fleet.from_plans("dev-hetzner", {"dev": rendered_dev_hetzner})


@pytest.fixture(scope="session", params=["dev", "prod", "hetzner"])
def fleet(request: pytest.FixtureRequest) -> Fleet:
    return request.getfixturevalue(f"{request.param}_fleet")
