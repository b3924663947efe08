"""The metadata guard for real: the rules the plan's cloud-init renders, applied in network namespaces.

Each test builds its own namespaces (random names, removed afterwards):

- `node`: the hub server. It routes for `pod` (like flannel's cni0 bridge), masquerades pod traffic and carries
  what k3s adds later: flannel's FORWARD accepts, a kube-router-style ACCEPT at the top of filter FORWARD/INPUT,
  and a kube-proxy-style DNAT of a ClusterIP to the metadata address;
- `pod`: one pod (10.42.0.5), default route via the node;
- the metadata service: a small HTTP server on 169.254.169.254 serving a user-data document, either on the
  node itself (topology `local`, the issue's shape) or one hop away in a `meta` namespace behind the node's
  uplink (topology `uplink`, the shape of the real Hetzner path, forwarded and masqueraded).

Before the guard the pod reads the user-data; after the rendered guard (and after more ACCEPTs inserted on top,
as k3s does once it runs) the pod is refused, directly and through the ClusterIP, while root on the node is
still served and a non-root process on the node is refused. A guard rendered for the wrong pod range lets the
pod through, so the check can fail. Needs root, `ip` and `iptables` (CI runs as root; `.ci/run` installs them).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.hetzner import cloud_init
from tests.integration.test_cloud_init import file_content, server_user_data
from tests.support.tools import require_tool, tools_required

pytestmark = pytest.mark.integration

META = cloud_init.METADATA_ADDRESS
POD_IP = "10.42.0.5"
CLUSTER_IP = "10.43.0.99"
PROBE = """
import os, sys, urllib.request
uid = int(sys.argv[2])
if uid:
    os.setgid(uid); os.setuid(uid)
try:
    body = urllib.request.urlopen(sys.argv[1], timeout=2).read().decode()
    print("served" if body == sys.argv[3] else "wrong answer")
except Exception as exc:
    print("refused " + type(exc).__name__)
