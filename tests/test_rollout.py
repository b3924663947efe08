"""`hubctl rollout`: order, preview shown before confirmation, canary pause, plan-pinned up, halting, --wave, CI mode.

The real Automation API needs the Pulumi CLI; the one test that touches it checks the missing-CLI message.
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hubctl import rollout
from hubctl.rollout import RolloutError, affected_stacks, load_config, main

REPO = Path(__file__).resolve().parent.parent
PROD_ORDER = ["prod-hub", "prod-fsn1", "prod-hel1", "prod-ash"]


@dataclass
class FakeSummary:
    result: str = "succeeded"
    resource_changes: dict[str, int] = field(default_factory=lambda: {"create": 3, "same": 10})


@dataclass
class FakeResult:
    change_summary: dict[str, int] = field(default_factory=lambda: {"create": 3, "update": 1, "same": 10})
    summary: FakeSummary = field(default_factory=FakeSummary)


def step_event(op: str, name: str, type_: str = "kubernetes:core/v1:Secret", keys: list[str] | None = None,
               diffs: list[str] | None = None) -> Any:
    """A ResourcePreEvent as the Automation API delivers it (pulumi.automation.events)."""
    from pulumi.automation.events import EngineEvent, OpType, ResourcePreEvent, StepEventMetadata

    meta = StepEventMetadata(op=OpType(op), urn=f"urn:pulumi:s::karmada-hub::{type_}::{name}", type=type_,
                             provider="", keys=keys, diffs=diffs)
    return EngineEvent(sequence=0, timestamp=0, resource_pre_event=ResourcePreEvent(meta))


DEFAULT_STEPS = [("same", "unchanged"), ("create", "new-secret"), ("update", "lb"), ("replace", "old-secret")]


class FakeStack:
    def __init__(self, name: str, fleet: Fleet) -> None:
        self.name, self.fleet = name, fleet

    def _run(self, op: str, kwargs: dict[str, Any]) -> FakeResult:
        self.fleet.calls.append((op, self.name))
        self.fleet.kwargs.append(kwargs)
        if op == "preview" and "plan" in kwargs:
            Path(kwargs["plan"]).write_text('{"resourcePlans": {}}')  # what `pulumi preview --save-plan` does
            self.fleet.plans[self.name] = kwargs["plan"]
        if op == "up":
            plan = kwargs.get("plan")
            assert plan == self.fleet.plans.get(self.name) and Path(plan).is_file(), "up must use the saved plan"
        for step, name in self.fleet.steps.get(self.name, DEFAULT_STEPS):
            kwargs["on_event"](step_event(step, name, keys=["data"] if step == "replace" else None,
                                          diffs=["spec"] if step == "update" else None))
        failure = self.fleet.fail.get((op, self.name))
        if isinstance(failure, BaseException):
            raise failure
        if failure == "failed":
            return FakeResult(summary=FakeSummary(result="failed"))
        return FakeResult()

    def preview(self, **kwargs: Any) -> FakeResult:
        return self._run("preview", kwargs)

    def up(self, **kwargs: Any) -> FakeResult:
        return self._run("up", kwargs)


@dataclass
class Fleet:
    """A factory that records every call; `fail[(op, stack)]` makes that call raise or report failure."""

    fail: dict[tuple[str, str], Any] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    kwargs: list[dict[str, Any]] = field(default_factory=list)
    plans: dict[str, str] = field(default_factory=dict)
    steps: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def __call__(self, stack: str) -> FakeStack:
        self.calls.append(("select", stack))
        failure = self.fail.get(("select", stack))
        if isinstance(failure, BaseException):
            raise failure
        return FakeStack(stack, self)


@dataclass
class Operator:
    """Answers the rollout's questions in order (default: yes to all) and remembers them."""

    answers: list[bool] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)

    def __call__(self, question: str) -> bool:
        self.questions.append(question)
        return self.answers.pop(0) if self.answers else True


