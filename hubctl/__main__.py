"""`hubctl` (or `python -m hubctl`): the operator's CLI — plan, diff, budget, skew, policy, drill, rollout, docs,
kubeconfig, region-key, capi-access.

Exit codes: 0 ok, 1 findings (policy violations, a failed rollout stack), 2 user error (stack files,
flags, paths), 3 internal error. Every error is one line on stderr, never a traceback (HUBCTL_DEBUG=1
shows it for internal errors). Read commands take --json.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from hubctl.errors import EXIT_OK, EXIT_USER, report
from hubctl.output import Output

REPO = Path(__file__).resolve().parent.parent


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix (argparse itself prints usage + message)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USER)


def _add_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="render what the stack would create, offline (no CLI, no credentials)")
    p.add_argument("stack", help="a stack in stacks/ (dev, prod-hub, prod-fsn1, ...)")
    p.add_argument("--out", default=None, help="output root (default build/plan); hubctl replaces <out>/<stack> "
                   "only if it made it")
    p.add_argument("--policy", action="store_true", help="also run the policy pack's rules on the plan (exit 1 "
                   "on violations)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.add_argument("--json", action="store_true", help="print the plan's report (and policy result) as JSON")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_plan

        out_root = Path(args.out) if args.out else repo / "build" / "plan"
        return run_plan(repo, args.stack, out_root, policy=args.policy, quiet=args.quiet, as_json=args.json, out=out)

    p.set_defaults(func=run)


def _add_diff(sub: argparse._SubParsersAction) -> None:
    from hubctl.diff_render import DEFAULT_MAX_CHARS

    p = sub.add_parser("diff", help="what changes between two plans, for a pull request (Markdown)")
    p.add_argument("old", help="plan directory (or its plan.json) of the base")
    p.add_argument("new", help="plan directory (or its plan.json) of the change")
    p.add_argument("--json", action="store_true", help="the diff as JSON instead of Markdown")
    p.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, metavar="N",
                   help=f"size cap of the Markdown (default {DEFAULT_MAX_CHARS}, under GitHub's 65536 per comment); "
                   "a bigger diff degrades to a summary")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.diff import diff_paths
        from hubctl.diff_render import markdown

        result = diff_paths(Path(args.old), Path(args.new))
        if args.json:
            out.json(result.as_dict())
        else:
            out.stdout.write(markdown(result, max_chars=args.max_chars))
        return EXIT_OK

    p.set_defaults(func=run)


def _add_budget(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budget", help="worst-case failover time, term by term")
    p.add_argument("stack")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true", help="a Markdown table, for a PR or a runbook")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_budget

        return run_budget(repo, args.stack, as_json=args.json, markdown=args.markdown, out=out)

    p.set_defaults(func=run)


def _add_skew(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("skew", help="every component/version pair of the stack against the compatibility matrix")
    p.add_argument("stack")
    p.add_argument("--json", action="store_true")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_skew

        return run_skew(repo, args.stack, as_json=args.json, out=out)

    p.set_defaults(func=run)


def _add_policy(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policy", help="the policy pack's rules on a rendered plan (exit 1 on violations)")
    p.add_argument("plan", help="plan directory (or its plan.json)")
    p.add_argument("--json", action="store_true")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_policy

        return run_policy(Path(args.plan), as_json=args.json, out=out)

    p.set_defaults(func=run)


def _add_drill(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("drill", help="kill a member of the live fleet, time every phase against the budget")
    from hubctl.drill.cli import add_arguments

    add_arguments(p)

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.drill.run import main as drill_main

        return drill_main(args, repo)

    p.set_defaults(func=run)


def _add_docs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("docs", help="regenerate docs/configuration.md and docs/stack.schema.json from the models")
    p.add_argument("--check", action="store_true", help="exit 1 if the files are out of date, write nothing")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.reference import write_or_check

        return write_or_check(repo, check=args.check, out=out)

    p.set_defaults(func=run)


def _add_kubeconfig(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kubeconfig", help="an admin kubeconfig from a hub stack's own state (pulumi stack export)")
    p.add_argument("stack", help="the hub or all-in-one stack (org/project/stack or its name)")
    p.add_argument("api", choices=["karmada", "host"])
    p.add_argument("--from-file", help="read this `pulumi stack export --show-secrets` file instead")
    p.add_argument("--break-glass", action="store_true",
                   help="the program's own system:masters identity (nothing revokes it) instead of the operators' "
                   "revocable one")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        import json

        from hubctl.kubeconfig import admin_kubeconfig, export_stack, operator_kubeconfig

        export = json.loads(Path(args.from_file).read_text()) if args.from_file else export_stack(args.stack)
        if args.break_glass:
            out.stdout.write(admin_kubeconfig(export, args.api))
            print(f"note: this is the break-glass system:masters credential for the {args.api} API: nothing revokes "
                  "it before it expires; keep it off shared disks", file=out.stderr)
        else:
            out.stdout.write(operator_kubeconfig(export, args.api))
            print(f"note: the operators' {args.api} credential (cluster-admin through ClusterRoleBinding "
                  "karmada-hub:operators; deleting it revokes this); keep it off shared disks", file=out.stderr)
        return EXIT_OK

    p.set_defaults(func=run)


def _add_region_key(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("region-key", help="make a region's identity key here and print the CSR to commit")
    p.add_argument("stack", help="a region stack in stacks/ (prod-fsn1, ...)")
    p.add_argument("--key-file", default=None, metavar="PATH",
                   help="write the key to this new file (mode 0600, outside the repository) instead of the stack's "
                   "encrypted config (pulumi config set --secret identityKey)")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.region_key import make_region_key, stack_region, store_in_config, write_key_file

        key = make_region_key(stack_region(repo, args.stack))
        if args.key_file:
            write_key_file(Path(args.key_file), key.key_pem, repo)
            where = f"{args.key_file} (set it later: pulumi config set --secret identityKey -s {args.stack} < FILE)"
        else:
            store_in_config(repo, args.stack, key.key_pem)
            where = f"the encrypted config of {args.stack} (karmada-hub:identityKey)"
        out.stdout.write(key.csr_pem)
        print(f"key: {where}. Commit the CSR above as karmada-hub:identityCsr in stacks/Pulumi.{args.stack}.yaml, "
              f"then `pulumi up` the hub stack (it signs {key.user}), then this stack.", file=out.stderr)
        return EXIT_OK

    p.set_defaults(func=run)


def _add_capi_access(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capi-access", help="the Cluster API reader a stack's capiKubeconfig must be (YAML for the "
                       "management cluster)")
    p.add_argument("stack", help="a region or all-in-one stack in stacks/")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from components.config import CapiCredentials, ConfigError
        from components.fleet.member_docs import capi_reader_objects
        from components.kube.yamlutil import dump
        from hubctl.commands import load_config

        _, config = load_config(repo, args.stack, run_preflight=False)
        members = [m for m in config.members if config.role != "region" or m.region == config.region]
        if not any(isinstance(m.credentials, CapiCredentials) for m in members):
            raise ConfigError(f"stacks/Pulumi.{args.stack}.yaml: karmada-hub:members: no member comes from Cluster "
                              "API, so this stack needs no Cluster API credential")
        out.stdout.write("".join(f"---\n{dump(o)}" for o in capi_reader_objects(args.stack, members)))
        print(f"apply this to the Cluster API management cluster; then make a kubeconfig with the token of Secret "
              f"karmada-hub-{args.stack}-token and set it: pulumi config set --secret capiKubeconfig -s "
              f"{args.stack} < it", file=out.stderr)
        return EXIT_OK

    p.set_defaults(func=run)


COMMANDS = (_add_plan, _add_diff, _add_budget, _add_skew, _add_policy, _add_drill, _add_docs, _add_kubeconfig,
            _add_region_key, _add_capi_access)
"""One function per subcommand (a new command adds its own `_add_<name>` here)."""


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hubctl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    sub.add_parser("rollout", help="preview, confirm and up every stack of an environment in waves (Pulumi CLI)",
                   add_help=False)
    return p


def _dispatch(argv: list[str], repo: Path, stdout: TextIO, stderr: TextIO) -> int:
    if argv[:1] == ["rollout"]:
        from hubctl.rollout import main as rollout_main

        return rollout_main(argv[1:], root=repo, out=stdout if stdout is not sys.stdout else None)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):  # argparse's own --help / errors
        args = parser().parse_args(argv)
    return int(args.func(args, repo, Output(stdout, stderr)))


def main(argv: list[str] | None = None, *, repo: Path = REPO, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run one command; whatever happens, return an exit code after at most one line on stderr."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv), repo, stdout, stderr)
    except SystemExit as exc:  # argparse (--help, usage errors)
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USER)
    except BrokenPipeError:  # `hubctl diff a b | head`: the reader left, nothing to report
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return EXIT_OK
    except BaseException as exc:  # the one place an exception becomes an exit code
        return report(exc, stderr)


def console() -> None:
    """The `hubctl` console script (pyproject [project.scripts])."""
    sys.exit(main())


if __name__ == "__main__":
    console()
