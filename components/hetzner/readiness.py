"""Readiness gates: nothing talks to an API server before it answers `/readyz`.

Servers take minutes to boot and k3s (or the karmada-apiserver) longer to come up, while Pulumi
would happily create a `k8s.Provider` the moment the kubeconfig string is known. `ApiReadiness`
is a Pulumi dynamic resource whose `create` polls `/readyz` through the load balancer with the
cluster's CA and an admin client certificate (anonymous auth is off) until it answers `ok` or the
timeout passes with one clear error. Providers and resources that use the API depend on it.

`NodeReadiness` is the day-two gate: after a hub server was changed (resized), the `up` waits until its node
is Ready again with the StatefulSet pods on it (the etcd members), so the next server never goes down while
this one is still coming back.

`wait_ready` and `wait_node_ready` are the plain functions underneath; tests run them against a real local
TLS server.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider


class NotReady(Exception):
    """The API server did not answer `/readyz` with `ok` in time."""


def _ssl_context(ca_pem: str, cert_pem: str | None, key_pem: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_pem)
    if cert_pem and key_pem:
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            with open(cert_path, "w") as fh:
                fh.write(cert_pem)
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(key_pem)
            context.load_cert_chain(cert_path, key_path)
    return context


class _NamedConnection(http.client.HTTPSConnection):
    """HTTPS to an address, verifying the certificate for `server_name` (SNI and hostname check)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, timeout: float, server_name: str) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._tls_context = context
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._tls_context.wrap_socket(sock, server_hostname=self._server_name)


def _get(url: str, context: ssl.SSLContext, timeout: float, server_name: str | None) -> tuple[int, str]:
    if server_name is None:
        try:
            with urllib.request.urlopen(url, context=context, timeout=timeout) as resp:
                return resp.status, resp.read(64).decode(errors="replace").strip()
        except urllib.error.HTTPError as exc:
            return exc.code, ""
    parts = urlsplit(url)
    conn = _NamedConnection(parts.hostname or "", parts.port or 443, context, timeout, server_name)
    try:
        conn.request("GET", parts.path or "/")
        resp = conn.getresponse()
        return resp.status, resp.read(64).decode(errors="replace").strip()
    finally:
        conn.close()


def wait_ready(
    url: str,
    ca_pem: str,
    cert_pem: str | None = None,
    key_pem: str | None = None,
    timeout_seconds: float = 900,
    interval_seconds: float = 5,
    request_timeout_seconds: float = 5,
    server_name: str | None = None,
) -> float:
    """Poll `url` until it returns HTTP 200 with body `ok`; return the seconds waited or raise NotReady.
    `server_name`: verify the certificate for this name instead of the URL's host (an address it does not list)."""
    context = _ssl_context(ca_pem, cert_pem, key_pem)

    def attempt() -> str | None:
        status, body = _get(url, context, request_timeout_seconds, server_name)
        return None if status == 200 and body == "ok" else f"HTTP {status}" + (f" {body!r}" if body else "")

    return _poll(attempt, (urllib.error.URLError, OSError, ssl.SSLError, http.client.HTTPException),
                 timeout_seconds, interval_seconds,
                 lambda last: f"{url} did not answer ok within {timeout_seconds:.0f}s (last: {last})")


def _poll(attempt: Callable[[], str | None], errors: tuple[type[BaseException], ...], timeout_seconds: float,
          interval_seconds: float, failed: Callable[[str], str]) -> float:
    """Call `attempt` every `interval_seconds` until it returns None (done); return the seconds waited. It returns
    what it saw otherwise, and one of `errors` counts as such an answer; when the next attempt would end after
    `timeout_seconds`, raise NotReady(failed(the last answer))."""
    start = time.monotonic()
    while True:
        try:
            last = attempt()
            if last is None:
                return time.monotonic() - start
        except errors as exc:
            last = str(getattr(exc, "reason", exc))
        if time.monotonic() - start + interval_seconds > timeout_seconds:
            raise NotReady(failed(last))
        time.sleep(interval_seconds)


