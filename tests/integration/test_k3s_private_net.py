"""A hub server's private address, run for real: the rendered `k3s-private-net` and `k3s-join-mode` scripts in a
network namespace each test creates, where the address (the dev plan's 10.0.1.11 of cp-0) arrives late or never.

Hetzner attaches the private network after a server with a public address has started (terraform-provider-hcloud
internal/server/resource.go), so at first boot `node-ip` may be on no interface yet. k3s must not start before it
is (the unit's first ExecStartPre waits, then pins flannel's VXLAN to the interface that holds it), and the first
server's join decision must never take an unreachable network for peers that do not answer. Here the namespace's
interface is named like a Hetzner private NIC (`enp7s0`); only the drop-in paths and the wait/pause are
substituted through the scripts' environment. Needs root and `ip`; namespaces are removed afterwards.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.hetzner import cloud_init
from tests.integration.test_cloud_init import file_content, server_user_data, write_files
from tests.support.tools import require_tool, tools_required

pytestmark = pytest.mark.integration

NIC = "enp7s0"


@pytest.fixture
def netns() -> Iterator[str]:
    require_tool("ip", "Debian package iproute2")
    for tool in ("sh", "awk"):
        require_tool(tool)
    if os.geteuid() != 0:
        if tools_required():
            pytest.fail("network namespaces need root; KARMADA_HUB_REQUIRE_TOOLS=1 forbids skipping", pytrace=False)
        pytest.skip("network namespaces need root")
    name = f"kh-pnet-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=30)
    try:
        # a veth pair inside the namespace (the dummy module is not everywhere): its one end plays the NIC
        _in(name, "ip", "link", "add", "name", NIC, "type", "veth", "peer", "name", f"{NIC}p")
        _in(name, "ip", "link", "set", NIC, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)


def _in(ns: str, *argv: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *argv], check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def first_server(rendered_dev: Any) -> dict[str, str]:
    docs = server_user_data(rendered_dev)
    first = [d for d in docs.values() if cloud_init.JOIN_MODE_PATH in write_files(d)]
    assert len(first) == 1
    document = first[0]
    return {"private_net": file_content(document, cloud_init.PRIVATE_NET_PATH),
            "join_mode": file_content(document, cloud_init.JOIN_MODE_PATH),
            "ip": yaml.safe_load(file_content(document, cloud_init.CONFIG_PATH))["node-ip"]}


def _start(ns: str, script: str, tmp: Path, name: str, env: dict[str, str]) -> subprocess.Popen[str]:
    path = tmp / name
    path.write_text(script)
    return subprocess.Popen(["ip", "netns", "exec", ns, "sh", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/local/bin:/usr/bin:/bin:/sbin:"
                                                                            "/usr/sbin", **env})


def _finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def test_every_server_waits_for_its_own_address(rendered_dev: Any) -> None:
    for name, document in server_user_data(rendered_dev).items():
        ip = yaml.safe_load(file_content(document, cloud_init.CONFIG_PATH))["node-ip"]
        assert f'node_ip="${{K3S_NODE_IP:-{ip}}}"' in file_content(document, cloud_init.PRIVATE_NET_PATH), name


def test_a_late_private_address_is_waited_for_and_pins_flannel(netns: str, first_server: dict[str, str],
                                                               tmp_path: Path) -> None:
    dropin = tmp_path / "config.yaml.d" / "10-flannel-iface.yaml"
    env = {"K3S_FLANNEL_DROPIN": str(dropin), "K3S_PRIVATE_NET_WAIT": "40", "K3S_PRIVATE_NET_PAUSE": "1"}
    proc = _start(netns, first_server["private_net"], tmp_path, "k3s-private-net", env)
    try:
        time.sleep(2.5)
        assert proc.poll() is None, "it returned before the address was there"
        assert not dropin.exists()
        _in(netns, "ip", "addr", "add", f"{first_server['ip']}/32", "dev", NIC)  # Hetzner attaches the network
    finally:
        code, out, err = _finish(proc)
    assert code == 0, err
    assert "waiting for 10.0.1.11" in out and f"flannel uses {NIC}" in out
    assert dropin.read_text() == f"flannel-iface: {NIC}\n"
    assert oct(dropin.stat().st_mode & 0o777) == "0o600"
    before = dropin.stat().st_mtime_ns
    code, out, _ = _finish(_start(netns, first_server["private_net"], tmp_path, "again", env))
    assert code == 0 and out == "" and dropin.stat().st_mtime_ns == before, "a restart leaves the drop-in alone"


def test_no_private_address_fails_the_start_loudly(netns: str, first_server: dict[str, str], tmp_path: Path) -> None:
    dropin = tmp_path / "10-flannel-iface.yaml"
    env = {"K3S_FLANNEL_DROPIN": str(dropin), "K3S_PRIVATE_NET_WAIT": "2", "K3S_PRIVATE_NET_PAUSE": "1"}
    _in(netns, "ip", "addr", "add", "10.0.1.12/32", "dev", NIC)  # another server's address is no help
    code, _, err = _finish(_start(netns, first_server["private_net"], tmp_path, "k3s-private-net", env))
    assert code == 1 and not dropin.exists()
    assert "10.0.1.11 is on no interface after 2s" in err and "k3s does not start without it" in err


def test_the_join_decision_is_not_made_without_the_private_address(netns: str, first_server: dict[str, str],
                                                                   tmp_path: Path) -> None:
    """Peers behind a network this server is not on cannot answer: that is no reason to initialise."""
    dropin = tmp_path / "50-join-mode.yaml"
    env = {"K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(tmp_path / "wal"), "K3S_JOIN_ROUNDS": "1",
           "K3S_JOIN_PAUSE": "0"}
    require_tool("curl")
    code, out, err = _finish(_start(netns, first_server["join_mode"], tmp_path, "k3s-join-mode", env))
    assert code == 1 and not dropin.exists(), out
    assert "cannot decide: 10.0.1.11 is on no interface" in err


def test_an_address_lost_while_probing_stops_the_decision(netns: str, first_server: dict[str, str],
                                                          tmp_path: Path) -> None:
    dropin = tmp_path / "50-join-mode.yaml"
    env = {"K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(tmp_path / "wal"), "K3S_JOIN_ROUNDS": "4",
           "K3S_JOIN_PAUSE": "1"}
    require_tool("curl")
    _in(netns, "ip", "addr", "add", f"{first_server['ip']}/32", "dev", NIC)
    proc = _start(netns, first_server["join_mode"], tmp_path, "k3s-join-mode", env)
    try:
        time.sleep(1)
        _in(netns, "ip", "addr", "del", f"{first_server['ip']}/32", "dev", NIC)
    finally:
        code, out, err = _finish(proc)
    assert code == 1 and not dropin.exists(), out
    assert "cannot decide" in err


def test_with_the_address_and_nobody_answering_the_first_server_initialises(netns: str, first_server: dict[str, str],
                                                                           tmp_path: Path) -> None:
    """The same namespace with the address in place: the decision is made (nothing listens on the peers)."""
    dropin = tmp_path / "50-join-mode.yaml"
    env = {"K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(tmp_path / "wal"), "K3S_JOIN_ROUNDS": "1",
           "K3S_JOIN_PAUSE": "0"}
    require_tool("curl")
    _in(netns, "ip", "addr", "add", f"{first_server['ip']}/32", "dev", NIC)
    code, _, err = _finish(_start(netns, first_server["join_mode"], tmp_path, "k3s-join-mode", env))
    assert code == 0, err
    assert dropin.read_text() == "cluster-init: true\n"
