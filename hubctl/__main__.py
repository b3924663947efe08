"""`hubctl` (or `python -m hubctl`): the operator's CLI — plan, diff, budget, skew, policy, drill, doctor, rollout,
docs, kubeconfig, region-key, capi-access.

Exit codes: 0 ok, 1 findings (policy violations, a failed rollout stack), 2 user error (stack files,
flags, paths), 3 internal error. Every error is one line on stderr, never a traceback (HUBCTL_DEBUG=1
shows it for internal errors). Read commands take --json.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_early(signum: int, frame: object) -> None:
    """Ctrl-C while hubctl is still starting (importing): the same one line as later, no traceback."""
    os.write(2, b"interrupted\n")
    os._exit(130)


if (__name__ == "__main__" or os.path.basename(sys.argv[0] or "") == "hubctl") and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_early)

# after the early Ctrl-C handler, on purpose
import argparse  # noqa: E402
import contextlib  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, TextIO  # noqa: E402

from hubctl.errors import EXIT_OK, EXIT_USER, OneLineParser, UserError, report  # noqa: E402
from hubctl.output import Output  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
_Parser = OneLineParser

STACK_HELP = "a stack in stacks/ by name (dev, prod-hub, prod-fsn1, ...) or its file stacks/Pulumi.<stack>.yaml"
PLAN_HELP = "a plan: its directory, its plan.json, or a stack name for build/plan/<stack>"
JSON_HELP = "print the result as one JSON document instead of text"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def version() -> str:
    """`hubctl --version`: the checkout's version and the releases it pins."""
    import tomllib

    from components import versions

    try:
        project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
        project = "unknown"
    return f"hubctl {project} (karmada-hub; Karmada {versions.KARMADA_VERSION}, k3s {versions.K3S_VERSION})"


