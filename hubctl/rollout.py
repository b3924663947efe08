"""`hubctl rollout <env>`: preview, show, confirm and update an environment's stacks in order, hub first, wave by wave.

The order lives in `stacks/rollout.yaml`. For each stack the rollout previews and saves the engine's update
plan (`pulumi preview --save-plan`), shows what the preview would do (every create, update, replace and
delete, with the properties that force a replacement), asks before `up` (unless `--yes`), and applies
exactly that plan (`pulumi up --plan`: the engine refuses any operation the preview did not show). A wave
marked `pause: true` (the canary) stops the rollout until the operator confirms (unless `--no-pause`). The
first failure stops everything, with that stack's own error. Stacks are driven through the Automation API
(which runs the Pulumi CLI); the stack factory is a parameter so tests drive the whole flow with a fake.

Also used by CI without any Pulumi: `rollout all --list` prints every stack in rollout order and
`rollout all --affected-by FILE` the stacks a list of changed paths touches (preview.yml's matrix).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from components.kube import safeyaml

ROOT = Path(__file__).resolve().parent.parent
ROLLOUT_FILE = Path("stacks") / "rollout.yaml"
HUB_WAVE = "hub"
"""The pseudo-wave holding an environment's hub stack; `--wave hub` runs just that."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class RolloutError(Exception):
    """A user-fixable problem (bad rollout.yaml, unknown env or wave, no Pulumi CLI); `str()` is one line."""


# ------------------------------------------------------------------------------------------------ model


@dataclass(frozen=True)
class Wave:
    name: str
    stacks: tuple[str, ...]
    pause: bool = False
    """Stop after this wave until the operator confirms (the canary: watch it before the rest follow)."""


@dataclass(frozen=True)
class Environment:
    name: str
    hub: str
    waves: tuple[Wave, ...]

    def plan(self) -> tuple[Wave, ...]:
        """Hub first (regions read its outputs), then the waves as listed."""
        return (Wave(HUB_WAVE, (self.hub,)), *self.waves)


@dataclass(frozen=True)
class RolloutConfig:
    organization: str
    project: str
    environments: tuple[Environment, ...]

    def environment(self, name: str) -> Environment:
        for env in self.environments:
            if env.name == name:
                return env
        known = ", ".join(e.name for e in self.environments)
        raise RolloutError(f"unknown environment '{name}' (known: {known})")

    def stacks(self, env: str = "all") -> list[str]:
        """Every stack of `env` (or of all environments, in promotion order) in rollout order."""
        envs = self.environments if env == "all" else (self.environment(env),)
        return [s for e in envs for w in e.plan() for s in w.stacks]

    def fully_qualified(self, stack: str) -> str:
        return f"{self.organization}/{self.project}/{stack}"


def load_config(path: Path) -> RolloutConfig:
    """Parse and check rollout.yaml; every mistake is one RolloutError line naming the file and key."""
    try:
        raw = safeyaml.load(path.read_bytes())
    except OSError as exc:
        raise RolloutError(f"{path}: {exc.strerror}") from None
    except safeyaml.YamlRefused as exc:
        raise RolloutError(f"{path}: {exc}") from None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("environments"), Mapping) or not raw["environments"]:
        raise RolloutError(f"{path}: needs organization, project and a non-empty environments mapping")
    envs: list[Environment] = []
    seen: dict[str, str] = {}
    for env_name, env in raw["environments"].items():
        where = f"{path}: environments.{env_name}"
        if not isinstance(env, Mapping) or not isinstance(env.get("hub"), str):
            raise RolloutError(f"{where}.hub: is required (the stack that runs the hub)")
        waves: list[Wave] = []
        for i, wave in enumerate(env.get("waves") or []):
            if not isinstance(wave, Mapping) or not isinstance(wave.get("name"), str) or not wave.get("stacks"):
                raise RolloutError(f"{where}.waves[{i}]: needs a name and a non-empty stacks list")
            if wave["name"] == HUB_WAVE or wave["name"] in (w.name for w in waves):
                raise RolloutError(f"{where}.waves[{i}].name: '{wave['name']}' is reserved or used twice")
            if "pause" in wave and not isinstance(wave["pause"], bool):
                raise RolloutError(f"{where}.waves[{i}].pause: must be true or false")
            waves.append(Wave(wave["name"], tuple(str(s) for s in wave["stacks"]), bool(wave.get("pause", False))))
        environment = Environment(str(env_name), env["hub"], tuple(waves))
        for stack in (s for w in environment.plan() for s in w.stacks):
            if stack in seen:
                raise RolloutError(f"{where}: stack '{stack}' is already rolled out by environment {seen[stack]}")
            seen[stack] = environment.name
        envs.append(environment)
    return RolloutConfig(str(raw.get("organization", "organization")), str(raw.get("project", "karmada-hub")),
                         tuple(envs))


