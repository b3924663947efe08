"""The hub's PKI as data: which CAs exist, and which leaf certificates each one signs (ref §3.2).

This room decides names, subjects, usages and SANs; `KarmadaPki` turns the specs into pulumi_tls
resources and tests turn them into real certificates with `cryptography`. Three CAs keep the trust
domains apart: a cert from the etcd CA opens etcd and nothing else, and only front-proxy-client can
assert identities to aggregated API servers. SANs are derived from the same helpers that render the
flags (`flags.etcd_member_fqdn`, …) so a cert can't drift from the name a component dials.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from components.karmada.flags import (
    APISERVER_SERVICE,
    CLUSTER_DOMAIN,
    ETCD_CLIENT_SERVICE,
    ETCD_SERVICE,
    NAMESPACE,
    etcd_member_fqdn,
    etcd_member_names,
)

Usage = Literal["server_auth", "client_auth", "digital_signature", "key_encipherment"]

FRONT_PROXY_CLIENT_CN = "front-proxy-client"
DESCHEDULER_USER = "system:karmada:karmada-descheduler"
"""The descheduler's karmada-apiserver identity (client cert CN, no group); its RBAC is bound to this user."""
"""Must equal karmada-apiserver `--requestheader-allowed-names`."""

_SERVER: tuple[Usage, ...] = ("digital_signature", "key_encipherment", "server_auth")
_CLIENT: tuple[Usage, ...] = ("digital_signature", "key_encipherment", "client_auth")
_BOTH: tuple[Usage, ...] = ("digital_signature", "key_encipherment", "server_auth", "client_auth")


@dataclass(frozen=True)
class CaSpec:
    """A self-signed CA. `file` is the stem under flags.PKI_DIR (`<file>.crt` / `<file>.key`)."""

    name: str
    common_name: str
    file: str


@dataclass(frozen=True)
class CertSpec:
    """One leaf certificate signed by the CA named `signer`.

    `file` is the stem under flags.PKI_DIR for certs mounted as files; None for client certs that only
    ever live inside a kubeconfig Secret.
    """

    name: str
    signer: str
    common_name: str
    usages: tuple[Usage, ...]
    organization: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    file: str | None = None

    @property
    def is_server(self) -> bool:
        return "server_auth" in self.usages

    @property
    def is_client(self) -> bool:
        return "client_auth" in self.usages

    def covers(self, host: str) -> bool:
        """Would a TLS client dialing `host` accept this cert (RFC 6125: IP SANs for IPs, a
        wildcard matches exactly one left-most label)?"""
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return any(hostname_matches(pattern, host) for pattern in self.dns_names)
        return any(ipaddress.ip_address(a) == ip for a in self.ip_addresses)


@dataclass(frozen=True)
class KeyPairSpec:
    """A bare key pair (no certificate): the ServiceAccount token signing key."""

    name: str
    file: str


def hostname_matches(pattern: str, host: str) -> bool:
    """Certificate-name matching as Go's crypto/x509 does it: case-insensitive, `*` only as the
    whole left-most label, never spanning dots."""
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if not pattern.startswith("*."):
        return pattern == host
    head, _, rest = host.partition(".")
    return bool(head) and rest == pattern[2:]


