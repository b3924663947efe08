"""What the in-cluster agents share: JSON over HTTPS to an API server (or etcd's gateway), and a probe endpoint.

Not a program of its own. An agent that imports it (`import _incluster`, at the top of the file) is shipped
with it: the agent's ConfigMap carries both files (components/kube/agent_script.py `program`), the pod runs
`python3 /opt/karmada-hub/<agent>.py`, and Python puts the script's directory first on sys.path, so the helper
is found beside the script. Stdlib only, like every agent.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

JSON = "application/json"


class ApiError(Exception):
    """An HTTP error status from the server; `body` is what it said (decoded, as sent)."""

    def __init__(self, status: int, path: str, body: str) -> None:
        super().__init__(f"HTTP {status} on {path}: {body[:200]}")
        self.status = status
        self.body = body


def tls_context(ca_file: str, cert_file: str | None = None, key_file: str | None = None) -> ssl.SSLContext:
    """Verify the server against `ca_file`; present the client certificate when one is given."""
    context = ssl.create_default_context(cafile=ca_file)
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def call(context: ssl.SSLContext, method: str, server: str, path: str, body: Any = None, *, timeout: float,
         headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One JSON call to `server + path`: `body` (if any) sent as JSON, the answer parsed (empty: `{}`).

    An HTTP error status raises ApiError; a connection failure raises what urllib raises (URLError, OSError)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.rstrip("/") + path, data=data, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, context=context, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        raise ApiError(err.code, path, err.read().decode(errors="replace")) from None


class Client:
    """JSON calls against one Kubernetes-style API server: with a client certificate (`cert_file`, `key_file`),
    or with a bearer token read from `token_file` on every call (projected service account tokens rotate)."""

    def __init__(self, server: str, ca_file: str, *, cert_file: str | None = None, key_file: str | None = None,
                 token_file: str | None = None, timeout: float = 10.0) -> None:
        self.server = server.rstrip("/")
        self.timeout = timeout
        self.token_file = token_file
        self.context = tls_context(ca_file, cert_file, key_file)

    def request(self, method: str, path: str, body: Any = None, content_type: str = JSON) -> dict[str, Any]:
        headers = {"Accept": JSON, "Content-Type": content_type}
        if self.token_file:
            with open(self.token_file) as f:
                headers["Authorization"] = f"Bearer {f.read().strip()}"
        return call(self.context, method, self.server, path, body, timeout=self.timeout, headers=headers)

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")


class Health:
    """Healthy while the last successful pass is younger than `max_age` seconds (the clock starts at creation)."""

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self.last_success = time.monotonic()
        self.lock = threading.Lock()

    def mark(self) -> None:
        with self.lock:
            self.last_success = time.monotonic()

    def ok(self) -> bool:
        with self.lock:
            return time.monotonic() - self.last_success <= self.max_age


Response = tuple[int, bytes, str | None]
"""(status, body, Content-Type or None for none)."""


def serve(respond: Callable[[str], Response], port: int, host: str = "0.0.0.0") -> http.server.ThreadingHTTPServer:
    """Answer every GET with `respond(path)` on a daemon thread (the kubelet's probes, Prometheus' scrapes);
    no access log. Returns the server (tests shut it down)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body, kind = respond(self.path)
            self.send_response(status)
            if kind is not None:
                self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
