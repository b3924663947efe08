"""The hub's HA and safety invariants as plain functions: one source for CrossGuard and the offline check.

Every rule reads Pulumi *wire* inputs (camelCase, the Kubernetes object itself for `kubernetes:*` types) and
returns messages, so `pulumi preview --policy-pack policy` (through `crossguard_policies()`) and
`python -m hubctl plan <stack> --policy` (through `hubctl.policy_check`) cannot drift apart.

Two value conventions are shared by both callers:

* a secret is the string `"[secret]"` (the offline plan writes it; `install_secret_redaction()` makes the
  analyzer see the same, because pulumi_policy would otherwise hand rules the *plaintext* of secrets);
* a value unknown during preview is `"[computed]"`; rules skip it, since the same rule runs again during
  `pulumi up`, when the value is known.

This module needs only the standard library; pulumi_policy is imported lazily by the CrossGuard adapter at
the bottom, so the offline check runs without it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
)
"""Deployments whose loss stops the fleet: each must survive one node loss and one voluntary eviction."""

ADMIN_PORTS = (22, 2379, 6443)
"""SSH, etcd client, Kubernetes API: never reachable from the whole internet."""
LB_FORBIDDEN_PORTS = (22, 2379)
"""A Hetzner load balancer has no firewall, so these must never sit behind one (6443 is the API LB's job)."""

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


def is_opaque(value: Any) -> bool:
    """Secret or unknown: nothing a rule may judge."""
    return value == SECRET or is_unknown(value)


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
    return name if name in CONTROL_PLANE else None


# ------------------------------------------------------------------------------------ resource rules


def etcd_quorum(resource_type: str, props: Props) -> list[str]:
    """etcd keeps quorum through one failure only with an odd count >= 3 spread one per node."""
    if k8s_kind(resource_type) != "StatefulSet" or _object_name(props) != "etcd":
        return []
    problems: list[str] = []
    replicas = _get(props, "spec", "replicas")
    if not is_unknown(replicas):
        n = _as_int(replicas) if replicas is not None else 1
        if n is None or n < 3 or n % 2 == 0:
            problems.append(f"etcd StatefulSet has {replicas if replicas is not None else 'default (1)'} replicas; "
                            "it needs an odd number >= 3 to keep quorum through a node loss")
    template = _pod_template("StatefulSet", props)
    pod_labels = _get(template, "metadata", "labels") or {}
    anti = _get(template, "spec", "affinity", "podAntiAffinity")
    terms = _list(_get(anti, "requiredDuringSchedulingIgnoredDuringExecution"))
    if not any(
        isinstance(t, Mapping) and t.get("topologyKey") == "kubernetes.io/hostname"
        and selector_matches(t.get("labelSelector"), pod_labels)
        for t in terms
    ):
        problems.append("etcd pods need a required podAntiAffinity term on topologyKey kubernetes.io/hostname whose "
                        "labelSelector matches the etcd pod labels, so no node holds two members")
    return problems


def control_plane_replicas(resource_type: str, props: Props) -> list[str]:
    """One replica means every node drain or crash is a control-plane outage."""
    component = _control_plane_component(k8s_kind(resource_type), props)
    if component is None:
        return []
    replicas = _get(props, "spec", "replicas")
    if is_unknown(replicas):
        return []
    n = _as_int(replicas) if replicas is not None else 1
    if n is None or n < 2:
        shown = replicas if replicas is not None else "default (1)"
        return [f"{component} has {shown} replicas; control-plane Deployments need >= 2"]
    return []


def _port_range(port: Any) -> tuple[int, int] | None:
    """Hetzner firewall port: "22", "80-85", "any" or absent (= every port); None when unparseable."""
    if port is None or (isinstance(port, str) and port.strip().lower() in ("", "any")):
        return (1, 65535)
    text = str(_as_int(port) if _as_int(port) is not None else port).strip()
    m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", text)
    if not m:
        return None
    lo = int(m.group(1))
    return lo, int(m.group(2) or lo)


def _is_world(cidr: Any) -> bool:
    if not isinstance(cidr, str) or is_opaque(cidr):
        return False
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False).prefixlen == 0
    except ValueError:
        return False


