"""HTTP test doubles on loopback: the request plumbing and the server lifecycle every fake server here shares.

- `Handler`: a quiet `BaseHTTPRequestHandler` speaking HTTP/1.1 (keep-alive, as the clients under test expect)
  with `body()` / `json_body()` and `reply()` / `reply_json()`, which always send Content-Length so a kept-alive
  connection never waits for an end of body;
- `server_tls`: a serving `SSLContext` from certificate files, optionally verifying client certificates;
- `LoopbackServer`: a `ThreadingHTTPServer` on a loopback address (port 0: a random free one), plain or TLS,
  serving from a daemon thread until `close()`.

A fake defines its `Handler` subclass inside its own `__init__` (so the handler sees the fake) and owns one
`LoopbackServer`.
"""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def body(self) -> bytes:
        """The request body (read in full: on a kept-alive connection the next request follows it)."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def json_body(self) -> Any:
        data = self.body()
        return json.loads(data) if data else None

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reply_json(self, status: int, obj: Any) -> None:
        self.reply(status, json.dumps(obj).encode(), {"Content-Type": "application/json"})


def server_tls(cert_file: str, key_file: str, client_ca_file: str | None = None,
               require_client_cert: bool = False) -> ssl.SSLContext:
    """Serving TLS; with `client_ca_file`, client certificates are verified against it — optional (token clients
    connect too, as kube-apiserver allows) unless `require_client_cert`."""
    if require_client_cert and not client_ca_file:
        raise ValueError("require_client_cert needs client_ca_file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    if client_ca_file:
        context.load_verify_locations(client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return context


class LoopbackServer:
    """`handler` served on (`address`, `port`) from a daemon thread; `url` is where clients reach it."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None,
                 address: str = "127.0.0.1", port: int = 0) -> None:
        if not address.startswith("127."):
            raise ValueError(f"test servers stay on loopback, not {address}")
        self.httpd = ThreadingHTTPServer((address, port), handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.address, self.port = address, self.httpd.server_address[1]
        self.url = f"{'https' if tls is not None else 'http'}://{address}:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
