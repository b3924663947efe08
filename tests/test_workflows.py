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
    assert "env" not in job  # make setup and everything but the preview step run without a secret
    assert job["environment"] == "preview-${{ matrix.stack }}"
    (step,) = steps_using(job, PULUMI_ACTION)
    assert step["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_PREVIEW_TOKEN }}",
                           "HCLOUD_TOKEN": "${{ secrets.HCLOUD_READ_TOKEN }}"}  # read-only credentials
    assert step["with"]["command"] == "preview"
    assert step["with"]["diff"] is True and step["with"]["comment-on-pr"] is True
    assert step["with"]["policyPacks"] == "policy"
    assert step["with"]["stack-name"].endswith("/karmada-hub/${{ matrix.stack }}")


def secrets_used(job: dict[str, Any]) -> bool:
    return "secrets." in yaml.safe_dump(job)


def test_plan_jobs_have_no_credentials_and_run_for_forks() -> None:
    jobs = load("preview.yml")["jobs"]
    for job_id in ("plan-head", "plan-diff"):
        assert not secrets_used(jobs[job_id]), job_id
        assert "if" not in jobs[job_id] or "head.repo" not in jobs[job_id]["if"], job_id
    head = "\n".join(s.get("run", "") for s in jobs["plan-head"]["steps"])
    assert "-m hubctl plan" in head and steps_using(jobs["plan-head"], "actions/upload-artifact")
    script = "\n".join(s.get("run", "") for s in jobs["plan-diff"]["steps"])
    assert "-m hubctl diff" in script and "-m hubctl policy" in script and "GITHUB_STEP_SUMMARY" in script
    comment = next(s for s in jobs["plan-diff"]["steps"] if "gh pr comment" in s.get("run", ""))
    assert comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"


def base_code_errors(job: dict[str, Any]) -> list[str]:
    """Review M3: the job that renders what a reviewer reads runs only the base branch's code: it checks out the
    base alone, sets up and runs the base's virtualenv, and takes the PR's plans as a downloaded artifact."""
    errors = []
    refs = [s.get("with", {}).get("ref") for s in steps_using(job, "actions/checkout")]
    if refs != ["${{ github.event.pull_request.base.sha }}"]:
        errors.append(f"checks out {refs}, not the base alone")
    script = "\n".join(s.get("run", "") for s in job["steps"])
    if "make -C base setup" not in script or re.search(r"make -C (?!base)", script):
        errors.append("sets up something other than the base")
    if not re.search(r'py="\$PWD/base/\.venv/bin/python"', script) or "head/.venv" in script:
        errors.append("runs another virtualenv than the base's")
    if not steps_using(job, "actions/download-artifact"):
        errors.append("does not take the PR's plans as an artifact")
    return errors


def test_the_review_aid_is_rendered_by_the_base_branch() -> None:
    assert base_code_errors(load("preview.yml")["jobs"]["plan-diff"]) == []


def test_base_code_check_can_fail() -> None:
    job = copy.deepcopy(load("preview.yml")["jobs"]["plan-diff"])
    job["steps"].insert(0, {"uses": "actions/checkout@x", "with": {"path": "head"}})
    job["steps"].append({"run": 'py="$PWD/head/.venv/bin/python"\nmake -C head setup'})
    assert base_code_errors(job) == ["checks out [None, '${{ github.event.pull_request.base.sha }}'], not the base "
                                     "alone", "sets up something other than the base",
                                     "runs another virtualenv than the base's"]


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
        assert "env" not in job
        (step,) = steps_using(job, PULUMI_ACTION)
        assert step["env"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}",
                               "HCLOUD_TOKEN": "${{ secrets.HCLOUD_TOKEN }}"}
    preview = yaml.safe_dump(load("preview.yml")["jobs"])
    assert "secrets.HCLOUD_TOKEN" not in preview and "secrets.PULUMI_ACCESS_TOKEN" not in preview


def secret_step_errors(doc: dict[str, Any], name: str) -> list[str]:
    """A secret (but the job token) reaches only a pulumi/actions step, never the job or a `run` step: the
    steps before it (checkout, pip, make) then run without it."""
    errors = []
    for job_id, job in doc["jobs"].items():
        if re.search(r"secrets\.(?!GITHUB_TOKEN)", yaml.safe_dump({k: v for k, v in job.items() if k != "steps"})):
            errors.append(f"{name}: job {job_id} puts a secret in the job")
        for i, step in enumerate(job.get("steps", [])):
            if re.search(r"secrets\.(?!GITHUB_TOKEN)", yaml.safe_dump(step)) and not str(
                    step.get("uses", "")).startswith(PULUMI_ACTION):
                errors.append(f"{name}: {job_id}.steps[{i}] sees a secret")
    return errors


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_secrets_reach_only_the_pulumi_step(name: str) -> None:
    assert secret_step_errors(load(name), name) == []


