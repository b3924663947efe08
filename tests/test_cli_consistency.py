"""The CLI shape a newcomer trips on (review-newcomer.md §1 #14, #15, #16): a stack name wherever a plan directory
is taken and a stack's file wherever a stack is, `--version`, help for every argument, conflicting or nonsensical
flags refused, `kubeconfig --from-file` bad input as a user error, and typos in a stack-reference key named where
they are written."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError
from hubctl import __main__ as cli
from hubctl.errors import EXIT_OK, EXIT_USER
from tests.support.tools import REPO


def run(*argv: str, repo: Path = REPO) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), repo=repo, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_version() -> None:
    import tomllib

    from components import versions

    code, out, err = run("--version")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert code == EXIT_OK and err == ""
    assert out.strip() == (f"hubctl {project} (karmada-hub; Karmada {versions.KARMADA_VERSION}, k3s "
                           f"{versions.K3S_VERSION})")


def _parsers() -> list[argparse.ArgumentParser]:
    from hubctl.rollout import _parser as rollout_parser

    main = cli.parser()
    found = [main, rollout_parser()]
    for action in main._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [p for name, p in action.choices.items() if name != "rollout"]
    return found


def test_every_argument_has_help() -> None:
    missing = [f"{p.prog} {a.dest}" for p in _parsers() for a in p._actions
               if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction) and not (a.help or "").strip()]
    assert not missing, missing


def test_usage_errors_of_every_command_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["rollout"], ["rollout", "prod", "--bogus"], ["budget", "dev", "--json", "--markdown"],
                 ["diff", "a", "b", "--max-chars", "0"], ["diff", "a", "b", "--max-chars", "-5"],
                 ["kubeconfig", "dev", "etcd"]):
        code, out, err = run(*argv)
        err += capsys.readouterr().err  # rollout's parser writes to the process's stderr
        assert code == EXIT_USER and out == "" and len(err.splitlines()) == 1, (argv, err)
    assert "not allowed with argument --json" in run("budget", "dev", "--json", "--markdown")[2]
    assert "--max-chars: must be at least 1 (got 0)" in run("diff", "a", "b", "--max-chars", "0")[2]


def test_a_stack_file_path_is_a_stack() -> None:
    code, out, _ = run("skew", "stacks/Pulumi.dev.yaml")
    assert code == EXIT_OK and "4 pairs, 0 problems" in out
    assert run("skew", str(REPO / "stacks" / "Pulumi.dev.yaml"))[0] == EXIT_OK
    code, _, err = run("budget", "/tmp/Pulumi.dev.yaml")
    assert code == EXIT_USER and err == (
        "error: /tmp/Pulumi.dev.yaml: hubctl reads stack files from stacks/ only (as Pulumi.yaml's stackConfigDir "
        "says); copy it to stacks/Pulumi.dev.yaml and name the stack dev\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout with the example stacks and one plan in build/plan, as `hubctl plan dev` leaves it."""
    shutil.copytree(REPO / "stacks", tmp_path / "stacks")
    plan = {"project": "karmada-hub", "stack": "dev", "resources": [], "outputs": {}}
    (tmp_path / "build" / "plan" / "dev").mkdir(parents=True)
    (tmp_path / "build" / "plan" / "dev" / "plan.json").write_text(json.dumps(plan))
    return tmp_path


def test_a_stack_name_is_its_plan(repo: Path) -> None:
    code, out, _ = run("policy", "dev", repo=repo)
    assert code == EXIT_OK and "policy: ok in dev" in out
    code, out, _ = run("diff", "dev", str(repo / "build" / "plan" / "dev"), "--json", repo=repo)
    assert code == EXIT_OK and json.loads(out)["changes"] == []
    code, _, err = run("policy", "prod-hub", repo=repo)
    assert code == EXIT_USER and err == ("error: prod-hub: no plan of stack prod-hub in build/plan/prod-hub yet; run "
                                         "`hubctl plan prod-hub` first\n")
    code, _, err = run("policy", "dve", repo=repo)
    assert code == EXIT_USER and err == ("error: dve: no such plan directory, plan.json or stack (stacks: dev, "
                                         "prod-ash, prod-fsn1, prod-hel1, prod-hub) (did you mean dev?)\n")