def run(*argv: str, fleet: Fleet | None = None, operator: Operator | None = None,
        interactive: bool = True) -> tuple[int, str, Fleet]:
    fleet = fleet or Fleet()
    out = io.StringIO()
    code = main(list(argv), factory=fleet, out=out, ask=operator or Operator(), interactive=interactive)
    return code, out.getvalue(), fleet


def ops(fleet: Fleet) -> list[tuple[str, str]]:
    return [c for c in fleet.calls if c[0] != "select"]


# ------------------------------------------------------------------------------------------ the file


def test_rollout_yaml_defines_prod_and_dev() -> None:
    config = load_config(REPO / "stacks" / "rollout.yaml")
    prod = config.environment("prod")
    assert [(w.name, list(w.stacks)) for w in prod.plan()] == [
        ("hub", ["prod-hub"]), ("canary", ["prod-fsn1"]), ("eu", ["prod-hel1"]), ("us", ["prod-ash"])]
    assert config.stacks("dev") == ["dev"]
    assert config.stacks() == ["dev", *PROD_ORDER]
    assert config.fully_qualified("prod-hub") == "organization/karmada-hub/prod-hub"
    for stack in config.stacks():
        assert (REPO / "stacks" / f"Pulumi.{stack}.yaml").is_file()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("environments: {}", "non-empty environments"),
        ("environments: {prod: {waves: []}}", "environments.prod.hub: is required"),
        ("environments: {prod: {hub: h, waves: [{name: a}]}}", "waves[0]: needs a name"),
        ("environments: {prod: {hub: h, waves: [{name: hub, stacks: [x]}]}}", "reserved or used twice"),
        ("environments: {a: {hub: h}, b: {hub: h}}", "already rolled out by environment a"),
        ("environments: [", "not valid YAML"),
    ],
)
def test_rollout_yaml_mistakes_are_one_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text(text)
    with pytest.raises(RolloutError) as exc:
        load_config(path)
    assert error in str(exc.value) and "\n" not in str(exc.value)


# ------------------------------------------------------------------------------------------- order


def test_prod_previews_then_ups_each_stack_hub_first() -> None:
    code, out, fleet = run("prod")
    assert code == 0
    assert ops(fleet) == [(op, s) for s in PROD_ORDER for op in ("preview", "up")]
    lines = out.splitlines()
    assert lines[0] == ("rollout prod (preview, confirm, up): "
                        "hub [prod-hub] → canary [prod-fsn1] (pause) → eu [prod-hel1] → us [prod-ash]")
    progress = [ln for ln in lines if ln.startswith("[")]
    assert [ln.split()[0] for ln in progress] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    assert progress[1].split()[1:4] == ["canary", "prod-fsn1", "✓"]
    assert "preview +3 ~1, up +3" in progress[1]
    table = lines[lines.index(next(ln for ln in lines if ln.startswith("WAVE"))):]
    assert table[0].split() == ["WAVE", "STACK", "PREVIEW", "UP", "STATUS", "TIME"]
    assert [row.split()[1] for row in table[1:]] == PROD_ORDER
    assert all(" ok " in row for row in table[1:])


def test_stack_options_use_the_stack_file_and_the_policy_pack() -> None:
    _, _, fleet = run("prod", "--wave", "canary")
    kwargs = fleet.kwargs[0]
    assert kwargs["config_file"] == str(REPO / "stacks" / "Pulumi.prod-fsn1.yaml")
    assert kwargs["policy_packs"] == [str(REPO / "policy")]
    assert kwargs["refresh"] is True and kwargs["diff"] is True
    _, _, fleet = run("prod", "--wave", "canary", "--no-policy")
    assert "policy_packs" not in fleet.kwargs[0]


def test_dev_is_just_dev() -> None:
    code, _, fleet = run("dev")
    assert code == 0 and ops(fleet) == [("preview", "dev"), ("up", "dev")]


# ---------------------------------------------------------------------------------------- failures


