"""Just enough of a Kubernetes client for the drill: a kubeconfig's current context, JSON over HTTPS.

Client certificates given inline (`client-certificate-data`) are written to a private temporary directory for
`ssl` and removed on `close()`; nothing from a kubeconfig is ever printed.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from components.kube.api_client import https_request

PLURALS = {
    ("v1", "Namespace"): "namespaces", ("v1", "Service"): "services", ("v1", "ConfigMap"): "configmaps",
    ("apps/v1", "Deployment"): "deployments", ("networking.k8s.io/v1", "Ingress"): "ingresses",
    ("policy.karmada.io/v1alpha1", "PropagationPolicy"): "propagationpolicies",
}


class KubeError(Exception):
    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"HTTP {status} on {method} {path}: {body[:200]}")
        self.status = status


class DrillError(Exception):
    """Something the operator must fix before (or instead of) the drill: one line, exit 2."""


def object_path(obj: dict[str, Any], named: bool = True) -> str:
    api_version, kind = obj["apiVersion"], obj["kind"]
    plural = PLURALS[(api_version, kind)]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    ns = (obj.get("metadata") or {}).get("namespace")
    path = f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"
    return f"{path}/{obj['metadata']['name']}" if named else path


class Kube:
    """One API server from a kubeconfig file (its current context)."""

    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        if not path.is_file():
            raise DrillError(f"{path}: no such kubeconfig")
        try:
            doc = yaml.safe_load(path.read_text()) or {}
            ctx_name = doc.get("current-context") or doc["contexts"][0]["name"]
            ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
            cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
            user = next(u["user"] for u in doc.get("users") or [] if u["name"] == ctx.get("user"))
        except (KeyError, StopIteration, IndexError, TypeError, yaml.YAMLError):
            raise DrillError(f"{path}: not a kubeconfig with a current context, its cluster and user") from None
        self.name = str(path)
        self.server = str(cluster["server"]).rstrip("/")
        self.tls_server_name = cluster.get("tls-server-name")
        """The name the server's certificate is checked for when it is not the URL's host (the program's karmada
        kubeconfig dials a server's address and names the karmada-apiserver Service)."""
        self.timeout = timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="hubctl-drill-")
        os.chmod(self._tmp.name, 0o700)
        self.context = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            self.context.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif cluster.get("certificate-authority"):
            self.context.load_verify_locations(cafile=cluster["certificate-authority"])
        cert = self._file(user, "client-certificate")
        key = self._file(user, "client-key")
        if cert and key:
            self.context.load_cert_chain(cert, key)
        self.token = user.get("token")
        if not self.token and user.get("tokenFile"):
            self.token = Path(user["tokenFile"]).read_text().strip()

    def _file(self, user: dict[str, Any], field: str) -> str | None:
        if user.get(f"{field}-data"):
            target = Path(self._tmp.name) / field
            target.write_bytes(base64.b64decode(user[f"{field}-data"]))
            target.chmod(0o600)
            return str(target)
        return user.get(field)

    def close(self) -> None:
        self._tmp.cleanup()

    def raw(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
            accept: str = "application/json") -> tuple[int, bytes]:
        """(HTTP status, body) of one request; raises OSError when the server cannot be reached."""
        headers = {"Accept": accept, "Content-Type": content_type}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        try:
            return https_request(self.server, self.context, method, path, data, headers, self.timeout,
                                 self.tls_server_name)
        except http.client.HTTPException as err:
            raise OSError(f"{method} {self.server}{path}: {err}") from err

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        status, payload = self.raw(method, path, body, content_type)
        if status >= 400:
            raise KubeError(status, method, path, payload.decode(errors="replace"))
        return json.loads(payload or b"{}")

    def get(self, path: str) -> Any | None:
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", path)
        except KubeError as err:
            if err.status == 404:
                return None
            raise

    def apply(self, obj: dict[str, Any]) -> Any:
        """Create, or replace what is there (keeping its resourceVersion)."""
        current = self.get(object_path(obj))
        if current is None:
            return self.request("POST", object_path(obj, named=False), obj)
        body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        return self.request("PUT", object_path(obj), body)

    def delete(self, obj: dict[str, Any]) -> None:
        try:
            self.request("DELETE", object_path(obj))
        except KubeError as err:
            if err.status != 404:
                raise

    def merge_patch(self, path: str, patch: dict[str, Any]) -> Any:
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")


def quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")
