"""`hubctl region-key`: the key is made here, never lands in the repository, and the CSR it prints is one the hub
accepts, for the stack's own region.

The default path pipes the key into `pulumi config set --secret` (a stand-in `pulumi` on PATH records its argv and
standard input); `--key-file` writes a new 0600 file outside the repository and refuses one inside it or one that
exists.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from components.kube.region_csr import check_region_csr
from hubctl.__main__ import main
from tests.support.tools import REPO

FAKE_PULUMI = """#!/bin/sh
printf '%s\\n' "$@" > "$PULUMI_ARGS"
cat > "$PULUMI_STDIN"
exit "${PULUMI_EXIT:-0}"
"""


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), repo=REPO, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text(FAKE_PULUMI)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PULUMI_ARGS", str(tmp_path / "args"))
    monkeypatch.setenv("PULUMI_STDIN", str(tmp_path / "stdin"))
    return tmp_path


def _tracked_and_untracked() -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (REPO / "stacks").iterdir()}


def test_the_key_goes_to_the_encrypted_config_on_stdin(fake_pulumi: Path) -> None:
    before = _tracked_and_untracked()
    code, stdout, stderr = _run("region-key", "prod-fsn1")
    assert code == 0, stderr
    args = (fake_pulumi / "args").read_text().split("\n")[:-1]
    assert args == ["config", "set", "--secret", "--stack", "prod-fsn1", "karmada-hub:identityKey"]
    key_pem = (fake_pulumi / "stdin").read_text()
    key = serialization.load_pem_private_key(key_pem.encode(), None)
    accepted = check_region_csr(stdout, "eu-fsn")
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert accepted.public_key.public_bytes(*fmt) == key.public_key().public_bytes(*fmt)
    assert "PRIVATE KEY" not in stdout + stderr
    assert accepted.user in stderr and "karmada-hub:identityCsr in stacks/Pulumi.prod-fsn1.yaml" in stderr
    assert _tracked_and_untracked() == before  # nothing written by hubctl itself


def test_every_run_makes_a_new_key(fake_pulumi: Path) -> None:
    first = _run("region-key", "prod-ash")[1]
    second = _run("region-key", "prod-ash")[1]
    assert check_region_csr(first, "us-ash").key_id != check_region_csr(second, "us-ash").key_id


def test_a_failing_pulumi_is_one_line_and_no_csr(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_EXIT", "1")
    code, stdout, stderr = _run("region-key", "prod-fsn1")
    assert code == 2 and stdout == ""
    assert stderr.startswith("error: pulumi config set --secret --stack prod-fsn1 karmada-hub:identityKey failed")


def test_no_pulumi_cli_names_the_alternative(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, stdout, stderr = _run("region-key", "prod-fsn1")
    assert code == 2 and stdout == ""
    assert "pass --key-file PATH (outside the repository)" in stderr and stderr.count("\n") == 1


def test_a_key_file_outside_the_repository(tmp_path: Path) -> None:
    path = tmp_path / "fsn.key"
    code, stdout, stderr = _run("region-key", "prod-fsn1", "--key-file", str(path))
    assert code == 0, stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    csr = x509.load_pem_x509_csr(stdout.encode())
    assert csr.public_key().public_numbers() == key.public_key().public_numbers()
    code, _, stderr = _run("region-key", "prod-fsn1", "--key-file", str(path))
    assert code == 2 and "exists already; this command never overwrites a key" in stderr


@pytest.mark.parametrize("inside", ["stacks/fsn.key", "build/../fsn.key"])
def test_a_key_file_inside_the_repository_is_refused(inside: str) -> None:
    target = REPO / inside
    code, stdout, stderr = _run("region-key", "prod-fsn1", "--key-file", str(target))
    assert code == 2 and stdout == "" and not target.exists()
    assert "is inside the repository" in stderr


@pytest.mark.parametrize(("stack", "message"), [
    ("prod-hub", "error: stacks/Pulumi.prod-hub.yaml: karmada-hub:role: is hub; only a region stack has an identity "
                 "key"),
    ("dev", "error: stacks/Pulumi.dev.yaml: karmada-hub:role: is all-in-one"),
    ("nowhere", "error: stacks/Pulumi.nowhere.yaml: no such stack file"),
])
def test_only_a_region_stack_gets_a_key(stack: str, message: str, tmp_path: Path) -> None:
    code, stdout, stderr = _run("region-key", stack, "--key-file", str(tmp_path / "k"))
    assert code == 2 and stdout == "" and stderr.startswith(message)
    assert not (tmp_path / "k").exists()
