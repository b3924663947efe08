"""components/hetzner/cloud_init.py and the hub firewall as values: the k3s hardening settings, the files and
their modes, the metadata guard's rules and script, the systemd units, the installer and the first server's join
decision, run by `sh` against loopback stand-ins. No root, no network, no program run: these are the tests the
mutation run (bench/mutation, target `cloud-init`) runs against every mutant of these modules.

tests/integration/test_cloud_init.py, test_k3s_join_mode.py and test_metadata_guard.py check the same
documents with cloud-init's schema, a real TLS peer and iptables in network namespaces.
"""

from __future__ import annotations

import base64
import configparser
import hashlib
import ipaddress
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.hetzner import cloud_init as ci
from components.hetzner.hub_cluster import K3S_API_PORT, KARMADA_API_NODE_PORT, firewall_rules, karmada_api_cidrs
from tests.integration import test_cloud_init as integration_cloud_init
from tests.integration import test_k3s_join_mode as integration_join_mode
from tests.integration.test_cloud_init import _run_installer, _write_sums
from tests.integration.test_k3s_join_mode import _run
from tests.support.tools import load_stack, require_tool

release = integration_cloud_init.release
"""A loopback stand-in for the GitHub release (fixture)."""
peer = integration_join_mode.peer
"""A loopback TLS server playing another hub server's `/cacerts` (fixture)."""

TOKEN = "K10" + "ab" * 32 + "::server:secretpassword"
CA = ci.K3sCa(certs={ca: f"CERT {ca}\n" for ca in ci.CA_FILES}, keys={ca: f"KEY {ca}\n" for ca in ci.CA_FILES},
              service_key="SERVICE KEY\n")


def server(**changes: Any) -> ci.K3sServer:
    base: dict[str, Any] = dict(node_name="hub-cp-0", private_ip="10.0.1.11", k3s_version="v1.34.1+k3s1",
                                token=TOKEN, tls_sans=("10.0.1.11", "api.example.com"), join_url=None,
                                peers=("10.0.1.12", "10.0.1.13"))
    return ci.K3sServer(**{**base, **changes})


def files(document: str) -> dict[str, dict[str, str]]:
    assert document.startswith("#cloud-config\n")
    return {f["path"]: f for f in yaml.safe_load(document)["write_files"]}


def content(entry: dict[str, str]) -> str:
    return base64.b64decode(entry["content"]).decode() if entry.get("encoding") == "b64" else entry["content"]


# ------------------------------------------------------------------------------------------ k3s config


def test_k3s_hardening_values_are_pinned() -> None:
    """Every value of config.yaml, each for a reason: the admin kubeconfig k3s writes on the host is the
    cluster-admin credential (0600, root only), secrets are encrypted at rest, the API server and the
    controllers serve no anonymous or profiling endpoints, snapshots every 6 h kept for a week."""
    assert ci.k3s_config(server()) == {
        "node-name": "hub-cp-0",
        "token-file": "/etc/rancher/k3s/token",
        "node-ip": "10.0.1.11",
        "advertise-address": "10.0.1.11",
        "tls-san": ["10.0.1.11", "api.example.com"],
        "disable": ["traefik", "servicelb"],
        "cluster-cidr": "10.42.0.0/16",
        "service-cidr": "10.43.0.0/16",
        "cluster-dns": "10.43.0.10",
        "flannel-backend": "vxlan",
        "secrets-encryption": True,
        "write-kubeconfig-mode": "0600",
        "etcd-snapshot-schedule-cron": "0 */6 * * *",
        "etcd-snapshot-retention": 28,
        "kube-apiserver-arg": ["anonymous-auth=false", "profiling=false"],
        "kube-controller-manager-arg": ["profiling=false"],
        "kube-scheduler-arg": ["profiling=false"],
    }
    assert (ci.SNAPSHOT_CRON, ci.SNAPSHOT_RETENTION) == ("0 */6 * * *", 28)
    # the cluster DNS address is inside the service range, the two ranges apart
    assert ipaddress.ip_address("10.43.0.10") in ipaddress.ip_network(ci.SERVICE_CIDR)
    assert not ipaddress.ip_network(ci.POD_CIDR).overlaps(ipaddress.ip_network(ci.SERVICE_CIDR))


def test_k3s_config_joins_labels_and_extras() -> None:
    cfg = ci.k3s_config(server(join_url="https://10.0.1.5:6443", node_labels=("a=b", "c=d"),
                               extra_config={"cluster-dns": "overridden", "new": 1}))
    assert cfg["server"] == "https://10.0.1.5:6443" and cfg["node-label"] == ["a=b", "c=d"]
    assert cfg["cluster-dns"] == "overridden" and cfg["new"] == 1, "extra_config is applied last"
    plain = ci.k3s_config(server())
    assert "server" not in plain and "node-label" not in plain and "cluster-init" not in plain


# ------------------------------------------------------------------------------------------ the document