def _svc(name: str, namespace: str, cluster_domain: str) -> tuple[str, ...]:
    """The forms a Service is reached by from pods: name.ns, name.ns.svc, name.ns.svc.<domain>."""
    return (f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.{cluster_domain}")


APISERVER_IN_CLUSTER_NAME = f"{APISERVER_SERVICE}.{NAMESPACE}.svc"
"""A name every karmada-apiserver serving certificate lists whatever the hub's addresses: what the program's own
clients verify when they dial a server's address (`tls-server-name`), so adding servers changes no certificate."""

_LOCAL_DNS = ("localhost",)
_LOCAL_IPS = ("127.0.0.1",)

ETCD_CA = CaSpec(name="etcd-ca", common_name="karmada-etcd-ca", file="etcd/ca")
KARMADA_CA = CaSpec(name="ca", common_name="karmada", file="ca")
FRONT_PROXY_CA = CaSpec(name="front-proxy-ca", common_name="front-proxy-ca", file="front-proxy-ca")
SA_KEY = KeyPairSpec(name="sa", file="sa")


def ca_specs() -> tuple[CaSpec, ...]:
    return (KARMADA_CA, ETCD_CA, FRONT_PROXY_CA)


def etcd_dns_names(etcd_replicas: int, namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN
                   ) -> tuple[str, ...]:
    """Names etcd is dialed by: every member FQDN explicitly (etcd's peer SAN check forward-resolves
    non-wildcard names, so these make it work even without PTR records), the headless wildcard, and
    the etcd-client Service."""
    members = tuple(etcd_member_fqdn(n, namespace, cluster_domain) for n in etcd_member_names(etcd_replicas))
    wildcard = (f"*.{ETCD_SERVICE}.{namespace}.svc", f"*.{ETCD_SERVICE}.{namespace}.svc.{cluster_domain}")
    return members + wildcard


def cert_specs(
    lb_addresses: Sequence[str],
    dns_names: Sequence[str],
    etcd_replicas: int,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
) -> tuple[CertSpec, ...]:
    """Every leaf the hub needs. `lb_addresses` (IPs) and `dns_names` are how members, CI and Pulumi
    reach karmada-apiserver from outside (the Hetzner LB); they go into its serving cert only."""
    if etcd_replicas < 1:
        raise ValueError(f"etcd_replicas must be >= 1 (got {etcd_replicas})")
    lb_ips: list[str] = []
    for addr in lb_addresses:
        try:
            lb_ips.append(str(ipaddress.ip_address(addr)))
        except ValueError:
            raise ValueError(f"lb_addresses must be IP addresses; put host names in dns_names (got {addr!r})") from None
    for name in dns_names:
        if not re.fullmatch(r"(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
            raise ValueError(f"{name!r} is not a DNS name")
    ns, dom = namespace, cluster_domain
    etcd_names = etcd_dns_names(etcd_replicas, ns, dom)
    kubernetes_names = ("kubernetes", "kubernetes.default", "kubernetes.default.svc", f"kubernetes.default.svc.{dom}")

    def client(name: str, cn: str, org: tuple[str, ...] = ("system:masters",)) -> CertSpec:
        return CertSpec(name=name, signer=KARMADA_CA.name, common_name=cn, organization=org, usages=_CLIENT)

    return (
        # --- etcd CA: only etcd and its two clients
        CertSpec(name="etcd-server", signer=ETCD_CA.name, common_name="karmada-etcd-server", usages=_BOTH,
                 dns_names=(*_LOCAL_DNS, *_svc(ETCD_CLIENT_SERVICE, ns, dom), *etcd_names),
                 ip_addresses=_LOCAL_IPS, file="etcd/server"),
        CertSpec(name="etcd-peer", signer=ETCD_CA.name, common_name="karmada-etcd-peer", usages=_BOTH,
                 dns_names=(*_LOCAL_DNS, *etcd_names), ip_addresses=_LOCAL_IPS, file="etcd/peer"),
        etcd_member_client_cert_spec(),
        CertSpec(name="apiserver-etcd-client", signer=ETCD_CA.name, common_name="karmada-apiserver-etcd-client",
                 usages=_CLIENT, file="apiserver-etcd-client"),
        CertSpec(name="aggregated-apiserver-etcd-client", signer=ETCD_CA.name,
                 common_name="karmada-aggregated-apiserver-etcd-client", usages=_CLIENT,
                 file="aggregated-apiserver-etcd-client"),
        # --- front-proxy CA: the one identity allowed to assert users to aggregated servers
        CertSpec(name="front-proxy-client", signer=FRONT_PROXY_CA.name, common_name=FRONT_PROXY_CLIENT_CN,
                 usages=_CLIENT, file="front-proxy-client"),
        # --- Karmada CA: serving certs
        CertSpec(name="apiserver", signer=KARMADA_CA.name, common_name="karmada-apiserver", usages=_SERVER,
                 dns_names=_dedupe((*kubernetes_names, APISERVER_SERVICE, *_svc(APISERVER_SERVICE, ns, dom),
                                    *_LOCAL_DNS, *dns_names)),
                 ip_addresses=_dedupe((*_LOCAL_IPS, *lb_ips)), file="apiserver"),
        CertSpec(name="aggregated-apiserver", signer=KARMADA_CA.name, common_name="karmada-aggregated-apiserver",
                 usages=_SERVER, dns_names=(*_svc("karmada-aggregated-apiserver", ns, dom), *_LOCAL_DNS),
                 ip_addresses=_LOCAL_IPS, file="aggregated-apiserver"),
        CertSpec(name="webhook", signer=KARMADA_CA.name, common_name="karmada-webhook", usages=_SERVER,
                 dns_names=_svc("karmada-webhook", ns, dom), file="webhook"),
        # --- Karmada CA: client certs
        CertSpec(name="scheduler-estimator-client", signer=KARMADA_CA.name,
                 common_name="system:karmada:karmada-scheduler-grpc", usages=_CLIENT,
                 file="scheduler-estimator-client"),
        # The descheduler's own gRPC identity towards the estimators (upstream reuses an admin cert).
        CertSpec(name="descheduler-estimator-client", signer=KARMADA_CA.name,
                 common_name="system:karmada:karmada-descheduler-grpc", usages=_CLIENT,
                 file="descheduler-estimator-client"),
        client("controller-manager", "system:karmada:karmada-controller-manager"),
        client("scheduler", "system:karmada:karmada-scheduler"),
        client("webhook-client", "system:karmada:karmada-webhook"),
        client("aggregated-apiserver-client", "system:karmada:karmada-aggregated-apiserver"),
        # No system:masters: bootstrap.descheduler_rbac() grants exactly what the descheduler calls.
        client("descheduler", DESCHEDULER_USER, org=()),
        client("kube-controller-manager", "system:kube-controller-manager", org=()),
        client("admin", "system:admin"),
    )


def agent_cert_spec(cluster_name: str) -> CertSpec:
    """Client cert for a pull-mode member's karmada-agent, in the identity `karmadactl register`
    would obtain by CSR, so the upstream per-agent RBAC applies unchanged (ref §5.4)."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    return CertSpec(name=f"agent-{cluster_name}", signer=KARMADA_CA.name,
                    common_name=f"system:karmada:agent:{cluster_name}", organization=("system:karmada:agents",),
                    usages=_CLIENT)


def etcd_backup_cert_spec() -> CertSpec:
    """Client cert of the etcd backup job (etcd CA): etcd's client-cert-auth admits any cert of its CA, so
    the job gets its own rather than borrowing the karmada-apiserver's; revoking it is replacing it."""
    return CertSpec(name="etcd-backup-client", signer=ETCD_CA.name, common_name="karmada-etcd-backup",
                    usages=_CLIENT, file="etcd/backup-client")


def etcd_maintenance_cert_spec() -> CertSpec:
    """Client cert of the etcd defragmentation job (etcd CA). etcd runs without its own auth, so any cert of
    its CA may do anything; the job still gets its own, so its requests are its own in etcd's logs and
    replacing it revokes nothing else."""
    return CertSpec(name="etcd-maintenance-client", signer=ETCD_CA.name, common_name="karmada-etcd-maintenance",
                    usages=_CLIENT, file="etcd/maintenance-client")


SEARCH_SERVICE = "karmada-search"
SEARCH_USER = "system:karmada:karmada-search"
"""karmada-search's karmada-apiserver identity (client cert CN, no group): addons.search_rbac binds it."""
DASHBOARD_USER = "system:karmada:karmada-dashboard"
"""karmada-dashboard-api's own karmada-apiserver identity (client cert CN, no group), read-only."""


def search_cert_specs(namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN) -> tuple[CertSpec, ...]:
    """The search addon's certificates: its serving cert (Karmada CA: the APIService's caBundle; exactly its
    Service's names, which the karmada-apiserver dials through the ExternalName Service), its own etcd client
    cert (etcd CA) and its karmada-apiserver client cert (no system:masters; addons.search_rbac)."""
    return (
        CertSpec(name="search", signer=KARMADA_CA.name, common_name=SEARCH_SERVICE, usages=_SERVER,
                 dns_names=_svc(SEARCH_SERVICE, namespace, cluster_domain), file="search"),
        CertSpec(name="search-etcd-client", signer=ETCD_CA.name, common_name="karmada-search-etcd-client",
                 usages=_CLIENT, file="search-etcd-client"),
        CertSpec(name="search-client", signer=KARMADA_CA.name, common_name=SEARCH_USER, usages=_CLIENT),
    )


def dashboard_cert_specs() -> tuple[CertSpec, ...]:
    """The dashboard addon's one certificate: karmada-dashboard-api's own karmada-apiserver client cert (no group;
    addons.dashboard_rbac makes it read-only). Its users reach the karmada-apiserver with their own token."""
    return (CertSpec(name="dashboard-client", signer=KARMADA_CA.name, common_name=DASHBOARD_USER, usages=_CLIENT),)


ESTIMATOR_SERVICE_PREFIX = "karmada-scheduler-estimator"
"""The scheduler's `--scheduler-estimator-service-prefix` default: it dials `<prefix>-<cluster>`."""


def etcd_member_client_cert_spec() -> CertSpec:
    """Client cert of each etcd pod's `prepare` step (etcd CA, no SANs): it reads the member list and
    replaces a member that lost its data. etcd checks a client certificate's SANs against the caller's
    address when it has any (etcd v3.6.6 `client/pkg/transport/listener_tls.go` `checkCertSAN`), and
    `prepare` runs before its pod is published under its member name, so it carries none."""
    return CertSpec(name="etcd-member-client", signer=ETCD_CA.name, common_name="karmada-etcd-member-prepare",
                    usages=_CLIENT, file="etcd/member-client")


def estimator_service_name(cluster_name: str) -> str:
    return f"{ESTIMATOR_SERVICE_PREFIX}-{cluster_name}"


def estimator_cert_spec(cluster_name: str, namespace: str = NAMESPACE,
                        cluster_domain: str = CLUSTER_DOMAIN) -> CertSpec:
    """Serving cert of one member's scheduler-estimator: exactly its Service's names (upstream issues one
    `*.karmada-system.svc` wildcard for all estimators; a per-member cert cannot serve another member).
    The scheduler finds no such Service in the karmada-apiserver and then dials
    `<service>.<namespace>.svc.cluster.local` and `<service>.<namespace>.svc` (pkg/estimator/client
    `resolveCluster`); both are among the SANs."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    return CertSpec(name=f"scheduler-estimator-{cluster_name}", signer=KARMADA_CA.name,
                    common_name=ESTIMATOR_SERVICE_PREFIX, usages=_SERVER,
                    dns_names=_svc(estimator_service_name(cluster_name), namespace, cluster_domain),
                    file="scheduler-estimator")


def _dedupe(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
