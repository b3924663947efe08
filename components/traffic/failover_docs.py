"""Traffic failover controller documents: health-checked DNS for the fleet's names, on the hub.

The controller (`agents/traffic_failover.py`) probes every region's load balancer for every published name from
each hub server and writes one DNSEndpoint per name; in dns.mode hetzner external-dns (`--source=crd` alone) turns
them into the records, in dns.mode self-hosted the controller writes the zone to the hub's own nameservers itself
(nameserver_docs.py; docs/traffic-failover.md §4, §5). Two API servers are involved:

- host (the hub's k3s), namespace `external-dns`: the Deployment (one replica per hub server), its ConfigMap
  (the script), its karmada client certificate Secret, PDB, ServiceAccount, and a Role for exactly what it
  reads and writes there (Leases, DNSEndpoints, region ConfigMaps); the region ConfigMaps themselves are
  written by the stack that owns each region (`region_configmap`);
- karmada: a ClusterRole/Binding for its user `system:karmada:traffic-failover`: list Ingresses, nothing else.

Plain dicts, no Pulumi; the certificate arrives as an argument.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from components.config import DnsConfig
from components.karmada import flags
from components.kube import agent_script
from components.kube.flows import Dial, Listener, Workload
from components.traffic.docs import EXTERNAL_DNS_NAMESPACE, FAILOVER_MANAGED_BY, REGION_RECORD_LABEL

NAME = "traffic-failover"
NAMESPACE = EXTERNAL_DNS_NAMESPACE
"""Beside external-dns, which reads the DNSEndpoints from this one namespace (`--namespace`)."""
USER = "system:karmada:traffic-failover"
"""CN of its karmada-apiserver client certificate; the karmada RBAC below names this user."""
SCRIPT_KEY = "traffic_failover.py"
CONFIGMAP = NAME
CERT_SECRET = f"{NAME}-karmada-client"
CERT_DIR = "/etc/karmada-hub/pki"
HEALTH_PORT = 8080
DECISION_PERIOD_SECONDS = 1
"""The leader's decision period; the failover budget counts the same value (operations/budget.py
`CONTROLLER_DECISION_SECONDS`, tied by a test since the budget sits on a lower floor)."""
LEASE_DURATION_SECONDS = 15
"""Leader Lease: a new leader takes over 15 s after the old one stopped renewing (kube-scheduler's default)."""
MANAGED_BY = FAILOVER_MANAGED_BY
"""Label value on every DNSEndpoint it writes (`app.kubernetes.io/managed-by`); external-dns filters on it."""
REGION_LABEL = "karmada-hub.io/traffic-region"
REGION_IP_KEY = "lbIpv4"
HTTP_PORT, HTTPS_PORT = 80, 443
"""The regional LBs' listen ports (traffic/docs.py `regional_lb_services`), i.e. what clients dial."""

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**_LABELS, **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


# ------------------------------------------------------------------------------------------- RBAC


def karmada_rbac() -> list[dict[str, Any]]:
    """karmada-apiserver: `list` Ingresses cluster-wide (the names it publishes), nothing else. It polls once a
    round rather than watching, so no `watch`; it never reads one Ingress by name, so no `get`."""
    name = "karmada-hub:traffic-failover"
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(name),
            "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        },
    ]


HOST_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "create", "update"]},
    {"apiGroups": ["externaldns.k8s.io"], "resources": ["dnsendpoints"],
     "verbs": ["list", "create", "update", "delete"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]},
)
"""Host cluster, namespace `external-dns` only (a Role, not a ClusterRole):

- leases get/create/update: its own observation Lease and the leader Lease (get one by name, create it the
  first time, renew it); list: the leader reads every vantage point's Lease. No delete, patch or watch.
- dnsendpoints list: the leader reads what is published; create/update: a name's decision, or (mode hetzner) a
  region's drill record; delete: a name whose Ingress is gone, or a gone region's record. No get (list covers
  it), no status (external-dns writes that), no watch.
- configmaps list: the region ConfigMaps (label-selected; RBAC cannot restrict by label, and the namespace
  holds no Secrets' data in ConfigMaps: the two agent scripts and kube-root-ca.crt)."""