def firewall_admin_ports(resource_type: str, props: Props) -> list[str]:
    """SSH, etcd and the Kubernetes API are reachable only from the admin CIDRs, never from everywhere."""
    problems: list[str] = []
    if resource_type == "hcloud:index/firewall:Firewall":
        for i, rule in enumerate(_list(props.get("rules"))):
            if not isinstance(rule, Mapping) or str(rule.get("direction", "in")).lower() != "in":
                continue
            if str(rule.get("protocol", "tcp")).lower() != "tcp":
                continue
            world = [c for c in _list(rule.get("sourceIps")) if _is_world(c)]
            if not world:
                continue
            span = _port_range(rule.get("port"))
            if span is None:
                problems.append(f"rules[{i}]: unreadable port {rule.get('port')!r} open to {', '.join(world)}")
                continue
            hit = [p for p in ADMIN_PORTS if span[0] <= p <= span[1]]
            if hit:
                what = rule.get("description") or f"port {rule.get('port', 'any')}"
                problems.append(f"rules[{i}] ({what}) opens tcp {', '.join(map(str, hit))} to {', '.join(world)}; "
                                "restrict sourceIps to the admin CIDRs")
    elif resource_type == "hcloud:index/loadBalancerService:LoadBalancerService":
        for field in ("listenPort", "destinationPort"):
            port = _as_int(props.get(field))
            if port in LB_FORBIDDEN_PORTS:
                problems.append(f"load balancer {field} {port}: a Hetzner load balancer has no firewall, so SSH and "
                                "etcd must never be behind one")
    return problems


def parse_ttl(value: Any) -> float | None:
    """Seconds from 30, "30", "30s", "1m30s", "1h" (Go durations as external-dns reads them); None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, key, value) for every entry below `value`; key is the dict key or list index."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            yield p, k, v
            yield from _walk(v, p)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for i, v in enumerate(value):
            p = f"{path}[{i}]"
            yield p, i, v
            yield from _walk(v, p)


def _ttl_problem(where: str, raw: Any) -> str | None:
    if is_opaque(raw):
        return None
    seconds = parse_ttl(raw)
    if seconds is None:
        return f"{where}: TTL {raw!r} is not a duration"
    if seconds > MAX_DNS_TTL:
        return f"{where}: TTL {raw!r} is longer than {MAX_DNS_TTL}s; clients would stay on a failed region"
    return None


_DNS_TYPE = re.compile(r"(?i)(dns|record|rrset|zone)")


def dns_short_ttl(resource_type: str, props: Props) -> list[str]:
    """Failover is only as fast as the DNS TTL, so every TTL the stack sets stays <= 60 s."""
    found: list[str | None] = []
    kind = k8s_kind(resource_type)
    if kind is not None:
        for path, key, value in _walk(props):
            if key == "annotations" and isinstance(value, Mapping) and TTL_ANNOTATION in value:
                found.append(_ttl_problem(f"{path}[{TTL_ANNOTATION}]", value[TTL_ANNOTATION]))
            elif key == "recordTTL" and kind == "DNSEndpoint":
                found.append(_ttl_problem(path, value))
        for container in _containers(kind, props):
            ttl = flag_value(_argv(container), "--min-ttl")
            if ttl is not None:
                found.append(_ttl_problem(f"container {container.get('name')} --min-ttl", ttl))
    elif _DNS_TYPE.search(resource_type.split(":")[-1]) and "ttl" in props:
        found.append(_ttl_problem("ttl", props["ttl"]))
    return [p for p in found if p]


def image_problem(image: str) -> str | None:
    """Why an image reference is not reproducible, or None: a digest pins it; otherwise a non-latest tag must."""
    if "@" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "has no tag (means latest)"
    if last.rsplit(":", 1)[1] == "latest":
        return "uses the tag latest"
    return None


def images_pinned(resource_type: str, props: Props) -> list[str]:
    """A floating tag lets a node restart silently change the control plane's version."""
    kind = k8s_kind(resource_type)
    if kind is None:
        return []
    out: list[str] = []
    for container in _containers(kind, props):
        image = container.get("image")
        if isinstance(image, str) and image and not is_opaque(image):
            problem = image_problem(image)
            if problem:
                out.append(f"container {container.get('name')}: image {image} {problem}; pin a version tag or digest")
    return out


_PEM_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_CLIENT_KEY = re.compile(r"""client-key-data["']?\s*:\s*["']?([^\s"',}]+)""")
_TOKEN_LINE = re.compile(r"""(?m)^[\s-]*["']?token["']?\s*:\s*["']?([^\s"',}]+)""")
_K3S_TOKEN = re.compile(r"K10[0-9a-fA-F]{8,}::[A-Za-z0-9_.-]+:\S+")


def _plain_secret_kinds(text: str) -> list[str]:
    kinds: list[str] = []
    if _PEM_KEY.search(text):
        kinds.append("a PEM private key")
    if any(v != SECRET for v in _CLIENT_KEY.findall(text)):
        kinds.append("kubeconfig client-key-data")
    if any(v not in (SECRET, '""', "''") for v in _TOKEN_LINE.findall(text)):
        kinds.append("a token: value")
    if _K3S_TOKEN.search(text):
        kinds.append("a k3s join token")
    return kinds