class _ReadinessProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        waited = wait_ready(
            props["url"], props["caPem"], props.get("clientCertPem"), props.get("clientKeyPem"),
            timeout_seconds=float(props["timeoutSeconds"]), server_name=props.get("serverName") or None,
        )
        return CreateResult(id_=props["url"], outs={**props, "waitedSeconds": round(waited, 1)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A changed endpoint or CA means a new API server to wait for; anything else is not a change.
        keys = ("url", "caPem")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=False)


class ApiReadiness(Resource):
    """Waits for `url` (an API server's /readyz) at create time; depend on it before using the API."""

    url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        url: pulumi.Input[str],
        ca_pem: pulumi.Input[str],
        client_cert_pem: pulumi.Input[str],
        client_key_pem: pulumi.Input[str],
        kubeconfig: pulumi.Input[str],
        timeout_seconds: int = 900,
        opts: pulumi.ResourceOptions | None = None,
        server_name: str | None = None,
    ) -> None:
        super().__init__(
            _ReadinessProvider(),
            name,
            {
                "url": url,
                "caPem": ca_pem,
                "clientCertPem": client_cert_pem,
                "clientKeyPem": pulumi.Output.secret(client_key_pem),
                "kubeconfig": pulumi.Output.secret(kubeconfig),
                "timeoutSeconds": timeout_seconds,
                **({"serverName": server_name} if server_name else {}),
                "waitedSeconds": None,
            },
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["clientKeyPem", "kubeconfig"])
            ),
        )


# ------------------------------------------------------------------------------------------ a node is back


def _get_json(url: str, context: ssl.SSLContext, timeout: float) -> tuple[int, Any]:
    import json

    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None


def node_problems(node: dict[str, Any] | None, pods: dict[str, Any] | None) -> list[str]:
    """Why a node is not back yet (empty: it is): its Ready condition, and every pod a StatefulSet owns on it
    (the members of a quorum: Karmada's etcd), which must be Ready before the next server may go down."""
    if node is None:
        return ["the node is not registered"]
    problems = []
    conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conditions.get("Ready", {})
    if ready.get("status") != "True":
        problems.append(f"node Ready is {ready.get('status', 'unknown')} ({ready.get('reason', 'no reason')})")
    for pod in (pods or {}).get("items") or []:
        meta = pod.get("metadata") or {}
        if not any(o.get("kind") == "StatefulSet" for o in meta.get("ownerReferences") or []):
            continue
        pod_conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
        if pod_conditions.get("Ready") != "True":
            problems.append(f"pod {meta.get('namespace')}/{meta.get('name')} is not Ready")
    return problems


def wait_node_ready(
    api_url: str,
    node: str,
    ca_pem: str,
    cert_pem: str,
    key_pem: str,
    timeout_seconds: float = 900,
    interval_seconds: float = 5,
    request_timeout_seconds: float = 5,
) -> float:
    """Poll the k3s API until `node` is Ready and its StatefulSet pods are Ready; seconds waited, or NotReady."""
    from urllib.parse import quote

    context = _ssl_context(ca_pem, cert_pem, key_pem)
    base = api_url.rstrip("/")

    def attempt() -> str | None:
        status, body = _get_json(f"{base}/api/v1/nodes/{quote(node)}", context, request_timeout_seconds)
        pods = None
        if status == 200:
            _, pods = _get_json(f"{base}/api/v1/pods?fieldSelector={quote('spec.nodeName=' + node)}", context,
                                request_timeout_seconds)
        problems = node_problems(body if status == 200 else None, pods)
        return "; ".join(problems) if problems else None

    return _poll(attempt, (urllib.error.URLError, OSError, ssl.SSLError, ValueError), timeout_seconds,
                 interval_seconds, lambda last: f"node {node} is not back within {timeout_seconds:.0f}s: {last}")


class _NodeReadinessProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        waited = wait_node_ready(props["apiUrl"], props["node"], props["caPem"], props["clientCertPem"],
                                 props["clientKeyPem"], timeout_seconds=float(props["timeoutSeconds"]))
        return CreateResult(id_=f"{props['node']}@{props['trigger']}",
                            outs={**props, "waitedSeconds": round(waited, 1)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A new trigger (the server's type: it was just resized) means waiting for the node again.
        changed = [k for k in ("node", "trigger") if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=False)


class NodeReadiness(Resource):
    """Waits, when created, until a hub node is Ready with its StatefulSet pods; re-created (so waits again)
    whenever `trigger` changes, e.g. after the server behind the node was resized."""

    def __init__(
        self,
        name: str,
        api_url: pulumi.Input[str],
        node: str,
        trigger: pulumi.Input[str],
        ca_pem: pulumi.Input[str],
        client_cert_pem: pulumi.Input[str],
        client_key_pem: pulumi.Input[str],
        timeout_seconds: int = 900,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            _NodeReadinessProvider(),
            name,
            {
                "apiUrl": api_url,
                "node": node,
                "trigger": trigger,
                "caPem": ca_pem,
                "clientCertPem": client_cert_pem,
                "clientKeyPem": pulumi.Output.secret(client_key_pem),
                "timeoutSeconds": timeout_seconds,
                "waitedSeconds": None,
            },
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["clientKeyPem"])),
        )