"""


def _need_netns() -> None:
    require_tool("ip", "Debian package iproute2")
    require_tool("iptables", "Debian package iptables")
    if os.geteuid() != 0:
        if tools_required():
            pytest.fail("network namespaces need root; KARMADA_HUB_REQUIRE_TOOLS=1 forbids skipping", pytrace=False)
        pytest.skip("network namespaces need root")


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


@dataclass
class Lab:
    node: str
    pod: str
    meta: str | None
    secret_body: str
    server: subprocess.Popen[str]

    def sh(self, ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run("ip", "netns", "exec", ns, *argv, check=check)

    def probe(self, ns: str, url: str, uid: int = 0) -> str:
        return self.sh(ns, sys.executable, "-c", PROBE, url, str(uid), self.secret_body).stdout.strip()

    def userdata(self, ns: str, uid: int = 0, host: str = META) -> str:
        return self.probe(ns, f"http://{host}/hetzner/v1/userdata", uid)


def _build(topology: str, tmp: Path) -> Iterator[Lab]:
    tag = secrets.token_hex(3)
    node, pod, meta = f"kh-node-{tag}", f"kh-pod-{tag}", f"kh-meta-{tag}"
    created: list[str] = []
    server: subprocess.Popen[str] | None = None
    try:
        for ns in (node, pod) + ((meta,) if topology == "uplink" else ()):
            _run("ip", "netns", "add", ns)
            created.append(ns)
        _run("ip", "link", "add", f"khp{tag}", "netns", pod, "type", "veth", "peer", "name", f"khc{tag}",
             "netns", node)
        lab_cmds = [
            (pod, ["ip", "addr", "add", f"{POD_IP}/24", "dev", f"khp{tag}"]),
            (pod, ["ip", "link", "set", f"khp{tag}", "up"]),
            (pod, ["ip", "link", "set", "lo", "up"]),
            (node, ["ip", "addr", "add", "10.42.0.1/24", "dev", f"khc{tag}"]),
            (node, ["ip", "link", "set", f"khc{tag}", "up"]),
            (node, ["ip", "link", "set", "lo", "up"]),
            (pod, ["ip", "route", "add", "default", "via", "10.42.0.1"]),
            (node, ["sysctl", "-qw", "net.ipv4.ip_forward=1"]),
        ]
        for ns, argv in lab_cmds:
            _run("ip", "netns", "exec", ns, *argv)
        if topology == "local":
            _run("ip", "netns", "exec", node, "ip", "addr", "add", f"{META}/32", "dev", "lo")
            server_ns = node
        else:
            _run("ip", "link", "add", f"khu{tag}", "netns", node, "type", "veth", "peer", "name", f"khm{tag}",
                 "netns", meta)
            for ns, argv in [
                (node, ["ip", "addr", "add", "172.31.1.100/24", "dev", f"khu{tag}"]),
                (node, ["ip", "link", "set", f"khu{tag}", "up"]),
                (meta, ["ip", "addr", "add", "172.31.1.1/24", "dev", f"khm{tag}"]),
                (meta, ["ip", "link", "set", f"khm{tag}", "up"]),
                (meta, ["ip", "link", "set", "lo", "up"]),
                (meta, ["ip", "addr", "add", f"{META}/32", "dev", "lo"]),
                (node, ["ip", "route", "add", f"{META}/32", "via", "172.31.1.1"]),
                (meta, ["ip", "route", "add", "default", "via", "172.31.1.100"]),
            ]:
                _run("ip", "netns", "exec", ns, *argv)
            server_ns = meta
        # What k3s adds once it runs (flannel, kube-router, kube-proxy), before any guard exists.
        for argv in (
            ["iptables", "-N", "FLANNEL-FWD"],
            ["iptables", "-A", "FLANNEL-FWD", "-s", cloud_init.POD_CIDR, "-j", "ACCEPT"],
            ["iptables", "-A", "FLANNEL-FWD", "-d", cloud_init.POD_CIDR, "-j", "ACCEPT"],
            ["iptables", "-A", "FORWARD", "-j", "FLANNEL-FWD"],
            ["iptables", "-I", "FORWARD", "1", "-s", cloud_init.POD_CIDR, "-j", "ACCEPT"],
            ["iptables", "-I", "INPUT", "1", "-s", cloud_init.POD_CIDR, "-j", "ACCEPT"],
            ["iptables", "-t", "nat", "-A", "POSTROUTING", "-s", cloud_init.POD_CIDR, "!", "-d",
             cloud_init.POD_CIDR, "-j", "MASQUERADE"],
            ["iptables", "-t", "nat", "-A", "PREROUTING", "-d", f"{CLUSTER_IP}/32", "-p", "tcp", "--dport", "80",
             "-j", "DNAT", "--to-destination", f"{META}:80"],
        ):
            _run("ip", "netns", "exec", node, *argv)
        body = f"#cloud-config secret-{secrets.token_hex(8)}"
        root = tmp / "www"
        (root / "hetzner" / "v1").mkdir(parents=True)
        (root / "hetzner" / "v1" / "userdata").write_text(body)
        server = subprocess.Popen(
            ["ip", "netns", "exec", server_ns, sys.executable, "-m", "http.server", "80", "--bind", META,
             "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        lab = Lab(node=node, pod=pod, meta=meta if topology == "uplink" else None, secret_body=body, server=server)
        deadline = time.monotonic() + 10
        while lab.userdata(server_ns) != "served":
            assert time.monotonic() < deadline, "the metadata server did not come up within 10 s"
            time.sleep(0.2)
        yield lab
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@pytest.fixture(params=["local", "uplink"])
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    _need_netns()
    yield from _build(request.param, tmp_path)


@pytest.fixture
def rendered_guard(rendered_dev: Any, tmp_path: Path) -> tuple[Path, Path]:
    """The guard's script and rules exactly as the first server's user-data writes them."""
    document = next(iter(server_user_data(rendered_dev).values()))
    script, rules = tmp_path / "guard.sh", tmp_path / "guard.rules"
    script.write_text(file_content(document, cloud_init.GUARD_SCRIPT_PATH))
    rules.write_text(file_content(document, cloud_init.GUARD_RULES_PATH))
    return script, rules


def _apply(lab: Lab, script: Path, rules: Path) -> None:
    lab.sh(lab.node, "sh", str(script), str(rules))


def test_pod_is_refused_and_the_node_is_served(lab: Lab, rendered_guard: tuple[Path, Path]) -> None:
    cluster_ip_url = f"http://{CLUSTER_IP}/hetzner/v1/userdata"
    assert lab.userdata(lab.pod) == "served"  # the finding: without the guard a pod reads user-data
    assert lab.probe(lab.pod, cluster_ip_url) == "served"
    _apply(lab, *rendered_guard)
    # what k3s inserts later, on top of everything: the guard must still hold
    lab.sh(lab.node, "iptables", "-I", "FORWARD", "1", "-j", "ACCEPT")
    lab.sh(lab.node, "iptables", "-I", "INPUT", "1", "-j", "ACCEPT")
    assert lab.userdata(lab.pod).startswith("refused")
    assert lab.probe(lab.pod, cluster_ip_url).startswith("refused")
    assert lab.userdata(lab.node) == "served"  # root on the host keeps access
    assert lab.userdata(lab.node, uid=65532).startswith("refused")  # a non-root host process does not


def test_the_guard_is_idempotent(lab: Lab, rendered_guard: tuple[Path, Path]) -> None:
    """The unit runs at every boot; applying twice leaves one jump per hook and the same verdicts."""
    _apply(lab, *rendered_guard)
    _apply(lab, *rendered_guard)
    for table, hook, chain in cloud_init.GUARD_HOOKS:
        listed = lab.sh(lab.node, "iptables", "-t", table, "-S", hook).stdout
        assert listed.count(f"-j {chain}") == 1, (table, hook, listed)
    assert lab.userdata(lab.pod).startswith("refused")
    assert lab.userdata(lab.node) == "served"


def test_a_guard_for_the_wrong_pod_range_lets_the_pod_through(lab: Lab, rendered_guard: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    script, _ = rendered_guard
    wrong = tmp_path / "wrong.rules"
    wrong.write_text(cloud_init.metadata_guard_rules(pod_cidr="10.99.0.0/16"))
    _apply(lab, script, wrong)
    assert lab.userdata(lab.pod) == "served"


# --------------------------------------------------------------------------------- how cloud-init wires it


def _k3s_unit(document: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in file_content(document, cloud_init.UNIT_PATH).splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            values.setdefault(key, []).extend(value.split())
    return values


def test_every_server_starts_the_guard_before_k3s_and_at_every_boot(rendered_dev: Any) -> None:
    import yaml

    for name, document in server_user_data(rendered_dev).items():
        files = {e["path"]: e for e in yaml.safe_load(document)["write_files"]}
        assert files[cloud_init.GUARD_RULES_PATH]["permissions"] == "0600", name
        assert files[cloud_init.GUARD_SCRIPT_PATH]["permissions"] == "0700", name
        unit = file_content(document, cloud_init.GUARD_UNIT_PATH)
        assert "RequiredBy=k3s.service" in unit and "Before=network-pre.target k3s.service" in unit
        assert "WantedBy=multi-user.target" in unit  # enabled: re-applied at every boot
        k3s = _k3s_unit(document)
        assert cloud_init.GUARD_UNIT in k3s["Requires"] and cloud_init.GUARD_UNIT in k3s["After"], name
        runcmd = yaml.safe_load(document)["runcmd"]
        enable = runcmd.index(["systemctl", "enable", "--now", cloud_init.GUARD_UNIT])
        assert runcmd.index(["systemctl", "daemon-reload"]) < enable < runcmd.index([cloud_init.INSTALL_SCRIPT_PATH])
        assert file_content(document, cloud_init.GUARD_RULES_PATH) == cloud_init.metadata_guard_rules()
        assert f"-s {cloud_init.POD_CIDR}" in cloud_init.metadata_guard_rules()
        assert yaml.safe_load(file_content(document, cloud_init.CONFIG_PATH))["cluster-cidr"] == cloud_init.POD_CIDR