EXPECTED_FILES = {
    "/etc/rancher/k3s/config.yaml": "0600",
    "/etc/rancher/k3s/token": "0600",
    "/etc/systemd/system/k3s.service": "0644",
    "/usr/local/sbin/install-k3s": "0700",
    "/usr/local/sbin/k3s-private-net": "0700",
    "/etc/karmada-hub/metadata-guard.rules": "0600",
    "/usr/local/sbin/karmada-hub-metadata-guard": "0700",
    "/etc/systemd/system/karmada-hub-metadata-guard.service": "0644",
}


def test_files_modes_and_owner_of_a_joining_server() -> None:
    document = ci.user_data(server(join_url="https://10.0.1.5:6443"))
    got = files(document)
    assert {p: f["permissions"] for p, f in got.items()} == EXPECTED_FILES
    assert {f["owner"] for f in got.values()} == {"root:root"}
    assert not [p for p, f in got.items() if "encoding" in f], "text files are written as text"
    # config.yaml is written with sorted keys: the same server renders byte-identical user-data
    cfg = got["/etc/rancher/k3s/config.yaml"]["content"]
    assert cfg == yaml.safe_dump(ci.k3s_config(server(join_url="https://10.0.1.5:6443")), sort_keys=True)
    keys = [line.split(":")[0] for line in cfg.splitlines() if line and not line.startswith((" ", "-"))]
    assert keys == sorted(keys) and keys[0] == "advertise-address"
    assert content(got["/etc/rancher/k3s/token"]) == TOKEN + "\n"
    assert yaml.safe_load(content(got["/etc/rancher/k3s/config.yaml"])) == ci.k3s_config(
        server(join_url="https://10.0.1.5:6443"))
    assert content(got[ci.GUARD_RULES_PATH]) == ci.metadata_guard_rules()
    assert content(got[ci.GUARD_SCRIPT_PATH]) == ci.metadata_guard_script()
    assert content(got[ci.GUARD_UNIT_PATH]) == ci.GUARD_UNIT_TEXT
    assert content(got[ci.UNIT_PATH]) == ci.SYSTEMD_UNIT
    assert content(got[ci.INSTALL_SCRIPT_PATH]) == ci.install_script("v1.34.1+k3s1", None)
    assert content(got[ci.PRIVATE_NET_PATH]) == ci.private_net_script("10.0.1.11")
    doc = yaml.safe_load(document)
    assert doc["package_update"] is False
    # the guard before anything else, the installer (which starts k3s) last; what k3s waits for (the private
    # address, the first server's join decision) are the unit's ExecStartPre steps, never runcmd lines
    assert doc["runcmd"] == [["systemctl", "daemon-reload"],
                             ["systemctl", "enable", "--now", "karmada-hub-metadata-guard.service"],
                             ["/usr/local/sbin/install-k3s"]]


def test_the_first_server_gets_the_ca_set_and_decides_at_boot() -> None:
    document = ci.user_data(server(ca=CA, etcd_s3_secret="k3s-etcd-snapshot-s3"))
    got = files(document)
    tls = "/var/lib/rancher/k3s/server/tls"
    for ca in ("server-ca", "client-ca", "request-header-ca", "etcd/peer-ca", "etcd/server-ca"):
        assert (got[f"{tls}/{ca}.crt"]["permissions"], content(got[f"{tls}/{ca}.crt"])) == ("0644", f"CERT {ca}\n")
        assert (got[f"{tls}/{ca}.key"]["permissions"], content(got[f"{tls}/{ca}.key"])) == ("0600", f"KEY {ca}\n")
        assert got[f"{tls}/{ca}.key"]["encoding"] == got[f"{tls}/{ca}.crt"]["encoding"] == "b64", \
            "the bytes on disk are the bytes the token's CA hash was taken of"
    assert (got[f"{tls}/service.key"]["permissions"], content(got[f"{tls}/service.key"])) == ("0600", "SERVICE KEY\n")
    assert got[f"{tls}/service.key"]["encoding"] == "b64"
    assert got[ci.JOIN_MODE_PATH]["permissions"] == "0700"
    assert content(got[ci.JOIN_MODE_PATH]) == ci.join_mode_script("ab" * 32, ("10.0.1.12", "10.0.1.13"),
                                                                  "10.0.1.11")
    assert (got[ci.JOIN_UNIT_DROPIN]["permissions"], content(got[ci.JOIN_UNIT_DROPIN])) == (
        "0644", ci.JOIN_UNIT_DROPIN_TEXT)
    assert got[ci.ETCD_S3_DROPIN]["permissions"] == "0600"
    assert yaml.safe_load(content(got[ci.ETCD_S3_DROPIN])) == {"etcd-s3": True,
                                                                "etcd-s3-config-secret": "k3s-etcd-snapshot-s3"}
    assert len(got) == len(EXPECTED_FILES) + 2 * 5 + 1 + 3
    runcmd = yaml.safe_load(document)["runcmd"]
    assert runcmd == [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", ci.GUARD_UNIT],
                      ["/usr/local/sbin/install-k3s"]], "the join decision is a unit step, not a runcmd line"


