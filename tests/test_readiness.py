"""`wait_ready` against a real local HTTPS server that, like k3s with anonymous auth off, demands a client cert.

A CA, a serving certificate for 127.0.0.1 and a client certificate are generated per module with
`cryptography`; the server answers `/readyz` with whatever the test scripts (status, body).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from components.hetzner.readiness import NotReady, wait_ready
from tests.support.httpfake import Handler, LoopbackServer
from tests.support.testpki import Pair, Pki, k3s_tls, make_leaf

FAST = {"timeout_seconds": 2.0, "interval_seconds": 0.2, "request_timeout_seconds": 0.5}


@dataclass
class Script:
    """What `/readyz` answers, in order; the last entry repeats."""

    answers: list[tuple[int, str]] = field(default_factory=lambda: [(200, "ok")])
    hits: int = 0
    client_cns: list[str] = field(default_factory=list)

    def next(self) -> tuple[int, str]:
        answer = self.answers[min(self.hits, len(self.answers) - 1)]
        self.hits += 1
        return answer


def _handler(script: Script) -> type[Handler]:
    class ReadyzHandler(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            cn = self.client_cn()
            if cn:
                script.client_cns.append(cn)
            if self.path != "/readyz":
                return self.reply(404, b"404 page not found\n")
            status, body = script.next()
            self.reply(status, body.encode(), {"Content-Type": "text/plain"})

    return ReadyzHandler


@pytest.fixture
def serve(pki: Pki, tmp_path: Path) -> Iterator[Any]:
    """`serve(script, serving=pki.server)` -> URL of a TLS server on 127.0.0.1 that requires a client cert."""
    servers: list[LoopbackServer] = []

    def start(script: Script, serving: Pair | None = None) -> str:
        servers.append(LoopbackServer(_handler(script), k3s_tls(pki, tmp_path, serving)))
        return f"{servers[-1].url}/readyz"

    yield start
    for server in servers:
        server.close()


def _call(url: str, pki: Pki, **kw: Any) -> float:
    args = {**FAST, **kw}
    return wait_ready(url, pki.server_ca.cert_pem, pki.client.cert_pem, pki.client.key_pem, **args)


# --------------------------------------------------------------------------------------------- tests


def test_returns_when_readyz_says_ok(serve, pki: Pki) -> None:
    script = Script()
    waited = _call(serve(script), pki)
    assert 0 <= waited < 1
    assert script.hits == 1
    assert script.client_cns == ["system:admin"], "the admin client certificate must be presented"


def test_waits_through_errors_until_ok(serve, pki: Pki) -> None:
    script = Script(answers=[(500, "etcd not ready"), (503, "nope"), (200, "ok")])
    start = time.monotonic()
    waited = _call(serve(script), pki, timeout_seconds=5)
    assert script.hits == 3
    assert waited >= 2 * FAST["interval_seconds"] - 0.05
    assert time.monotonic() - start < 4


def test_http_500_times_out_with_clear_message(serve, pki: Pki) -> None:
    script = Script(answers=[(500, "[-]etcd failed")])
    url = serve(script)
    start = time.monotonic()
    with pytest.raises(NotReady) as info:
        _call(url, pki)
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 4, elapsed
    message = str(info.value)
    assert url in message
    assert "500" in message
    assert "\n" not in message
    assert script.hits >= 3, "it must keep polling until the deadline"


def test_200_with_other_body_is_not_ready(serve, pki: Pki) -> None:
    url = serve(Script(answers=[(200, "[+]ping ok\n[-]etcd failed")]))
    with pytest.raises(NotReady, match="HTTP 200"):
        _call(url, pki)


def test_nothing_listening_times_out(pki: Pki) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"https://127.0.0.1:{port}/readyz"
    start = time.monotonic()
    with pytest.raises(NotReady) as info:
        _call(url, pki)
    assert time.monotonic() - start < 4
    assert url in str(info.value)


def test_silent_listener_times_out(pki: Pki) -> None:
    """A port that accepts TCP but never speaks TLS (an LB with no healthy target) is not ready either."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        url = f"https://127.0.0.1:{sock.getsockname()[1]}/readyz"
        start = time.monotonic()
        with pytest.raises(NotReady) as info:
            _call(url, pki)
        assert time.monotonic() - start < 5
    assert url in str(info.value)


def test_refuses_server_not_signed_by_the_ca(serve, pki: Pki) -> None:
    script = Script()
    url = serve(script, serving=pki.rogue_server)
    with pytest.raises(NotReady) as info:
        _call(url, pki)
    assert url in str(info.value)
    assert "certificate" in str(info.value).lower()
    assert script.hits == 0, "no request may reach a server that failed verification"


def test_server_rejects_missing_client_cert(serve, pki: Pki) -> None:
    """Control for the first test: without the client cert the server refuses, so it really is mTLS."""
    script = Script()
    url = serve(script)
    with pytest.raises(NotReady):
        wait_ready(url, pki.server_ca.cert_pem, None, None, **FAST)
    assert script.hits == 0


def test_client_cert_from_the_wrong_ca_is_refused(serve, pki: Pki) -> None:
    script = Script()
    url = serve(script)
    wrong = make_leaf(pki.other_ca, "system:admin", False)
    with pytest.raises(NotReady):
        wait_ready(url, pki.server_ca.cert_pem, wrong.cert_pem, wrong.key_pem, **FAST)
    assert script.hits == 0


def test_an_address_the_certificate_does_not_list_is_verified_for_the_named_host(serve, pki: Pki) -> None:
    """The karmada gate dials the first server's address and verifies the in-cluster name every serving cert
    lists (pki_spec.APISERVER_IN_CLUSTER_NAME): with that name it passes; without it the address is refused; a
    name the certificate does not list is refused too."""
    from components.karmada.pki_spec import APISERVER_IN_CLUSTER_NAME

    named = make_leaf(pki.server_ca, "karmada-apiserver", True, dns_names=(APISERVER_IN_CLUSTER_NAME,))
    url = serve(Script(), serving=named)
    assert _call(url, pki, server_name=APISERVER_IN_CLUSTER_NAME) < 1
    with pytest.raises(NotReady, match=r"IP address mismatch|doesn.t match|CERTIFICATE_VERIFY_FAILED"):
        _call(url, pki)
    with pytest.raises(NotReady, match=r"Hostname mismatch|doesn.t match|CERTIFICATE_VERIFY_FAILED"):
        _call(url, pki, server_name="api.hub.example.com")
