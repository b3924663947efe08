"""The GitHub workflows: they parse, have the shape GitHub needs, up.yml deploys in stacks/rollout.yaml order, and
every job holding a credential runs behind a GitHub environment with the least credential that works, every
action pinned by commit SHA.

Structure is checked here by hand (so the suite runs anywhere); where check-jsonschema is installed the files
are also validated against its vendored GitHub workflow schema. Each check also runs on a broken copy, to
show that it can fail.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubctl.rollout import HUB_WAVE, load_config

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"
PULUMI_ACTION = "pulumi/actions@"
SECURITY_DOC = REPO / "docs" / "security.md"


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def structure_errors(doc: Any) -> list[str]:
    """What GitHub would reject or what this repo forbids, as messages (empty = fine)."""
    if not isinstance(doc, dict):
        return ["workflow is not a mapping"]
    errors = [f"missing top-level '{key}'" for key in ("name", "on", "jobs") if key not in doc]
    jobs = doc.get("jobs") or {}
    for job_id, job in jobs.items():
        if not isinstance(job, dict):
            errors.append(f"{job_id}: not a mapping")
            continue
        if "uses" in job:  # a reusable-workflow call has neither runs-on nor steps
            continue
        if not job.get("runs-on"):
            errors.append(f"{job_id}: no runs-on")
        steps = job.get("steps")
        if not isinstance(steps, list) or not steps:
            errors.append(f"{job_id}: no steps")
            continue
        for i, step in enumerate(steps):
            if not isinstance(step, dict) or ("uses" in step) == ("run" in step):
                errors.append(f"{job_id}.steps[{i}]: needs exactly one of uses/run")
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            if need not in jobs:
                errors.append(f"{job_id}: needs unknown job {need}")
    return errors


def needs_of(job: dict[str, Any]) -> set[str]:
    needs = job.get("needs", [])
    return {needs} if isinstance(needs, str) else set(needs)


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).startswith(action)]


def expected_up_needs() -> dict[str, set[str]]:
    """job id -> the jobs it must wait for: every stack of the previous wave (environments in file order)."""
    config = load_config(REPO / "stacks" / "rollout.yaml")
    expected: dict[str, set[str]] = {}
    previous: set[str] = set()
    for env in config.environments:
        for wave in env.plan():
            jobs = {f"up-{stack}" for stack in wave.stacks}
            for job in jobs:
                expected[job] = set(previous)
            previous = jobs
    return expected


def up_order_errors(doc: dict[str, Any]) -> list[str]:
    expected = expected_up_needs()
    jobs = doc["jobs"]
    errors = [f"missing job {j}" for j in sorted(set(expected) - set(jobs))]
    errors += [f"job {j} is not in stacks/rollout.yaml" for j in sorted(set(jobs) - set(expected))]
    for job_id in sorted(set(expected) & set(jobs)):
        if needs_of(jobs[job_id]) != expected[job_id]:
            errors.append(f"{job_id} needs {sorted(needs_of(jobs[job_id]))}, expected {sorted(expected[job_id])}")
    return errors


# -------------------------------------------------------------------------------------------- both


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_workflow_structure(name: str) -> None:
    assert structure_errors(load(name)) == []


def test_structure_check_can_fail() -> None:
    doc = load("up.yml")
    broken = copy.deepcopy(doc)
    del broken["jobs"]["up-dev"]["runs-on"]
    broken["jobs"]["up-prod-hub"]["steps"] = []
    broken["jobs"]["up-prod-ash"]["needs"] = "up-nowhere"
    broken["jobs"]["up-prod-hel1"]["steps"][0]["run"] = "echo both"
    assert structure_errors(broken) == [
        "up-dev: no runs-on",
        "up-prod-hub: no steps",
        "up-prod-hel1.steps[0]: needs exactly one of uses/run",
        "up-prod-ash: needs unknown job up-nowhere",
    ]


# ---------------------------------------------------------------------------------------------- up


def test_up_runs_on_push_to_main() -> None:
    assert load("up.yml")["on"]["push"]["branches"] == ["main"]


def test_up_needs_follow_rollout_yaml() -> None:
    assert up_order_errors(load("up.yml")) == []
    assert expected_up_needs()["up-prod-fsn1"] == {"up-prod-hub"}  # the hub before its first wave


def test_up_order_check_can_fail() -> None:
    doc = load("up.yml")
    swapped = copy.deepcopy(doc)
    swapped["jobs"]["up-prod-fsn1"]["needs"] = "up-prod-hel1"
    swapped["jobs"]["up-prod-hel1"]["needs"] = "up-prod-hub"
    assert up_order_errors(swapped) == [
        "up-prod-fsn1 needs ['up-prod-hel1'], expected ['up-prod-hub']",
        "up-prod-hel1 needs ['up-prod-hub'], expected ['up-prod-fsn1']",
    ]
    missing = copy.deepcopy(doc)
    del missing["jobs"]["up-prod-ash"]
    assert up_order_errors(missing) == ["missing job up-prod-ash"]


def test_each_up_job_is_its_stack_with_its_own_environment() -> None:
    config = load_config(REPO / "stacks" / "rollout.yaml")
    jobs = load("up.yml")["jobs"]
    for stack in config.stacks():
        job = jobs[f"up-{stack}"]
        assert job["environment"] == stack
        (step,) = steps_using(job, PULUMI_ACTION)
        assert step["with"]["command"] == "up"
        assert step["with"]["stack-name"].endswith(f"/karmada-hub/{stack}")
        assert step["with"]["policyPacks"] == "policy"


def test_hub_wave_name_is_reserved() -> None:
    assert HUB_WAVE == "hub"


# ----------------------------------------------------------------------------------------- preview


def test_preview_job_uses_secrets_and_skips_forks() -> None:
    doc = load("preview.yml")
    assert list(doc["on"]) == ["pull_request"]
    job = doc["jobs"]["preview"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.affected.outputs.stacks) }}"
    assert job["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_PREVIEW_TOKEN }}",
                          "HCLOUD_TOKEN": "${{ secrets.HCLOUD_READ_TOKEN }}"}  # read-only credentials
    assert job["environment"] == "preview-${{ matrix.stack }}"
    (step,) = steps_using(job, PULUMI_ACTION)
    assert step["with"]["command"] == "preview"
    assert step["with"]["diff"] is True and step["with"]["comment-on-pr"] is True
    assert step["with"]["policyPacks"] == "policy"
    assert step["with"]["stack-name"].endswith("/karmada-hub/${{ matrix.stack }}")


def secrets_used(job: dict[str, Any]) -> bool:
    return "secrets." in yaml.safe_dump(job)


def test_plan_diff_job_has_no_credentials_and_runs_for_forks() -> None:
    job = load("preview.yml")["jobs"]["plan-diff"]
    assert not secrets_used(job)
    assert "head.repo" not in job["if"]
    script = "\n".join(s.get("run", "") for s in job["steps"])
    assert "-m hubctl plan" in script and "-m hubctl diff" in script
    assert "GITHUB_STEP_SUMMARY" in script
    assert steps_using(job, "actions/upload-artifact")
    refs = [s.get("with", {}).get("ref") for s in steps_using(job, "actions/checkout")]
    assert refs == [None, "${{ github.event.pull_request.base.sha }}"]  # head (merge commit) and base
    comment = next(s for s in job["steps"] if "gh pr comment" in s.get("run", ""))
    assert comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"


def test_secret_check_can_fail() -> None:
    job = copy.deepcopy(load("preview.yml")["jobs"]["plan-diff"])
    job["steps"][0]["env"] = {"HCLOUD_TOKEN": "${{ secrets.HCLOUD_TOKEN }}"}
    assert secrets_used(job)


# ---------------------------------------------------------------------------------- JSON schema

_VENV_BIN = Path(sys.executable).parent / "check-jsonschema"
CHECK_JSONSCHEMA = str(_VENV_BIN) if _VENV_BIN.exists() else shutil.which("check-jsonschema")


@pytest.mark.skipif(CHECK_JSONSCHEMA is None, reason="check-jsonschema not installed (pip install check-jsonschema)")
@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_schema_valid(name: str) -> None:
    result = subprocess.run([CHECK_JSONSCHEMA, "--builtin-schema", "vendor.github-workflows", str(WORKFLOWS / name)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(CHECK_JSONSCHEMA is None, reason="check-jsonschema not installed (pip install check-jsonschema)")
def test_schema_check_can_fail(tmp_path: Path) -> None:
    doc = load("up.yml")
    doc["jobs"]["up-dev"]["runs-on"] = {"not": "a runner"}
    doc["jobs"]["up-dev"]["timeout-minutes"] = "soon"
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(doc))
    result = subprocess.run([CHECK_JSONSCHEMA, "--builtin-schema", "vendor.github-workflows", str(bad)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "up-dev" in result.stdout


# ---------------------------------------------------------------------------------------- trust rules

PIN = re.compile(r"^\s*(?:-\s*)?uses:\s*(\S+?)@([^\s#]+)\s*(#\s*(\S+))?\s*$")


def pin_errors(text: str, name: str) -> list[str]:
    """Every `uses:` must name a full 40-hex commit and say which release tag that is (`# vX.Y.Z`)."""
    errors = []
    for number, line in enumerate(text.splitlines(), 1):
        if "uses:" not in line or line.lstrip().startswith("#"):
            continue
        m = PIN.match(line)
        if not m:
            errors.append(f"{name}:{number}: unreadable uses line")
        elif not re.fullmatch(r"[0-9a-f]{40}", m.group(2)):
            errors.append(f"{name}:{number}: {m.group(1)}@{m.group(2)} is not pinned by commit SHA")
        elif not (m.group(4) and re.fullmatch(r"v\d+\.\d+\.\d+", m.group(4))):
            errors.append(f"{name}:{number}: {m.group(1)} pin has no `# vX.Y.Z` comment naming its tag")
    return errors


def credential_errors(doc: dict[str, Any], name: str) -> list[str]:
    """A job that reads any secret but GITHUB_TOKEN must run behind an environment; nothing may run on
    pull_request_target (which hands secrets to the PR's code)."""
    errors = [f"{name}: pull_request_target runs untrusted code with secrets"] if "pull_request_target" in doc[
        "on"] else []
    for job_id, job in doc["jobs"].items():
        used = set(re.findall(r"secrets\.([A-Za-z0-9_]+)", yaml.safe_dump(job))) - {"GITHUB_TOKEN"}
        if used and not job.get("environment"):
            errors.append(f"{name}: job {job_id} reads {sorted(used)} without an environment")
    return errors


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_actions_are_pinned_by_commit_sha(name: str) -> None:
    assert pin_errors((WORKFLOWS / name).read_text(), name) == []


def test_pin_check_can_fail() -> None:
    text = ("      - uses: actions/checkout@v6\n"
            "      - uses: actions/setup-python@ece7cb06caefa5fff74198d8649806c4678c61a1\n"
            "      - uses: pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d # v7.0.0\n")
    assert pin_errors(text, "x.yml") == [
        "x.yml:1: actions/checkout@v6 is not pinned by commit SHA",
        "x.yml:2: actions/setup-python pin has no `# vX.Y.Z` comment naming its tag",
    ]


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_credentials_only_behind_environments(name: str) -> None:
    assert credential_errors(load(name), name) == []


def test_credential_check_can_fail() -> None:
    doc = copy.deepcopy(load("preview.yml"))
    del doc["jobs"]["preview"]["environment"]
    doc["on"]["pull_request_target"] = {}
    assert credential_errors(doc, "preview.yml") == [
        "preview.yml: pull_request_target runs untrusted code with secrets",
        "preview.yml: job preview reads ['HCLOUD_READ_TOKEN', 'PULUMI_PREVIEW_TOKEN'] without an environment",
    ]


def test_up_uses_the_stack_projects_read_write_token_and_preview_only_read_tokens() -> None:
    for job in load("up.yml")["jobs"].values():
        assert job["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}",
                              "HCLOUD_TOKEN": "${{ secrets.HCLOUD_TOKEN }}"}
    preview = yaml.safe_dump(load("preview.yml")["jobs"])
    assert "secrets.HCLOUD_TOKEN" not in preview and "secrets.PULUMI_ACCESS_TOKEN" not in preview


def test_deploying_jobs_run_where_the_firewall_lets_them_in() -> None:
    """The readiness gates and providers dial the servers behind the Cloud Firewall: the runner is configurable."""
    for name, job_id in (("preview.yml", "preview"), *(("up.yml", j) for j in load("up.yml")["jobs"])):
        assert load(name)["jobs"][job_id]["runs-on"] == "${{ vars.DEPLOY_RUNNER || 'ubuntu-24.04' }}", job_id


def environments_documented() -> dict[str, str]:
    """docs/security.md's environments table: name -> protection column."""
    out = {}
    for line in SECURITY_DOC.read_text().splitlines():
        m = re.match(r"^\| `([a-z0-9-]+|preview-<stack>|preview-prod-\*)` \|(.*)\|\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_every_environment_is_documented_and_prod_ones_need_reviewers() -> None:
    documented = environments_documented()
    used = {job["environment"] for job in load("up.yml")["jobs"].values()}
    assert used <= set(documented), sorted(used - set(documented))
    assert "preview-<stack>" in documented and "preview-prod-*" in documented
    for env, protection in documented.items():
        if env.startswith(("prod", "preview-prod")):
            assert "required reviewers" in protection, env
    assert "main only" in documented["prod-hub"]
