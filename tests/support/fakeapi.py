"""A small Kubernetes-style API server on loopback for tests: objects in memory, TLS, users, RBAC enforced.

Enough of the API conventions for the programs under test: list (all namespaces or one, `labelSelector` with
`key` or `key=value` terms), get, create (409 when it exists), update (409 on a stale resourceVersion), merge
patch, delete, and the `/status` subresource. Users are a client certificate's CN (signed by `client_ca`) or a
bearer token; every request is checked against that user's RBAC rules (Role rules carry the namespace they
are bound in), so a call the rendered RBAC would refuse fails here with 403 and is recorded in `denied`.

`on_write(method, key, obj)` lets a simulation react to what a program writes (the fake Karmada schedules a
binding when the drill creates a Deployment, for example).
"""

from __future__ import annotations

import copy
import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Key = tuple[str, str, str, str]
"""(group, resource, namespace, name); namespace "" for cluster-scoped objects."""


@dataclass(frozen=True)
class Grant:
    """RBAC rules for one user; `namespace` None: a ClusterRole binding, else a RoleBinding in that namespace."""

    rules: Sequence[Mapping[str, Any]]
    namespace: str | None = None


ALLOW_ALL = Grant([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])


def parse_path(path: str) -> tuple[str, str, str, str | None, str | None, dict[str, str]]:
    """`(group, version, namespace, resource, name, query)`; subresource folded into the resource as `x/status`."""
    parsed = urllib.parse.urlsplit(path)
    query = dict(urllib.parse.parse_qsl(parsed.query))
    parts = [urllib.parse.unquote(p) for p in parsed.path.strip("/").split("/")]
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else None
    name = rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    return group, version, namespace, resource, name, query


def _allowed(grant: Grant, group: str, resource: str, namespace: str, verb: str) -> bool:
    if grant.namespace is not None and namespace != grant.namespace:
        return False
    for rule in grant.rules:
        if (("*" in rule["apiGroups"] or group in rule["apiGroups"])
                and ("*" in rule["resources"] or resource in rule["resources"])
                and ("*" in rule["verbs"] or verb in rule["verbs"])):
            return True
    return False


def _matches(labels: Mapping[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v:
                return False
        elif term not in labels:
            return False
    return True


def _merge(base: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    out = dict(base)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(base.get(k), v)
    return out


class FakeApi:
    def __init__(self, server_cert: str, server_key: str, *, client_ca: str | None = None,
                 tokens: Mapping[str, str] | None = None, grants: Mapping[str, Grant] | None = None,
                 on_write: Callable[[str, Key, dict[str, Any]], None] | None = None) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.tokens = dict(tokens or {})
        self.grants = dict(grants or {})
        self.on_write = on_write
        self.lock = threading.RLock()
        self.rv = 0
        self.requests: list[tuple[str, str, str]] = []
        self.denied: list[str] = []
        self.down = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _reply(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _user(self) -> str | None:
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Bearer "):
                    return fake.tokens.get(auth[len("Bearer "):])
                peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
                if peer:
                    return dict(x[0] for x in peer["subject"]).get("commonName")
                return None

            def _handle(self) -> None:
                if fake.down:
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                user = self._user()
                group, version, namespace, resource, name, query = parse_path(self.path)
                fake.requests.append((user or "?", self.command, self.path))
                if resource is None:
                    return self._reply(200, {"kind": "APIResourceList", "groupVersion": f"{group}/{version}"})
                verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                        "DELETE": "delete"}[self.command]
                if query.get("watch"):
                    verb = "watch"
                grant = fake.grants.get(user or "")
                if user is None or grant is None or not _allowed(grant, group, resource, namespace, verb):
                    fake.denied.append(f"{user} {verb} {group}/{resource} ns={namespace or '-'} {name or ''}")
                    return self._reply(403, {"kind": "Status", "code": 403, "reason": "Forbidden"})
                status, out = fake.dispatch(self.command, group, namespace, resource, name, query, body)
                self._reply(status, out)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(server_cert, server_key)
        if client_ca:
            context.load_verify_locations(client_ca)
            context.verify_mode = ssl.CERT_OPTIONAL
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ store

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def put(self, group: str, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Seed or overwrite an object directly (the simulation's own writes; no RBAC, no hooks)."""
        with self.lock:
            meta = obj.setdefault("metadata", {})
            key = (group, resource, meta.get("namespace", ""), meta["name"])
            meta["resourceVersion"] = self._next_rv()
            meta.setdefault("generation", 1)
            meta.setdefault("uid", f"uid-{self.rv}")
            self.objects[key] = copy.deepcopy(obj)
            return copy.deepcopy(obj)

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects.get((group, resource, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def remove(self, group: str, resource: str, namespace: str, name: str) -> None:
        with self.lock:
            self.objects.pop((group, resource, namespace, name), None)

    def items(self, group: str, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for (g, r, ns, _), o in sorted(self.objects.items())
                    if g == group and r == resource and (namespace is None or ns == namespace)]

    def dispatch(self, method: str, group: str, namespace: str, resource: str, name: str | None,
                 query: Mapping[str, str], body: Any) -> tuple[int, Any]:
        sub = None
        if "/" in resource:
            resource, sub = resource.split("/", 1)
        with self.lock:
            if method == "GET" and name is None:
                selector = query.get("labelSelector", "")
                items = [o for o in self.items(group, resource, namespace or None)
                         if _matches((o.get("metadata") or {}).get("labels") or {}, selector)]
                return 200, {"kind": "List", "metadata": {"resourceVersion": str(self.rv)}, "items": items}
            key = (group, resource, namespace, name or (body or {}).get("metadata", {}).get("name", ""))
            current = self.objects.get(key)
            if method == "GET":
                return (200, copy.deepcopy(current)) if current else (404, {"kind": "Status", "code": 404})
            if method == "POST":
                if current is not None:
                    return 409, {"kind": "Status", "code": 409, "reason": "AlreadyExists"}
                obj = copy.deepcopy(body)
                obj.setdefault("metadata", {})["namespace"] = namespace or obj["metadata"].get("namespace", "")
                if not namespace:
                    obj["metadata"].pop("namespace", None)
                obj["metadata"].pop("resourceVersion", None)
                out = self.put(group, resource, obj)
                self._hook("create", key, out)
                return 201, out
            if current is None:
                return 404, {"kind": "Status", "code": 404}
            if method == "DELETE":
                del self.objects[key]
                self._hook("delete", key, current)
                return 200, {"kind": "Status", "status": "Success"}
            if method == "PUT":
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if rv and rv != current["metadata"]["resourceVersion"]:
                    return 409, {"kind": "Status", "code": 409, "reason": "Conflict"}
                obj = copy.deepcopy(body)
                if sub == "status":
                    obj = {**current, "status": obj.get("status")}
                else:
                    obj["status"] = current.get("status", obj.get("status"))
                    if obj.get("spec") != current.get("spec"):
                        obj["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
                    else:
                        obj["metadata"]["generation"] = current["metadata"].get("generation", 1)
                obj["metadata"]["uid"] = current["metadata"].get("uid")
                out = self.put(group, resource, obj)
                self._hook("update", key, out)
                return 200, out
            if method == "PATCH":
                obj = _merge(current, body)
                obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                out = self.put(group, resource, obj)
                self._hook("patch", key, out)
                return 200, out
        return 405, {"kind": "Status", "code": 405}

    def _hook(self, method: str, key: Key, obj: dict[str, Any]) -> None:
        if self.on_write is not None:
            self.on_write(method, key, copy.deepcopy(obj))
