"""hubctl's conventions: exit codes (0 ok, 1 findings, 2 user error, 3 internal error), one line and no traceback
for any error, --json on every read command, plain text when piped and rich tables on a terminal, --out that
never replaces a directory hubctl did not make, and the `hubctl` console script."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hubctl import __main__ as cli
from hubctl.commands import OUT_MARKER, claim_out_dir
from hubctl.errors import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USER, UserError
from tests.support.tools import REPO


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*argv: str, stdout: io.StringIO | None = None, repo: Path = REPO) -> tuple[int, str, str]:
    out, err = stdout or io.StringIO(), io.StringIO()
    code = cli.main(list(argv), repo=repo, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------ exit codes


def test_usage_errors_are_one_line_exit_2() -> None:
    code, out, err = run("plann", "dev")
    assert code == EXIT_USER and out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: hubctl: argument command: invalid choice: 'plann'") and "--help" in line
    code, _, err = run("budget")
    assert code == EXIT_USER and len(err.splitlines()) == 1


def test_help_is_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == EXIT_OK
    assert "0 ok, 1 findings" in capsys.readouterr().out


def test_an_internal_error_is_exit_3_one_line_without_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4Lj\n-----END EC PRIVATE KEY-----"

    def broken(*_: Any, **__: Any) -> int:
        raise RuntimeError(f"unexpected state {key} token=" + "A1b2" * 20)

    monkeypatch.setattr("hubctl.commands.run_budget", broken)
    code, out, err = run("budget", "dev")
    assert code == EXIT_INTERNAL and out == ""
    (line,) = err.splitlines()
    assert line.startswith("internal error: RuntimeError: unexpected state [PEM block not shown]")
    assert "MHcCAQ" not in line and "A1b2A1b2" not in line and "HUBCTL_DEBUG=1" in line
    monkeypatch.setenv("HUBCTL_DEBUG", "1")
    _, _, err = run("budget", "dev")
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("internal error:")


def test_user_errors_keep_their_own_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: Any, **__: Any) -> int:
        raise UserError("--out: /x already exists and was not written by hubctl plan")

    monkeypatch.setattr("hubctl.commands.run_budget", refused)
    assert run("budget", "dev")[0::2] == (EXIT_USER, "error: --out: /x already exists and was not written by "
                                                     "hubctl plan\n")


def test_policy_violations_are_exit_1(tmp_path: Path) -> None:
    plan = {"stack": "x", "resources": [{"urn": "urn:pulumi:x::karmada-hub::hcloud:index/firewall:Firewall::fw",
                                         "type": "hcloud:index/firewall:Firewall",
                                         "inputs": {"rules": [{"direction": "in", "port": "22", "protocol": "tcp",
                                                               "sourceIps": ["0.0.0.0/0"]}]}}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, out, _ = run("policy", str(tmp_path))
    assert code == EXIT_FINDINGS and "policy: FAILED in x" in out
    code, out, _ = run("policy", str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == EXIT_FINDINGS and doc["violations"] and doc["violations"][0]["urn"].endswith("::fw")
    assert run("policy", str(tmp_path / "missing"))[0] == EXIT_USER


# ------------------------------------------------------------------------------------------ --json


def test_budget_json_and_markdown() -> None:
    code, out, _ = run("budget", "dev", "--json")
    doc = json.loads(out)
    capacity = doc["capacity"]
    assert code == 0 and doc["stack"] == "dev"
    assert capacity["totalSeconds"] == round(sum(t["seconds"] for t in capacity["terms"]), 2)
    assert {t["name"] for t in capacity["terms"]} >= {"detection"} and doc["traffic"]["terms"]
    assert doc["worstSeconds"] == max(t["seconds"] for t in doc["tenants"])
    code, out, _ = run("budget", "dev", "--markdown")
    assert out.startswith("**Traffic RTO") and "| **total** |" in out


def test_skew_table_and_json() -> None:
    code, out, _ = run("skew", "dev")
    assert code == 0 and "4 pairs, 0 problems" in out
    doc = json.loads(run("skew", "dev", "--json")[1])
    assert doc["problems"] == 0 and {p["component"] for p in doc["pairs"]} >= {"hub k3s"}


def test_plain_when_piped_rich_on_a_terminal() -> None:
    _, piped, _ = run("skew", "dev")
    assert "\x1b[" not in piped and "━" not in piped and "----" in piped
    _, tty, _ = run("skew", "dev", stdout=Terminal())
    assert "version skew: dev" in tty and "----------------------------  ------------" not in tty


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("cli-plan")
    code, out, err = run("plan", "dev", "--out", str(root), "--json", "--policy")
    assert code == 0, err
    return root, json.loads(out)


def test_plan_json_is_the_report_and_report_json_is_written(planned: tuple[Path, dict[str, Any]]) -> None:
    root, doc = planned
    assert doc["outDir"] == str(root / "dev") and doc["policy"]["violations"] == []
    report = doc["report"]
    assert report["stack"] == "dev" and report["resources"] > 200
    assert set(report["sections"]) >= {"components", "controlPlane", "versionSkew", "failoverBudget", "certificates"}
    assert report["sections"]["failoverBudget"]["metrics"]["worst case"]["unit"] == "s"
    assert json.loads((root / "dev" / "report.json").read_text()) == report
    assert (root / "dev" / OUT_MARKER).is_file()
    assert all("PRIVATE KEY" not in json.dumps(c) for c in report["sections"]["certificates"]["data"])


def test_diff_json(planned: tuple[Path, dict[str, Any]]) -> None:
    root, _ = planned
    code, out, _ = run("diff", str(root / "dev"), str(root / "dev"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["changes"] == [] and doc["counts"]["delete"] == 0 and doc["deltas"] == []


# ------------------------------------------------------------------------------------------ --out


def test_out_never_replaces_a_directory_hubctl_did_not_make(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "dev").mkdir(parents=True)
    (home / "dev" / "thesis.tex").write_text("years of work")
    code, _, err = run("plan", "dev", "--out", str(home), "--quiet")
    assert code == EXIT_USER and (home / "dev" / "thesis.tex").read_text() == "years of work"
    assert err.splitlines() == [f"error: --out: {home / 'dev'} already exists and was not written by hubctl plan "
                                f"(no {OUT_MARKER} in it); hubctl replaces the whole directory, so choose another "
                                "--out or remove it yourself"]


def test_out_replaces_what_it_made_and_old_plan_directories(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / OUT_MARKER).write_text("")
    (mine / "stale.yaml").write_text("")
    claim_out_dir(mine)
    legacy = tmp_path / "legacy"
    (legacy / "manifests").mkdir(parents=True)
    (legacy / "plan.json").write_text('{"project": "karmada-hub"}')
    claim_out_dir(legacy)
    (legacy / "notes.txt").write_text("")
    with pytest.raises(UserError):
        claim_out_dir(legacy)
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(UserError, match="is not a directory hubctl made"):
        claim_out_dir(a_file)
    claim_out_dir(tmp_path / "new")


# ------------------------------------------------------------------------------------------ the script


def test_console_script_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["hubctl"] == "hubctl.__main__:console"
    assert "pip install --quiet --no-deps -e ." in (REPO / "Makefile").read_text()


def test_python_dash_m_from_elsewhere_is_the_same_cli(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "hubctl", "budget", "dev", "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stack"] == "dev"