_NO_STACK_IMPACT = ("docs/", "tests/", "bench/", ".github/", "hubctl/", ".ci/")


def affected_stacks(changed: Iterable[str], config: RolloutConfig, env: str = "all") -> list[str]:
    """Which stacks a PR touching `changed` paths needs previewed, in rollout order.

    A stack file touches its stack and the stacks that read it (`_read_by`: a region's hub, a hub's regions);
    docs, tests, CI and the operator CLI touch none; anything else (program, components, Pulumi.yaml, the policy
    pack, dependencies) may change every stack.
    """
    stacks = config.stacks(env)
    hit: set[str] = set()
    for path in (p.strip() for p in changed):
        if not path or path.endswith(".md") or path.startswith(_NO_STACK_IMPACT) or path == str(ROLLOUT_FILE):
            continue
        name = Path(path).name
        if path.startswith("stacks/") and name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
            hit |= _read_by(name.removeprefix("Pulumi.").rsplit(".", 1)[0], config)
            continue
        return stacks
    return [s for s in stacks if s in hit]


def _read_by(stack: str, config: RolloutConfig) -> set[str]:
    """The stacks whose preview reads `stack`'s file: itself; its hub, which reads every region file (Clusters,
    estimators, agent RBAC, namespaces, the region's CSR); and for a hub, its regions, which mirror its fleet-wide
    values (feature gates, failover flags, DNS timing) through its fleetContract."""
    touched = {stack}
    for environment in config.environments:
        regions = {s for w in environment.waves for s in w.stacks}
        if stack == environment.hub:
            touched |= regions
        elif stack in regions:
            touched.add(environment.hub)
    return touched


# -------------------------------------------------------------------------------------------- execution


class StackLike(Protocol):
    """The part of `pulumi.automation.Stack` a rollout uses."""

    def preview(self, **kwargs: Any) -> Any: ...

    def up(self, **kwargs: Any) -> Any: ...


StackFactory = Callable[[str], StackLike]
"""stack name (`prod-fsn1`) -> a selected stack ready for preview/up."""


def automation_factory(config: RolloutConfig, root: Path = ROOT) -> StackFactory:
    """Local-program stacks on the repo root; a missing CLI surfaces here as FileNotFoundError."""

    def make(stack: str) -> StackLike:
        from pulumi import automation as auto

        return auto.create_or_select_stack(stack_name=config.fully_qualified(stack), work_dir=str(root))

    return make


def check_pulumi_cli() -> None:
    """Before anything is printed or run: the Automation API needs the `pulumi` CLI on PATH."""
    if shutil.which("pulumi") is None:
        raise PulumiCliMissing(_CLI_MISSING.format(name="pulumi"))


_CLI_MISSING = ("the Pulumi CLI is not installed or not on PATH ({name}); install it "
                "(https://www.pulumi.com/docs/install/) or use `python -m hubctl plan` offline")


