"""`python -m hubctl`: the operator's CLI (plan, diff, budget, rollout, drill).

Every user mistake ends here as one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _plan(args: argparse.Namespace) -> int:
    from hubctl.commands import run_plan

    return run_plan(REPO, args.stack, Path(args.out), policy=args.policy, quiet=args.quiet, as_json=args.json)


def _diff(args: argparse.Namespace) -> int:
    from hubctl.diff import diff_plans, load_plan

    print(diff_plans(load_plan(Path(args.old)), load_plan(Path(args.new))), end="")
    return 0


def _budget(args: argparse.Namespace) -> int:
    from hubctl.commands import run_budget

    return run_budget(REPO, args.stack)


def _drill(args: argparse.Namespace) -> int:
    from hubctl.drill.run import main as drill_main

    return drill_main(args, REPO)


def _rollout(argv: list[str]) -> int:
    from hubctl.rollout import main as rollout_main

    return rollout_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rollout"]:
        return _rollout(argv[1:])
    parser = argparse.ArgumentParser(prog="hubctl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="render what the stack would create, offline (no CLI, no credentials)")
    plan.add_argument("stack")
    plan.add_argument("--out", default=str(REPO / "build" / "plan"), help="output root (default build/plan)")
    plan.add_argument("--policy", action="store_true", help="also run the policy pack's rules on the plan")
    plan.add_argument("--quiet", action="store_true", help="no summary")
    plan.add_argument("--json", action="store_true", help="the summary as JSON (resources, outputs, what-if table)")
    plan.set_defaults(func=_plan)
    diff = sub.add_parser("diff", help="Markdown summary of two plans (dirs or plan.json files)")
    diff.add_argument("old")
    diff.add_argument("new")
    diff.set_defaults(func=_diff)
    budget = sub.add_parser("budget", help="worst-case failover time, term by term")
    budget.add_argument("stack")
    budget.set_defaults(func=_budget)
    drill = sub.add_parser("drill", help="kill a member of the live fleet, time every phase against the budget")
    from hubctl.drill.run import add_arguments as drill_arguments

    drill_arguments(drill)
    drill.set_defaults(func=_drill)
    sub.add_parser("rollout", help="preview and up every stack of an environment in waves (needs the Pulumi CLI)")
    args = parser.parse_args(argv)
    from components.config import ConfigError
    from components.karmada.crds import CrdIntegrityError
    from hubctl.plan import SecretLeak

    try:
        return int(args.func(args))
    except (ConfigError, CrdIntegrityError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SecretLeak as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except FileNotFoundError as err:
        print(f"error: {err.filename or err}: no such file", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
