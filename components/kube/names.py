"""Name rules of the systems the program names things in: Kubernetes, DNS, X.509, as predicates with limits.

Each `Rule` says what a name of that kind may be and where the rule comes from; `violation(rule, value)`
returns why a value breaks it (or None). Which rule applies to which derived name is decided where the names
are collected (operations/names.py); Hetzner's own limits are in hetzner/limits.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    what: str
    limit: int
    pattern: re.Pattern[str] | None
    cite: str
    count_bytes: bool = False

    def length(self, value: str) -> int:
        return len(value.encode()) if self.count_bytes else len(value)


_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = Rule("a DNS label (RFC 1123)", 63, re.compile(_LABEL),
                 "kubernetes.io/docs/concepts/overview/working-with-objects/names (RFC 1123 label names)")
SERVICE_NAME = Rule("a Service name (RFC 1035 label: starts with a letter)", 63,
                    re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?"),
                    "kubernetes.io/docs/concepts/overview/working-with-objects/names (RFC 1035 label names)")
DNS_SUBDOMAIN = Rule("a DNS subdomain name (RFC 1123)", 253, re.compile(rf"{_LABEL}(\.{_LABEL})*"),
                     "kubernetes.io/docs/concepts/overview/working-with-objects/names (DNS subdomain names)")
PATH_SEGMENT = Rule("a path segment name (no '/' or '%')", 253, re.compile(r"(?!\.\.?$)[^/%]+"),
                    "k8s.io/apimachinery pkg/api/validation/path IsValidPathSegmentName (RBAC object names)")
DNS_NAME = Rule("a DNS name (labels of at most 63 characters)", 253,
                re.compile(r"(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"),
                "RFC 1035 section 2.3.4 (63 octets per label, 255 per name on the wire)")
LABEL_VALUE = Rule("a label value", 63, re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"),
                   "kubernetes.io/docs/concepts/overview/working-with-objects/labels#syntax-and-character-set")
LABEL_NAME = Rule("a label key's name", 63, re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"),
                  "kubernetes.io/docs/concepts/overview/working-with-objects/labels#syntax-and-character-set")
COMMON_NAME = Rule("an X.509 common name", 64, None, "RFC 5280 appendix A.1 (ub-common-name INTEGER ::= 64)",
                   count_bytes=True)
CLUSTER_NAME = Rule("a Karmada Cluster name", 48, re.compile(_LABEL),
                    "Karmada v1.18.2 pkg/apis/cluster/validation/validation.go clusterNameMaxLength")


def violation(rule: Rule, value: str) -> str | None:
    """Why `value` is not `rule.what`, or None."""
    size = rule.length(value)
    if size > rule.limit:
        unit = "bytes" if rule.count_bytes else "characters"
        return f"{size} {unit}, over the {rule.limit} of {rule.what} ({rule.cite})"
    if rule.pattern is not None and not rule.pattern.fullmatch(value):
        return f"not {rule.what} ({rule.cite})"
    return None


def label_key_violation(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix:
        problem = violation(DNS_SUBDOMAIN, prefix)
        if problem:
            return f"prefix {prefix!r}: {problem}"
    return violation(LABEL_NAME, name)


NAME_RULES: Mapping[str, Rule] = {
    "Namespace": DNS_LABEL,
    "Service": SERVICE_NAME,
    "ClusterRole": PATH_SEGMENT,
    "ClusterRoleBinding": PATH_SEGMENT,
    "Role": PATH_SEGMENT,
    "RoleBinding": PATH_SEGMENT,
    "Cluster": CLUSTER_NAME,
}
"""Kinds whose names follow another rule than the DNS subdomain most kinds use."""


def name_rule(kind: str) -> Rule:
    return NAME_RULES.get(kind, DNS_SUBDOMAIN)


def object_names(obj: Mapping[str, Any]) -> Iterator[tuple[str, str, Rule | None]]:
    """(what, value, rule) for every name in a Kubernetes object that has a rule: its name, its namespace, and
    every label key (rule None: see label_key_violation) and value: the object's, its pod templates', and those
    its selectors match. A CRD's schema is not searched (its `labels`/`selector` are property names)."""
    kind, meta = obj.get("kind", ""), obj.get("metadata") or {}
    if "name" in meta:
        yield f"{kind} name", meta["name"], name_rule(kind)
    if "namespace" in meta:
        yield f"{kind} namespace", meta["namespace"], DNS_LABEL
    maps = list(_label_maps(meta, "metadata"))
    if kind == "Service" and isinstance((obj.get("spec") or {}).get("selector"), dict):
        maps.append(("selector", obj["spec"]["selector"]))
    if kind != "CustomResourceDefinition":
        maps += _label_maps(obj.get("spec") or {}, "spec")
    for where, labels in maps:
        for key, value in labels.items():
            yield f"{kind} {where} key", key, None
            yield f"{kind} {where} {key}", str(value), LABEL_VALUE


def _label_maps(value: Any, parent: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """`labels` maps under a `metadata`, and every `matchLabels`, anywhere below `value`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "labels" and parent == "metadata" and isinstance(item, dict):
                yield "label", item
            elif key == "matchLabels" and isinstance(item, dict):
                yield "selector", item
            else:
                yield from _label_maps(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from _label_maps(item, parent)


def object_violations(obj: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(what, value, why) for every name in `obj` that breaks its rule."""
    for what, value, rule in object_names(obj):
        problem = label_key_violation(value) if rule is None else violation(rule, value)
        if problem:
            yield what, value, problem
