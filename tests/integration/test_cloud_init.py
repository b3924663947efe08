"""The hub servers' cloud-init, checked by the real tools: cloud-init's schema, sh, and the install script run.

Every server's unredacted user-data (what Hetzner would receive) and every redacted file the plan writes
must be valid cloud-config; the embedded k3s config must parse; the k3s install script must verify the
binary against the release's checksum file (and the stack's pin) before installing anything. The script
runs for real against a local HTTP server that plays the GitHub release.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.hetzner import cloud_init
from hubctl.mocks import unwrap
from tests.support.httpfake import Handler, LoopbackServer
from tests.support.tools import REPO, require_tool

pytestmark = pytest.mark.integration

USER_DATA_LIMIT = 32 * 1024
SERVER = "hcloud:index/server:Server"


def server_user_data(plan: Any) -> dict[str, str]:
    out = {}
    hubs = {r.urn for r in plan.records if r.type == "karmada-hub:index:HubCluster"}
    for r in plan.records:
        if r.type == SERVER and r.parent in hubs:
            ins = unwrap(r.inputs)
            out[ins["name"]] = ins["userData"]
    assert out, "the dev plan has no servers"
    return dict(sorted(out.items()))


def write_files(document: str) -> dict[str, dict[str, Any]]:
    return {e["path"]: e for e in yaml.safe_load(document)["write_files"]}


def file_content(document: str, path: str) -> str:
    entry = write_files(document)[path]
    if entry.get("encoding") in ("b64", "base64"):
        import base64

        return base64.b64decode(entry["content"]).decode()
    return entry["content"]


def cloud_init_schema(path: Path) -> subprocess.CompletedProcess[str]:
    binary = require_tool("cloud-init", "Debian package cloud-init")
    return subprocess.run([binary, "schema", "--config-file", str(path)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hubctl.commands import run_plan

    out = tmp_path_factory.mktemp("plan")
    assert run_plan(REPO, "dev", out, quiet=True) == 0
    return out / "dev"


# ------------------------------------------------------------------------------------------ schema


def test_unredacted_user_data_passes_cloud_init_schema(rendered_dev, tmp_path: Path) -> None:
    docs = server_user_data(rendered_dev)
    for name, document in docs.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(document)
        result = cloud_init_schema(path)
        assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"
        assert "Valid cloud-config" in result.stdout


def test_plan_cloud_init_files_pass_schema(plan_dir: Path, rendered_dev) -> None:
    files = sorted((plan_dir / "cloud-init").glob("*.yaml"))
    assert [f.stem for f in files] == list(server_user_data(rendered_dev))
    for path in files:
        result = cloud_init_schema(path)
        assert result.returncode == 0, f"{path.name}: {result.stdout}{result.stderr}"


def test_schema_check_rejects_a_broken_document(rendered_dev, tmp_path: Path) -> None:
    """The tool is really checking: the same document with a typo'd key and int permissions fails."""
    document = next(iter(server_user_data(rendered_dev).values()))
    doc = yaml.safe_load(document)
    doc["write_files"][0]["permissions"] = 600
    doc["write_files"][0]["contents"] = doc["write_files"][0].pop("content")
    path = tmp_path / "broken.yaml"
    path.write_text("#cloud-config\n" + yaml.safe_dump(doc))
    result = cloud_init_schema(path)
    assert result.returncode != 0
    assert "contents" in result.stdout + result.stderr


def test_user_data_size_and_header(rendered_dev) -> None:
    for name, document in server_user_data(rendered_dev).items():
        assert document.startswith("#cloud-config\n"), name
        assert len(document.encode()) <= USER_DATA_LIMIT, f"{name}: {len(document.encode())} bytes"