def test_paths_k3s_and_systemd_read() -> None:
    assert (ci.TLS_DIR, ci.CONFIG_PATH, ci.TOKEN_PATH) == (
        "/var/lib/rancher/k3s/server/tls", "/etc/rancher/k3s/config.yaml", "/etc/rancher/k3s/token")
    assert (ci.DROPIN_DIR, ci.JOIN_DROPIN, ci.ETCD_S3_DROPIN) == (
        "/etc/rancher/k3s/config.yaml.d", "/etc/rancher/k3s/config.yaml.d/50-join-mode.yaml",
        "/etc/rancher/k3s/config.yaml.d/20-etcd-s3.yaml")
    assert (ci.INSTALL_SCRIPT_PATH, ci.JOIN_MODE_PATH, ci.GUARD_SCRIPT_PATH) == (
        "/usr/local/sbin/install-k3s", "/usr/local/sbin/k3s-join-mode", "/usr/local/sbin/karmada-hub-metadata-guard")
    assert (ci.UNIT_PATH, ci.GUARD_UNIT_PATH, ci.GUARD_RULES_PATH) == (
        "/etc/systemd/system/k3s.service", "/etc/systemd/system/karmada-hub-metadata-guard.service",
        "/etc/karmada-hub/metadata-guard.rules")
    assert ci.DATASTORE_WAL == "/var/lib/rancher/k3s/server/db/etcd/member/wal"
    assert (ci.PRIVATE_NET_PATH, ci.FLANNEL_DROPIN, ci.UNIT_DROPIN_DIR, ci.JOIN_UNIT_DROPIN) == (
        "/usr/local/sbin/k3s-private-net", "/etc/rancher/k3s/config.yaml.d/10-flannel-iface.yaml",
        "/etc/systemd/system/k3s.service.d", "/etc/systemd/system/k3s.service.d/50-join-mode.conf")
    assert (ci.PRIVATE_NET_WAIT_SECONDS, ci.PRIVATE_NET_PAUSE_SECONDS) == (600, 2)
    assert (ci.K3S_API_PORT, ci.METADATA_ADDRESS) == (6443, "169.254.169.254")


def test_the_documents_inputs_are_values() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        server().token = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        CA.service_key = "x"  # type: ignore[misc]


def test_secret_paths_are_exactly_the_keys_and_the_token_and_redaction_hides_them() -> None:
    tls = "/var/lib/rancher/k3s/server/tls"
    expected = {f"{tls}/{ca}.key" for ca in ci.CA_FILES} | {f"{tls}/service.key", "/etc/rancher/k3s/token"}
    assert expected == ci.SECRET_PATHS
    document = ci.user_data(server(ca=CA))
    redacted = ci.redact_user_data(document)
    assert redacted.startswith("#cloud-config\n")
    got, before = files(redacted), files(document)
    assert sorted(got) == sorted(before)
    for path, entry in got.items():
        if path in ci.SECRET_PATHS:
            assert entry["content"] == "[secret]" and "encoding" not in entry, path
        else:
            assert entry == before[path], path
    assert "secretpassword" not in redacted and "KEY server-ca" not in redacted
    assert ci.redact_user_data("#cloud-config\n") == "#cloud-config\n" + ci.dump({})


# ------------------------------------------------------------------------------------------ tokens


def test_join_token_and_its_ca_hash() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
    token = ci.join_token(pem, "pw")
    assert token == f"K10{hashlib.sha256(pem.encode()).hexdigest()}::server:pw"
    assert ci.token_ca_sha256(token) == hashlib.sha256(pem.encode()).hexdigest()
    assert ci.token_ca_sha256(f"  {token}\n") == hashlib.sha256(pem.encode()).hexdigest()
    for bad in ("K10abc::server:pw", "K11" + "a" * 64 + "::server:pw", "K10" + "a" * 64 + "::", "K10" + "A" * 64
                + "::server:pw"):
        with pytest.raises(ValueError, match="not a k3s secure token"):
            ci.token_ca_sha256(bad)


def test_etcd_s3_config_takes_only_a_secret_name() -> None:
    assert ci.etcd_s3_config("a-b1") == {"etcd-s3": True, "etcd-s3-config-secret": "a-b1"}
    for bad in ("-a", "a-", "A", "a_b", "a b", ""):
        with pytest.raises(ValueError, match="not a Secret name"):
            ci.etcd_s3_config(bad)


def test_day_two_files() -> None:
    assert ci.day_two_files(server(join_url="https://x:6443")) == []
    first = ci.day_two_files(server())
    assert [(f["path"], f["permissions"]) for f in first] == [(ci.JOIN_MODE_PATH, "0700"),
                                                             (ci.JOIN_UNIT_DROPIN, "0644")]
    assert first[0]["content"] == ci.join_mode_script("ab" * 32, ("10.0.1.12", "10.0.1.13"), "10.0.1.11")
    both = ci.day_two_files(server(etcd_s3_secret="s3"))
    assert [f["path"] for f in both] == [ci.JOIN_MODE_PATH, ci.JOIN_UNIT_DROPIN, ci.ETCD_S3_DROPIN]
    assert ci.day_two_files(server(join_url="https://x:6443", etcd_s3_secret="s3"))[0]["path"] == ci.ETCD_S3_DROPIN