@dataclass(frozen=True)
class RunOptions:
    preview_only: bool = False
    policy_pack: Path | None = None
    refresh: bool = True
    root: Path = ROOT
    yes: bool = False
    """Update without asking (CI); otherwise every stack's preview is confirmed at the terminal."""
    pause: bool = True
    """Stop after a `pause: true` wave until confirmed; `--no-pause` (CI) goes straight on."""
    plan_dir: Path | None = None
    """Where the saved update plans go (a private temporary directory when unset); each is deleted after its up."""

    def kwargs(self, stack: str) -> dict[str, Any]:
        """Arguments for both preview and up.

        `config_file` because LocalWorkspace looks for Pulumi.<stack>.yaml only in work_dir and ignores
        Pulumi.yaml's stackConfigDir (pulumi/pulumi#10305); the CLI itself would find stacks/ anyway.
        """
        kw: dict[str, Any] = {"config_file": str(self.root / "stacks" / f"Pulumi.{stack}.yaml"),
                              "refresh": self.refresh}
        if self.policy_pack is not None:
            kw["policy_packs"] = [str(self.policy_pack)]
        return kw


@dataclass
class StackResult:
    wave: str
    stack: str
    preview: str = "-"
    up: str = "-"
    ok: bool | None = None
    """True done, False failed or declined, None not run (skipped after an earlier stop)."""
    seconds: float = 0.0
    error: str | None = None


class PulumiCliMissing(RolloutError):
    pass


Ask = Callable[[str], bool]
"""A yes/no question to the operator."""


def terminal_ask(out: TextIO, stdin: TextIO | None = None) -> Ask:
    def ask(question: str) -> bool:
        stream = stdin or sys.stdin
        out.write(f"{question} [y/N] ")
        out.flush()
        answer = stream.readline()
        if not answer:
            out.write("\n")
        return answer.strip().lower() in ("y", "yes")

    return ask


def _op(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


_MARKS = {"create": "+", "update": "~", "replace": "±", "delete": "-", "create-replacement": "+",
          "delete-replaced": "-", "read": ">", "import": "="}


def _summary(changes: Mapping[Any, int] | None) -> str:
    """`{create: 2, update: 1, same: 9}` -> "+2 ~1" (no changes: "no changes")."""
    counts: dict[str, int] = {}
    for op, n in (changes or {}).items():
        key = _op(op)
        if key in _MARKS and key not in ("read", "import") and n:
            counts[_MARKS[key]] = counts.get(_MARKS[key], 0) + int(n)
    if not counts:
        return "no changes"
    return " ".join(f"{mark}{counts[mark]}" for mark in ("+", "~", "±", "-") if mark in counts)


@dataclass
class Step:
    """One step the preview announced (from the engine's ResourcePreEvent metadata)."""

    op: str
    urn: str
    type: str
    keys: list[str]
    """Properties that force the replacement (op replace / create-replacement)."""
    diffs: list[str]


class StepCollector:
    """Collects the preview's steps; same and read steps are what the stack already is, so they are dropped."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def __call__(self, event: Any) -> None:
        pre = getattr(event, "resource_pre_event", None)
        meta = getattr(pre, "metadata", None)
        if meta is None:
            return
        op = _op(getattr(meta, "op", ""))
        if op in ("same", "read", "refresh", "", "delete-replaced", "create-replacement"):
            return  # a replace is announced once as "replace"; its two halves would repeat it
        self.steps.append(Step(op, str(getattr(meta, "urn", "")), str(getattr(meta, "type", "")),
                               list(getattr(meta, "keys", None) or []), list(getattr(meta, "diffs", None) or [])))


SHOWN_STEPS = 60
"""Steps listed per stack before the rest is summarised (the full diff: `pulumi preview --diff`)."""
_ORDER = ("delete", "replace", "create", "update", "import", "discard")


def format_steps(stack: str, steps: Sequence[Step]) -> str:
    """What this stack's preview would do, removals and replacements first; empty when nothing changes."""
    if not steps:
        return ""
    ordered = sorted(steps, key=lambda s: (_ORDER.index(s.op) if s.op in _ORDER else len(_ORDER), s.urn))
    lines = [f"  preview of {stack}:"]
    for step in ordered[:SHOWN_STEPS]:
        name = step.urn.rsplit("::", 1)[-1]
        kind = step.type.rsplit(":", 1)[-1] or step.type
        detail = ""
        if step.op == "replace" and step.keys:
            detail = f"  (replaced because of: {', '.join(step.keys)})"
        elif step.diffs:
            detail = f"  (changes: {', '.join(step.diffs[:8])}{', …' if len(step.diffs) > 8 else ''})"
        lines.append(f"    {_MARKS.get(step.op, '?')} {step.op:<8} {kind} {name}{detail}")
    if len(ordered) > SHOWN_STEPS:
        lines.append(f"    … and {len(ordered) - SHOWN_STEPS} more (`pulumi preview --diff -s {stack}` lists them all)")
    return "\n".join(lines)


def _one_line(exc: BaseException) -> str:
    """A CommandError carries the CLI's whole stdout/stderr; keep the line that says what went wrong."""
    text = str(exc)
    if "\n stderr:" in text or "\n stdout:" in text:
        stderr = text.split("\n stderr:", 1)[1] if "\n stderr:" in text else ""
        stdout = text.split("\n stdout:", 1)[1].split("\n stderr:", 1)[0] if "\n stdout:" in text else ""
        for block in (stderr, stdout):
            lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.lower().startswith("error")]
            if errors or lines:
                return (errors or lines)[-1]
        code = text.split("code:", 1)[1].split()[0] if "code:" in text else "?"
        return f"pulumi exited with code {code}"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _up_error(exc: BaseException) -> str:
    line = _one_line(exc)
    text = str(exc)
    if "violates plan" in text or "expected resource operations" in text or "unexpectedly not deleted" in text:
        return (f"the engine refused to do more than the preview showed ({line}); the stack changed since its "
                "preview, so nothing beyond the plan was applied: rerun the rollout to preview again")
    return line


