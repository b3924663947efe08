"""What `hubctl plan` and `hubctl budget` do: load and check the stack, run, write, summarise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.config import ConfigError, FleetConfig
from components.operations import preflight
from hubctl import summary
from hubctl.plan import run_program, write_plan
from hubctl.stackfile import StackConfig, read_stack


def load_config(repo: Path, stack: str) -> tuple[StackConfig, FleetConfig]:
    """The same validation `pulumi up` does, before anything runs or is written."""
    stack_cfg = read_stack(repo, stack)
    raw, secrets = stack_cfg.project_values()
    rel = f"stacks/Pulumi.{stack}.yaml"
    config = FleetConfig.from_mapping(raw, rel, secrets)
    preflight.check(config, rel)
    return stack_cfg, config


def hub_stack_outputs(repo: Path, config: FleetConfig,
                      stack_file: str) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Offline stand-in for a region stack's StackReference: the hub stack's own offline plan outputs,
    after the same agreement check the region role runs on the real reference."""
    if config.hub_stack is None:
        return {}
    plan_stack = config.hub_stack.plan_stack
    if plan_stack is None:
        raise ConfigError(f"karmada-hub:hubStack.planStack: needed offline to stand in for {config.hub_stack.stack}")
    hub_cfg, _ = load_config(repo, plan_stack)
    hub_plan = run_program(repo, hub_cfg)
    preflight.check_hub_contract(config, hub_plan.raw_outputs.get("fleetContract") or {}, stack_file,
                                 config.hub_stack.stack)
    return {config.hub_stack.stack: hub_plan.as_stack_reference()}


def run_plan(repo: Path, stack: str, out_root: Path, policy: bool = False, quiet: bool = False,
             as_json: bool = False) -> int:
    stack_cfg, config = load_config(repo, stack)
    plan = run_program(repo, stack_cfg, hub_stack_outputs(repo, config, f"stacks/Pulumi.{stack}.yaml"))
    out_dir = out_root / stack
    files = write_plan(plan, out_dir)
    if as_json:
        import json

        print(json.dumps(summary.as_json(plan, config, out_dir), indent=2, sort_keys=True))
    elif not quiet:
        print(summary.render(plan, config, out_dir, files))
    if policy:
        import sys

        from hubctl.policy_check import main_policy

        return main_policy(out_dir, sys.stderr if as_json else None)  # stdout stays one JSON document
    return 0


def run_budget(repo: Path, stack: str) -> int:
    from components.operations.budget import failover_budget, format_budget

    _, config = load_config(repo, stack)
    print(format_budget(failover_budget(config)))
    return 0