def test_embedded_k3s_config_parses(rendered_dev) -> None:
    for name, document in server_user_data(rendered_dev).items():
        entry = write_files(document)[cloud_init.CONFIG_PATH]
        assert entry["permissions"] == "0600"
        config = yaml.safe_load(file_content(document, cloud_init.CONFIG_PATH))
        assert isinstance(config, dict), name
        assert config["node-name"] == name
        assert config["token-file"] == cloud_init.TOKEN_PATH
        assert isinstance(config["tls-san"], list) and config["tls-san"]
        # joiners name the server to join; the first server's boot-time check writes one of the two into a
        # drop-in (test_k3s_join_mode.py), so config.yaml carries neither
        files = write_files(document)
        first = cloud_init.JOIN_MODE_PATH in files
        assert "cluster-init" not in config and (("server" in config) != first), name
        runcmd = yaml.safe_load(document)["runcmd"]
        assert runcmd == [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", cloud_init.GUARD_UNIT],
                          [cloud_init.INSTALL_SCRIPT_PATH]], "what must hold before k3s runs is a unit step"
        # every k3s start waits for the private address first; on the first server the join decision follows
        # (a unit drop-in's ExecStartPre runs after the unit's own)
        unit = file_content(document, cloud_init.UNIT_PATH)
        pre = [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStartPre=")]
        assert pre[-1] == cloud_init.PRIVATE_NET_PATH, pre
        assert files[cloud_init.PRIVATE_NET_PATH]["permissions"] == "0700"
        assert (cloud_init.JOIN_UNIT_DROPIN in files) == first, name
        if first:
            dropin = file_content(document, cloud_init.JOIN_UNIT_DROPIN)
            assert [line for line in dropin.splitlines() if "=" in line] == [
                f"ExecStartPre={cloud_init.JOIN_MODE_PATH}"]
            assert cloud_init.JOIN_UNIT_DROPIN.startswith(cloud_init.UNIT_PATH + ".d/")


def test_secret_files_are_private_and_redacted_in_plan(rendered_dev, plan_dir: Path) -> None:
    for name, document in server_user_data(rendered_dev).items():
        entries = write_files(document)
        redacted = write_files((plan_dir / "cloud-init" / f"{name}.yaml").read_text())
        assert set(entries) == set(redacted), name
        for path, entry in entries.items():
            if path in cloud_init.SECRET_PATHS:
                assert entry["permissions"] == "0600", path
                assert redacted[path]["content"] == cloud_init.REDACTED, path
                assert entry["content"] != cloud_init.REDACTED
            else:
                assert redacted[path] == entry, path


# ------------------------------------------------------------------------------------- install script


@pytest.fixture(scope="module")
def install_script(rendered_dev) -> str:
    scripts = {file_content(d, cloud_init.INSTALL_SCRIPT_PATH) for d in server_user_data(rendered_dev).values()}
    assert len(scripts) == 1, "every server runs the same installer"
    return scripts.pop()


def test_install_script_is_valid_sh(install_script: str, tmp_path: Path) -> None:
    sh = require_tool("sh")
    path = tmp_path / "install-k3s"
    path.write_text(install_script)
    result = subprocess.run([sh, "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    broken = tmp_path / "broken"
    broken.write_text(install_script.replace("fi\n", "", 1))
    assert subprocess.run([sh, "-n", str(broken)], capture_output=True).returncode != 0


def test_install_script_is_run_by_runcmd(rendered_dev) -> None:
    for document in server_user_data(rendered_dev).values():
        doc = yaml.safe_load(document)
        assert [cloud_init.INSTALL_SCRIPT_PATH] in doc["runcmd"]
        assert write_files(document)[cloud_init.INSTALL_SCRIPT_PATH]["permissions"] == "0700"


def _arch_names() -> tuple[str, str]:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "k3s", "sha256sum-amd64.txt"
    if machine in ("aarch64", "arm64"):
        return "k3s-arm64", "sha256sum-arm64.txt"
    pytest.skip(f"the installer supports x86_64 and arm64 only (this is {machine})")
    raise AssertionError("unreachable")


@pytest.fixture
def release(tmp_path: Path) -> Iterator[tuple[str, Path, bytes]]:
    """A local stand-in for the GitHub release: (base URL, directory served, the fake binary's bytes). It serves
    the directory's files by name, 404 for anything else (as a release answers for an asset it lacks)."""
    require_tool("curl", "the installer downloads with curl")
    require_tool("sha256sum")
    served = tmp_path / "release"
    served.mkdir()
    binary, _ = _arch_names()
    payload = b"#!/bin/sh\necho fake k3s\n" + os.urandom(64).hex().encode()
    (served / binary).write_bytes(payload)

    class ReleaseHandler(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            asset = served / self.path.lstrip("/")
            if asset.parent == served and asset.is_file():
                return self.reply(200, asset.read_bytes(), {"Content-Type": "application/octet-stream"})
            self.reply(404, b"Not Found\n")

    server = LoopbackServer(ReleaseHandler)
    try:
        yield server.url, served, payload
    finally:
        server.close()


def _write_sums(served: Path, digest: str) -> None:
    binary, sums = _arch_names()
    other = "k3s-arm64" if binary == "k3s" else "k3s"
    (served / sums).write_text(f"{'0' * 64}  {other}\n{digest}  {binary}\n{'1' * 64}  k3s-airgap-images.tar\n")


def _run_installer(script: str, base: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = tmp_path / "install-k3s"
    path.write_text(script)
    env = {**os.environ, "K3S_RELEASE_BASE": base, "K3S_BIN_DIR": str(bin_dir), "K3S_SKIP_START": "1"}
    result = subprocess.run([require_tool("sh"), str(path)], env=env, capture_output=True, text=True, timeout=120)
    return result, bin_dir


def test_installer_installs_when_checksum_matches(install_script: str, release, tmp_path: Path) -> None:
    base, served, payload = release
    _write_sums(served, hashlib.sha256(payload).hexdigest())
    result, bin_dir = _run_installer(install_script, base, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (bin_dir / "k3s").read_bytes() == payload
    assert os.access(bin_dir / "k3s", os.X_OK)
    for tool in ("kubectl", "crictl", "ctr"):
        assert (bin_dir / tool).is_symlink() and os.readlink(bin_dir / tool) == "k3s"


def test_installer_refuses_wrong_checksum(install_script: str, release, tmp_path: Path) -> None:
    base, served, payload = release
    _write_sums(served, hashlib.sha256(payload + b"tampered").hexdigest())
    result, bin_dir = _run_installer(install_script, base, tmp_path)
    assert result.returncode != 0
    assert "checksum mismatch" in result.stderr
    assert list(bin_dir.iterdir()) == []


def test_installer_refuses_binary_missing_from_sums(install_script: str, release, tmp_path: Path) -> None:
    base, served, payload = release
    _, sums = _arch_names()
    (served / sums).write_text(f"{hashlib.sha256(payload).hexdigest()}  something-else\n")
    result, bin_dir = _run_installer(install_script, base, tmp_path)
    assert result.returncode != 0
    assert "not listed" in result.stderr
    assert list(bin_dir.iterdir()) == []


def test_installer_refuses_wrong_pinned_hash(release, tmp_path: Path) -> None:
    base, served, payload = release
    digest = hashlib.sha256(payload).hexdigest()
    _write_sums(served, digest)
    wrong_pin = hashlib.sha256(b"some other build").hexdigest()
    script = cloud_init.install_script("v1.34.1+k3s1", wrong_pin)
    result, bin_dir = _run_installer(script, base, tmp_path)
    assert result.returncode != 0
    assert "pinned" in result.stderr
    assert list(bin_dir.iterdir()) == []


def test_installer_accepts_right_pinned_hash(release, tmp_path: Path) -> None:
    base, served, payload = release
    digest = hashlib.sha256(payload).hexdigest()
    _write_sums(served, digest)
    result, bin_dir = _run_installer(cloud_init.install_script("v1.34.1+k3s1", digest), base, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (bin_dir / "k3s").read_bytes() == payload


def test_installer_fails_when_download_fails(install_script: str, release, tmp_path: Path) -> None:
    base, _, _ = release
    result, bin_dir = _run_installer(install_script, base + "/missing", tmp_path)
    assert result.returncode != 0
    assert "error: 404" in result.stderr, "it stops at the failed download, not at a later check"
    assert list(bin_dir.iterdir()) == []
