"""agents/_incluster.py, the helper the in-cluster agents share: its JSON client against a real TLS server on
loopback (client certificate, rotating bearer token, error statuses, verification), its probe endpoint, and its
freshness clock. The agents' own tests run it inside them, from their rendered ConfigMaps."""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import agents  # noqa: F401  (puts agents/ on sys.path, as a pod has the script's directory there)

import _incluster  # isort: skip
from tests.support.loopback import tls_material


class Server:
    """HTTPS on 127.0.0.1:<random>; answers every request with `answers[path]` = (status, body bytes), and
    records (method, path, headers, body, client CN)."""

    def __init__(self, tls: dict[str, Path]) -> None:
        self.answers: dict[str, tuple[int, bytes]] = {}
        self.seen: list[tuple[str, str, dict[str, str], bytes, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                cert = self.connection.getpeercert()  # type: ignore[attr-defined]
                cn = next((v for rdn in (cert or {}).get("subject", ()) for k, v in rdn if k == "commonName"), None)
                outer.seen.append((self.command, self.path, dict(self.headers), body, cn))
                status, answer = outer.answers.get(self.path, (404, b'{"kind":"Status"}'))
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PATCH = _any  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls["server.crt"], tls["server.key"])
        context.load_verify_locations(tls["ca"])
        context.verify_mode = ssl.CERT_OPTIONAL
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def tls(tmp_path: Path) -> dict[str, Path]:
    return tls_material(tmp_path, clients=["system:karmada:test"])


@pytest.fixture
def server(tls: dict[str, Path]) -> Iterator[Server]:
    s = Server(tls)
    yield s
    s.close()


def test_a_client_certificate_reaches_the_server_and_json_comes_back(server: Server, tls: dict[str, Path]) -> None:
    server.answers["/apis/x"] = (200, b'{"items": [1]}')
    server.answers["/empty"] = (200, b"")
    client = _incluster.Client(server.url + "/", str(tls["ca"]), cert_file=str(tls["system_karmada_test.crt"]),
                               key_file=str(tls["system_karmada_test.key"]))
    assert client.get("/apis/x") == {"items": [1]}
    assert client.get("/empty") == {}
    method, path, headers, body, cn = server.seen[0]
    assert (method, path, body, cn) == ("GET", "/apis/x", b"", "system:karmada:test")
    assert headers["Accept"] == "application/json" and "Authorization" not in headers


def test_a_token_is_read_again_for_every_call(server: Server, tls: dict[str, Path], tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    server.answers["/api/v1/x"] = (200, b"{}")
    client = _incluster.Client(server.url, str(tls["ca"]), token_file=str(token))
    client.request("GET", "/api/v1/x")
    token.write_text("rotated")
    client.request("GET", "/api/v1/x")
    assert [s[2]["Authorization"] for s in server.seen] == ["Bearer first", "Bearer rotated"]
    assert all(s[4] is None for s in server.seen)  # no client certificate without one


def test_a_merge_patch_sends_its_body_and_content_type(server: Server, tls: dict[str, Path]) -> None:
    server.answers["/o"] = (200, b'{"ok": true}')
    client = _incluster.Client(server.url, str(tls["ca"]))
    assert client.merge_patch("/o", {"metadata": {"annotations": {"a": "b"}}}) == {"ok": True}
    method, _, headers, body, _ = server.seen[0]
    assert method == "PATCH" and headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(body) == {"metadata": {"annotations": {"a": "b"}}}


def test_an_error_status_is_an_api_error_with_what_the_server_said(server: Server, tls: dict[str, Path]) -> None:
    server.answers["/gone"] = (404, b'{"reason": "NotFound"}')
    client = _incluster.Client(server.url, str(tls["ca"]))
    with pytest.raises(_incluster.ApiError) as err:
        client.get("/gone")
    assert err.value.status == 404 and err.value.body == '{"reason": "NotFound"}'
    assert str(err.value) == 'HTTP 404 on /gone: {"reason": "NotFound"}'


def test_the_server_is_verified_against_the_given_ca(server: Server, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    client = _incluster.Client(server.url, str(tls_material(other)["ca"]))
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get("/")
    assert server.seen == []


def test_call_sends_only_the_headers_it_is_given(server: Server, tls: dict[str, Path]) -> None:
    """etcd's gateway is called with Content-Type alone, as before the helper existed."""
    server.answers["/v3/maintenance/status"] = (200, b'{"leader": "1"}')
    context = _incluster.tls_context(str(tls["ca"]), str(tls["system_karmada_test.crt"]),
                                     str(tls["system_karmada_test.key"]))
    assert _incluster.call(context, "POST", server.url, "/v3/maintenance/status", {}, timeout=5,
                           headers={"Content-Type": "application/json"}) == {"leader": "1"}
    method, _, headers, body, cn = server.seen[0]
    assert (method, body, cn) == ("POST", b"{}", "system:karmada:test")
    assert "Accept" not in headers and headers["Content-Type"] == "application/json"


def test_serve_answers_with_what_respond_says() -> None:
    routes = {"/healthz": (200, b"ok\n", None), "/metrics": (200, b"m 1\n", "text/plain; version=0.0.4")}
    httpd = _incluster.serve(lambda path: routes.get(path, (404, b"", None)), 0, "127.0.0.1")
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=5) as resp:
            assert (resp.status, resp.read(), resp.headers["Content-Type"]) == (200, b"m 1\n",
                                                                                 "text/plain; version=0.0.4")
        with urllib.request.urlopen(base + "/healthz", timeout=5) as resp:
            assert (resp.read(), resp.headers["Content-Type"], resp.headers["Content-Length"]) == (b"ok\n", None,
                                                                                                   "3")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/other", timeout=5)
        assert err.value.code == 404
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_health_is_fresh_until_max_age_passes_without_a_mark() -> None:
    health = _incluster.Health(max_age=0.2)
    assert health.ok()
    time.sleep(0.3)
    assert not health.ok()
    health.mark()
    assert health.ok()