def test_failed_preview_halts_before_its_up_and_later_waves() -> None:
    err = rollout_command_error("error: preview failed: policy violations")
    code, out, fleet = run("prod", fleet=Fleet(fail={("preview", "prod-hel1"): err}))
    assert code == 1
    assert ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub"), ("preview", "prod-fsn1"), ("up", "prod-fsn1"),
                          ("preview", "prod-hel1")]
    rows = {ln.split()[1]: ln for ln in out.splitlines() if ln.split()[:1] in (["hub"], ["canary"], ["eu"], ["us"])}
    assert "FAILED" in rows["prod-hel1"] and "skipped" in rows["prod-ash"]
    assert any(ln.startswith("[3/4] eu") and "✗ preview failed: error: preview failed" in ln for ln in out.splitlines())
    last = out.rstrip().splitlines()[-1]
    assert last == "stopped at prod-hel1: preview failed: error: preview failed: policy violations"
    assert "Traceback" not in out


def test_failed_up_result_halts() -> None:
    code, out, fleet = run("prod", fleet=Fleet(fail={("up", "prod-hub"): "failed"}))
    assert code == 1 and ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub")]
    assert "stopped at prod-hub: up failed: update failed" in out


def test_stack_selection_error_halts() -> None:
    code, out, fleet = run("prod", fleet=Fleet(fail={("select", "prod-fsn1"): RuntimeError("stack is locked")}))
    assert code == 1 and ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub")]
    assert "stopped at prod-fsn1: select failed: stack is locked" in out


def rollout_command_error(stderr: str) -> Exception:
    from pulumi.automation import CommandError
    from pulumi.automation._cmd import CommandResult

    return CommandError(CommandResult(stdout="Previewing update (prod)\n", stderr=f"{stderr}\n", code=255))


# ------------------------------------------------------------------------------------------- flags


def test_wave_runs_only_that_wave() -> None:
    code, out, fleet = run("prod", "--wave", "eu")
    assert code == 0 and ops(fleet) == [("preview", "prod-hel1"), ("up", "prod-hel1")]
    assert "[1/1] eu" in out
    code, _, fleet = run("prod", "--wave", "hub")
    assert ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub")]


def test_unknown_wave_or_env_is_a_usage_error() -> None:
    code, out, fleet = run("prod", "--wave", "asia")
    assert code == 2 and fleet.calls == []
    assert out.strip() == "error: environment prod has no wave 'asia' (waves: hub, canary, eu, us)"
    code, out, _ = run("staging")
    assert code == 2 and out.strip() == "error: unknown environment 'staging' (known: dev, prod)"


def test_preview_only_never_updates() -> None:
    code, out, fleet = run("prod", "--preview-only")
    assert code == 0 and ops(fleet) == [("preview", s) for s in PROD_ORDER]
    assert "rollout prod (preview):" in out
    assert all(" - " in row or row.rstrip().endswith("-") or " ok " in row for row in out.splitlines()
               if row.startswith(("hub", "canary", "eu", "us")))


def test_preview_only_still_halts_on_failure() -> None:
    fleet = Fleet(fail={("preview", "prod-hub"): RuntimeError("boom")})
    code, _, fleet = run("prod", "--preview-only", fleet=fleet)
    assert code == 1 and ops(fleet) == [("preview", "prod-hub")]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_is_rewritten_live_on_a_terminal() -> None:
    out = Terminal()
    assert main(["dev"], factory=Fleet(), out=out, ask=Operator(), interactive=True) == 0
    text = out.getvalue()
    assert "\r\x1b[K[1/1] hub      dev          preview… 4 resources" in text
    assert "\r\x1b[K[1/1] hub      dev          up… 4 resources" in text
    assert "\r\x1b[K[1/1] hub      dev          ✓ preview +3 ~1, up +3 (0s)\n" in text
    plain = io.StringIO()
    main(["dev", "--yes"], factory=Fleet(), out=plain, interactive=False)
    assert "\r" not in plain.getvalue() and "resources" not in plain.getvalue()


# ----------------------------------------------------------------------------------- missing CLI


