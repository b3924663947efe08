"""Kubernetes RBAC authorization for tests: is this user allowed this verb on this object?

Implements the RBAC authorizer's semantics (k8s.io/apiserver + plugin/pkg/auth/authorizer/rbac): a request is
allowed when any rule of any role bound to the user (by User name, by one of its Groups, or as a ServiceAccount)
covers it. A ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding grants its Role, or a
ClusterRole, in its own namespace only. A rule covers a request when its apiGroups, resources (`res/sub` for
subresources) and verbs each contain the request's value or `*`, and — if it lists resourceNames — the request
names one of them (a request without a name, a create or a list, never matches a resourceNames rule).
Built-in roles the API server creates itself are passed in as `builtins`. A `Grant` is one binding in brief: rules
for one user, everywhere or in one namespace, covered by the same rule check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NODE_BOOTSTRAPPER = {"system:node-bootstrapper": [
    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
     "verbs": ["create", "get", "list", "watch"]}]}
"""kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: "a role to use for bootstrapping a node's
client certificates"."""


@dataclass(frozen=True)
class Request:
    user: str
    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    groups: tuple[str, ...] = ()


@dataclass
class Rbac:
    objects: Sequence[Mapping[str, Any]]
    builtins: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)

    def _roles(self, kind: str, namespace: str = "") -> dict[str, list[dict[str, Any]]]:
        out = {o["metadata"]["name"]: list(o.get("rules") or []) for o in self.objects
               if o["kind"] == kind and o["metadata"].get("namespace", "") == namespace}
        if kind == "ClusterRole":
            out = {**self.builtins, **out}
        return out

    @staticmethod
    def _subject_matches(subject: Mapping[str, Any], req: Request) -> bool:
        kind = subject["kind"]
        if kind == "User":
            return subject["name"] == req.user
        if kind == "Group":
            return subject["name"] in req.groups
        if kind == "ServiceAccount":
            return req.user == f"system:serviceaccount:{subject['namespace']}:{subject['name']}"
        raise ValueError(f"unknown subject kind {kind}")

    @staticmethod
    def rule_covers(rule: Mapping[str, Any], req: Request) -> bool:
        def has(values: Iterable[str], value: str) -> bool:
            values = list(values)
            return "*" in values or value in values

        if "nonResourceURLs" in rule:
            return False
        if not (has(rule.get("apiGroups") or [], req.group) and has(rule.get("resources") or [], req.resource)
                and has(rule.get("verbs") or [], req.verb)):
            return False
        names = rule.get("resourceNames")
        return not names or (bool(req.name) and req.name in names)

    def rules_for(self, req: Request) -> list[tuple[str, dict[str, Any]]]:
        """(where the grant applies: a namespace or "*" for everywhere, rule) for every rule bound to the user."""
        out: list[tuple[str, dict[str, Any]]] = []
        cluster_roles = self._roles("ClusterRole")
        for b in self.objects:
            if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            if not any(self._subject_matches(s, req) for s in b.get("subjects") or []):
                continue
            ref = b["roleRef"]
            if b["kind"] == "ClusterRoleBinding":
                scope, rules = "*", cluster_roles.get(ref["name"], [])
            else:
                scope = b["metadata"]["namespace"]
                rules = (cluster_roles.get(ref["name"], []) if ref["kind"] == "ClusterRole"
                         else self._roles("Role", scope).get(ref["name"], []))
            out += [(scope, r) for r in rules]
        return out

    def allowed(self, req: Request) -> bool:
        for scope, rule in self.rules_for(req):
            if scope != "*" and scope != req.namespace:
                continue
            if self.rule_covers(rule, req):
                return True
        return False


@dataclass(frozen=True)
class Grant:
    """`rules` for one user: everywhere (`namespace` None, as a ClusterRoleBinding) or in one namespace only (as a
    RoleBinding)."""

    rules: Sequence[Mapping[str, Any]]
    namespace: str | None = None

    def covers(self, req: Request) -> bool:
        if self.namespace is not None and req.namespace != self.namespace:
            return False
        return any(Rbac.rule_covers(rule, req) for rule in self.rules)


ALLOW_ALL = Grant([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
