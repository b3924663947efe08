"""Where the offline plan and the tests find the pinned Karmada CRDs, and what a user sees when it cannot.

The repo never carries them: `KARMADA_HUB_CRDS_DIR`, the workspace's `shared/karmada/crds` beside this
checkout or beside the local checkout it was cloned from, a few local clones deep (so `git clone . /tmp/x`
still plans offline), then a verified download. Without any of them the CLI says so in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from components.karmada import crds
from tests.support.tools import REPO, copy_program


def test_a_clone_of_a_local_checkout_finds_the_workspace_copy(tmp_path: Path) -> None:
    here = crds.workspace_crds_dir(REPO)
    if here is None:
        pytest.skip("this checkout has no workspace copy beside it to be found from a clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    assert not (tmp_path / "shared").exists()
    assert crds.workspace_crds_dir(clone) == here
    again = tmp_path / "clone-of-clone"
    subprocess.run(["git", "clone", "-q", str(clone), str(again)], check=True, timeout=120)
    assert crds.workspace_crds_dir(again) == here


def test_a_remote_origin_or_no_git_finds_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert crds.workspace_crds_dir(plain) is None
    subprocess.run(["git", "init", "-q", str(plain)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(plain), "remote", "add", "origin", "https://github.com/example/karmada-hub.git"],
                   check=True, timeout=60)
    assert crds.workspace_crds_dir(plain) is None
    subprocess.run(["git", "-C", str(plain), "remote", "set-url", "origin", "git@github.com:example/hub.git"],
                   check=True, timeout=60)
    assert crds.workspace_crds_dir(plain) is None


def test_a_failed_download_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*_: object, **__: object) -> None:
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(crds, "local_dirs", lambda version: [])
    monkeypatch.setattr(crds.urllib.request, "urlopen", offline)
    monkeypatch.setattr(crds, "_resolves", lambda host, timeout=5.0: True)
    with pytest.raises(crds.CrdIntegrityError) as info:
        crds.fetch("v1.18.2", "policy/policy.karmada.io_propagationpolicies.yaml", allow_download=True)
    message = str(info.value)
    assert "\n" not in message and "download from https://raw.githubusercontent.com/" in message
    assert "set KARMADA_HUB_CRDS_DIR to a directory laid out like the release's charts/karmada/_crds/bases" in message
    assert "git clone --depth 1 --branch v1.18.2 https://github.com/karmada-io/karmada" in message


def test_cli_without_crds_says_so_in_one_line(tmp_path: Path) -> None:
    """A copy with no workspace beside it, no git origin, no cache and downloads forbidden."""
    repo = copy_program(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k != crds.CRDS_DIR_ENV}
    env.update(KARMADA_HUB_NO_DOWNLOAD="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--quiet"], cwd=repo,
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        "error: CRD apps/apps.karmada.io_workloadrebalancers.yaml of Karmada v1.18.2 not found offline: "
        + crds.layout_hint("v1.18.2")]
    assert "(<group>/<file>.yaml, e.g. apps/apps.karmada.io_workloadrebalancers.yaml)" in result.stderr
    assert not (repo / "build" / "plan" / "dev").exists()


def test_no_dns_fails_fast_with_the_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crds, "local_dirs", lambda version: [])
    monkeypatch.setattr(crds, "_resolves", lambda host, timeout=5.0: False)
    with pytest.raises(crds.CrdIntegrityError) as info:
        crds.fetch("v1.18.2", "policy/policy.karmada.io_propagationpolicies.yaml", allow_download=True)
    assert "raw.githubusercontent.com does not resolve (offline?)" in str(info.value)
    assert crds.layout_hint("v1.18.2") in str(info.value)


def test_a_complete_download_cache_is_a_source_for_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone from GitHub has no workspace beside it: once the plan downloaded the CRDs, tests read the cache."""
    monkeypatch.delenv(crds.CRDS_DIR_ENV, raising=False)
    monkeypatch.setattr(crds, "workspace_crds_dir", lambda *a, **k: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert crds.crds_source_dir() is None
    cache = tmp_path / "karmada-hub" / "crds" / crds.WORKSPACE_VERSION
    for rel in crds.CRD_SHA256[crds.WORKSPACE_VERSION]:
        (cache / rel).parent.mkdir(parents=True, exist_ok=True)
        (cache / rel).write_text("x")
    assert crds.crds_source_dir() == cache
