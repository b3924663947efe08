"""Resource rules: each looks at one resource's inputs and returns messages."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .props import (
    ADMIN_PORTS,
    LB_FORBIDDEN_PORTS,
    MAX_DNS_TTL,
    SECRET,
    TTL_ANNOTATION,
    Props,
    _argv,
    _as_int,
    _containers,
    _control_plane_component,
    _get,
    _list,
    _object_name,
    _pod_template,
    flag_value,
    is_opaque,
    is_unknown,
    k8s_kind,
    selector_matches,
)


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


DELEGATION_LABEL = "karmada-hub.io/dns-role"
"""Records of a delegation (dns.mode self-hosted: NS set and the nameservers' addresses in the parent zone) carry
`delegation` here; they never change on failover and a long TTL keeps the zone reachable through a Hetzner DNS
outage, so the rule does not hold them to the failover bound."""


def dns_short_ttl(resource_type: str, props: Props) -> list[str]:
    """Failover is only as fast as the DNS TTL, so every TTL the stack sets stays <= 60 s (a delegation's NS
    set and its nameservers' address records excepted: they are not failover records)."""
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
        labels = props.get("labels") if isinstance(props.get("labels"), Mapping) else {}
        if labels.get(DELEGATION_LABEL) == "delegation" and props.get("type") in ("NS", "A", "AAAA"):
            return []
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


REGION_USER = re.compile(r"^karmada-hub:region:([a-z0-9]([-a-z0-9]*[a-z0-9])?):([0-9a-f]{12})$")
"""The only user names a region identity may carry: region, then the key id the hub derived."""


def region_identity_subject(resource_type: str, props: Props) -> list[str]:
    """The second line behind the hub's CSR check (components/kube/region_csr.py), written apart from it: a region
    certificate the hub signs (`RegionCertificate`) is for a CSR whose subject is exactly
    `CN=karmada-hub:region:<region>` with nothing else requested and a valid self-signature, and the subject it
    signs (`user`) is exactly `karmada-hub:region:<region>:<first 12 hex of SHA-256 of the key>`: no group, no
    other region, no other key. A RoleBinding named for a region binds that one user and nothing else."""
    kind = k8s_kind(resource_type)
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        name = _object_name(props) or ""
        if not name.startswith("karmada-hub:region:"):
            return []
        region = name.removeprefix("karmada-hub:region:")
        subjects = _list(props.get("subjects"))
        users = [s.get("name") for s in subjects if isinstance(s, Mapping)]
        good = [u for u in users if isinstance(u, str) and (m := REGION_USER.match(u)) and m.group(1) == region]
        if len(subjects) != 1 or len(good) != 1 or subjects[0].get("kind") != "User":
            return [f"binds {users} instead of one User karmada-hub:region:{region}:<key id>"]
        return []
    if resource_type != "pulumi-python:dynamic:Resource" or props.get("kind") != "RegionCertificate":
        return []
    region, user, csr_pem = props.get("region"), props.get("user"), props.get("csrPem")
    if any(is_opaque(v) for v in (region, user, csr_pem)):
        return []
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import NameOID

    try:
        csr = x509.load_pem_x509_csr(str(csr_pem).encode())
        valid = csr.is_signature_valid
        key = csr.public_key()
    except Exception:  # anything unreadable is the finding
        return ["its csrPem is not a readable CSR"]
    problems = []
    attrs = [a for rdn in csr.subject.rdns for a in rdn]
    if len(attrs) != 1 or attrs[0].oid != NameOID.COMMON_NAME or attrs[0].value != f"karmada-hub:region:{region}":
        problems.append(f"the CSR asks for {csr.subject.rfc4514_string()}, not exactly CN=karmada-hub:region:{region}")
    if len(list(csr.extensions)) or len(list(csr.attributes)):
        problems.append("the CSR requests extensions or attributes")
    if not valid:
        problems.append("the CSR's self-signature does not verify")
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    import hashlib

    want = f"karmada-hub:region:{region}:{hashlib.sha256(der).hexdigest()[:12]}"
    if user != want:
        problems.append(f"it would sign the subject CN={user}, not CN={want}")
    return problems
