"""What every rule reads: the shared value conventions and helpers over wire inputs (Kubernetes objects,
command lines, selectors)."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from typing import Any

SECRET = "[secret]"
"""How a secret value looks to every rule (plan.json and, after redaction, CrossGuard)."""
COMPUTED = "[computed]"
"""How a value unknown during preview looks to every rule."""

Props = Mapping[str, Any]
StackResource = tuple[str, Props, str]
"""(resource type, wire inputs, urn) — what stack-level rules read."""

# ------------------------------------------------------------------------------------------- vocabulary

CONTROL_PLANE = (
    "karmada-apiserver",
    "karmada-aggregated-apiserver",
    "kube-controller-manager",
    "karmada-scheduler",
    "karmada-controller-manager",
    "karmada-webhook",
    "karmada-descheduler",
)
HA_ADDONS = (
    "karmada-search",
    "karmada-dashboard-api",
    "karmada-dashboard-web",
)
"""The opt-in addons (karmada.addons) run in the same HA shape: the replica and PDB rules hold them to it too."""
"""Deployments whose loss stops the fleet: each must survive one node loss and one voluntary eviction."""

ADMIN_PORTS = (22, 2379, 6443)
"""SSH, etcd client, Kubernetes API: never reachable from the whole internet."""
LB_FORBIDDEN_PORTS = (22, 2379)
"""A Hetzner load balancer has no firewall, so these must never sit behind one (6443 is the API LB's job)."""

API_PORTS = (5443, 6443)
"""karmada-apiserver and k3s: a load balancer serving them publicly bypasses the Cloud Firewall's API CIDRs."""
WORLD_REACHABLE_LABEL = "karmada-hub/world-reachable"
"""The label a stack puts on a load balancer it opted in to serving an API to the whole internet."""

MAX_DNS_TTL = 60
"""Seconds; longer TTLs keep clients on a dead region after failover."""

TTL_ANNOTATION = "external-dns.kubernetes.io/ttl"

_UNKNOWN_SENTINELS = frozenset(
    {
        # pulumi_policy.proxy's sentinels, in case a rule is handed raw analyzer props
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)

_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and (value == COMPUTED or value in _UNKNOWN_SENTINELS)


_PLACEHOLDER = re.compile(r"^\[secret [0-9a-f]{12}\]$")
"""The offline plan's per-key Secret values: `[secret <fingerprint>]` (base64 of it under a Secret's `data`)."""


def is_secret(value: Any) -> bool:
    """A redacted secret as plan.json or CrossGuard shows it."""
    if not isinstance(value, str):
        return False
    if value == SECRET or _PLACEHOLDER.match(value):
        return True
    if len(value) != 28:
        return False
    try:
        return bool(_PLACEHOLDER.match(base64.b64decode(value, validate=True).decode("ascii")))
    except (ValueError, UnicodeDecodeError):
        return False


def is_opaque(value: Any) -> bool:
    """Secret or unknown: nothing a rule may judge."""
    return is_secret(value) or is_unknown(value)


# ------------------------------------------------------------------------------------ kubernetes helpers


def k8s_kind(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:Deployment` -> `Deployment`; None for anything that is not a Kubernetes object."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or parts[1] == "providers":
        return None
    return parts[2]


def _get(obj: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, Sequence) or isinstance(obj, str) or key >= len(obj):
                return None
        elif not isinstance(obj, Mapping):
            return None
        obj = obj[key] if isinstance(key, int) else obj.get(key)
    return obj


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def _labels(props: Props) -> Mapping[str, Any]:
    labels = _get(props, "metadata", "labels")
    return labels if isinstance(labels, Mapping) else {}


def _object_name(props: Props) -> str | None:
    """metadata.name, or the `app.kubernetes.io/name` label for objects Pulumi auto-names."""
    name = _get(props, "metadata", "name")
    if isinstance(name, str) and not is_opaque(name):
        return name
    label = _labels(props).get("app.kubernetes.io/name")
    return label if isinstance(label, str) else None


def _namespace(props: Props) -> str:
    ns = _get(props, "metadata", "namespace")
    return ns if isinstance(ns, str) else "default"


def _pod_template(kind: str, props: Props) -> Mapping[str, Any]:
    if kind == "Pod":
        return props
    if kind == "CronJob":
        template = _get(props, "spec", "jobTemplate", "spec", "template")
    else:
        template = _get(props, "spec", "template")
    return template if isinstance(template, Mapping) else {}


def _containers(kind: str, props: Props) -> list[Mapping[str, Any]]:
    spec = _get(_pod_template(kind, props), "spec")
    out: list[Mapping[str, Any]] = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        out.extend(c for c in _list(_get(spec, key)) if isinstance(c, Mapping))
    return out


def _argv(container: Mapping[str, Any]) -> list[str]:
    return [a for a in _list(container.get("command")) + _list(container.get("args")) if isinstance(a, str)]


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The last value of `--flag=value`, `--flag value` or a bare boolean `--flag` (= "true")."""
    value: str | None = None
    for i, arg in enumerate(argv):
        if arg.startswith(f"{flag}="):
            value = arg.split("=", 1)[1]
        elif arg == flag:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            value = nxt if nxt is not None and not nxt.startswith("-") else "true"
    return value


def feature_gates(argv: Sequence[str]) -> dict[str, bool]:
    """All `--feature-gates` occurrences merged in order, like pflag's mapStringBool."""
    gates: dict[str, bool] = {}
    for arg in argv:
        if arg.startswith("--feature-gates="):
            for item in arg.split("=", 1)[1].split(","):
                name, _, val = item.partition("=")
                if name.strip():
                    gates[name.strip()] = val.strip().lower() == "true"
    return gates


def selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """Kubernetes label-selector semantics; an empty selector matches everything, a missing one nothing."""
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expr in _list(selector.get("matchExpressions")):
        key, op, values = expr.get("key"), expr.get("operator"), _list(expr.get("values"))
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\d+", value):
        return int(value)
    return None


def _control_plane_component(kind: str | None, props: Props) -> str | None:
    if kind != "Deployment":
        return None
    name = _object_name(props)
    return name if name in CONTROL_PLANE or name in HA_ADDONS else None
