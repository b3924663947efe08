"""A minimal Kubernetes API client from a kubeconfig, for the program's dynamic providers (never for resources).

Dynamic providers (PullJoin) must write a few objects whose contents may not enter Pulumi's state, so they talk
to the API server themselves: a one-cluster kubeconfig with inline CA and either an inline client certificate or
a token (what CAPI and this program write), server-side apply for writes, GET and DELETE. TLS always verifies
against the kubeconfig's CA; `insecure-skip-tls-verify` is refused.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import Any

import yaml

FIELD_MANAGER = "karmada-hub"


class ApiError(Exception):
    pass


class ApiConnectionError(ApiError, OSError):
    """No HTTP answer at all (connection, TLS, timeout): still an OSError, as urllib's errors were, so a caller that
    treats an unreachable API server as such keeps doing so."""


@dataclass(frozen=True)
class KubeApi:
    server: str
    ca_pem: str
    cert_pem: str | None = None
    key_pem: str | None = None
    token: str | None = None
    timeout: float = 15.0
    tls_server_name: str | None = None
    """The name the server's certificate is checked for when it is not the URL's host: a kubeconfig's
    `tls-server-name` (the program's karmada kubeconfig dials a server's address and verifies the Service name)."""

    @classmethod
    def from_kubeconfig(cls, text: str) -> KubeApi:
        doc = yaml.safe_load(text) or {}
        contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
        context = contexts.get(doc.get("current-context", "")) or (next(iter(contexts.values()), None) or {})
        clusters = {c["name"]: c["cluster"] for c in doc.get("clusters") or []}
        users = {u["name"]: u.get("user") or {} for u in doc.get("users") or []}
        cluster = clusters.get(context.get("cluster", "")) or (next(iter(clusters.values()), None) or {})
        user = users.get(context.get("user", "")) or (next(iter(users.values()), None) or {})
        if cluster.get("insecure-skip-tls-verify"):
            raise ApiError("refusing a kubeconfig with insecure-skip-tls-verify")
        if "certificate-authority-data" not in cluster:
            raise ApiError("the kubeconfig has no inline certificate-authority-data")

        def data(key: str) -> str | None:
            value = user.get(key)
            return base64.b64decode(value).decode() if value else None

        return cls(server=cluster["server"].rstrip("/"), ca_pem=base64.b64decode(cluster["certificate-authority-data"])
                   .decode(), cert_pem=data("client-certificate-data"), key_pem=data("client-key-data"),
                   token=user.get("token"), tls_server_name=cluster.get("tls-server-name"))

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca_pem)
        if self.cert_pem and self.key_pem:
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
                with open(cert, "w") as fh:
                    fh.write(self.cert_pem)
                with os.fdopen(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as fh:
                    fh.write(self.key_pem)
                context.load_cert_chain(cert, key)
        return context

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            status, payload = https_request(self.server, self._context(), method, path, data, headers, self.timeout,
                                            self.tls_server_name)
        except (http.client.HTTPException, OSError) as exc:
            raise ApiConnectionError(f"{method} {self.server}{path}: {exc}") from exc
        try:
            return status, json.loads(payload or b"{}")
        except ValueError:
            return status, {}

    def get(self, path: str) -> dict[str, Any] | None:
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise ApiError(f"GET {path}: HTTP {status} {body.get('message', '')}".strip())
        return body

    def apply(self, path: str, obj: dict[str, Any], field_manager: str = FIELD_MANAGER) -> dict[str, Any]:
        """Server-side apply (creates it if missing: authorized as `create` with the object's name)."""
        query = urllib.parse.urlencode({"fieldManager": field_manager, "force": "true"})
        status, body = self.request("PATCH", f"{path}?{query}", obj, content_type="application/apply-patch+yaml")
        if status not in (200, 201):
            raise ApiError(f"apply {path}: HTTP {status} {body.get('message', '')}".strip())
        return body

    def delete(self, path: str) -> bool:
        """True if it was deleted, False if it was not there."""
        status, body = self.request("DELETE", path)
        if status == 404:
            return False
        if status not in (200, 202):
            raise ApiError(f"DELETE {path}: HTTP {status} {body.get('message', '')}".strip())
        return True


def https_request(server: str, context: ssl.SSLContext, method: str, path: str, body: bytes | None,
                  headers: dict[str, str], timeout: float, tls_server_name: str | None = None) -> tuple[int, bytes]:
    """One HTTPS request to `server` + `path`: (status, body). The certificate is checked for `tls_server_name`
    when given (a kubeconfig's `tls-server-name`), else for the URL's host. Raises OSError or HTTPException."""
    url = urllib.parse.urlsplit(server)
    conn = _HTTPSConnection(url.hostname or "", url.port or 443, context, timeout, tls_server_name)
    try:
        conn.request(method, url.path.rstrip("/") + path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS that checks the certificate for `server_name` (default: the host dialled)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, timeout: float,
                 server_name: str | None) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._ctx, self._name = context, server_name or host

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._name)


def secret_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"
