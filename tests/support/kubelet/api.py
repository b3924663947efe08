"""A small Kubernetes API client for the real-fleet harness: any object by its kind, server-side apply, lists,
TokenRequest, waits. It resolves kinds to resources through the server's own discovery, so CRDs work once they are
established. TLS always verifies; a client certificate or a bearer token authenticates.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

FIELD_MANAGER = "karmada-hub"


class ApiError(RuntimeError):
    def __init__(self, message: str, status: int = 0, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or {}


@dataclass
class Api:
    server: str
    ca_pem: str
    cert_pem: str | None = None
    key_pem: str | None = None
    token: str | None = None
    timeout: float = 15.0
    tls_server_name: str | None = None
    """The name the server's certificate is checked for, when it is not the URL's host (kubeconfig
    `tls-server-name`)."""
    pins: dict[str, str] = field(default_factory=dict)
    """host name -> address to dial instead of resolving it (the certificate is still checked for the name):
    how the test process, outside every pod network, reaches a name only the pods' /etc/hosts knows."""
    _ssl: ssl.SSLContext | None = field(default=None, repr=False)
    _resources: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_kubeconfig(cls, text: str, **kw: Any) -> Api:
        doc = yaml.safe_load(text) or {}
        contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
        context = contexts.get(doc.get("current-context", "")) or next(iter(contexts.values()))
        cluster = {c["name"]: c["cluster"] for c in doc["clusters"]}[context["cluster"]]
        user = {u["name"]: u.get("user") or {} for u in doc["users"]}[context["user"]]

        def data(key: str) -> str | None:
            value = user.get(key)
            return base64.b64decode(value).decode() if value else None

        return cls(server=cluster["server"].rstrip("/"),
                   ca_pem=base64.b64decode(cluster["certificate-authority-data"]).decode(),
                   cert_pem=data("client-certificate-data"), key_pem=data("client-key-data"),
                   token=user.get("token"), tls_server_name=cluster.get("tls-server-name"), **kw)

    def with_token(self, token: str) -> Api:
        return Api(self.server, self.ca_pem, token=token, timeout=self.timeout, pins=dict(self.pins),
                   tls_server_name=self.tls_server_name)

    # ---------------------------------------------------------------------------------------------- transport

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            context = ssl.create_default_context(cadata=self.ca_pem)
            if self.cert_pem and self.key_pem:
                with tempfile.TemporaryDirectory() as tmp:
                    cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
                    with open(cert, "w") as fh:
                        fh.write(self.cert_pem)
                    with os.fdopen(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as fh:
                        fh.write(self.key_pem)
                    context.load_cert_chain(cert, key)
            self._ssl = context
        return self._ssl

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                timeout: float | None = None, raw: bool = False) -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        url = urllib.parse.urlsplit(self.server)
        host, port = url.hostname or "", url.port or 443
        conn = _PinnedHTTPS(host, port, self.pins.get(host, host), self._context(), timeout or self.timeout,
                            self.tls_server_name)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            conn.request(method, url.path.rstrip("/") + path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        except (http.client.HTTPException, ConnectionError) as exc:
            raise OSError(f"{method} {self.server}{path}: {exc}") from exc
        finally:
            conn.close()
        if raw:
            return resp.status, payload
        try:
            return resp.status, json.loads(payload or b"{}")
        except ValueError:
            return resp.status, {"message": payload[:300].decode(errors="replace")}

    def _check(self, what: str, status: int, body: dict[str, Any], ok: Iterable[int] = (200, 201)) -> dict[str, Any]:
        if status not in ok:
            message = body.get("message", "") if isinstance(body, dict) else ""
            raise ApiError(f"{what}: HTTP {status} {message}".strip(), status, body if isinstance(body, dict) else {})
        return body

    # ---------------------------------------------------------------------------------------------- paths

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of a kind, from the server's discovery (re-read once when unknown)."""
        key = (api_version, kind)
        if key not in self._resources:
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            status, body = self.request("GET", prefix)
            if status == 200:
                for res in body.get("resources", []):
                    if "/" not in res["name"]:
                        self._resources[(api_version, res["kind"])] = (res["name"], res["namespaced"])
        if key not in self._resources:
            raise ApiError(f"{api_version} {kind} is not served by {self.server}", 404)
        return self._resources[key]

    def path(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{plural}"
        return f"{base}/{name}" if name else base

    def path_of(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])

    # ---------------------------------------------------------------------------------------------- verbs

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        status, body = self.request("GET", self.path(api_version, kind, namespace, name))
        if status == 404:
            return None
        return self._check(f"get {kind} {namespace or ''}/{name}", status, body)

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             selector: str | None = None) -> list[dict[str, Any]]:
        path = self.path(api_version, kind, namespace)
        if selector:
            path += "?" + urllib.parse.urlencode({"labelSelector": selector})
        status, body = self.request("GET", path)
        return list(self._check(f"list {kind}", status, body).get("items", []))

    def apply(self, obj: dict[str, Any], field_manager: str = FIELD_MANAGER, dry_run: bool = False,
              force: bool = True) -> dict[str, Any]:
        """Server-side apply, as `kubectl apply --server-side` and pulumi-kubernetes (SSA mode) do."""
        query = {"fieldManager": field_manager, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        status, body = self.request("PATCH", f"{self.path_of(obj)}?{urllib.parse.urlencode(query)}", obj,
                                    content_type="application/apply-patch+yaml")
        meta = obj["metadata"]
        return self._check(f"apply {obj['kind']} {meta.get('namespace', '')}/{meta['name']}", status, body)

    def create(self, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"))
        if dry_run:
            path += "?dryRun=All"
        status, body = self.request("POST", path, obj)
        return self._check(f"create {obj['kind']} {meta.get('namespace', '')}/{meta.get('name', '')}", status, body)

    def patch(self, api_version: str, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None,
              subresource: str = "") -> dict[str, Any]:
        path = self.path(api_version, kind, namespace, name) + (f"/{subresource}" if subresource else "")
        status, body = self.request("PATCH", path, patch, content_type="application/merge-patch+json")
        return self._check(f"patch {kind} {namespace or ''}/{name}", status, body)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        status, body = self.request("DELETE", self.path(api_version, kind, namespace, name))
        if status == 404:
            return False
        self._check(f"delete {kind} {namespace or ''}/{name}", status, body, (200, 202))
        return True

    def request_token(self, namespace: str, service_account: str, audiences: list[str] | None = None,
              seconds: int = 3600, bound_pod: dict[str, str] | None = None) -> str:
        """A TokenRequest for the ServiceAccount (what kubelet mounts as a projected token)."""
        spec: dict[str, Any] = {"expirationSeconds": seconds}
        if audiences:
            spec["audiences"] = audiences
        if bound_pod:
            spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", **bound_pod}
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        status, out = self.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token", body)
        return str(self._check(f"token for {namespace}/{service_account}", status, out)["status"]["token"])

    def healthz(self, path: str = "/readyz", timeout: float = 3.0) -> bool:
        try:
            status, _ = self.request("GET", path, timeout=timeout, raw=True)
        except (OSError, ssl.SSLError):
            return False
        return status == 200

    def can(self, verb: str, resource: str, group: str = "", namespace: str = "", name: str = "",
            subresource: str = "") -> bool:
        """SelfSubjectAccessReview: what the server's authorizer says for this client."""
        attrs = {k: v for k, v in {"verb": verb, "resource": resource, "group": group, "namespace": namespace,
                                     "name": name, "subresource": subresource}.items() if v}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs}}
        status, out = self.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
        return bool(self._check("selfsubjectaccessreview", status, out)["status"].get("allowed"))


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to `address` while TLS checks the certificate for `host`, the name the client was given."""

    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext, timeout: float,
                 server_name: str | None = None) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._address, self._ctx, self._name = address, context, server_name or host

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._name)


def wait_for(what: str, predicate: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """Poll until `predicate()` is truthy (returning it) or raise TimeoutError naming `what` and the last error."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except (ApiError, OSError, ssl.SSLError, KeyError, ValueError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s" + (f" (last error: {last})" if last else ""))
        time.sleep(interval)
