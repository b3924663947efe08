"""The first server's boot-time join decision, run for real: the rendered `k3s-join-mode` script under `sh`
with `curl`, `sha256sum` and `awk`, against a local HTTPS server that plays another hub server's `/cacerts`.

The script and the CA come from the dev plan's own user-data for cp-0 (its `expected` hash is rendered from
the join token, the CA file is the one k3s would serve). Substituted through the script's environment, and
recorded here: the peers (`127.0.0.1` instead of the private IPs), the port, the drop-in and datastore paths
(temp files), the probe rounds and pause (short).
"""

from __future__ import annotations

import datetime as dt
import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.hetzner import cloud_init
from tests.integration.test_cloud_init import file_content, server_user_data, write_files
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


class _CaCerts(http.server.BaseHTTPRequestHandler):
    body = b""
    paths: list[str] = []  # noqa: RUF012 - a fresh subclass per test replaces both

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        if self.path != "/cacerts":
            self.send_error(401)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[tuple[int, type[_CaCerts]]]:
    """A TLS server on a random loopback port answering `/cacerts` with whatever the test sets."""
    crt, key = _tls_files(tmp_path)
    handler = type("Handler", (_CaCerts,), {"body": b"", "paths": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(crt), str(key))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


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
         wal: bool = False) -> tuple[subprocess.CompletedProcess[str], Path]:
    sh = require_tool("sh")
    for tool in ("curl", "sha256sum", "awk"):
        require_tool(tool)
    path = tmp / "k3s-join-mode"
    path.write_text(script)
    dropin = tmp / "config.yaml.d" / "50-join-mode.yaml"
    datastore = tmp / "db" / "etcd" / "member" / "wal"
    if wal:
        datastore.mkdir(parents=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "K3S_JOIN_PEERS": peers, "K3S_JOIN_PORT": str(port),
           "K3S_JOIN_DROPIN": str(dropin), "K3S_DATASTORE_WAL": str(datastore), "K3S_JOIN_ROUNDS": str(rounds),
           "K3S_JOIN_PAUSE": "0"}
    return subprocess.run([sh, str(path)], capture_output=True, text=True, timeout=60, env=env), dropin


def test_a_running_cluster_with_our_ca_is_joined(rendered: tuple[str, str], peer: Any, tmp_path: Path) -> None:
    script, server_ca = rendered
    port, handler = peer
    handler.body = server_ca.encode()
    result, dropin = _run(script, tmp_path, port)
    assert result.returncode == 0, result.stderr
    assert dropin.read_text() == f"server: https://127.0.0.1:{port}\n"
    assert oct(dropin.stat().st_mode & 0o777) == "0o600"
    assert handler.paths == ["/cacerts"], "asks only the unauthenticated CA endpoint"


def test_another_clusters_ca_stops_the_boot(rendered: tuple[str, str], peer: Any, tmp_path: Path) -> None:
    script, server_ca = rendered
    port, handler = peer
    handler.body = server_ca.replace("A", "B", 1).encode()  # one byte off: another CA
    result, dropin = _run(script, tmp_path, port)
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


def test_a_second_peer_is_asked_when_the_first_is_down(rendered: tuple[str, str], peer: Any,
                                                       tmp_path: Path) -> None:
    script, server_ca = rendered
    port, handler = peer
    handler.body = server_ca.encode()
    # 127.0.0.2 is loopback too but nothing listens on it at this port
    result, dropin = _run(script, tmp_path, port, peers="127.0.0.2 127.0.0.1")
    assert result.returncode == 0 and dropin.read_text() == f"server: https://127.0.0.1:{port}\n"


def test_an_initialised_disk_needs_no_decision(rendered: tuple[str, str], peer: Any, tmp_path: Path) -> None:
    script, _ = rendered
    port, handler = peer
    result, dropin = _run(script, tmp_path, port, wal=True)
    assert result.returncode == 0 and not dropin.exists() and handler.paths == []


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
