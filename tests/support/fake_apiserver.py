"""The fake Kubernetes API server of the tests — every kube-apiserver, karmada-apiserver, member and CAPI
management API a test talks to is one: real TLS, real authentication, RBAC enforced, objects in memory.

What it does the way kube-apiserver v1.35 does (vendored k8s.io/apiserver v0.35.3 at karmada v1.18.2):

- TLS from certificate files (`tests.support.httpfake`); with `client_ca`, a client certificate signed by it
  authenticates as its CN with its Os as groups — optional, so token clients connect too, unless
  `require_client_cert`;
- bearer tokens: the static table `tokens` (service accounts, admins) and, with `bootstrap_tokens`, bootstrap
  tokens from the `kube-system/bootstrap-token-<id>` Secrets it holds (`<id>.<secret>`, usage
  `usage-bootstrap-authentication`, not past `expiration` by `now()`; user `system:bootstrap:<id>`, groups
  `system:bootstrappers` plus `auth-extra-groups`); every authenticated user is in `system:authenticated`;
  anything else is 401;
- authorization (`tests.support.rbac`): `system:masters` may do anything; otherwise the Roles and bindings in
  `rbac`, or a `Grant` in `grants` for the user's name (one binding in brief), must allow the request. GET of an
  object is `get`, of a collection `list` (`watch` with `?watch=`), POST `create` (without a name, so a
  resourceNames rule never covers it), PUT `update`, PATCH `patch` — a server-side apply that creates is
  authorized as `create` with the object's name as well — DELETE `delete`; a subresource is `res/sub`;
  refused is 403. Every 401 and 403 is recorded in `denied`;
- objects: create (`generateName`; 409 AlreadyExists), get, list (all namespaces or one; `labelSelector` terms
  `k` and `k=v`), update (409 on a stale resourceVersion), JSON merge patch (RFC 7386), server-side apply
  (`application/apply-patch+yaml`: the object as sent, no field ownership), any other patch type 415, delete.
  A write to `…/status` changes only `status`, to a CSR's `…/approval` only `status.conditions` (and needs
  `approve` on the signer, as kube-apiserver checks it); any other write keeps the `status` there is and bumps
  `metadata.generation` when `spec` changes; every write bumps `resourceVersion`; a create sets `uid` and
  `creationTimestamp`, and a CertificateSigningRequest's `spec.username` and `groups` from the requester.
  `?watch=` is answered as a list: no program under test watches. `/api/v1` and `/apis/<group>/<version>`
  answer an empty APIResourceList.

For the tests: `hooks` run on every write through the API, inside the store's lock, with (verb, key, a copy of
the object, user) — a simulated controller reacts there (the CSR approver and signer, Karmada scheduling the
drill's binding) and writes back with `put`. `admission` callables run before a create, update or patch with
(verb, target, body, user) and may refuse it with a (status, body) — an admission webhook, or one that does not
answer; `?dryRun=All` on a create runs them and stores nothing, as kube-apiserver does. `health` answers
`/readyz`, `/livez` and `/healthz` (any query) with its (status, text), to anyone, as the health paths do.
`put`, `get`, `items` and `remove` reach the store directly (no RBAC, no hooks); `serve` answers one request for a
given user without HTTP; `down` makes the server drop every connection unanswered (a powered-off member);
`requests` records every request.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import secrets
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tests.support.httpfake import Handler, LoopbackServer, server_tls
from tests.support.rbac import Grant, Rbac, Request

Key = tuple[str, str, str, str]
"""(group, resource, namespace, name); namespace "" for cluster-scoped objects."""


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()


class Call(NamedTuple):
    """One request as the server saw it; user "-" when it was not authenticated."""

    user: str
    method: str
    path: str
    status: int


MERGE_PATCH, APPLY_PATCH = "application/merge-patch+json", "application/apply-patch+yaml"

Hook = Callable[[str, Key, dict[str, Any], User], None]
Admission = Callable[[str, "Target", Any, User], "tuple[int, Any] | None"]
HEALTH_PATHS = ("/readyz", "/livez", "/healthz")


@dataclass(frozen=True)
class Target:
    """What a request path names; `resource` None for a discovery path (`/api/v1`, `/apis/<group>/<version>`)."""

    group: str
    version: str
    namespace: str
    resource: str | None
    subresource: str
    name: str
    query: Mapping[str, str]

    @property
    def rbac_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource or ""


def parse_path(path: str) -> Target:
    """The target of an API path; ValueError for a path outside `/api/<v>` and `/apis/<group>/<v>`."""
    parsed = urllib.parse.urlsplit(path)
    parts = [urllib.parse.unquote(p) for p in parsed.path.strip("/").split("/")]
    if parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ValueError(f"not an API path: {path}")
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    return Target(group, version, namespace, rest[0] if rest else None, rest[2] if len(rest) > 2 else "",
                  rest[1] if len(rest) > 1 else "", dict(urllib.parse.parse_qsl(parsed.query)))


def _status(code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message or reason}


def _selected(labels: Mapping[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v:
                return False
        elif term not in labels:
            return False
    return True


def merge_patch(base: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386)."""
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    out = dict(base)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(base.get(k), v)
    return out


