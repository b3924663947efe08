"""What the read commands do (plan, budget, skew, policy): load and check the stack, run, write, report.

Each command returns an exit code (hubctl/errors.py) and raises only errors the top-level handler turns
into one line. Output goes through `hubctl.output.Output`: rich on a terminal, plain when piped, JSON with
`--json`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from components.config import ConfigError, FleetConfig
from components.operations import preflight
from hubctl import report
from hubctl.errors import EXIT_FINDINGS, EXIT_OK, UserError
from hubctl.output import Output, Table
from hubctl.plan import assert_no_secrets, run_program, write_plan
from hubctl.stackfile import StackConfig, read_stack

OUT_MARKER = ".hubctl-plan"
"""Written into every directory `hubctl plan` makes; a directory without it is never replaced."""
_PLAN_ENTRIES = frozenset({"plan.json", "manifests", "cloud-init", report.REPORT_FILE, OUT_MARKER})


def load_config(repo: Path, stack: str, run_preflight: bool = True) -> tuple[StackConfig, FleetConfig]:
    """The same validation `pulumi up` does, before anything runs or is written."""
    stack_cfg = read_stack(repo, stack)
    raw, secrets = stack_cfg.project_values()
    rel = f"stacks/Pulumi.{stack}.yaml"
    config = FleetConfig.from_mapping(raw, rel, secrets)
    if run_preflight:
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
        raise ConfigError(f"{stack_file}: karmada-hub:hubStack.planStack: needed offline to stand in for "
                          f"{config.hub_stack.stack} (the name of the hub's stack file, like prod-hub)")
    from hubctl.stackfile import stack_file as stack_path

    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", plan_stack) or not stack_path(repo, plan_stack).is_file():
        from components.config import did_you_mean

        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
        raise ConfigError(f"{stack_file}: karmada-hub:hubStack.planStack: no stack file {plan_stack[:100]} in "
                          f"stacks/{did_you_mean(plan_stack, known)}; name the hub's stack file")
    hub_cfg, _ = load_config(repo, plan_stack)
    hub_plan = run_program(repo, hub_cfg)
    preflight.check_hub_contract(config, hub_plan.raw_outputs.get("fleetContract") or {}, stack_file,
                                 config.hub_stack.stack)
    return {config.hub_stack.stack: hub_plan.as_stack_reference()}


def claim_out_dir(out_dir: Path) -> None:
    """Refuse to replace a directory hubctl did not make (`--out ~` must never remove `~/dev`)."""
    if not out_dir.exists() and not out_dir.is_symlink():
        return
    if out_dir.is_symlink() or not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} exists and is not a directory hubctl made; choose another --out")
    entries = {p.name for p in out_dir.iterdir()}
    if not entries or OUT_MARKER in entries:
        return
    if entries <= _PLAN_ENTRIES and "plan.json" in entries:  # written by a hubctl from before the marker
        try:
            if json.loads((out_dir / "plan.json").read_text()).get("project") == "karmada-hub":
                return
        except (OSError, ValueError, AttributeError):
            pass
    raise UserError(f"--out: {out_dir} already exists and was not written by hubctl plan (no {OUT_MARKER} in it); "
                    "hubctl replaces the whole directory, so choose another --out or remove it yourself")


def run_plan(repo: Path, stack: str, out_root: Path, policy: bool = False, quiet: bool = False,
             as_json: bool = False, out: Output | None = None) -> int:
    out = out or Output()
    with out.progress(f"plan {stack}") as bar:
        bar.set("reading the stack file")
        from hubctl.mocks import plan_epoch

        plan_epoch()  # a bad HUBCTL_PLAN_EPOCH is one line now, not a failure inside the program
        stack_cfg, config = load_config(repo, stack)
        out_dir = out_root / stack
        claim_out_dir(out_dir)
        bar.set("running the program under the mock engine")
        plan = run_program(repo, stack_cfg, hub_stack_outputs(repo, config, f"stacks/Pulumi.{stack}.yaml"))
        from hubctl.errors import INTERRUPTED

        if INTERRUPTED.is_set():  # Ctrl-C reached a registration that swallowed it: this plan may lack resources
            raise KeyboardInterrupt
        bar.set(f"writing {len(plan.records)} resources")
        files = write_plan(plan, out_dir)
        sections = report.build(plan, config)
        doc = report.document(plan, sections, [*files, report.REPORT_FILE])
        text = json.dumps(doc, indent=2) + "\n"
        try:
            assert_no_secrets({report.REPORT_FILE: text}, plan.secret_values)
        except Exception:
            shutil.rmtree(out_dir, ignore_errors=True)
            raise
        (out_dir / report.REPORT_FILE).write_text(text)
        (out_dir / OUT_MARKER).write_text("written by hubctl plan; the next plan of this stack replaces this "
                                          "directory\n")
        violations = None
        if policy:
            bar.set("checking the policy pack's rules")
            from hubctl.policy_check import check_plan

            violations = check_plan(json.loads(files["plan.json"]))
    if as_json:
        from hubctl.summary import as_json as summary_json

        value: dict[str, Any] = {**summary_json(plan, config, out_dir), "outDir": str(out_dir), "report": doc}
        if violations is not None:
            value["policy"] = policy_document(violations, plan.stack)
        out.json(value)
    elif not quiet:
        from hubctl.summary import header

        report.render(out, header(plan, out_dir), sections, list(files))
    if violations is None:
        return EXIT_OK
    from hubctl.policy_check import format_violations

    verdict = format_violations(violations, plan.stack)
    if as_json:  # stdout stays one JSON document; the verdict is for the person reading the terminal
        print(verdict, file=out.stderr)
    else:
        out.text(verdict)
    return EXIT_FINDINGS if violations else EXIT_OK


def run_budget(repo: Path, stack: str, as_json: bool = False, markdown: bool = False, out: Output | None = None) -> int:
    from components.operations.budget import budget_markdown, failover_budget, format_budget

    out = out or Output()
    _, config = load_config(repo, stack)
    budget = failover_budget(config)
    if as_json:
        out.json({"stack": stack, **report.budget_section(budget, "").data})
    elif markdown:
        out.text(budget_markdown(budget))
    elif out.rich:  # the same clocks, subtotals and notes as the plain text, as tables
        out.text(f"failover budget: {stack}")
        out.text("")
        report.render_tables(out, report.budget_section(budget, ""), title=False)
    else:
        out.text(format_budget(budget))
    return EXIT_OK


def run_skew(repo: Path, stack: str, as_json: bool = False, out: Output | None = None) -> int:
    from components.operations.skew import format_skew, skew_rows

    out = out or Output()
    _, config = load_config(repo, stack, run_preflight=False)
    rows = skew_rows(config)
    problems = [r for r in rows if not r.ok]
    if as_json:
        out.json({"stack": stack, "pairs": [{"component": r.component, "version": r.version, "against": r.against,
                                             "problem": r.problem} for r in rows], "problems": len(problems)})
    elif out.rich:
        out.table(Table(["component", "version", "against", "status"],
                        [[r.component, r.version, r.against, r.status] for r in rows], title=f"version skew: {stack}",
                        footer=[f"{len(rows)} pairs, {len(problems)} problem{'s' if len(problems) != 1 else ''}"]))
    else:
        out.text(format_skew(rows))
    return EXIT_FINDINGS if problems else EXIT_OK


def plan_path(repo: Path, arg: str) -> Path:
    """A plan as the user may name it: a directory, its plan.json, or a stack name for `build/plan/<stack>` (what
    `hubctl plan <stack>` writes); a stack without a plan yet says how to make one."""
    path = Path(arg)
    if path.exists() or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", arg) or arg.endswith(".json"):
        return path
    from hubctl.stackfile import stack_file

    built = repo / "build" / "plan" / arg
    if built.is_dir():
        return built
    if stack_file(repo, arg).is_file():
        raise UserError(f"{arg}: no plan of stack {arg} in build/plan/{arg} yet; run `hubctl plan {arg}` first")
    from components.config import did_you_mean

    known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
    raise UserError(f"{arg}: no such plan directory, plan.json or stack (stacks: {', '.join(known)})"
                    f"{did_you_mean(arg, known)}")


def read_plan_json(path: Path, what: str = "plan") -> dict[str, Any]:
    """A plan directory or plan.json, read as a user-given path: every problem is one UserError line."""
    target = path / "plan.json" if path.is_dir() else path
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        hint = " (run `hubctl plan <stack>` first)" if path.is_dir() or path.suffix != ".json" else ""
        raise UserError(f"{target}: no such file{hint}") from None
    except OSError as exc:
        raise UserError(f"{target}: {exc.strerror}") from None
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"{target}: not a {what} file (not UTF-8 text: byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{target}: not a {what} file (not JSON: {exc.msg} at line {exc.lineno}, column "
                        f"{exc.colno})") from None
    if not isinstance(value, dict) or not isinstance(value.get("resources"), list):
        raise UserError(f"{target}: not a {what} file (no `resources` list; it is written by `hubctl plan`)")
    for i, res in enumerate(value["resources"]):
        if not isinstance(res, dict) or not isinstance(res.get("urn"), str) or not isinstance(res.get("type"), str):
            raise UserError(f"{target}: not a {what} file (resources[{i}] has no urn and type)")
    return value


def policy_document(violations: list[Any], stack: str | None) -> dict[str, Any]:
    from policy import rules

    return {"stack": stack, "rules": len(rules.RESOURCE_RULES) + len(rules.STACK_RULES),
            "violations": [{"policy": v.policy, "urn": v.urn, "type": v.resource_type, "message": v.message}
                           for v in violations]}


def run_policy(plan_path: Path, as_json: bool = False, out: Output | None = None) -> int:
    from hubctl.policy_check import check_plan, format_violations

    out = out or Output()
    plan = read_plan_json(plan_path)
    violations = check_plan(plan)
    if as_json:
        out.json(policy_document(violations, plan.get("stack")))
    else:
        out.text(format_violations(violations, plan.get("stack")))
    return EXIT_FINDINGS if violations else EXIT_OK