def test_missing_cli_is_one_line_exit_2() -> None:
    fleet = Fleet(fail={("select", "prod-hub"): FileNotFoundError(2, "No such file or directory", "pulumi")})
    code, out, _ = run("prod", fleet=fleet)
    assert code == 2
    error = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert error == ["error: the Pulumi CLI is not installed or not on PATH (pulumi); install it "
                     "(https://www.pulumi.com/docs/install/) or use `python -m hubctl plan` offline"]
    assert "Traceback" not in out


@pytest.mark.skipif(shutil.which("pulumi") is not None, reason="a Pulumi CLI is installed here")
def test_real_automation_api_without_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["dev", "--preview-only"])
    captured = capsys.readouterr()
    assert code == 2
    assert "error: the Pulumi CLI is not installed" in captured.err and "Traceback" not in captured.err


# ------------------------------------------------------------------------------ CI helpers (--list)


def test_list_prints_rollout_order() -> None:
    code, out, fleet = run("all", "--list")
    assert code == 0 and json.loads(out) == ["dev", *PROD_ORDER] and fleet.calls == []
    assert json.loads(run("prod", "--list")[1]) == PROD_ORDER


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        # a region file is read by its hub (Clusters, agent RBAC, namespaces, the CSR it signs): both preview
        (["stacks/Pulumi.prod-hel1.yaml"], ["prod-hub", "prod-hel1"]),
        (["stacks/Pulumi.prod-ash.yaml", "stacks/Pulumi.dev.yaml", "README.md"], ["dev", "prod-hub", "prod-ash"]),
        # a hub file holds what its regions mirror (gates, failover flags, DNS timing): every region previews
        (["stacks/Pulumi.prod-hub.yaml"], PROD_ORDER),
        (["docs/runbook.md", "tests/test_x.py", ".github/workflows/up.yml", "stacks/rollout.yaml"], []),
        (["components/karmada/flags.py"], ["dev", *PROD_ORDER]),
        (["policy/rules/resources.py", "stacks/Pulumi.dev.yaml"], ["dev", *PROD_ORDER]),
        (["stacks/Pulumi.unknown.yaml"], []),
    ],
)
def test_affected_stacks(changed: list[str], expected: list[str]) -> None:
    config = load_config(REPO / "stacks" / "rollout.yaml")
    assert affected_stacks(changed, config) == expected


def test_affected_by_file(tmp_path: Path) -> None:
    changed = tmp_path / "changed.txt"
    changed.write_text("stacks/Pulumi.prod-fsn1.yaml\n")
    code, out, _ = run("all", "--affected-by", str(changed))
    assert code == 0 and json.loads(out) == ["prod-hub", "prod-fsn1"]
    assert run("all", "--affected-by", str(tmp_path / "nope"))[0] == rollout.EXIT_USAGE


# ------------------------------------------------------------------- no surprises (issue 16)


def test_each_preview_is_shown_before_the_question_and_up_uses_its_plan() -> None:
    operator = Operator()
    code, out, fleet = run("dev", operator=operator)
    assert code == 0
    shown = out.index("  preview of dev:")
    listing = out[shown:].splitlines()[1:4]
    assert listing == ["    ± replace  Secret old-secret  (replaced because of: data)",
                       "    + create   Secret new-secret",
                       "    ~ update   Secret lb  (changes: spec)"]  # replacements first; `same` is not listed
    assert operator.questions == ["apply this preview to dev (+3 ~1)?"]  # the change_summary the engine reported
    (preview_kw, up_kw) = fleet.kwargs
    assert up_kw["plan"] == preview_kw["plan"] and preview_kw["plan"].endswith("dev.plan.json")
    assert not Path(preview_kw["plan"]).exists(), "the saved plan (it embeds config) is deleted after up"


def test_declining_applies_nothing_and_stops() -> None:
    code, out, fleet = run("prod", operator=Operator(answers=[True, False]))
    assert code == 1
    assert ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub"), ("preview", "prod-fsn1")]
    assert "stopped at prod-fsn1: not applied: the operator declined" in out
    rows = {ln.split()[1]: ln for ln in out.splitlines() if ln.split()[:1] in (["canary"], ["eu"])}
    assert " stopped " in rows["prod-fsn1"] and "skipped" in rows["prod-hel1"]