class Progress:
    """One line per stack; on a terminal it is rewritten live as the engine reports resources."""

    def __init__(self, out: TextIO, total: int) -> None:
        self.out, self.total, self.index = out, total, 0
        self.live = bool(getattr(out, "isatty", lambda: False)())
        self.prefix = ""
        self.resources = 0

    def start(self, wave: str, stack: str) -> None:
        self.index += 1
        self.prefix = f"[{self.index}/{self.total}] {wave:<8} {stack:<12}"

    def phase(self, name: str) -> None:
        self.resources = 0
        self._draw(f"{name}…")

    def on_event(self, phase: str, also: Callable[[Any], None] | None = None) -> Callable[[Any], None]:
        def handle(event: Any) -> None:
            if also is not None:
                also(event)
            if getattr(event, "resource_pre_event", None) is not None:
                self.resources += 1
                self._draw(f"{phase}… {self.resources} resources")

        return handle

    def _draw(self, text: str) -> None:
        if self.live:
            self.out.write(f"\r\033[K{self.prefix} {text}")
            self.out.flush()

    def clear(self) -> None:
        if self.live:
            self.out.write("\r\033[K")
            self.out.flush()

    def done(self, result: StackResult) -> None:
        if result.ok:
            detail = f"✓ preview {result.preview}" + ("" if result.up == "-" else f", up {result.up}")
        else:
            detail = f"✗ {result.error}"
        end = f"{self.prefix} {detail} ({result.seconds:.0f}s)"
        self.out.write(f"\r\033[K{end}\n" if self.live else f"{end}\n")
        self.out.flush()


