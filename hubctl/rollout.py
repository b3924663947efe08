"""`python -m hubctl rollout <env>`: preview and update an environment's stacks in order, hub first, wave by wave.

The order lives in `stacks/rollout.yaml`. Each stack is previewed and then updated before the next one
starts, and the first failure stops the rollout, so a broken change reaches one canary region, not the
fleet. Stacks are driven through the Automation API (which runs the Pulumi CLI); the stack factory is a
parameter so tests drive the whole flow with a fake.

Also used by CI without any Pulumi: `rollout all --list` prints every stack in rollout order and
`rollout all --affected-by FILE` the stacks a list of changed paths touches (preview.yml's matrix).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import yaml

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
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise RolloutError(f"{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise RolloutError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
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
            waves.append(Wave(wave["name"], tuple(str(s) for s in wave["stacks"])))
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

    A stack file touches its stack; docs, tests, CI and the operator CLI touch none; anything else
    (program, components, Pulumi.yaml, the policy pack, dependencies) may change every stack.
    """
    stacks = config.stacks(env)
    hit: set[str] = set()
    for path in (p.strip() for p in changed):
        if not path or path.endswith(".md") or path.startswith(_NO_STACK_IMPACT) or path == str(ROLLOUT_FILE):
            continue
        name = Path(path).name
        if path.startswith("stacks/") and name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
            hit.add(name.removeprefix("Pulumi.").rsplit(".", 1)[0])
            continue
        return stacks
    return [s for s in stacks if s in hit]


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


@dataclass(frozen=True)
class RunOptions:
    preview_only: bool = False
    policy_pack: Path | None = None
    refresh: bool = True
    root: Path = ROOT

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
    """True done, False failed, None not run (skipped after an earlier failure)."""
    seconds: float = 0.0
    error: str | None = None


class PulumiCliMissing(RolloutError):
    pass


def _summary(changes: Mapping[Any, int] | None) -> str:
    """`{create: 2, update: 1, same: 9}` -> "+2 ~1" (no changes: "no changes")."""
    marks = {"create": "+", "update": "~", "replace": "±", "delete": "-", "create-replacement": "+",
             "delete-replaced": "-"}
    counts: dict[str, int] = {}
    for op, n in (changes or {}).items():
        key = str(getattr(op, "value", op))
        if key in marks and n:
            counts[marks[key]] = counts.get(marks[key], 0) + int(n)
    if not counts:
        return "no changes"
    return " ".join(f"{mark}{counts[mark]}" for mark in ("+", "~", "±", "-") if mark in counts)


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

    def on_event(self, phase: str) -> Callable[[Any], None]:
        def handle(event: Any) -> None:
            if getattr(event, "resource_pre_event", None) is not None:
                self.resources += 1
                self._draw(f"{phase}… {self.resources} resources")

        return handle

    def _draw(self, text: str) -> None:
        if self.live:
            self.out.write(f"\r\033[K{self.prefix} {text}")
            self.out.flush()

    def done(self, result: StackResult) -> None:
        if result.ok:
            detail = f"✓ preview {result.preview}" + ("" if result.up == "-" else f", up {result.up}")
        else:
            detail = f"✗ {result.error}"
        end = f"{self.prefix} {detail} ({result.seconds:.0f}s)"
        self.out.write(f"\r\033[K{end}\n" if self.live else f"{end}\n")
        self.out.flush()


def run_rollout(waves: Sequence[Wave], factory: StackFactory, options: RunOptions, out: TextIO) -> list[StackResult]:
    """Preview then update each stack in order; stop at the first failure (later stacks are reported skipped).

    Raises PulumiCliMissing when the CLI cannot be started: no stack can run, and that is not a stack's fault.
    """
    plan = [(w.name, s) for w in waves for s in w.stacks]
    results = [StackResult(wave, stack) for wave, stack in plan]
    progress = Progress(out, len(plan))
    for result in results:
        progress.start(result.wave, result.stack)
        started = time.monotonic()
        phase = "select"
        try:
            stack = factory(result.stack)
            phase = "preview"
            progress.phase(phase)
            kwargs = options.kwargs(result.stack)
            preview = stack.preview(diff=True, on_event=progress.on_event(phase), **kwargs)
            result.preview = _summary(getattr(preview, "change_summary", None))
            if not options.preview_only:
                phase = "up"
                progress.phase(phase)
                up = stack.up(on_event=progress.on_event(phase), **kwargs)
                summary = getattr(up, "summary", None)
                outcome = getattr(summary, "result", "succeeded")
                if outcome != "succeeded":
                    raise RuntimeError(f"update {outcome}")
                result.up = _summary(getattr(summary, "resource_changes", None))
            result.ok = True
        except FileNotFoundError as exc:
            raise PulumiCliMissing(
                f"the Pulumi CLI is not installed or not on PATH ({exc.filename or 'pulumi'}); install it "
                "(https://www.pulumi.com/docs/install/) or use `python -m hubctl plan` offline"
            ) from None
        except Exception as exc:  # any failure of one stack halts the rollout: reported, not raised
            result.ok = False
            result.error = f"{phase} failed: {_one_line(exc)}"
            if phase == "preview":
                result.preview = "failed"
            elif phase == "up":
                result.up = "failed"
        result.seconds = time.monotonic() - started
        progress.done(result)
        if not result.ok:
            break
    return results


def format_results(results: Sequence[StackResult]) -> str:
    """The closing table: every planned stack, what each phase did, and where the rollout stopped."""
    rows = [("WAVE", "STACK", "PREVIEW", "UP", "STATUS", "TIME")]
    for r in results:
        status = {True: "ok", False: "FAILED", None: "skipped"}[r.ok]
        rows.append((r.wave, r.stack, r.preview, r.up, status, f"{r.seconds:.0f}s" if r.ok is not None else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    failed = [r for r in results if r.ok is False]
    if failed:
        lines.append(f"stopped at {failed[0].stack}: {failed[0].error}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hubctl rollout", description=__doc__.splitlines()[0])
    p.add_argument("env", help="environment from stacks/rollout.yaml (e.g. dev, prod), or 'all' with --list")
    p.add_argument("--preview-only", action="store_true", help="preview every stack in order, update nothing")
    p.add_argument("--wave", metavar="NAME", help=f"run only this wave ('{HUB_WAVE}' = the hub stack)")
    p.add_argument("--no-policy", action="store_true", help="skip the policy pack in ./policy")
    p.add_argument("--list", action="store_true", help="print the stacks in rollout order as JSON and exit")
    p.add_argument("--affected-by", metavar="FILE", help="print (JSON) the stacks touched by the paths in FILE")
    return p


def main(argv: Sequence[str] | None = None, *, factory: StackFactory | None = None, out: TextIO | None = None,
         root: Path = ROOT) -> int:
    """Exit 0 when every stack succeeded, 1 when one failed, 2 for usage errors or a missing Pulumi CLI."""
    err = out or sys.stderr
    out = out or sys.stdout
    ns = _parser().parse_args(list(argv) if argv is not None else None)
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
        policy: Path | None = root / "policy"
        if ns.no_policy or not (root / "policy" / "PulumiPolicy.yaml").exists():
            policy = None
        options = RunOptions(preview_only=ns.preview_only, root=root, policy_pack=policy)
        mode = "preview" if ns.preview_only else "preview + up"
        print(f"rollout {ns.env} ({mode}): " + " → ".join(f"{w.name} [{', '.join(w.stacks)}]" for w in waves),
              file=out)
        results = run_rollout(waves, factory or automation_factory(config, root), options, out)
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
