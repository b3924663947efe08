"""Faithful, deterministic stand-ins for what providers compute, so the offline plan is the real program.

The offline plan runs `__main__.py` under the Pulumi SDK's mock runtime. Whatever a provider would
compute at `pulumi up` is produced here instead, from the resource's own inputs and a seed derived
from its type and name, so two runs give identical bytes:

- `tls` keys are real ECDSA P-256 keys and certificates are real X.509 certificates (signed with
  deterministic ECDSA), so tests can verify chains and run etcd with them;
- `random` values, hcloud ids and addresses are stable per resource;
- Kubernetes resources echo their inputs (the object that would be applied);
- a StackReference returns the outputs of the referenced stack's own offline plan.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import json
import os
import string
from collections.abc import Mapping
from typing import Any

import pulumi
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pulumi.runtime import rpc

from components.kube import cert_schedule
from components.kube.region_csr import planner_key
from components.trust import region_identity

SECRET_SIG = {rpc._special_sig_key: rpc._special_secret_sig}


def unwrap(value: Any) -> Any:
    """Drop the mock runtime's secret wrappers, recursively (values only; callers track secrecy)."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            return unwrap(rpc.unwrap_rpc_secret(value))
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def seed_bytes(*parts: str) -> bytes:
    return hashlib.sha256("\x00".join(parts).encode()).digest()


EPOCH_ENV = cert_schedule.EPOCH_ENV
"""The day offline certificates start (`hubctl plan --epoch` sets it): two plans of different days differ in
every certificate, so a diff's base and head are rendered as of one day."""


def parse_epoch(text: str, where: str = EPOCH_ENV) -> dt.datetime:
    """An ISO date (YYYY-MM-DD) as midnight UTC; anything else is a user error naming where it was given."""
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        from hubctl.errors import UserError

        raise UserError(f"{where}: '{text[:40]}' is not a date like 2026-11-30 (YYYY-MM-DD)") from None
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def plan_epoch() -> dt.datetime:
    """Certificates start at 00:00 UTC today (or HUBCTL_PLAN_EPOCH, an ISO date) so runs are byte-identical; the
    program's own clock while offline is the same day (cert_schedule.offline_epoch)."""
    override = os.environ.get(EPOCH_ENV)
    if override:
        parse_epoch(override)
    return cert_schedule.offline_epoch()


# ------------------------------------------------------------------------------------------- tls


ec_key = planner_key
"""The stand-in key of the `tls.PrivateKey` `<type>::<name>`: derived from the name, so public. The hub refuses
any identity CSR made with such a key (components/kube/region_csr.py, which owns the derivation)."""


def _private_key_outputs(seed: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    algorithm = inputs.get("algorithm")
    if algorithm != "ECDSA" or inputs.get("ecdsaCurve", "P224") != "P256":
        raise ValueError(f"offline plan supports ECDSA P256 keys only (the program's choice); got {algorithm}")
    key = ec_key(seed)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption()).decode()
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode()
    pub = key.public_key()
    public_pem = pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    openssh = pub.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return {
        "privateKeyPem": pem,
        "privateKeyPemPkcs8": pkcs8,
        "privateKeyOpenssh": pkcs8,
        "publicKeyPem": public_pem,
        "publicKeyOpenssh": openssh + "\n",
        "publicKeyFingerprintSha256": "SHA256:"
        + base64.b64encode(hashlib.sha256(public_pem.encode()).digest()).decode(),
        "publicKeyFingerprintMd5": hashlib.md5(public_pem.encode()).hexdigest(),
    }


def _name(subject: Mapping[str, Any] | None) -> x509.Name:
    subject = subject or {}
    attrs = []
    if subject.get("organization"):
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, subject["organization"]))
    if subject.get("organizationalUnit"):
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, subject["organizationalUnit"]))
    if subject.get("commonName"):
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, subject["commonName"]))
    return x509.Name(attrs)


_EKU = {"server_auth": ExtendedKeyUsageOID.SERVER_AUTH, "client_auth": ExtendedKeyUsageOID.CLIENT_AUTH}