@pytest.mark.parametrize(("content", "expected"), [
    ("{", "not a pulumi stack export (not JSON: Expecting property name enclosed in double quotes at line 1)"),
    ("[]", "not a pulumi stack export (no `deployment` section)"),
    (json.dumps({"deployment": {"resources": [{"type": "pulumi-python:dynamic:Resource",
                                               "urn": "urn:x::karmada-apiserver-ready"}]}}),
     "this export's karmada-apiserver-ready resource holds no kubeconfig output"),
    (json.dumps({"deployment": {"resources": [{"type": "pulumi-python:dynamic:Resource",
                                               "urn": "urn:x::karmada-apiserver-ready",
                                               "outputs": {"kubeconfig": {"4dabf18193072939515e22adb298388d": "x",
                                                                          "plaintext": "{"}}}]}}),
     "karmada-apiserver-ready.kubeconfig in this export is not a secret `pulumi stack export` wrote"),
    (json.dumps({"deployment": {"resources": [1, "x"]}}), "this is not a hub stack's state"),
])
def test_kubeconfig_from_a_bad_file_is_a_user_error(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "export.json"
    path.write_text(content)
    code, out, err = run("kubeconfig", "dev", "karmada", "--from-file", str(path))
    assert code == EXIT_USER and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {path}: ") and expected in err, err


def test_kubeconfig_refuses_a_region_stack_and_a_missing_cli_first(monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run("kubeconfig", "prod-fsn1", "karmada")
    assert code == EXIT_USER and err == ("error: prod-fsn1: a region stack has no admin kubeconfig; ask its hub stack "
                                         "(hubStack.stack in stacks/Pulumi.prod-fsn1.yaml)\n")
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    code, _, err = run("kubeconfig", "dev", "host")
    assert code == EXIT_USER and err.startswith("error: the Pulumi CLI is not installed (https://www.pulumi.com/")


def test_a_plan_stack_typo_names_the_region_file_and_key(repo: Path) -> None:
    from hubctl.commands import hub_stack_outputs, load_config

    path = repo / "stacks" / "Pulumi.prod-fsn1.yaml"
    path.write_text(path.read_text().replace("planStack: prod-hub", "planStack: prod-hbu"))
    _, config = load_config(repo, "prod-fsn1", run_preflight=False)
    with pytest.raises(ConfigError) as info:
        hub_stack_outputs(repo, config, "stacks/Pulumi.prod-fsn1.yaml")
    assert str(info.value) == ("stacks/Pulumi.prod-fsn1.yaml: karmada-hub:hubStack.planStack: no stack file prod-hbu "
                               "in stacks/ (did you mean prod-hub?); name the hub's stack file")


def test_a_region_stacks_typo_names_the_hub_file_and_key(repo: Path) -> None:
    from components.config import FleetConfig
    from components.operations.region_intents import region_intents
    from hubctl.stackfile import read_stack

    raw, secrets = read_stack(repo, "prod-hub").project_values()
    raw["regionStacks"] = ["prod-fsn1", "prod-hel1", "prod-nbg1"]
    hub = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    with pytest.raises(ConfigError) as info:
        region_intents(hub, "prod-hub", repo / "stacks")
    assert str(info.value) == ("stacks/Pulumi.prod-hub.yaml: karmada-hub:regionStacks[2]: no stack file prod-nbg1 in "
                               "stacks/ (did you mean prod-fsn1?); list the region stacks' names")


def test_the_error_path_imports_nothing_heavy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Naming an error must not import pulumi (seconds) for a command that never needed it."""
    import sys

    from hubctl.errors import UserError, classify

    for name in ("components.config", "hubctl.plan", "hubctl.rollout", "components.karmada.crds"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__
    imported: list[str] = []

    def spy(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", spy)
    assert classify(UserError("x")) == (EXIT_USER, "error: x")
    assert classify(ValueError("y"))[0] == 3
    assert not [n for n in imported if n.startswith(("components", "hubctl.plan", "pulumi"))]


def test_make_plan_installs_quietly() -> None:
    """A fresh `make plan` printed ~330 pip lines before the plan (review-newcomer.md §1 #22)."""
    makefile = (REPO / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "pip install" in line and not line.lstrip().startswith("@")]
    assert installs and all("--quiet" in line for line in installs), installs
