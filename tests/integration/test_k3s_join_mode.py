"""The first server's boot-time join decision, run for real: the rendered `k3s-join-mode` script under `sh`
with `curl`, `sha256sum` and `awk`, against a local HTTPS server that plays another hub server's `/cacerts`.

The script and the CA come from the dev plan's own user-data for cp-0 (its `expected` hash is rendered from
the join token, the CA file is the one k3s would serve). Substituted through the script's environment, and
recorded here: the peers (`127.0.0.1` instead of the private IPs), the port, the drop-in and datastore paths
(temp files), the probe rounds and pause (short), and the node address (`127.0.0.1`, which `lo` holds, instead of
10.0.1.11).
"""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.hetzner import cloud_init
from tests.integration.test_cloud_init import file_content, server_user_data, write_files
from tests.support.httpfake import Handler, LoopbackServer, server_tls
from tests.support.tools import require_tool

pytestmark = pytest.mark.integration


def _tls_files(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "k3s")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1)).sign(key, hashes.SHA256()))
    crt, pem = tmp / "serving.crt", tmp / "serving.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return crt, pem


@dataclass
class CaPeer:
    """Another hub server's `/cacerts` on a random loopback port: what it answers (`body`), what was asked."""

    port: int = 0
    body: bytes = b""
    paths: list[str] = field(default_factory=list)


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[CaPeer]:
    """A TLS server on a random loopback port answering `/cacerts` with whatever the test sets, 401 elsewhere."""
    crt, key = _tls_files(tmp_path)
    state = CaPeer()

    class CaCerts(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            state.paths.append(self.path)
            if self.path != "/cacerts":
                return self.reply(401)
            self.reply(200, state.body)

    server = LoopbackServer(CaCerts, server_tls(str(crt), str(key)))
    state.port = server.port
    try:
        yield state
    finally:
        server.close()


@pytest.fixture
def rendered(rendered_dev: Any) -> tuple[str, str]:
    """cp-0's rendered join-mode script and the server CA file next to it in the same user-data."""
    docs = server_user_data(rendered_dev)
    first = [d for d in docs.values() if cloud_init.JOIN_MODE_PATH in write_files(d)]
    assert len(first) == 1, "exactly one server decides at boot on a new cluster"
    document = first[0]
    return (file_content(document, cloud_init.JOIN_MODE_PATH),
            file_content(document, f"{cloud_init.TLS_DIR}/server-ca.crt"))


def _run(script: str, tmp: Path, port: int, peers: str = "127.0.0.1", rounds: int = 2,
         wal: bool = False, node_ip: str = "127.0.0.1") -> tuple[subprocess.CompletedProcess[str], Path]:
    sh = require_tool("sh")
    for tool in ("curl", "sha256sum", "awk", "ip"):
        require_tool(tool)
    path = tmp / "k3s-join-mode"
    path.write_text(script)
    dropin = tmp / "config.yaml.d" / "50-join-mode.yaml"
    datastore = tmp / "db" / "etcd" / "member" / "wal"
    if wal:
        datastore.mkdir(parents=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "K3S_JOIN_PEERS": peers, "K3S_JOIN_PORT": str(port),
           "K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(datastore), "K3S_JOIN_ROUNDS": str(rounds),
           "K3S_JOIN_PAUSE": "0", "K3S_NODE_IP": node_ip}
    return subprocess.run([sh, str(path)], capture_output=True, text=True, timeout=60, env=env), dropin


def test_a_running_cluster_with_our_ca_is_joined(rendered: tuple[str, str], peer: CaPeer, tmp_path: Path) -> None:
    script, server_ca = rendered
    peer.body = server_ca.encode()
    result, dropin = _run(script, tmp_path, peer.port)
    assert result.returncode == 0, result.stderr
    assert dropin.read_text() == f"server: https://127.0.0.1:{peer.port}\n"
    assert oct(dropin.stat().st_mode & 0o777) == "0o600"
    assert peer.paths == ["/cacerts"], "asks only the unauthenticated CA endpoint"


def test_another_clusters_ca_stops_the_boot(rendered: tuple[str, str], peer: CaPeer, tmp_path: Path) -> None:
    script, server_ca = rendered
    peer.body = server_ca.replace("A", "B", 1).encode()  # one byte off: another CA
    result, dropin = _run(script, tmp_path, peer.port)
    assert result.returncode == 1 and "serves another CA" in result.stderr
    assert not dropin.exists(), "neither joined nor initialised"


def test_nobody_answering_initialises(rendered: tuple[str, str], tmp_path: Path) -> None:
    script, _ = rendered
    # a closed port: nothing answers there
    with socket_closed_port() as closed:
        result, dropin = _run(script, tmp_path, closed, rounds=3)
    assert result.returncode == 0, result.stderr
    assert dropin.read_text() == "cluster-init: true\n"
    assert "no other hub server answered in 3 rounds" in result.stdout


def test_a_second_peer_is_asked_when_the_first_is_down(rendered: tuple[str, str], peer: CaPeer,
                                                       tmp_path: Path) -> None:
    script, server_ca = rendered
    peer.body = server_ca.encode()
    # 127.0.0.2 is loopback too but nothing listens on it at this port
    result, dropin = _run(script, tmp_path, peer.port, peers="127.0.0.2 127.0.0.1")
    assert result.returncode == 0 and dropin.read_text() == f"server: https://127.0.0.1:{peer.port}\n"


def test_without_its_private_address_it_cannot_decide(rendered: tuple[str, str], peer: CaPeer,
                                                     tmp_path: Path) -> None:
    """Here the node address is one no interface holds; tests/integration/test_k3s_private_net.py does the same with
    the rendered address in a network namespace."""
    script, server_ca = rendered
    peer.body = server_ca.encode()
    result, dropin = _run(script, tmp_path, peer.port, node_ip="192.0.2.77")
    assert result.returncode == 1 and "cannot decide: 192.0.2.77 is on no interface" in result.stderr
    assert not dropin.exists() and peer.paths == [], "it asks nobody before it has its own address"


def test_an_initialised_disk_needs_no_decision(rendered: tuple[str, str], peer: CaPeer, tmp_path: Path) -> None:
    script, _ = rendered
    result, dropin = _run(script, tmp_path, peer.port, wal=True)
    assert result.returncode == 0 and not dropin.exists() and peer.paths == []


def test_the_rendered_hash_is_the_tokens(rendered_dev: Any, rendered: tuple[str, str]) -> None:
    import hashlib

    script, server_ca = rendered
    assert f"expected='{hashlib.sha256(server_ca.encode()).hexdigest()}'" in script
    assert 'peers="${K3S_JOIN_PEERS:-10.0.1.12 10.0.1.13 10.0.1.254}"' in script, "other servers, then the LB"


class socket_closed_port:  # noqa: N801 - used as a context manager
    """A loopback port that was just free (bound, then closed)."""

    def __enter__(self) -> int:
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        return self.port

    def __exit__(self, *exc: object) -> None:
        return None
