"""A fake Kubernetes API server for tests: real TLS, real authentication, rendered RBAC enforced, objects in memory.

What it does the way kube-apiserver v1.35 does (vendored k8s.io/apiserver v0.35.3 at karmada v1.18.2):

- TLS with a given serving certificate; client certificates are verified against `client_ca` (optional, so token
  clients connect too) and authenticate as CN with the Os as groups;
- bearer tokens: bootstrap tokens from `kube-system/bootstrap-token-<id>` Secrets (`<id>.<secret>`, usage
  `usage-bootstrap-authentication`, not past `expiration`; user `system:bootstrap:<id>`, groups
  `system:bootstrappers` plus `auth-extra-groups`), and a static token table (service accounts, admins);
  every authenticated user is in `system:authenticated`; anything else is 401;
- authorization with `tests.support.rbac` over the Roles and bindings it is given (`system:masters` may do
  anything); GET of a collection is `list`, a server-side apply that creates is authorized as `create` with the
  object's name as well as `patch`;
- create (with generateName), get, list (labelSelector `k=v` only), update, merge patch, apply patch, delete.

`on_create` hooks run after an object is stored (the CSR approver and signer here are one).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.rbac import Rbac, Request


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Target:
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (f"{self.group}/{self.resource}", self.namespace, self.name)


def parse_path(path: str) -> Target:
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    return Target(group, version, resource, sub, namespace, name)


class FakeApiServer:
    def __init__(self, tmp: Path, cert_pem: str, key_pem: str, client_ca_pem: str | None, rbac: Rbac,
                 static_tokens: Mapping[str, User] | None = None) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.rbac = rbac
        self.static_tokens = dict(static_tokens or {})
        self.log: list[tuple[str, str, str, int]] = []
        """(user, method, path, status) of every request."""
        self.on_create: list[Callable[[Target, dict[str, Any], User], None]] = []
        self.now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: dict[str, Any], user: User | None) -> None:
                fake.log.append((user.name if user else "-", self.command, self.path, status))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _handle(self) -> None:
                user = fake.authenticate(self.connection.getpeercert(), self.headers.get("Authorization"))
                if user is None:
                    return self._reply(401, {"kind": "Status", "code": 401, "message": "Unauthorized"}, None)
                status, body = fake.serve(user, self.command, self.path, self._body(),
                                          self.headers.get("Content-Type", ""))
                self._reply(status, body, user)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert_file, key_file = tmp / f"srv-{secrets.token_hex(3)}.crt", tmp / f"srv-{secrets.token_hex(3)}.key"
        cert_file.write_text(cert_pem)
        key_file.write_text(key_pem)
        context.load_cert_chain(str(cert_file), str(key_file))
        if client_ca_pem:
            context.load_verify_locations(cadata=client_ca_pem)
            context.verify_mode = ssl.CERT_OPTIONAL
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------------------ authentication

    def authenticate(self, peer: dict[str, Any] | None, authorization: str | None) -> User | None:
        if peer:
            subject = [item for rdn in peer["subject"] for item in rdn]
            cn = next(v for k, v in subject if k == "commonName")
            orgs = tuple(v for k, v in subject if k == "organizationName")
            return User(cn, (*orgs, "system:authenticated"))
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization.removeprefix("Bearer ").strip()
        if token in self.static_tokens:
            user = self.static_tokens[token]
            return User(user.name, (*user.groups, "system:authenticated"))
        if "." in token:
            tid, _, secret_half = token.partition(".")
            stored = self.objects.get(("/secrets", "kube-system", f"bootstrap-token-{tid}"))
            data = {k: base64.b64decode(v).decode() for k, v in ((stored or {}).get("data") or {}).items()}
            if (stored and stored.get("type") == "bootstrap.kubernetes.io/token" and data.get("token-id") == tid
                    and secrets.compare_digest(data.get("token-secret", ""), secret_half)
                    and data.get("usage-bootstrap-authentication") == "true"
                    and dt.datetime.fromisoformat(data["expiration"].replace("Z", "+00:00")) > self.now()):
                extra = tuple(g for g in data.get("auth-extra-groups", "").split(",") if g)
                return User(f"system:bootstrap:{tid}", ("system:bootstrappers", *extra, "system:authenticated"))
        return None

    # ------------------------------------------------------------------------------- authorization

    def authorized(self, user: User, verb: str, t: Target, name: str | None = None) -> bool:
        if "system:masters" in user.groups:
            return True
        resource = f"{t.resource}/{t.subresource}" if t.subresource else t.resource
        return self.rbac.allowed(Request(user.name, verb, t.group, resource, t.namespace,
                                         t.name if name is None else name, user.groups))

    # ------------------------------------------------------------------------------------ serving

    def serve(self, user: User, method: str, path: str, body: Any, content_type: str) -> tuple[int, dict[str, Any]]:
        t = parse_path(path)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        forbidden = (403, {"kind": "Status", "code": 403, "message": f"{user.name} may not {method} {path}"})
        with self._lock:
            if method == "GET":
                if t.name:
                    if not self.authorized(user, "get", t):
                        return forbidden
                    obj = self.objects.get(t.key)
                    return (200, obj) if obj else (404, {"kind": "Status", "code": 404})
                if not self.authorized(user, "list", t):
                    return forbidden
                selector = dict(s.split("=", 1) for s in (query.get("labelSelector", [""])[0]).split(",") if s)
                items = [o for (r, ns, _), o in self.objects.items()
                         if r == f"{t.group}/{t.resource}" and (not t.namespace or ns == t.namespace)
                         and selector.items() <= ((o.get("metadata") or {}).get("labels") or {}).items()]
                return 200, {"kind": "List", "items": items}
            if method == "POST":
                obj = dict(body)
                meta = obj.setdefault("metadata", {})
                if not meta.get("name"):
                    meta["name"] = meta.pop("generateName", "obj-") + secrets.token_hex(3)[:5]
                if not self.authorized(user, "create", t, name=""):
                    return forbidden
                target = Target(t.group, t.version, t.resource, "", t.namespace, meta["name"])
                if target.key in self.objects:
                    return 409, {"kind": "Status", "code": 409}
                return 201, self._store(target, obj, user, created=True)
            if method == "PUT":
                if not self.authorized(user, "update", t):
                    return forbidden
                if t.key not in self.objects:
                    return 404, {"kind": "Status", "code": 404}
                return 200, self._store(t, dict(body), user)
            if method == "PATCH":
                if not self.authorized(user, "patch", t):
                    return forbidden
                existing = self.objects.get(t.key)
                if "apply-patch" in content_type:
                    if existing is None and not self.authorized(user, "create", t):
                        return forbidden
                    return (200 if existing else 201), self._store(t, dict(body), user, created=existing is None)
                if existing is None:
                    return 404, {"kind": "Status", "code": 404}
                return 200, self._store(t, _merge(existing, body), user)
            if method == "DELETE":
                if not self.authorized(user, "delete", t):
                    return forbidden
                if self.objects.pop(t.key, None) is None:
                    return 404, {"kind": "Status", "code": 404}
                return 200, {"kind": "Status", "status": "Success"}
        return 405, {"kind": "Status", "code": 405}

    def _store(self, t: Target, obj: dict[str, Any], user: User, created: bool = False) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("name", t.name)
        if t.namespace:
            meta["namespace"] = t.namespace
        meta.setdefault("creationTimestamp", self.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
        if t.resource == "certificatesigningrequests" and created:
            obj["spec"]["username"], obj["spec"]["groups"] = user.name, list(user.groups)
        self.objects[t.key] = obj
        if created:
            for hook in self.on_create:
                hook(t, obj, user)
        return obj

    def put(self, path: str, obj: dict[str, Any]) -> None:
        """Store an object directly (test setup), as if an admin had created it."""
        t = parse_path(path)
        self._store(t, json.loads(json.dumps(obj)), User("setup", ("system:masters",)))


def _merge(base: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386)."""
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return patch
    out = dict(base)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(base.get(k), v)
    return out