def _build_cert(
    seed: str,
    subject: x509.Name,
    public_key: Any,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer_public: Any,
    inputs: Mapping[str, Any],
    sans: tuple[list[str], list[str]],
) -> dict[str, Any]:
    uses = set(inputs.get("allowedUses") or [])
    is_ca = bool(inputs.get("isCaCertificate"))
    start = plan_epoch()
    end = start + dt.timedelta(hours=float(inputs["validityPeriodHours"]))
    serial = int.from_bytes(seed_bytes("serial", seed)[:16], "big") >> 1
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(serial)
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature="digital_signature" in uses,
                content_commitment=False,
                key_encipherment="key_encipherment" in uses,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign="cert_signing" in uses,
                crl_sign="crl_signing" in uses,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_public), critical=False)
    )
    ekus = [_EKU[u] for u in sorted(uses) if u in _EKU]
    if ekus:
        builder = builder.add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
    dns_names, ips = sans
    if dns_names or ips:
        entries: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        entries += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    cert = builder.sign(issuer_key, hashes.SHA256(), ecdsa_deterministic=True)
    return {
        "certPem": cert.public_bytes(serialization.Encoding.PEM).decode(),
        "validityStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "validityEndTime": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "readyForRenewal": False,
    }


def _load_key(pem: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("offline plan signs with ECDSA keys only")
    return key


def _self_signed(seed: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    key = _load_key(inputs["privateKeyPem"])
    name = _name(inputs.get("subject"))
    return _build_cert(seed, name, key.public_key(), name, key, key.public_key(), inputs,
                       (list(inputs.get("dnsNames") or []), list(inputs.get("ipAddresses") or [])))


def _cert_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    key = _load_key(inputs["privateKeyPem"])
    builder = x509.CertificateSigningRequestBuilder().subject_name(_name(inputs.get("subject")))
    entries: list[x509.GeneralName] = [x509.DNSName(d) for d in inputs.get("dnsNames") or []]
    entries += [x509.IPAddress(ipaddress.ip_address(i)) for i in inputs.get("ipAddresses") or []]
    if entries:
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    csr = builder.sign(key, hashes.SHA256(), ecdsa_deterministic=True)
    return {"certRequestPem": csr.public_bytes(serialization.Encoding.PEM).decode()}


def _locally_signed(seed: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    csr = x509.load_pem_x509_csr(inputs["certRequestPem"].encode())
    ca_cert = x509.load_pem_x509_certificate(inputs["caCertPem"].encode())
    ca_key = _load_key(inputs["caPrivateKeyPem"])
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        sans = ([str(v) for v in san.get_values_for_type(x509.DNSName)],
                [str(v) for v in san.get_values_for_type(x509.IPAddress)])
    except x509.ExtensionNotFound:
        sans = ([], [])
    return _build_cert(seed, csr.subject, csr.public_key(), ca_cert.subject, ca_key, ca_cert.public_key(), inputs,
                       sans)


# ----------------------------------------------------------------------------------------- random


def _password(seed: str, inputs: Mapping[str, Any]) -> str:
    alphabet = ""
    if inputs.get("lower", True):
        alphabet += string.ascii_lowercase
    if inputs.get("upper", True):
        alphabet += string.ascii_uppercase
    if inputs.get("numeric", True):
        alphabet += string.digits
    if inputs.get("special", True):
        alphabet += inputs.get("overrideSpecial") or "!@#$%&*()-_=+[]{}<>:?"
    length = int(inputs.get("length", 16))
    stream = b""
    counter = 0
    while len(stream) < length:
        stream += seed_bytes("password", seed, str(counter))
        counter += 1
    return "".join(alphabet[b % len(alphabet)] for b in stream[:length])


# ----------------------------------------------------------------------------------------- hcloud


def _numeric_id(seed: str) -> str:
    return str(int.from_bytes(seed_bytes("id", seed)[:4], "big") % 90_000_000 + 10_000_000)


def _public_ipv4(seed: str) -> str:
    """Documentation ranges only (RFC 5737), so a plan never shows somebody's real address."""
    block = ["192.0.2", "198.51.100", "203.0.113"][seed_bytes("v4", seed)[0] % 3]
    return f"{block}.{seed_bytes('v4host', seed)[0] % 200 + 20}"


def _public_ipv6(seed: str) -> str:
    return f"2001:db8:{seed_bytes('v6', seed)[:2].hex()}::1"


def live_server(name: str, server_type: str, location: str, labels: Mapping[str, str], status: str = "running",
                image: str = "ubuntu-24.04") -> dict[str, Any]:
    """A `hcloud.get_servers` entry with every field the provider returns (pulumi_hcloud GetServersServerResult)."""
    return {"backupWindow": "", "backups": False, "datacenter": f"{location}-dc1", "deleteProtection": False,
            "firewallIds": [], "id": int(_numeric_id(name)), "image": image, "ipv4Address": _public_ipv4(name),
            "ipv6Address": _public_ipv6(name), "ipv6Network": "", "iso": "", "labels": dict(labels),
            "location": location, "name": name, "primaryDiskSize": 40, "rebuildProtection": False, "rescue": "",
            "serverType": server_type, "status": status, "networks": [], "placementGroupId": 0}


def live_network(name: str, ip_range: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """A `hcloud.get_networks` entry (pulumi_hcloud GetNetworksNetworkResult)."""
    return {"deleteProtection": False, "exposeRoutesToVswitch": False, "id": int(_numeric_id(name)),
            "ipRange": ip_range, "labels": dict(labels), "name": name}


def _selected(labels: Mapping[str, str], selector: str | None) -> bool:
    """Hetzner label selectors as the program uses them: `k=v` terms joined by commas, all must hold."""
    for term in filter(None, (selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class PlanMocks(pulumi.runtime.Mocks):
    """Provider outputs for the offline plan; `stack_outputs` stands in for StackReference reads, `live` for
    what Hetzner already runs (`{"servers": [live_server(...)], "networks": [live_network(...)]}`; the
    default is nothing, the first `pulumi up` of a stack)."""

    def __init__(self, stack_outputs: Mapping[str, tuple[dict[str, Any], list[str]]] | None = None,
                 live: Mapping[str, list[dict[str, Any]]] | None = None) -> None:
        self.stack_outputs = dict(stack_outputs or {})
        self.live = {k: list(v) for k, v in (live or {}).items()}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        seed = f"{args.typ}::{args.name}"
        inputs = args.inputs
        plain = unwrap(inputs)
        typ = args.typ
        if typ == "pulumi:pulumi:StackReference":
            outputs, secret_names = self.stack_outputs.get(args.name, ({}, []))
            return args.name, {"name": args.name, "outputs": outputs, "secretOutputNames": secret_names}
        rid = _numeric_id(seed) if typ.startswith("hcloud:") else f"{args.name}-{seed_bytes(seed)[:4].hex()}"
        if args.resource_id:  # a read of an existing object (`.get`): echo what the reader asked for
            return args.resource_id, {**inputs, **_read_outputs(typ, args.resource_id, seed)}
        extra: dict[str, Any] = {}
        if typ == "tls:index/privateKey:PrivateKey":
            extra = _private_key_outputs(seed, plain)
        elif typ == "tls:index/selfSignedCert:SelfSignedCert":
            extra = _self_signed(seed, plain)
        elif typ == "tls:index/certRequest:CertRequest":
            extra = _cert_request(plain)
        elif typ == "tls:index/locallySignedCert:LocallySignedCert":
            extra = _locally_signed(seed, plain)
        elif typ == "random:index/randomPassword:RandomPassword":
            value = _password(seed, plain)
            extra = {"result": value, "bcryptHash": "$2a$10$" + seed_bytes("bcrypt", seed).hex()[:53]}
        elif typ == "random:index/randomBytes:RandomBytes":
            raw = (seed_bytes("bytes", seed) * 8)[: int(plain.get("length", 32))]
            extra = {"base64": base64.b64encode(raw).decode(), "hex": raw.hex()}
        elif typ == "hcloud:index/server:Server":
            networks = plain.get("networks") or []
            extra = {"ipv4Address": _public_ipv4(seed), "ipv6Address": _public_ipv6(seed),
                     "status": "running", "networks": networks}
        elif typ == "hcloud:index/loadBalancer:LoadBalancer":
            extra = {"ipv4": _public_ipv4(seed), "ipv6": _public_ipv6(seed)}
        elif typ == "hcloud:index/primaryIp:PrimaryIp":
            extra = {"ipAddress": _public_ipv4(seed) if plain.get("type") == "ipv4" else _public_ipv6(seed)}
        elif typ == "hcloud:index/sshKey:SshKey":
            extra = {"fingerprint": ":".join(f"{b:02x}" for b in seed_bytes("fp", seed)[:16])}
        elif typ == "hcloud:index/networkSubnet:NetworkSubnet":
            extra = {"gateway": str(next(ipaddress.ip_network(plain["ipRange"]).hosts()))}
            rid = f"{plain.get('networkId')}-{plain['ipRange']}"
        elif typ == "kubernetes:core/v1:Secret" and plain.get("type") == SA_TOKEN_TYPE:
            extra = {"data": _sa_token_data(seed)}  # what the provider returns once the token controller filled it
        elif typ == "pulumi-python:dynamic:Resource":
            extra = {k: v for k, v in inputs.items() if k != "__provider"}
            if plain.get("kind") == region_identity.KIND:  # the hub's signature of a region's CSR, as `create`
                outs = {k: v for k, v in extra.items() if k != "caKeyPem"}
                return rid, {**outs, **region_identity.certificate_outputs(plain)}
        return rid, {**inputs, **extra}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        selector = (args.args or {}).get("withSelector")
        if args.token == "hcloud:index/getServers:getServers":
            servers = [s for s in self.live.get("servers", []) if _selected(s["labels"], selector)]
            return {"id": f"servers-{selector}", "servers": servers, "withSelector": selector}
        if args.token == "hcloud:index/getNetworks:getNetworks":
            networks = [n for n in self.live.get("networks", []) if _selected(n["labels"], selector)]
            return {"id": f"networks-{selector}", "networks": networks, "withSelector": selector}
        raise NotImplementedError(f"the program made an invoke the offline plan does not model: {args.token}")


def offline_uid(seed: str) -> str:
    """A stable UID for an object the offline plan reads from a cluster it cannot reach."""
    raw = bytearray(seed_bytes("uid", seed)[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40  # RFC 4122 version 4 layout, as the API server's UIDs
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _read_outputs(typ: str, resource_id: str, seed: str) -> dict[str, Any]:
    """State for `.get()` reads: the CAPI kubeconfig Secret (and any service-account token Secret), a member's
    kube-system Namespace (its UID is a Pull member's cluster id)."""
    if typ == "kubernetes:core/v1:Namespace":
        return {"metadata": {"name": resource_id.split("/")[-1], "uid": offline_uid(seed)}}
    if typ == "kubernetes:core/v1:Secret":
        name = resource_id.split("/")[-1]
        if name.endswith("-kubeconfig"):
            cluster = name[: -len("-kubeconfig")]
            kubeconfig = offline_kubeconfig(cluster)
            return {"data": {**SECRET_SIG, "value": {"value": base64.b64encode(kubeconfig.encode()).decode()}},
                    "type": "cluster.x-k8s.io/secret"}
        return {"data": _sa_token_data(seed), "type": SA_TOKEN_TYPE}
    return {}


SA_TOKEN_TYPE = "kubernetes.io/service-account-token"


def _sa_token_data(seed: str) -> dict[str, Any]:
    """A member token controller's fill-in of a service-account-token Secret (secret-wrapped)."""
    token = "offline-token-" + seed_bytes("token", seed).hex()[:32]
    return {**SECRET_SIG, "value": {"token": base64.b64encode(token.encode()).decode(),
                                    "ca.crt": base64.b64encode(b"offline-member-ca").decode()}}


def offline_kubeconfig(cluster: str) -> str:
    """A syntactically valid kubeconfig for a member the offline plan cannot reach."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": f"https://{cluster}.offline.invalid:6443"}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"token": "offline"}}],
    })