def host_rbac() -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding on the host cluster (`HOST_RULES`)."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, NAMESPACE),
         "automountServiceAccountToken": False},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(NAME, NAMESPACE),
         "rules": [dict(r) for r in HOST_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(NAME, NAMESPACE),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
    ]


# ------------------------------------------------------------------------------------------ objects


def script_configmap(source: str) -> dict[str, Any]:
    """host: the program itself."""
    return agent_script.configmap(_meta(CONFIGMAP, NAMESPACE), SCRIPT_KEY, source)


def cert_secret(ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    """host: the Karmada CA and the controller's karmada-apiserver client certificate and key."""
    return agent_script.client_cert_secret(_meta(CERT_SECRET, NAMESPACE), ca_pem, cert_pem, key_pem,
                                           "traffic failover secret")


MEMBERS_ANNOTATION = "karmada-hub.io/members"


def region_configmap(region: str, lb_ipv4: str, members: Sequence[str]) -> dict[str, Any]:
    """host: one region's load balancer address, for the controller to probe and publish. Written by the stack
    that owns the region (each region stack owns its own object, so two regions never collide).

    `data` holds only what the controller reads (region, LB address). pulumi-kubernetes treats a ConfigMap's
    `data` as immutable and replaces the object, deleting it before it creates it again under the same name
    (provider.go Diff: `deleteBeforeReplace` when the name is unchanged); a controller listing in between would
    not see the region. The members are an annotation (for people and the drill), so adding or removing one is
    an in-place update; only a new LB address still replaces it, which the controller rides out
    (agents/traffic_failover.py `merge_regions`)."""
    ipaddress.IPv4Address(lb_ipv4)
    meta = _meta(f"traffic-region-{region}", NAMESPACE, **{REGION_LABEL: region})
    meta["annotations"] = {MEMBERS_ANNOTATION: ",".join(sorted(members))}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": {"region": region, REGION_IP_KEY: lb_ipv4}}


TOKEN_VOLUME = "host-token"
TOKEN_DIR = "/var/run/secrets/karmada-hub/host"
TOKEN_EXPIRY_SECONDS = 3600


def args(dns: DnsConfig, vantage_points: int, server: str | None = None, primaries: Sequence[str] = ()
         ) -> list[str]:
    """The command line of agents/traffic_failover.py. `$(NODE_NAME)`/`$(POD_NAME)` are expanded by the kubelet
    from the container's env (downward API). Mode self-hosted adds where the zone is written (`primaries`: the hub
    servers' private addresses, nameserver_docs.controller_args)."""
    d = dns.failover
    extra: list[str] = []
    if dns.self_hosted_mode:
        from components.traffic import nameserver_docs

        if not primaries:
            raise ValueError("mode self-hosted: the failover controller needs the hub nameservers' addresses")
        extra = nameserver_docs.controller_args(dns, primaries)
    return [
        f"--karmada-server={server or flags.apiserver_url()}",
        f"--karmada-ca-file={CERT_DIR}/ca.crt",
        f"--karmada-cert-file={CERT_DIR}/tls.crt",
        f"--karmada-key-file={CERT_DIR}/tls.key",
        f"--host-ca-file={TOKEN_DIR}/ca.crt",
        f"--host-token-file={TOKEN_DIR}/token",
        f"--namespace={NAMESPACE}",
        "--vantage=$(NODE_NAME)",
        "--identity=$(POD_NAME)",
        f"--domain={dns.domain}",
        f"--exclude={REGION_RECORD_LABEL}.{dns.domain}",
        f"--ttl={dns.record_ttl}",
        f"--period={d.probe_period_seconds}",
        f"--timeout={d.probe_timeout_seconds}",
        f"--attempts={d.probe_attempts}",
        f"--failure-threshold={d.failure_threshold}",
        f"--success-threshold={d.success_threshold}",
        f"--hold-down={d.hold_down_seconds}",
        f"--vantage-points={vantage_points}",
        f"--decision-period={DECISION_PERIOD_SECONDS}",
        f"--lease-duration={LEASE_DURATION_SECONDS}",
        f"--http-port={HTTP_PORT}",
        f"--https-port={HTTPS_PORT}",
        f"--health-port={HEALTH_PORT}",
        f"--delete-after={delete_after_seconds(dns.record_ttl)}",
        *extra,
    ]


def delete_after_seconds(ttl: int) -> int:
    """How long a name's Ingress must be gone before its record goes: four TTLs, at least a minute (an Ingress
    that Helm or Pulumi replaces is back within seconds; a name that flickers out costs resolvers a negative
    answer for the zone's negative TTL)."""
    return max(60, 4 * ttl)


ENV = (
    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
)


def deployment(dns: DnsConfig, hub_servers: int, source: str, primaries: Sequence[str] = ()) -> dict[str, Any]:
    """host: one replica per hub server (required anti-affinity on the hostname), each a vantage point.

    A lost server leaves its replica Pending: that vantage point abstains, and the other two still make the
    majority of three. The host token is a projected ServiceAccount token (the Role above), the karmada client
    certificate a Secret; `source` feeds the checksum annotation so a new script rolls the pods."""
    probe = {"periodSeconds": 10, "timeoutSeconds": 3}
    mounts = [{"name": "pki", "mountPath": CERT_DIR, "readOnly": True},
              {"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True}]
    zone_volumes: list[dict[str, Any]] = []
    if dns.self_hosted_mode:
        from components.traffic import nameserver_docs as ns

        mounts += [{"name": "zone", "mountPath": ns.ZONE_DIR, "readOnly": True},
                   {"name": "tsig", "mountPath": f"{ns.ZONE_DIR}/tsig", "readOnly": True}]
        zone_volumes = [{"name": "zone", "configMap": {"name": ns.CONTROLLER_ZONE_CONFIGMAP}},
                        {"name": "tsig", "secret": {"secretName": ns.CONTROLLER_TSIG_SECRET, "defaultMode": 0o440}}]
    container = agent_script.container(
        NAME, SCRIPT_KEY, args(dns, hub_servers, primaries=primaries),
        # a round keeps every probe connection of the fleet open at once (agents/traffic_failover.py Prober)
        {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}, env=ENV,
        ports=[{"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"}],
        liveness={**probe, "httpGet": {"path": "/healthz", "port": "health"}, "initialDelaySeconds": 20,
                  "failureThreshold": 3},
        readiness={**probe, "httpGet": {"path": "/readyz", "port": "health"}, "failureThreshold": 1},
        mounts=mounts)
    volumes = [
        agent_script.volume(CONFIGMAP),
        {"name": "pki", "secret": {"secretName": CERT_SECRET, "defaultMode": 0o440}},
        {"name": TOKEN_VOLUME, "projected": {"defaultMode": 0o440, "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRY_SECONDS}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        ]}},
        *zone_volumes,
    ]
    return agent_script.deployment(
        _meta(NAME, NAMESPACE), {"app.kubernetes.io/name": NAME}, hub_servers,
        agent_script.pod_template(_LABELS, source, [container], volumes, service_account=NAME))


def pod_disruption_budget() -> dict[str, Any]:
    """host: a drain takes one vantage point at a time (two of three still make the majority)."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(NAME, NAMESPACE),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}}


def flows() -> Workload:
    """host: its health listener (probes only) and its one in-cluster dial, the karmada-apiserver (it lists the
    Ingresses to publish); the regional load balancers it probes are outside the cluster."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    listeners=(Listener("health", HEALTH_PORT),),
                    dials=(Dial(flags.NAMESPACE, flags.APISERVER_SERVICE, "https"),))