def test_the_canary_wave_pauses_until_confirmed() -> None:
    operator = Operator(answers=[True, True, False])  # hub yes, canary yes, then "continue?" no
    code, out, fleet = run("prod", operator=operator)
    assert ops(fleet) == [("preview", "prod-hub"), ("up", "prod-hub"), ("preview", "prod-fsn1"), ("up", "prod-fsn1")]
    assert operator.questions[2].startswith("wave canary is done: watch it")
    assert "paused after wave canary; continue with `hubctl rollout <env> --wave eu`" in out
    assert code == 1
    operator = Operator()
    code, _, fleet = run("prod", operator=operator)
    assert code == 0 and len(ops(fleet)) == 8
    assert [q.split(" ")[0] for q in operator.questions] == ["apply", "apply", "wave", "apply", "apply"]


def test_ci_mode_needs_yes_and_no_pause_and_asks_nothing() -> None:
    for argv, missing in ((["prod"], "--yes and --no-pause"), (["prod", "--yes"], "--no-pause"),
                          (["dev"], "--yes")):
        code, out, fleet = run(*argv, interactive=False)
        assert code == 2 and fleet.calls == [], argv
        assert out.strip() == (f"error: cannot ask for confirmation (stdin is not a terminal): pass {missing} to "
                               "update without asking, or --preview-only")
    operator = Operator()
    code, out, fleet = run("prod", "--yes", "--no-pause", interactive=False, operator=operator)
    assert code == 0 and operator.questions == [] and len(ops(fleet)) == 8
    assert "rollout prod (preview + up): hub [prod-hub] → canary [prod-fsn1] → eu" in out
    assert run("prod", "--preview-only", interactive=False)[0] == 0


def test_a_stack_without_changes_is_not_updated() -> None:
    fleet = Fleet(steps={"dev": [("same", "a")]})
    fleet_result = FakeResult(change_summary={"same": 10})
    original = FakeStack._run

    def quiet(self: FakeStack, op: str, kwargs: dict[str, Any]) -> FakeResult:
        original(self, op, kwargs)
        return fleet_result

    FakeStack._run = quiet  # type: ignore[method-assign]
    try:
        operator = Operator()
        code, out, _ = run("dev", fleet=fleet, operator=operator)
    finally:
        FakeStack._run = original  # type: ignore[method-assign]
    assert code == 0 and ops(fleet) == [("preview", "dev")] and operator.questions == []
    assert "✓ preview no changes, up no changes (skipped)" in out


def test_an_up_that_would_exceed_its_plan_is_explained() -> None:
    err = rollout_command_error("error: resource urn:pulumi:prod-hub::karmada-hub::x::y violates plan: properties "
                                "changed: ~~data[{a}!={b}]")
    code, out, _ = run("prod", fleet=Fleet(fail={("up", "prod-hub"): err}))
    assert code == 1
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("stopped at prod-hub: up failed: the engine refused to do more than the preview showed "
                           "(error: resource urn:pulumi:prod-hub::karmada-hub::x::y violates plan")
    assert last.endswith("rerun the rollout to preview again")


def test_nothing_is_printed_before_the_cli_check_passes() -> None:
    def no_cli() -> None:
        raise rollout.PulumiCliMissing("the Pulumi CLI is not installed or not on PATH (pulumi); install it")

    out = io.StringIO()
    code = main(["prod"], factory=Fleet(), out=out, ask=Operator(), interactive=True, check_cli=no_cli)
    assert code == 2 and out.getvalue().splitlines() == [
        "error: the Pulumi CLI is not installed or not on PATH (pulumi); install it"]


def test_pause_must_be_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text("environments: {prod: {hub: h, waves: [{name: a, stacks: [x], pause: 'yes'}]}}")
    with pytest.raises(RolloutError, match=r"waves\[0\]\.pause: must be true or false"):
        load_config(path)
