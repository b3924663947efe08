"""The policy pack's rules run offline on a rendered plan (`python -m hubctl plan <stack> --policy`).

Same functions as CrossGuard (`policy/rules/`), so a PR can be judged without credentials or a Pulumi
CLI; what only the engine knows (provider defaults, refreshed state) is still checked by the real preview.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from policy import rules


@dataclass(frozen=True, order=True)
class Violation:
    """One finding; `urn` is None when a stack-level rule blames the stack as a whole. Advisory findings name
    what the stack opted in to and never fail the check."""

    policy: str
    urn: str | None
    message: str
    resource_type: str | None = None
    advisory: bool = False


def check_plan(plan: Mapping[str, Any]) -> list[Violation]:
    """Every violation of every rule in `plan` (the plan.json dict), sorted for stable output."""
    resources: list[rules.StackResource] = [
        (str(r["type"]), r.get("inputs") or {}, str(r["urn"])) for r in plan.get("resources", [])
    ]
    types = {urn: rtype for rtype, _, urn in resources}
    found: list[Violation] = []
    for rule in rules.RESOURCE_RULES:
        for rtype, props, urn in resources:
            found.extend(Violation(rule.name, urn, msg, rtype) for msg in rule.check(rtype, props))
    for stack_rule in rules.STACK_RULES:
        for msg, urn in stack_rule.check(resources):
            found.append(Violation(stack_rule.name, urn, msg, types.get(urn) if urn else None,
                                   advisory=stack_rule.advisory))
    return sorted(set(found), key=lambda v: (v.policy, v.urn or "", v.message))


def _resource_label(v: Violation) -> str:
    if v.urn is None:
        return "(stack)"
    name = v.urn.rsplit("::", 1)[-1]
    return f"{v.resource_type} {name}" if v.resource_type else name


def format_violations(violations: Sequence[Violation], stack: str | None = None) -> str:
    """Human-readable report: one block per violation, grouped by policy, ending in a one-line verdict."""
    where = f" in {stack}" if stack else ""
    rule_count = len(rules.RESOURCE_RULES) + len(rules.STACK_RULES)
    notices = [f"  ! {_resource_label(v)}: {v.message}" for v in violations if v.advisory]
    advisory = ["advisory:", *notices] if notices else []
    violations = [v for v in violations if not v.advisory]
    if not violations:
        return "\n".join([*advisory, f"policy: ok{where} ({rule_count} rules, 0 violations)"])
    lines: list[str] = list(advisory)
    current = None
    for v in violations:
        if v.policy != current:
            current = v.policy
            lines.append(f"{v.policy}:")
        lines.append(f"  ✗ {_resource_label(v)}")
        lines.append(f"      {v.message}")
    noun = "violation" if len(violations) == 1 else "violations"
    lines.append(f"policy: FAILED{where}: {len(violations)} mandatory {noun} ({rule_count} rules)")
    return "\n".join(lines)


def main_policy(plan_dir: str | Path, out: TextIO | None = None) -> int:
    """Check `<plan_dir>/plan.json`; print the report; 0 when clean, 1 on violations or an unreadable plan."""
    out = out or sys.stdout
    path = Path(plan_dir)
    path = path if path.suffix == ".json" else path / "plan.json"
    try:
        plan = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"policy: cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}", file=out)
        return 1
    violations = check_plan(plan)
    print(format_violations(violations, plan.get("stack")), file=out)
    return 1 if any(not v.advisory for v in violations) else 0