# ------------------------------------------------------------------------------------------ metadata guard


def _rule_lines(rules: str) -> list[list[str]]:
    return [shlex.split(line) for line in rules.splitlines()]


def test_metadata_guard_rules_drop_pods_and_non_root_but_not_root() -> None:
    rules = ci.metadata_guard_rules()
    assert rules.endswith("COMMIT\n")
    lines = _rule_lines(rules)
    assert lines == [
        ["*raw"],
        [":KARMADA-HUB-METADATA", "-", "[0:0]"],
        ["-F", "KARMADA-HUB-METADATA"],
        ["-A", "KARMADA-HUB-METADATA", "-s", "10.42.0.0/16", "-d", "169.254.169.254/32", "-m", "comment",
         "--comment", "karmada-hub: no pod reaches the metadata service", "-j", "DROP"],
        ["COMMIT"],
        ["*mangle"],
        [":KARMADA-HUB-METADATA", "-", "[0:0]"],
        [":KARMADA-HUB-METADATA-OUT", "-", "[0:0]"],
        ["-F", "KARMADA-HUB-METADATA"],
        ["-F", "KARMADA-HUB-METADATA-OUT"],
        ["-A", "KARMADA-HUB-METADATA", "-s", "10.42.0.0/16", "-d", "169.254.169.254/32", "-m", "comment",
         "--comment", "karmada-hub: no pod reaches the metadata service (after DNAT)", "-j", "DROP"],
        ["-A", "KARMADA-HUB-METADATA-OUT", "-d", "169.254.169.254/32", "-m", "owner", "!", "--uid-owner", "0",
         "-m", "comment", "--comment", "karmada-hub: only root on the host reads user-data", "-j", "DROP"],
        ["COMMIT"],
    ]
    # the owner match: the OUTPUT rule drops every uid except 0 (a match without `!` would drop root only)
    out = next(r for r in lines if r[:2] == ["-A", ci.GUARD_OUTPUT_CHAIN])
    owner = out.index("owner")
    assert out[owner + 1:owner + 4] == ["!", "--uid-owner", "0"] and out[-2:] == ["-j", "DROP"]
    assert "-s" not in out, "host processes have no pod source address"
    assert ci.metadata_guard_rules("10.99.0.0/16").count("-s 10.99.0.0/16") == 2


def test_guard_hooks_come_first_in_tables_k3s_does_not_touch() -> None:
    assert ci.GUARD_HOOKS == (("raw", "PREROUTING", "KARMADA-HUB-METADATA"),
                              ("mangle", "FORWARD", "KARMADA-HUB-METADATA"),
                              ("mangle", "INPUT", "KARMADA-HUB-METADATA"),
                              ("mangle", "OUTPUT", "KARMADA-HUB-METADATA-OUT"))