def run_rollout(waves: Sequence[Wave], factory: StackFactory, options: RunOptions, out: TextIO,
                ask: Ask | None = None) -> list[StackResult]:
    """Preview, show, confirm and update each stack in order; stop at the first failure or "no".

    Raises PulumiCliMissing when the CLI cannot be started: no stack can run, and that is not a stack's fault.
    """
    import tempfile

    plan = [(w, s) for w in waves for s in w.stacks]
    results = [StackResult(w.name, stack) for w, stack in plan]
    progress = Progress(out, len(plan))
    plan_dir = options.plan_dir or Path(tempfile.mkdtemp(prefix="hubctl-rollout-"))
    plan_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    last_of_wave = {w.name: w.stacks[-1] for w in waves}
    try:
        for (wave, _), result in zip(plan, results, strict=True):
            if not _run_one(wave, result, factory, options, out, progress, plan_dir, ask):
                break
            pause_here = (wave.pause and options.pause and not options.preview_only and wave is not waves[-1]
                          and result.stack == last_of_wave[wave.name])
            if pause_here and (ask is None or not ask(f"wave {wave.name} is done: watch it (alerts, `kubectl get "
                                                      "clusters`), then continue with the next wave?")):
                following = waves[list(waves).index(wave) + 1].name
                out.write(f"paused after wave {wave.name}; continue with `hubctl rollout <env> --wave {following}` "
                          "(and the waves after it) when it looks healthy\n")
                break
    finally:
        if options.plan_dir is None:
            shutil.rmtree(plan_dir, ignore_errors=True)
    return results


def _run_one(wave: Wave, result: StackResult, factory: StackFactory, options: RunOptions, out: TextIO,
             progress: Progress, plan_dir: Path, ask: Ask | None) -> bool:
    """One stack: preview (saving the plan), show, confirm, up with that plan. False stops the rollout."""
    progress.start(result.wave, result.stack)
    started = time.monotonic()
    phase = "select"
    plan_file = plan_dir / f"{result.stack}.plan.json"
    try:
        stack = factory(result.stack)
        phase = "preview"
        progress.phase(phase)
        kwargs = options.kwargs(result.stack)
        steps = StepCollector()
        preview_kw = dict(kwargs)
        if not options.preview_only:
            preview_kw["plan"] = str(plan_file)
        preview = stack.preview(diff=True, on_event=progress.on_event(phase, steps), **preview_kw)
        result.preview = _summary(getattr(preview, "change_summary", None))
        shown = format_steps(result.stack, steps.steps)
        if shown:
            progress.clear()
            out.write(shown + "\n")
        if not options.preview_only:
            if result.preview == "no changes" and not steps.steps:
                result.up = "no changes (skipped)"
            else:
                if not options.yes:
                    progress.clear()
                    if ask is None or not ask(f"apply this preview to {result.stack} ({result.preview})?"):
                        result.ok = False
                        result.error = "not applied: the operator declined"
                        result.seconds = time.monotonic() - started
                        progress.done(result)
                        return False
                phase = "up"
                progress.phase(phase)
                up = stack.up(plan=str(plan_file), on_event=progress.on_event(phase), **kwargs)
                summary = getattr(up, "summary", None)
                outcome = getattr(summary, "result", "succeeded")
                if outcome != "succeeded":
                    raise RuntimeError(f"update {outcome}")
                result.up = _summary(getattr(summary, "resource_changes", None))
        result.ok = True
    except FileNotFoundError as exc:
        raise PulumiCliMissing(_CLI_MISSING.format(name=exc.filename or "pulumi")) from None
    except Exception as exc:  # any failure of one stack halts the rollout: reported, not raised
        result.ok = False
        result.error = f"{phase} failed: {_up_error(exc) if phase == 'up' else _one_line(exc)}"
        if phase == "preview":
            result.preview = "failed"
        elif phase == "up":
            result.up = "failed"
    finally:
        plan_file.unlink(missing_ok=True)  # the plan embeds config (secrets encrypted): keep it no longer
    result.seconds = time.monotonic() - started
    progress.done(result)
    return bool(result.ok)