def no_plaintext_secrets(resource_type: str, props: Props) -> list[str]:
    """Keys and tokens must reach Pulumi as secrets, or they land in state, previews, plans and PR comments.

    Messages name where and what, never the value itself.
    """
    out: list[str] = []
    for path, key, value in _walk(props):
        if key in ("client-key-data", "token") and isinstance(value, str) and value and not is_opaque(value):
            out.append(f"{path}: plaintext {key}")
        elif isinstance(value, str) and not is_opaque(value):
            for kind in _plain_secret_kinds(value):
                out.append(f"{path}: contains {kind} in a plain input; pass it as a secret (pulumi.Output.secret)")
    if resource_type == "kubernetes:core/v1:Secret":
        for field in ("data", "stringData"):
            value = props.get(field)
            if value is None or is_opaque(value):
                continue
            if not isinstance(value, Mapping):
                out.append(f"{field}: Secret {field} is not a secret input")
                continue
            plain = sorted(str(k) for k, v in value.items() if not is_opaque(v))
            if plain:
                out.append(f"{field}: Secret keys {', '.join(plain)} are plain inputs; wrap them in "
                           "pulumi.Output.secret")
    return out


# ----------------------------------------------------------------------------------------- stack rules

StackFinding = tuple[str, str | None]
"""(message, urn or None for the stack as a whole)."""


def control_plane_pdbs(resources: Sequence[StackResource]) -> list[StackFinding]:
    """Without a PDB a node drain may evict both replicas at once; a PDB that allows nothing blocks every drain."""
    pdbs = [(_namespace(p), p) for t, p, _ in resources if k8s_kind(t) == "PodDisruptionBudget"]
    out: list[StackFinding] = []
    for rtype, props, urn in resources:
        component = _control_plane_component(k8s_kind(rtype), props)
        if component is None:
            continue
        labels = _get(props, "spec", "template", "metadata", "labels") or {}
        ns = _namespace(props)
        matching = [p for pns, p in pdbs if pns == ns and selector_matches(_get(p, "spec", "selector"), labels)]
        if not matching:
            out.append((f"{component} has no PodDisruptionBudget in {ns} selecting its pods", urn))
            continue
        replicas = _as_int(_get(props, "spec", "replicas"))
        for pdb in matching:
            pdb_name = _object_name(pdb) or "?"
            max_unavailable = _get(pdb, "spec", "maxUnavailable")
            min_available = _as_int(_get(pdb, "spec", "minAvailable"))
            if max_unavailable in (0, "0", "0%"):
                out.append((f"PodDisruptionBudget {pdb_name} for {component} has maxUnavailable 0 and blocks every "
                            "drain", urn))
            elif min_available is not None and replicas is not None and min_available >= replicas:
                out.append((f"PodDisruptionBudget {pdb_name} for {component} has minAvailable {min_available} with "
                            f"{replicas} replicas and blocks every drain", urn))
    return out


def failover_enabled(resources: Sequence[StackResource]) -> list[StackFinding]:
    """Karmada >= 1.14 moves workloads off a dead cluster only with all four switches on (the gate alone does nothing).

    Applies to stacks that run the control plane (a controller-manager, webhook or ClusterTaintPolicy is present).
    """
    argv: dict[str, list[str]] = {}
    urns: dict[str, str] = {}
    policies: list[tuple[Props, str]] = []
    for rtype, props, urn in resources:
        kind = k8s_kind(rtype)
        if kind == "ClusterTaintPolicy":
            policies.append((props, urn))
        component = _control_plane_component(kind, props)
        if component in ("karmada-controller-manager", "karmada-webhook"):
            argv[component] = [a for c in _containers(kind or "", props) for a in _argv(c)]
            urns[component] = urn
    if not argv and not policies:
        return []
    out: list[StackFinding] = []
    cm = argv.get("karmada-controller-manager")
    if cm is None:
        out.append(("no karmada-controller-manager Deployment in a stack that configures failover", None))
    else:
        if feature_gates(cm).get("Failover") is not True:
            out.append(("karmada-controller-manager needs --feature-gates=...Failover=true", urns[
                "karmada-controller-manager"]))
        if flag_value(cm, "--enable-no-execute-taint-eviction") != "true":
            out.append(("karmada-controller-manager needs --enable-no-execute-taint-eviction=true (off by default "
                        "since v1.14)", urns["karmada-controller-manager"]))
    webhook = argv.get("karmada-webhook")
    if webhook is None:
        out.append(("no karmada-webhook Deployment in a stack that configures failover", None))
    elif flag_value(webhook, "--allow-no-execute-taint-policy") != "true":
        out.append(("karmada-webhook needs --allow-no-execute-taint-policy=true, or it rejects NoExecute "
                    "ClusterTaintPolicies", urns["karmada-webhook"]))
    effective = [
        urn for props, urn in policies
        if any(_get(t, "effect") == "NoExecute" for t in _list(_get(props, "spec", "taints")))
        and _list(_get(props, "spec", "addOnConditions"))
    ]
    if not effective:
        out.append(("no ClusterTaintPolicy adds a NoExecute taint (with addOnConditions), so nothing ever evicts "
                    "workloads from a failed cluster", None))
    return out


