"""Suite-wide fixtures: the dev stack's raw config and one offline run of the real program."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.tools import REPO, load_dev_raw, require_tool

__all__ = ["REPO", "require_tool"]


@pytest.fixture(scope="session")
def _dev_raw_pristine() -> tuple[dict[str, Any], frozenset[str]]:
    return load_dev_raw(REPO)


@pytest.fixture
def dev_raw(_dev_raw_pristine: tuple[dict[str, Any], frozenset[str]]) -> tuple[dict[str, Any], frozenset[str]]:
    """`(raw, secret_keys)` of stacks/Pulumi.dev.yaml; a fresh deep copy per test, safe to mutate."""
    raw, secrets = _dev_raw_pristine
    return copy.deepcopy(raw), secrets


@pytest.fixture(scope="session")
def rendered_dev() -> Any:
    """The dev stack run once under the recording mock monitor (`hubctl.plan.Plan`).

    `records[*].inputs` are unredacted with secret wrappers; use `hubctl.mocks.unwrap` to read them.
    """
    from hubctl.plan import run_program
    from hubctl.stackfile import read_stack

    return run_program(REPO, read_stack(REPO, "dev"))


@pytest.fixture(scope="session")
def rendered_prod_hub() -> Any:
    """prod-hub run once offline; region-stack tests read its outputs as their StackReference."""
    from hubctl.plan import run_program
    from hubctl.stackfile import read_stack

    return run_program(REPO, read_stack(REPO, "prod-hub"))


@pytest.fixture
def tool() -> Any:
    """`tool("openssl")` inside a test: the same as `require_tool`, as a fixture for convenience."""
    return require_tool


@pytest.fixture(scope="session")
def rendered_prod(rendered_prod_hub: Any) -> dict[str, Any]:
    """prod-hub, then each region stack planned with the hub plan's outputs as its StackReference."""
    from hubctl.commands import load_config
    from hubctl.plan import run_program

    plans = {"prod-hub": rendered_prod_hub}
    for stack in ("prod-fsn1", "prod-hel1", "prod-ash"):
        cfg, config = load_config(REPO, stack)
        assert config.hub_stack is not None
        plans[stack] = run_program(REPO, cfg, {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()})
    return plans