def _add_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="render what the stack would create, offline (no CLI, no credentials)")
    p.add_argument("stack", help=STACK_HELP)
    p.add_argument("--out", default=None, help="output root (default build/plan); hubctl replaces <out>/<stack> "
                   "only if it made it")
    p.add_argument("--policy", action="store_true", help="also run the policy pack's rules on the plan (exit 1 "
                   "on violations)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.add_argument("--json", action="store_true", help="print the plan's report (and policy result) as JSON")
    p.add_argument("--epoch", metavar="YYYY-MM-DD", help="the day the offline certificates start (default today, "
                   "UTC; or $HUBCTL_PLAN_EPOCH): give two plans you diff the same day, e.g. the base plan's, which "
                   "`hubctl diff` names when they differ")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_plan

        out_root = Path(args.out) if args.out else repo / "build" / "plan"
        if args.epoch is None:
            return run_plan(repo, args.stack, out_root, policy=args.policy, quiet=args.quiet, as_json=args.json,
                            out=out)
        from hubctl.mocks import EPOCH_ENV, parse_epoch

        parse_epoch(args.epoch, "--epoch")
        saved = os.environ.get(EPOCH_ENV)
        os.environ[EPOCH_ENV] = args.epoch
        try:
            return run_plan(repo, args.stack, out_root, policy=args.policy, quiet=args.quiet, as_json=args.json,
                            out=out)
        finally:
            if saved is None:
                os.environ.pop(EPOCH_ENV, None)
            else:
                os.environ[EPOCH_ENV] = saved

    p.set_defaults(func=run)


def _add_diff(sub: argparse._SubParsersAction) -> None:
    from hubctl.diff_render import DEFAULT_MAX_CHARS

    p = sub.add_parser("diff", help="what changes between two plans, for a pull request (Markdown)")
    p.add_argument("old", help=f"the base: {PLAN_HELP}")
    p.add_argument("new", help=f"the change: {PLAN_HELP}")
    p.add_argument("--json", action="store_true", help="the diff as JSON instead of Markdown")
    p.add_argument("--max-chars", type=_positive, default=DEFAULT_MAX_CHARS, metavar="N",
                   help=f"size cap of the Markdown (default {DEFAULT_MAX_CHARS}, under GitHub's 65536 per comment); "
                   "a bigger diff degrades to a summary")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import plan_path
        from hubctl.diff import diff_paths
        from hubctl.diff_render import markdown

        result = diff_paths(plan_path(repo, args.old), plan_path(repo, args.new))
        if args.json:
            out.json(result.as_dict())
        else:
            out.stdout.write(markdown(result, max_chars=args.max_chars))
        return EXIT_OK

    p.set_defaults(func=run)


def _add_budget(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budget", help="worst-case failover time, term by term")
    p.add_argument("stack", help=STACK_HELP)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help=JSON_HELP)
    form.add_argument("--markdown", action="store_true", help="a Markdown table, for a PR or a runbook")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_budget

        return run_budget(repo, args.stack, as_json=args.json, markdown=args.markdown, out=out)

    p.set_defaults(func=run)


def _add_skew(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("skew", help="every component/version pair of the stack against the compatibility matrix")
    p.add_argument("stack", help=STACK_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import run_skew

        return run_skew(repo, args.stack, as_json=args.json, out=out)

    p.set_defaults(func=run)


def _add_policy(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policy", help="the policy pack's rules on a rendered plan (exit 1 on violations)")
    p.add_argument("plan", help=PLAN_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.commands import plan_path, run_policy

        return run_policy(plan_path(repo, args.plan), as_json=args.json, out=out)

    p.set_defaults(func=run)


def _add_drill(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("drill", help="kill a member of the live fleet, time every phase against the budget")
    from hubctl.drill.cli import add_arguments

    add_arguments(p)

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.drill.run import main as drill_main

        return drill_main(args, repo)

    p.set_defaults(func=run)


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="read the live fleet: a verdict per finding (hub, member, policy, quota, skew) "
                       "and its runbook (exit 1 on findings)")
    from hubctl.doctor.cli import add_arguments

    add_arguments(p)

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.doctor.cli import main as doctor_main

        return doctor_main(args, repo, out)

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
    p.add_argument("api", choices=["karmada", "host"], help="karmada: the karmada-apiserver; host: the hub's k3s")
    p.add_argument("--from-file", help="read this `pulumi stack export --show-secrets` file instead")
    p.add_argument("--break-glass", action="store_true",
                   help="the program's own system:masters identity (nothing revokes it) instead of the operators' "
                   "revocable one")

    def run(args: argparse.Namespace, repo: Path, out: Output) -> int:
        from hubctl.kubeconfig import admin_kubeconfig, check_stack, export_stack, operator_kubeconfig, read_export

        check_stack(repo, args.stack, from_file=bool(args.from_file))
        export = read_export(Path(args.from_file)) if args.from_file else export_stack(args.stack)
        try:
            text = admin_kubeconfig(export, args.api) if args.break_glass else operator_kubeconfig(export, args.api)
        except UserError as exc:
            raise UserError(f"{args.from_file or args.stack}: {exc}") from None
        out.stdout.write(text)
        if args.break_glass:
            print(f"note: this is the break-glass system:masters credential for the {args.api} API: nothing revokes "
                  "it before it expires; keep it off shared disks", file=out.stderr)
        else:
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


COMMANDS = (_add_plan, _add_diff, _add_budget, _add_skew, _add_policy, _add_drill, _add_doctor, _add_docs,
            _add_kubeconfig, _add_region_key, _add_capi_access)
"""One function per subcommand (a new command adds its own `_add_<name>` here)."""


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hubctl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=_LazyVersion("%(prog)s"),
                   help="print hubctl's version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    sub.add_parser("rollout", help="preview, confirm and up every stack of an environment in waves (Pulumi CLI)",
                   add_help=False)
    return p


class _LazyVersion(str):
    """The version text, computed only when `--version` is asked for (argparse formats it then)."""

    def __mod__(self, _: object) -> str:
        return version()


def _dispatch(argv: list[str], repo: Path, stdout: TextIO, stderr: TextIO) -> int:
    if argv[:1] == ["rollout"]:
        from hubctl.rollout import main as rollout_main

        return rollout_main(argv[1:], root=repo, out=stdout if stdout is not sys.stdout else None)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):  # argparse's own --help / errors
        args = parser().parse_args(argv)
    if isinstance(getattr(args, "stack", None), str):
        from hubctl.stackfile import stack_name

        args.stack = stack_name(repo, args.stack)
    return int(args.func(args, repo, Output(stdout, stderr)))


def main(argv: list[str] | None = None, *, repo: Path = REPO, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run one command; whatever happens, return an exit code after at most one line on stderr."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    ctrl_c = _CtrlC()
    try:
        with ctrl_c:
            code = _dispatch(list(sys.argv[1:] if argv is None else argv), repo, stdout, stderr)
            if ctrl_c.pressed:  # a library swallowed the KeyboardInterrupt (a destructor, a callback)
                raise KeyboardInterrupt
            return code
    except SystemExit as exc:  # argparse (--help, usage errors)
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USER)
    except BrokenPipeError:  # `hubctl diff a b | head`: the reader left, nothing to report
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return EXIT_OK
    except BaseException as exc:  # the one place an exception becomes an exit code
        # a library may have wrapped the KeyboardInterrupt (pydantic building a schema does)
        return report(KeyboardInterrupt() if ctrl_c.pressed else exc, stderr)


class _CtrlC:
    """While a command runs: Ctrl-C raises KeyboardInterrupt as usual and is remembered (hubctl.errors.INTERRUPTED),
    so the command ends with `interrupted` even when a library caught and wrapped it, and what it interrupts (a
    destructor, a callback of the engine's loop) is not reported as a second error. After the first one further
    ones are ignored: the command is ending, and a second must not turn its one line into a traceback. Outside the
    main thread, or when SIGINT is ignored (a background job), nothing changes."""

    ignore_after: bool = False
    """Set by the console script: once the command ends, the process only exits, so a late Ctrl-C is ignored."""

    def __init__(self) -> None:
        self.pressed = False
        self.previous: Any = None
        self.hook: Any = None
        self.warning_filters: list[Any] = []

    def _handler(self, signum: int, frame: object) -> None:
        import warnings

        from hubctl.errors import INTERRUPTED

        self.pressed = True
        INTERRUPTED.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # What a library says about the interrupt it caught is no second line: pydantic-core turns a
        # KeyboardInterrupt inside a serializer into a UserWarning ("PydanticSerializationUnexpectedValue").
        warnings.simplefilter("ignore")
        raise KeyboardInterrupt

    def _unraisable(self, unraisable: Any) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            self.hook(unraisable)

    def __enter__(self) -> _CtrlC:
        import threading

        from hubctl.errors import INTERRUPTED

        INTERRUPTED.clear()
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _interrupted_early):
            self.previous = signal.signal(signal.SIGINT, self._handler)
            self.hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
            import warnings

            self.warning_filters = list(warnings.filters)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is None:
            return
        if self.ignore_after:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return  # the hook stays: the process is exiting
        sys.unraisablehook = self.hook
        if not self.pressed:
            signal.signal(signal.SIGINT, self.previous)
        else:
            import warnings

            warnings.filters[:] = self.warning_filters


def console() -> None:
    """The `hubctl` console script (pyproject [project.scripts]). An interrupted command ends here at once: the
    interpreter's own shutdown would join worker threads of the engine that may be waiting on a loop that no
    longer runs (seen as a hang of minutes), so the process exits without it, its output flushed."""
    from hubctl.errors import EXIT_INTERRUPTED

    _CtrlC.ignore_after = True
    try:
        code = main()
    except KeyboardInterrupt:  # before main's handler was installed
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()