class FakeApiServer:
    def __init__(self, cert_file: str | Path, key_file: str | Path, *, client_ca: str | Path | None = None,
                 require_client_cert: bool = False, tokens: Mapping[str, User] | None = None,
                 bootstrap_tokens: bool = False, grants: Mapping[str, Grant] | None = None,
                 rbac: Rbac | None = None) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.tokens = dict(tokens or {})
        self.bootstrap_tokens = bootstrap_tokens
        self.grants = dict(grants or {})
        self.rbac = rbac
        self.hooks: list[Hook] = []
        self.admission: list[Admission] = []
        self.health: dict[str, tuple[int, str]] = {p: (200, "ok") for p in HEALTH_PATHS}
        self.requests: list[Call] = []
        self.denied: list[str] = []
        self.down = False
        self.now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
        self._lock = threading.RLock()
        self._rv = 0
        fake = self

        class ApiHandler(Handler):
            def _handle(self) -> None:
                if fake.down:
                    self.close_connection = True
                    return
                path = self.path.split("?", 1)[0]
                if self.command == "GET" and path in fake.health:
                    status, text = fake.health[path]
                    fake.requests.append(Call("-", self.command, self.path, status))
                    return self.reply(status, text.encode(), {"Content-Type": "text/plain"})
                body = self.json_body()
                user = fake.authenticate(self.connection.getpeercert(), self.headers.get("Authorization"))
                if user is None:
                    fake.denied.append(f"unauthenticated {self.command} {self.path}")
                    fake.requests.append(Call("-", self.command, self.path, 401))
                    return self.reply_json(401, _status(401, "Unauthorized"))
                self.reply_json(*fake.serve(user, self.command, self.path, body,
                                            self.headers.get("Content-Type", "")))

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - http.server's names

        self.server = LoopbackServer(ApiHandler, server_tls(
            str(cert_file), str(key_file), str(client_ca) if client_ca else None, require_client_cert))
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()

    # ------------------------------------------------------------------------------ authentication

    def authenticate(self, peer: Mapping[str, Any] | None, authorization: str | None) -> User | None:
        if peer:
            subject = [item for rdn in peer["subject"] for item in rdn]
            cn = next(v for k, v in subject if k == "commonName")
            orgs = tuple(v for k, v in subject if k == "organizationName")
            return User(cn, (*orgs, "system:authenticated"))
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization.removeprefix("Bearer ").strip()
        if token in self.tokens:
            user = self.tokens[token]
            return User(user.name, (*user.groups, "system:authenticated"))
        if self.bootstrap_tokens and "." in token:
            tid, _, secret_half = token.partition(".")
            stored = self.get("", "secrets", "kube-system", f"bootstrap-token-{tid}") or {}
            data = {k: base64.b64decode(v).decode() for k, v in (stored.get("data") or {}).items()}
            if (stored.get("type") == "bootstrap.kubernetes.io/token" and data.get("token-id") == tid
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
        req = Request(user.name, verb, t.group, t.rbac_resource, t.namespace, t.name if name is None else name,
                      user.groups)
        grant = self.grants.get(user.name)
        return (grant is not None and grant.covers(req)) or (self.rbac is not None and self.rbac.allowed(req))

    # ------------------------------------------------------------------------------------ serving

    def serve(self, user: User, method: str, path: str, body: Any, content_type: str = "application/json"
              ) -> tuple[int, Any]:
        """One request by an authenticated `user`: (status, body), recorded in `requests`."""
        status, out = self._serve(user, method, path, body, content_type)
        self.requests.append(Call(user.name, method, path, status))
        return status, out

    def _serve(self, user: User, method: str, path: str, body: Any, content_type: str) -> tuple[int, Any]:
        try:
            t = parse_path(path)
        except ValueError:
            return 404, _status(404, "NotFound", path)
        if t.resource is None:
            return 200, {"kind": "APIResourceList", "groupVersion": f"{t.group}/{t.version}".lstrip("/"),
                         "resources": []}
        verb = {"GET": "get" if t.name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}.get(method)
        if verb is None:
            return 405, _status(405, "MethodNotAllowed")
        if t.query.get("watch") not in (None, "", "0", "false"):
            verb = "watch"
        media = content_type.split(";")[0].strip()
        with self._lock:
            if not self.authorized(user, verb, t, name="" if verb == "create" else None):
                return self._forbidden(user, verb, t)
            key = (t.group, t.resource, t.namespace, t.name)
            current = self.objects.get(key)
            if verb in ("list", "watch"):
                selector = t.query.get("labelSelector", "")
                items = [o for o in self.items(t.group, t.resource, t.namespace or None)
                         if _selected((o.get("metadata") or {}).get("labels") or {}, selector)]
                return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(self._rv)},
                             "items": items}
            if verb in ("create", "update", "patch"):
                for admit in self.admission:
                    refused = admit(verb, t, body, user)
                    if refused is not None:
                        return refused
            if verb == "create":
                if t.name:
                    return 405, _status(405, "MethodNotAllowed", f"POST to a named {t.rbac_resource}")
                if t.query.get("dryRun") == "All":
                    return 201, copy.deepcopy(body)
                return self._create(user, t, body)
            if verb == "patch" and media == APPLY_PATCH and current is None:
                if not self.authorized(user, "create", t):
                    return self._forbidden(user, "create", t)
                return self._create(user, t, body)
            if current is None:
                return 404, _status(404, "NotFound", f"{t.rbac_resource} {t.name!r} not found")
            if verb == "get":
                return 200, copy.deepcopy(current)
            if verb == "delete":
                del self.objects[key]
                self._run_hooks("delete", key, current, user)
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            if verb == "update":
                sent = ((body or {}).get("metadata") or {}).get("resourceVersion")
                if sent and sent != current["metadata"]["resourceVersion"]:
                    return 409, _status(409, "Conflict", "the object has been modified")
                if t.subresource == "approval" and not self._may_approve(user, current, body):
                    return 403, _status(403, "Forbidden", f"{user.name} may not approve for this signer")
                new = copy.deepcopy(body)
            elif media == APPLY_PATCH:
                new = copy.deepcopy(body)
            elif media == MERGE_PATCH:
                new = merge_patch(current, body)
            else:
                return 415, _status(415, "UnsupportedMediaType", f"no {media or 'untyped'} patch here")
            out = self._write(key, self._updated(current, new, t.subresource))
            self._run_hooks(verb, key, out, user)
            return 200, out

    def _may_approve(self, user: User, current: dict[str, Any], body: Any) -> bool:
        """An approval write that adds a condition also needs `approve` on `signers` named by the CSR's signer
        (k8s.io/kubernetes v1.35.4 plugin/pkg/admission/certificates/approval/admission.go, the CertificateApproval
        admission plugin, on by default: IsAuthorizedForSignerName(..., "approve", signerName))."""
        old = {c.get("type") for c in (current.get("status") or {}).get("conditions") or []}
        new = {c.get("type") for c in ((body or {}).get("status") or {}).get("conditions") or []}
        if not new - old:
            return True
        signer = (current.get("spec") or {}).get("signerName", "")
        signers = Target(group="certificates.k8s.io", version="v1", resource="signers", namespace="", name=signer,
                         subresource="", query={})
        return self.authorized(user, "approve", signers)

    def _forbidden(self, user: User, verb: str, t: Target) -> tuple[int, Any]:
        where = f"{t.group}/{t.rbac_resource} ns={t.namespace or '-'} {t.name}".rstrip()
        self.denied.append(f"{user.name} {verb} {where}")
        return 403, _status(403, "Forbidden", f"{user.name} may not {verb} {where}")

    def _create(self, user: User, t: Target, body: Any) -> tuple[int, Any]:
        obj = copy.deepcopy(body) if isinstance(body, dict) else {}
        meta = obj.setdefault("metadata", {})
        meta["name"] = t.name or meta.get("name") or ""  # a named path: the server-side apply that creates
        if not meta["name"]:
            if not meta.get("generateName"):
                return 422, _status(422, "Invalid", "name or generateName is required")
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        key = (t.group, str(t.resource), t.namespace, meta["name"])
        if key in self.objects:
            return 409, _status(409, "AlreadyExists", f"{t.resource} {meta['name']!r} already exists")
        if t.resource == "certificatesigningrequests":
            obj.setdefault("spec", {}).update(username=user.name, groups=list(user.groups))
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["generation"] = 1
        meta["creationTimestamp"] = self._timestamp()
        out = self._write(key, obj)
        self._run_hooks("create", key, out, user)
        return 201, out

    def _updated(self, current: dict[str, Any], new: dict[str, Any], subresource: str) -> dict[str, Any]:
        """`new` as it is stored over `current`: identity and server-set fields kept, `status` by subresource."""
        if subresource == "status":
            return {**copy.deepcopy(current), "status": copy.deepcopy(new.get("status"))}
        if subresource == "approval":  # only the approval conditions change (the CSR registry's approvalStrategy)
            status = {**copy.deepcopy(current.get("status") or {}),
                      "conditions": copy.deepcopy((new.get("status") or {}).get("conditions") or [])}
            return {**copy.deepcopy(current), "status": status}
        status = current.get("status", new.get("status"))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = copy.deepcopy(status)
        meta = new.setdefault("metadata", {})
        old = current["metadata"]
        for field in ("uid", "creationTimestamp"):
            if field in old:
                meta[field] = old[field]
        generation = int(old.get("generation", 1))
        meta["generation"] = generation + 1 if new.get("spec") != current.get("spec") else generation
        return new

    def _write(self, key: Key, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta["name"] = key[3]
        if key[2]:
            meta["namespace"] = key[2]
        else:
            meta.pop("namespace", None)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        self.objects[key] = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    def _run_hooks(self, verb: str, key: Key, obj: dict[str, Any], user: User) -> None:
        for hook in self.hooks:
            hook(verb, key, copy.deepcopy(obj), user)

    def _timestamp(self) -> str:
        return self.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    # ------------------------------------------------------------------------------- the store itself

    def put(self, group: str, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly, as is (test setup, a simulated controller's write): no RBAC, no hooks."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        with self._lock:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("generation", 1)
            meta.setdefault("creationTimestamp", self._timestamp())
            return self._write((group, resource, meta.get("namespace", ""), meta["name"]), obj)

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            obj = self.objects.get((group, resource, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def remove(self, group: str, resource: str, namespace: str, name: str) -> None:
        with self._lock:
            self.objects.pop((group, resource, namespace, name), None)

    def items(self, group: str, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [copy.deepcopy(o) for (g, r, ns, _), o in sorted(self.objects.items())
                    if g == group and r == resource and (namespace is None or ns == namespace)]