def test_secret_step_check_can_fail() -> None:
    doc = copy.deepcopy(load("up.yml"))
    doc["jobs"]["up-dev"]["env"] = {"HCLOUD_TOKEN": "${{ secrets.HCLOUD_TOKEN }}"}
    doc["jobs"]["up-dev"]["steps"][2]["env"] = {"X": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}
    assert secret_step_errors(doc, "up.yml") == ["up.yml: job up-dev puts a secret in the job",
                                                 "up.yml: up-dev.steps[2] sees a secret"]


def test_deploying_jobs_run_where_the_firewall_lets_them_in_and_previews_never_there() -> None:
    """The readiness gates and providers dial the servers behind the Cloud Firewall: the deploy runner is
    configurable. A preview runs the PR's code: never on the deploy runner (review H2)."""
    for job_id, job in load("up.yml")["jobs"].items():
        assert job["runs-on"] == "${{ vars.DEPLOY_RUNNER || 'ubuntu-24.04' }}", job_id
    assert load("preview.yml")["jobs"]["preview"]["runs-on"] == "${{ vars.PREVIEW_RUNNER || 'ubuntu-24.04' }}"
    assert "DEPLOY_RUNNER" not in (WORKFLOWS / "preview.yml").read_text()


def test_deploys_run_on_main_only() -> None:
    """Review M9: whatever starts up.yml (a push, or a workflow_dispatch from any ref a writer picks), no job
    deploys unless the ref is main."""
    doc = load("up.yml")
    assert set(doc["on"]) == {"push", "workflow_dispatch"} and doc["on"]["push"] == {"branches": ["main"]}
    for job_id, job in doc["jobs"].items():
        assert job.get("if") == "github.ref == 'refs/heads/main'", job_id


def checkout_errors(doc: dict[str, Any], name: str) -> list[str]:
    return [f"{name}: {job_id} keeps the job token in .git/config" for job_id, job in doc["jobs"].items()
            for s in steps_using(job, "actions/checkout") if (s.get("with") or {}).get("persist-credentials") is not
            False]


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_no_checkout_keeps_the_token(name: str) -> None:
    """Review L5: actions/checkout persists the job token in .git/config unless told not to."""
    assert checkout_errors(load(name), name) == []


def test_checkout_check_can_fail() -> None:
    doc = copy.deepcopy(load("up.yml"))
    doc["jobs"]["up-dev"]["steps"][0].pop("with")
    assert checkout_errors(doc, "up.yml") == ["up.yml: up-dev keeps the job token in .git/config"]


def _locked(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile --generate-hashes lock."""
    out: dict[str, tuple[str, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", line)
        if m:
            current = m.group(1).lower().replace("_", "-")
            out[current] = (m.group(2), 0)
        elif current and "--hash=sha256:" in line:
            out[current] = (out[current][0], out[current][1] + 1)
    return out


@pytest.mark.parametrize(("ranges", "lock"), [("requirements.txt", "requirements.lock"),
                                              ("policy/requirements.txt", "policy/requirements.lock")])
def test_deploys_install_only_hashed_locks(ranges: str, lock: str) -> None:
    """Review M5: what a deploy installs is fixed and hashed (pip --require-hashes); every requirement of the
    ranges is pinned in the lock, inside its range, with hashes."""
    from packaging.requirements import Requirement

    locked = _locked(REPO / lock)
    assert locked and all(n > 0 for _, n in locked.values())
    for line in (REPO / ranges).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        name = req.name.lower().replace("_", "-")
        assert name in locked, f"{lock} lacks {name}"
        assert req.specifier.contains(locked[name][0]), f"{lock}: {name} {locked[name][0]} not in {req.specifier}"
    make = (REPO / "Makefile").read_text()
    assert f"--require-hashes --no-deps -r {lock}" in make
    for name in ("preview.yml", "up.yml"):
        jobs = [j for j_id, j in load(name)["jobs"].items() if steps_using(j, PULUMI_ACTION)]
        for job in jobs:
            assert any(s.get("run") == "make setup-locked" for s in job["steps"]), name


def test_the_pulumi_cli_is_the_locked_sdk() -> None:
    version = _locked(REPO / "requirements.lock")["pulumi"][0]
    for name in ("preview.yml", "up.yml"):
        for job in load(name)["jobs"].values():
            for step in steps_using(job, PULUMI_ACTION):
                assert step["with"]["pulumi-version"] == version, name


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