# --------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class ResourceRule:
    name: str
    description: str
    check: Callable[[str, Props], list[str]]


@dataclass(frozen=True)
class StackRule:
    name: str
    description: str
    check: Callable[[Sequence[StackResource]], list[StackFinding]]


RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule("etcd-quorum", "etcd runs an odd number >= 3 of members, one per node.", etcd_quorum),
    ResourceRule("control-plane-replicas", "Every Karmada control-plane Deployment runs >= 2 replicas.",
                 control_plane_replicas),
    ResourceRule("firewall-admin-ports", "SSH, etcd and the Kubernetes API are never open to 0.0.0.0/0 or ::/0.",
                 firewall_admin_ports),
    ResourceRule("dns-short-ttl", f"Every DNS TTL the stack sets is <= {MAX_DNS_TTL} seconds.", dns_short_ttl),
    ResourceRule("images-pinned", "No container image uses the tag latest or no tag.", images_pinned),
    ResourceRule("no-plaintext-secrets", "Private keys, tokens and Secret data are secret inputs, never plain.",
                 no_plaintext_secrets),
)

STACK_RULES: tuple[StackRule, ...] = (
    StackRule("control-plane-pdb", "Every control-plane Deployment has a PodDisruptionBudget that allows drains.",
              control_plane_pdbs),
    StackRule("failover-enabled", "Cluster failover is really on: Failover gate, NoExecute eviction, webhook "
              "permission and a NoExecute ClusterTaintPolicy.", failover_enabled),
)


# ------------------------------------------------------------------------------------ CrossGuard adapter


def redact_wire_secrets(value: Any) -> Any:
    """Replace every wire-format secret (`{sig: secret, value: …}`) by "[secret]", as plan.json does."""
    if isinstance(value, Mapping):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return SECRET
        return {k: redact_wire_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_wire_secrets(v) for v in value]
    return value


def install_secret_redaction() -> None:
    """Make the analyzer show secrets as "[secret]" instead of their plaintext.

    The engine sends secrets wrapped (`MarshalOptions{KeepSecrets: true}`), but pulumi_policy's Analyze and
    AnalyzeStack unwrap them with `deserialize_properties(..., proxy_secrets=False)` and drop the marker, so
    the secret rule could not tell `Output.secret(key)` from a pasted key. We wrap the module-level function
    `pulumi_policy.policy` calls (pinned in requirements.txt); Remediate (proxy_secrets=True) is untouched.
    """
    import pulumi_policy.policy as analyzer

    original = analyzer.deserialize_properties
    if getattr(original, "redacts_secrets", False):
        return

    def deserialize(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
        return original(props if proxy_secrets else redact_wire_secrets(props), proxy_secrets)

    deserialize.redacts_secrets = True  # type: ignore[attr-defined]
    analyzer.deserialize_properties = deserialize


def plain(value: Any) -> Any:
    """pulumi_policy's unknown-checking proxies -> plain dicts/lists, unknowns -> "[computed]".

    Rules walk whole objects; through the proxy the first unknown value would abort the rule for the
    resource ("can't run policy during preview") instead of just being skipped.
    """
    from pulumi_policy import proxy

    if isinstance(value, proxy._DictProxy | proxy._ListProxy):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {k: plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    if is_unknown(value):
        return COMPUTED
    return value


def crossguard_policies() -> list[Any]:
    """The registry as pulumi_policy policies, all mandatory (built here so tests need no PolicyPack server)."""
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

    def resource_validate(rule: ResourceRule) -> Callable[[Any, Any], None]:
        def validate(args: Any, report_violation: Any) -> None:
            for message in rule.check(args.resource_type, plain(args.props)):
                report_violation(message)

        return validate

    def stack_validate(rule: StackRule) -> Callable[[Any, Any], None]:
        def validate(args: Any, report_violation: Any) -> None:
            resources = [(r.resource_type, plain(r.props), r.urn) for r in args.resources]
            for message, urn in rule.check(resources):
                report_violation(message, urn)

        return validate

    policies: list[Any] = [
        ResourceValidationPolicy(name=r.name, description=r.description, validate=resource_validate(r),
                                 enforcement_level=EnforcementLevel.MANDATORY)
        for r in RESOURCE_RULES
    ]
    policies += [
        StackValidationPolicy(name=r.name, description=r.description, validate=stack_validate(r),
                              enforcement_level=EnforcementLevel.MANDATORY)
        for r in STACK_RULES
    ]
    return policies