def _fake_iptables(tmp_path: Path, present: set[str]) -> tuple[Path, Path]:
    """`iptables` and `iptables-restore` that log their arguments (and stdin); `-C` succeeds for hooks in
    `present` ("table hook chain")."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    (bin_dir / "iptables-restore").write_text(f'#!/bin/sh\necho "restore $*" >> {log}\ncat >> {log}\n')
    checks = " ".join(f'"{p}"' for p in present) or '""'
    (bin_dir / "iptables").write_text(
        f'#!/bin/sh\necho "iptables $*" >> {log}\n'
        'if [ "$4" = "-C" ]; then\n'
        f'  for p in {checks}; do [ "$p" = "$3 $5 $7" ] && exit 0; done\n  exit 1\nfi\nexit 0\n')
    for tool in ("iptables-restore", "iptables"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir, log


@pytest.mark.parametrize("present", [set(), {"mangle OUTPUT KARMADA-HUB-METADATA-OUT"}])
def test_metadata_guard_script_loads_the_rules_then_hooks_each_chain_once(tmp_path: Path, present: set[str]) -> None:
    sh = require_tool("sh")
    bin_dir, log = _fake_iptables(tmp_path, present)
    rules = tmp_path / "rules"
    rules.write_text("RULES\n")
    script = tmp_path / "guard"
    script.write_text(ci.metadata_guard_script())
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    result = subprocess.run([sh, str(script), str(rules)], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    assert calls[:2] == ["restore --noflush", "RULES"]
    expected = []
    for table, hook, chain in ci.GUARD_HOOKS:
        expected.append(f"iptables -w -t {table} -C {hook} -j {chain}")
        if f"{table} {hook} {chain}" not in present:
            expected.append(f"iptables -w -t {table} -I {hook} 1 -j {chain}")
    assert calls[2:] == expected
    # the rendered default rules path, and a missing iptables is a loud failure
    assert f'rules="${{1:-{ci.GUARD_RULES_PATH}}}"' in ci.metadata_guard_script()
    assert ci.metadata_guard_script().startswith("#!/bin/sh\n# karmada-hub metadata guard: keeps pods and non-root "
                                                 "host processes away from 169.254.169.254.\nset -eu\n"), \
        "systemd executes the file: the interpreter line must come first"
    (bin_dir / "iptables-restore").unlink()
    failed = subprocess.run([sh, str(script), str(rules)], env={"PATH": str(bin_dir)}, capture_output=True,
                            text=True, timeout=30)
    assert failed.returncode == 1 and "iptables is not installed" in failed.stderr


def _unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)  # ExecStartPre= twice: the last wins
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_the_guard_unit_runs_before_k3s_and_k3s_requires_it() -> None:
    guard = _unit(ci.GUARD_UNIT_TEXT)
    assert dict(guard["Unit"]) == {
        "Description": "karmada-hub: keep pods away from the Hetzner metadata service",
        "DefaultDependencies": "no", "Wants": "network-pre.target", "Before": "network-pre.target k3s.service"}
    assert dict(guard["Service"]) == {"Type": "oneshot", "RemainAfterExit": "yes",
                                      "ExecStart": "/usr/local/sbin/karmada-hub-metadata-guard"}
    assert dict(guard["Install"]) == {"WantedBy": "multi-user.target", "RequiredBy": "k3s.service"}
    k3s = _unit(ci.SYSTEMD_UNIT)
    assert k3s["Unit"]["Requires"] == ci.GUARD_UNIT == "karmada-hub-metadata-guard.service"
    assert k3s["Unit"]["After"].split() == ["network-online.target", ci.GUARD_UNIT]
    assert k3s["Unit"]["Wants"] == "network-online.target"
    assert dict(k3s["Service"]) == {
        "Type": "notify", "KillMode": "process", "Delegate": "yes", "LimitNOFILE": "1048576",
        "LimitNPROC": "infinity", "LimitCORE": "infinity", "TasksMax": "infinity", "TimeoutStartSec": "0",
        "Restart": "always", "RestartSec": "5s", "ExecStartPre": "/usr/local/sbin/k3s-private-net",
        "ExecStart": "/usr/local/bin/k3s server"}
    # the private address is awaited last, right before k3s (not "-": its failure fails the start)
    assert ("\nExecStartPre=-/sbin/modprobe br_netfilter\nExecStartPre=-/sbin/modprobe overlay\n"
            "ExecStartPre=/usr/local/sbin/k3s-private-net\nExecStart=/usr/local/bin/k3s server\n") in ci.SYSTEMD_UNIT
    assert dict(k3s["Install"]) == {"WantedBy": "multi-user.target"}
    join = _unit(ci.JOIN_UNIT_DROPIN_TEXT)
    assert join.sections() == ["Service"] and dict(join["Service"]) == {"ExecStartPre": "/usr/local/sbin/k3s-join-mode"}


# ------------------------------------------------------------------------------------------ installer


def test_installer_downloads_the_pinned_release_and_verifies_it(release: Any, tmp_path: Path) -> None:
    script = ci.install_script("v1.34.1+k3s1", None)
    assert script.startswith("#!/bin/sh\n")
    assert "\nset -eu\n" in script
    assert 'base="${K3S_RELEASE_BASE:-https://github.com/k3s-io/k3s/releases/download/v1.34.1%2Bk3s1}"' in script
    base, served, payload = release
    _write_sums(served, hashlib.sha256(payload).hexdigest())
    result, bin_dir = _run_installer(script, base, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (bin_dir / "k3s").read_bytes() == payload and os.access(bin_dir / "k3s", os.X_OK)
    assert oct((bin_dir / "k3s").stat().st_mode & 0o777) == "0o755"
    assert sorted(p.name for p in bin_dir.iterdir()) == ["crictl", "ctr", "k3s", "kubectl"]


@pytest.mark.parametrize("case", ["wrong checksum", "not listed", "wrong pin"])
def test_installer_installs_nothing_it_cannot_verify(release: Any, tmp_path: Path, case: str) -> None:
    base, served, payload = release
    digest = hashlib.sha256(payload).hexdigest()
    _write_sums(served, hashlib.sha256(b"other").hexdigest() if case == "wrong checksum" else digest)
    if case == "not listed":
        _, sums = next((b, s) for b, s in [("k3s", "sha256sum-amd64.txt"), ("k3s-arm64", "sha256sum-arm64.txt")]
                       if (served / b).exists())
        (served / sums).write_text(f"{digest}  something-else\n")
    pin = hashlib.sha256(b"pinned").hexdigest() if case == "wrong pin" else None
    result, bin_dir = _run_installer(ci.install_script("v1.34.1+k3s1", pin), base, tmp_path)
    assert result.returncode == 1, result.stderr
    message = {"wrong checksum": "checksum mismatch", "not listed": "for v1.34.1+k3s1",
               "wrong pin": "pinned in the stack"}
    assert message[case] in result.stderr
    assert list(bin_dir.iterdir()) == []


# ------------------------------------------------------------------------------------------ join decision


def test_join_mode_defaults_probe_every_peer_for_two_minutes() -> None:
    script = ci.join_mode_script("ab" * 32, ("10.0.1.12", "10.0.1.13"), "10.0.1.11")
    assert script.startswith("#!/bin/sh\n") and "\nset -eu\n" in script
    for line in ("expected='" + "ab" * 32 + "'", 'peers="${K3S_JOIN_PEERS:-10.0.1.12 10.0.1.13}"',
                 'port="${K3S_JOIN_PORT:-6443}"', 'dropin="${K3S_JOIN_DROPIN:-/etc/rancher/k3s/config.yaml.d/'
                 '50-join-mode.yaml}"', 'wal="${K3S_DATASTORE_WAL:-/var/lib/rancher/k3s/server/db/etcd/member/wal}"',
                 'rounds="${K3S_JOIN_ROUNDS:-24}"', 'pause="${K3S_JOIN_PAUSE:-5}"',
                 'node_ip="${K3S_NODE_IP:-10.0.1.11}"'):
        assert f"\n{line}\n" in script, line
    assert ci.JOIN_PROBE_ROUNDS * ci.JOIN_PROBE_PAUSE_SECONDS == 120
    assert ci.JOIN_DROPIN == ci.DROPIN_DIR + "/50-join-mode.yaml"
    with pytest.raises(ValueError, match="sha256"):
        ci.join_mode_script("AB" * 32, (), "10.0.1.11")
    with pytest.raises(ValueError):
        ci.join_mode_script("ab" * 32, ("not-an-ip",), "10.0.1.11")
    with pytest.raises(ValueError):
        ci.join_mode_script("ab" * 32, (), "10.0.1")


def _ca_pem() -> bytes:
    return b"-----BEGIN CERTIFICATE-----\nthe cluster's CA\n-----END CERTIFICATE-----\n"


def test_join_mode_joins_the_peer_that_serves_our_ca(peer: Any, tmp_path: Path) -> None:
    peer.body = _ca_pem()
    script = ci.join_mode_script(hashlib.sha256(_ca_pem()).hexdigest(), (), "127.0.0.1")
    result, dropin = _run(script, tmp_path, peer.port, peers="127.0.0.1")
    assert result.returncode == 0, result.stderr
    assert dropin.read_text() == f"server: https://127.0.0.1:{peer.port}\n"
    assert oct(dropin.stat().st_mode & 0o777) == "0o600"
    assert peer.paths == ["/cacerts"]


def test_join_mode_stops_at_another_ca_and_initialises_when_nobody_answers(peer: Any, tmp_path: Path) -> None:
    peer.body = b"somebody else's CA"
    script = ci.join_mode_script(hashlib.sha256(_ca_pem()).hexdigest(), (), "127.0.0.1")
    (tmp_path / "a").mkdir()
    result, dropin = _run(script, tmp_path / "a", peer.port, peers="127.0.0.1")
    assert result.returncode == 1 and not dropin.exists()
    assert "serves another CA" in result.stderr
    (tmp_path / "b").mkdir()
    result, dropin = _run(script, tmp_path / "b", 1, peers="127.0.0.1", rounds=2)
    assert result.returncode == 0, result.stderr
    assert dropin.read_text() == "cluster-init: true\n"
    assert "no other hub server answered in 2 rounds" in result.stdout


def test_join_mode_decides_once_and_never_over_a_datastore(peer: Any, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    result, dropin = _run(ci.join_mode_script("ab" * 32, (), "127.0.0.1"), tmp_path / "a", 1, wal=True)
    assert result.returncode == 0 and not dropin.exists() and "holds the datastore" in result.stdout
    (tmp_path / "b").mkdir()
    dropin = tmp_path / "b" / "config.yaml.d" / "50-join-mode.yaml"
    dropin.parent.mkdir(parents=True)
    dropin.write_text("server: https://10.0.1.12:6443\n")
    result, _ = _run(ci.join_mode_script("ab" * 32, (), "127.0.0.1"), tmp_path / "b", 1)
    assert result.returncode == 0 and "decided before: server: https://10.0.1.12:6443" in result.stdout
    assert dropin.read_text() == "server: https://10.0.1.12:6443\n"


def _fake_ip(tmp_path: Path, answers: list[str]) -> tuple[Path, Path]:
    """`ip` that prints `answers[n]` on its n-th call (the last one from then on) and `sleep` that only logs: the
    address appearing, or never appearing, without root or time."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for i, answer in enumerate(answers):
        (tmp_path / f"ip.{i}").write_text(answer)
    last = len(answers) - 1
    (bin_dir / "ip").write_text(
        f'#!/bin/sh\necho "ip $*" >> {log}\nn=$(grep -c "^ip " {log})\nn=$((n - 1))\n'
        f'if [ "$n" -gt {last} ]; then n={last}; fi\ncat {tmp_path}/ip.$n\n')
    (bin_dir / "sleep").write_text(f'#!/bin/sh\necho "sleep $*" >> {log}\n')
    for tool in ("ip", "sleep"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir, log


ADDRS = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
         "2: eth0    inet 110.0.1.11/32 scope global eth0\\       valid_lft forever preferred_lft forever\n"
         "3: ens11    inet 10.0.1.111/32 brd 10.0.1.111 scope global ens11\\       valid_lft forever\n")