def format_results(results: Sequence[StackResult]) -> str:
    """The closing table: every planned stack, what each phase did, and where the rollout stopped."""
    rows = [("WAVE", "STACK", "PREVIEW", "UP", "STATUS", "TIME")]
    for r in results:
        status = {True: "ok", False: "FAILED" if r.error and "declined" not in r.error else "stopped",
                  None: "skipped"}[r.ok]
        rows.append((r.wave, r.stack, r.preview, r.up, status, f"{r.seconds:.0f}s" if r.ok is not None else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    failed = [r for r in results if r.ok is False]
    if failed:
        lines.append(f"stopped at {failed[0].stack}: {failed[0].error}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    from hubctl.errors import OneLineParser

    p = OneLineParser(prog="hubctl rollout", description=__doc__.splitlines()[0])
    p.add_argument("env", help="environment from stacks/rollout.yaml (e.g. dev, prod), or 'all' with --list")
    p.add_argument("--preview-only", action="store_true", help="preview every stack in order, update nothing")
    p.add_argument("--wave", metavar="NAME", help=f"run only this wave ('{HUB_WAVE}' = the hub stack)")
    p.add_argument("--yes", action="store_true", help="update without asking after each preview (CI)")
    p.add_argument("--no-pause", action="store_true", help="do not stop after a `pause: true` wave (CI)")
    p.add_argument("--no-policy", action="store_true", help="skip the policy pack in ./policy")
    p.add_argument("--list", action="store_true", help="print the stacks in rollout order as JSON and exit")
    p.add_argument("--affected-by", metavar="FILE", help="print (JSON) the stacks touched by the paths in FILE")
    return p


def main(argv: Sequence[str] | None = None, *, factory: StackFactory | None = None, out: TextIO | None = None,
         root: Path = ROOT, ask: Ask | None = None, interactive: bool | None = None,
         check_cli: Callable[[], None] | None = None) -> int:
    """Exit 0 when every stack succeeded, 1 when one failed or the operator stopped, 2 for usage errors."""
    err = out or sys.stderr
    out = out or sys.stdout
    try:
        ns = _parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        config = load_config(root / ROLLOUT_FILE)
        if ns.list or ns.affected_by:
            stacks = config.stacks(ns.env)
            if ns.affected_by:
                changed = Path(ns.affected_by).read_text().splitlines() if ns.affected_by != "-" else sys.stdin
                stacks = affected_stacks(changed, config, ns.env)
            print(json.dumps(stacks), file=out)
            return EXIT_OK
        waves = config.environment(ns.env).plan()
        if ns.wave is not None:
            chosen = [w for w in waves if w.name == ns.wave]
            if not chosen:
                raise RolloutError(f"environment {ns.env} has no wave '{ns.wave}' (waves: "
                                   f"{', '.join(w.name for w in waves)})")
            waves = tuple(chosen)
        interactive = sys.stdin.isatty() if interactive is None else interactive
        pausing = any(w.pause for w in waves[:-1]) and not ns.no_pause
        if not ns.preview_only and not interactive and (not ns.yes or pausing):
            missing = " and ".join(flag for flag, needed in (("--yes", not ns.yes), ("--no-pause", pausing)) if needed)
            raise RolloutError(f"cannot ask for confirmation (stdin is not a terminal): pass {missing} to update "
                               "without asking, or --preview-only")
        policy: Path | None = root / "policy"
        if ns.no_policy or not (root / "policy" / "PulumiPolicy.yaml").exists():
            policy = None
        if factory is None:
            (check_cli or check_pulumi_cli)()
        elif check_cli is not None:
            check_cli()
        options = RunOptions(preview_only=ns.preview_only, root=root, policy_pack=policy, yes=ns.yes,
                             pause=not ns.no_pause)
        mode = "preview" if ns.preview_only else "preview, confirm, up" if not ns.yes else "preview + up"
        print(f"rollout {ns.env} ({mode}): " + " → ".join(
            f"{w.name} [{', '.join(w.stacks)}]{' (pause)' if w.pause and options.pause else ''}" for w in waves),
            file=out)
        results = run_rollout(waves, factory or automation_factory(config, root), options, out,
                              ask if ask is not None else (terminal_ask(out) if interactive else None))
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_USAGE
    except RolloutError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    print(format_results(results), file=out)
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