"""Addresses that contain 10.0.1.11 without being it."""


def _line(dev: str) -> str:
    return f"4: {dev}    inet 10.0.1.11/32 brd 10.0.1.11 scope global dynamic {dev}\\       valid_lft 86000sec\n"


def _private_net(tmp_path: Path, answers: list[str], wait: int = 600, pause: int = 2) -> tuple[
        subprocess.CompletedProcess[str], Path, list[str]]:
    sh = require_tool("sh")
    require_tool("awk")
    bin_dir, log = _fake_ip(tmp_path, answers)
    script = tmp_path / "k3s-private-net"
    script.write_text(ci.private_net_script("10.0.1.11", wait))
    dropin = tmp_path / "config.yaml.d" / "10-flannel-iface.yaml"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "K3S_FLANNEL_DROPIN": str(dropin), "K3S_PRIVATE_NET_PAUSE": str(pause)}
    result = subprocess.run([sh, str(script)], env=env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return result, dropin, calls


def test_private_net_waits_for_no_one_when_the_address_is_there_and_pins_flannel(tmp_path: Path) -> None:
    script = ci.private_net_script("10.0.1.11")
    assert script.startswith("#!/bin/sh\n") and "\nset -eu\n" in script
    for line in ('node_ip="${K3S_NODE_IP:-10.0.1.11}"',
                 'dropin="${K3S_FLANNEL_DROPIN:-/etc/rancher/k3s/config.yaml.d/10-flannel-iface.yaml}"',
                 'wait="${K3S_PRIVATE_NET_WAIT:-600}"', 'pause="${K3S_PRIVATE_NET_PAUSE:-2}"'):
        assert f"\n{line}\n" in script, line
    assert 'wait="${K3S_PRIVATE_NET_WAIT:-30}"' in ci.private_net_script("10.0.1.11", 30)
    with pytest.raises(ValueError):
        ci.private_net_script("enp7s0")
    result, dropin, calls = _private_net(tmp_path, [ADDRS + _line("enp7s0")])
    assert result.returncode == 0, result.stderr
    assert calls == ["ip -o -4 addr show"], "no wait, no sleep"
    assert dropin.read_text() == "flannel-iface: enp7s0\n" and oct(dropin.stat().st_mode & 0o777) == "0o600"
    assert result.stdout == "k3s-private-net: 10.0.1.11 is on enp7s0; flannel uses enp7s0\n"
    assert [p.name for p in dropin.parent.iterdir()] == [dropin.name], "no temporary file left"


def test_private_net_rewrites_the_dropin_only_when_the_interface_changes(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    result, dropin, _ = _private_net(first, [_line("enp7s0")])
    assert result.returncode == 0
    same = tmp_path / "same"
    same.mkdir()
    (same / "config.yaml.d").mkdir()
    (same / "config.yaml.d" / "10-flannel-iface.yaml").write_text("flannel-iface: enp7s0\n")
    os.chmod(same / "config.yaml.d" / "10-flannel-iface.yaml", 0o640)
    result, dropin, _ = _private_net(same, [_line("enp7s0")])
    assert result.returncode == 0 and result.stdout == "", "unchanged: not written, nothing said"
    assert oct(dropin.stat().st_mode & 0o777) == "0o640"
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "config.yaml.d").mkdir()
    (moved / "config.yaml.d" / "10-flannel-iface.yaml").write_text("flannel-iface: enp7s0\n")
    result, dropin, _ = _private_net(moved, [_line("ens10")])
    assert result.returncode == 0 and dropin.read_text() == "flannel-iface: ens10\n"


def test_private_net_waits_for_the_address_then_gives_up_loudly(tmp_path: Path) -> None:
    late = tmp_path / "late"
    late.mkdir()
    result, dropin, calls = _private_net(late, [ADDRS, "", _line("enp7s0")], pause=2)
    assert result.returncode == 0, result.stderr
    assert calls == ["ip -o -4 addr show", "sleep 2", "ip -o -4 addr show", "sleep 2", "ip -o -4 addr show"]
    assert result.stdout == ("k3s-private-net: waiting for 10.0.1.11 on an interface\n"
                             "k3s-private-net: 10.0.1.11 is on enp7s0; flannel uses enp7s0\n"), "the wait said once"
    assert dropin.read_text() == "flannel-iface: enp7s0\n"
    never = tmp_path / "never"
    never.mkdir()
    result, dropin, calls = _private_net(never, [ADDRS], wait=5, pause=2)
    assert result.returncode == 1 and not dropin.exists()
    assert calls.count("sleep 2") == 3, "0, 2, 4 s waited: at 6 >= 5 it stops"
    assert result.stderr == ("k3s-private-net: 10.0.1.11 is on no interface after 6s: this server is not attached to "
                             "the hub's private network (yet); k3s does not start without it\n")
    exact = tmp_path / "exact"
    exact.mkdir()
    result, _, calls = _private_net(exact, [ADDRS], wait=4, pause=2)
    assert result.returncode == 1 and calls.count("sleep 2") == 2 and "after 4s" in result.stderr


def _join_without_net(tmp_path: Path, answers: list[str], port: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    sh = require_tool("sh")
    for tool in ("curl", "sha256sum", "awk"):
        require_tool(tool)
    bin_dir, _ = _fake_ip(tmp_path, answers)
    script = tmp_path / "k3s-join-mode"
    script.write_text(ci.join_mode_script("ab" * 32, (), "10.0.1.11"))
    dropin = tmp_path / "config.yaml.d" / "50-join-mode.yaml"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "K3S_JOIN_PEERS": "127.0.0.1", "K3S_JOIN_PORT": str(port),
           "K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(tmp_path / "wal"), "K3S_JOIN_ROUNDS": "2",
           "K3S_JOIN_PAUSE": "0"}
    return subprocess.run([sh, str(script)], env=env, capture_output=True, text=True, timeout=60), dropin


def test_join_mode_cannot_decide_without_its_private_address(tmp_path: Path) -> None:
    message = ("k3s-join-mode: cannot decide: 10.0.1.11 is on no interface, so peers that do not answer prove "
               "nothing\n")
    (tmp_path / "a").mkdir()
    result, dropin = _join_without_net(tmp_path / "a", [ADDRS], 1)
    assert (result.returncode, result.stderr, dropin.exists()) == (1, message, False), "before the first probe"
    (tmp_path / "b").mkdir()
    result, dropin = _join_without_net(tmp_path / "b", [_line("enp7s0"), ""], 1)
    assert (result.returncode, result.stderr, dropin.exists()) == (1, message, False), \
        "the address went while nobody answered: silence proves nothing, no cluster-init"
    (tmp_path / "c").mkdir()
    result, dropin = _join_without_net(tmp_path / "c", [_line("enp7s0")], 1)
    assert result.returncode == 0 and dropin.read_text() == "cluster-init: true\n"


# ------------------------------------------------------------------------------------------ firewall


def _hub(**firewall: Any) -> Any:
    hub = load_stack("dev").hub
    update = {k: [ipaddress.ip_network(c) for c in v] for k, v in firewall.items()}
    return hub.model_copy(update={"firewall": hub.firewall.model_copy(update=update)})


def test_each_firewall_rule_admits_exactly_its_own_sources() -> None:
    hub = _hub(ssh_cidrs=["198.51.100.0/28"], api_cidrs=["203.0.113.0/28", "2001:db8::/64"],
               karmada_cidrs=["192.0.2.0/29", "203.0.113.0/28"])
    rules = [(r.direction, r.protocol, r.port, list(r.source_ips)) for r in firewall_rules(hub)]
    public = [
        ("in", "tcp", "22", ["198.51.100.0/28"]),
        ("in", "tcp", "6443", ["203.0.113.0/28", "2001:db8::/64"]),
        ("in", "tcp", "32443", ["203.0.113.0/28", "2001:db8::/64", "192.0.2.0/29"]),
        ("in", "icmp", None, ["0.0.0.0/0", "::/0"]),
    ]
    assert rules == public, "nothing for the private network: a Cloud Firewall filters the public interface only"
    dns = [(r.direction, r.protocol, r.port, list(r.source_ips)) for r in firewall_rules(hub, dns_service=True)]
    assert dns == [*public, ("in", "udp", "53", ["0.0.0.0/0", "::/0"]), ("in", "tcp", "53", ["0.0.0.0/0", "::/0"])]
    assert firewall_rules(hub, dns_service=False) == firewall_rules(hub)
    assert [r.description for r in firewall_rules(hub, dns_service=True)][4:] == [
        "DNS (udp) for the fleet's zone (self-hosted)", "DNS (tcp) for the fleet's zone (self-hosted)"]
    assert (K3S_API_PORT, KARMADA_API_NODE_PORT) == (6443, 32443)
    assert karmada_api_cidrs(hub) == ["203.0.113.0/28", "2001:db8::/64", "192.0.2.0/29"]
    assert [r.description for r in firewall_rules(hub)] == [
        "SSH from the stack's admin CIDRs", "k3s API from the stack's API CIDRs",
        "karmada-apiserver from the API CIDRs and the Pull members' CIDRs", "ICMP (path MTU discovery, ping)"]
