"""Regional traffic documents: the per-region Hetzner LB specs, external-dns on the hub, and the ingress override.

How a request finds a live region (the full chain, with upstream evidence, is in docs/traffic-failover.md):

1. each region has one Hetzner LB (TCP 80/443 -> the members' ingress NodePorts, TCP health checks);
2. the hub's traffic failover controller (failover_docs.py, agents/traffic_failover.py) probes every region's
   LB for every name the tenants' Ingress templates publish, from each hub server, and writes one DNSEndpoint
   per name with the addresses of the regions a majority of vantage points see serving it;
3. external-dns runs on the hub's host cluster with `--source=crd` alone and is the only writer of the records,
   with the stack's TTL;
4. each member's ingress controller publishes *its region's LB address* as the Ingress status
   (`ingress_status_overrides`), which makes Karmada count the Ingress healthy (graceful eviction waits for
   that); the status refresher (refresher_docs.py) keeps that status honest after a member dies.

Everything here is a plain dict (or list of dicts) shaped exactly as applied: Kubernetes objects in camelCase with
`metadata.name` set, Hetzner resources in pulumi_hcloud argument names. No Pulumi imports; secret values (the
Hetzner token, the kubeconfig) only ever arrive as arguments.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from components.config import CapiCredentials, DnsConfig, IngressConfig, MemberConfig, RegionConfig
from components.kube.flows import Listener, Workload
from components.kube.pod_security import RESTRICTED, container_security_context
from components.versions import EXTERNAL_DNS_IMAGE, HETZNER_WEBHOOK_IMAGE

# ------------------------------------------------------------------------------------------- constants

EXTERNAL_DNS_NAMESPACE = "external-dns"
EXTERNAL_DNS_NAME = "external-dns"

TOKEN_SECRET_NAME = "external-dns-hetzner"
TOKEN_SECRET_KEY = "token"

FAILOVER_MANAGED_BY = "karmada-hub-traffic-failover"
"""`app.kubernetes.io/managed-by` of the failover controller's DNSEndpoints; external-dns reads only those."""

TXT_PREFIX = "reg-%{record_type}-"
"""Ownership TXT records live beside, not on, the managed name: a TXT on the same name as a CNAME is illegal."""

MANAGED_RECORD_TYPES = ("A", "AAAA", "CNAME")
WEBHOOK_URL = "http://localhost:8888"
"""The Hetzner webhook's default WEBHOOK_ADDRESS (localhost only, so nothing outside the pod can call it)."""
WEBHOOK_TIMEOUT_SECONDS = 30
"""external-dns' webhook read and write timeouts (each); the Hetzner webhook's server allows 60 s per request."""
EXTERNAL_DNS_METRICS_PORT = 7979
WEBHOOK_METRICS_PORT = 8080

REGION_RECORD_LABEL = "lb"
"""Per-region drill records are `<region>.lb.<domain>`, written by the hub's failover controller from the region
ConfigMaps (agents/traffic_failover.py REGION_RECORD_SUBDOMAIN); no Ingress may publish a name in that subtree."""

INGRESS_NAMESPACE = "ingress-nginx"
INGRESS_CONTROLLER = "ingress-nginx-controller"
"""The fleet's ingress controller template in karmada-apiserver (the chart's default names)."""
INGRESS_NGINX_CONTAINER = "controller"
"""Container name in the ingress-nginx chart (`controller.containerName`, charts/ingress-nginx/values.yaml)."""
INGRESS_NGINX_PUBLISH_FLAG = "--publish-status-address"

CAPH_CLUSTER_LABEL_PREFIX = "caph-cluster-"
"""CAPH labels every hcloud server `caph-cluster-<HetznerCluster name>=owned` (api/v1beta2/tags.go
`NameHetznerProviderOwned`, pkg/services/hcloud/server/server.go `createLabels`), plus `machine_type`."""
CAPH_OWNED = "owned"
CAPH_MACHINE_TYPE_LABEL = "machine_type"
CAPH_WORKER = "worker"
MEMBER_SERVER_LABEL = "karmada-hub/member"
"""The Hetzner server label an operator must set on the ingress servers of a member that CAPH did not build."""

HEALTH_CHECK_LIMITS = {"interval": (3, 60), "timeout": (1, 60), "retries": (0, 5)}
"""Hetzner LB health-check bounds this program allows (config.HealthCheckConfig enforces the same)."""


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": EXTERNAL_DNS_NAME,
                                                     "app.kubernetes.io/part-of": "karmada-hub", **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


# ------------------------------------------------------------------------------------- load balancers


def region_members(members: Sequence[MemberConfig], region: str) -> list[MemberConfig]:
    """The members of one region, in a stable order (target and rule order must not churn between plans)."""
    return sorted((m for m in members if m.region == region), key=lambda m: m.name)


def region_ingress(members: Sequence[MemberConfig]) -> IngressConfig:
    """The one ingress port pair a region's LB forwards to.

    A Hetzner LB service has a single destination port for all its targets, so every member behind one regional
    LB must expose its ingress on the same NodePorts; a mismatch would silently black-hole one member."""
    if not members:
        raise ValueError("a regional load balancer needs at least one member in the region")
    first = members[0].ingress
    for m in members[1:]:
        if (m.ingress.http_node_port, m.ingress.https_node_port) != (first.http_node_port, first.https_node_port):
            raise ValueError(
                f"members {members[0].name} and {m.name} share region {m.region} but use different ingress NodePorts "
                f"({first.http_node_port}/{first.https_node_port} vs {m.ingress.http_node_port}/"
                f"{m.ingress.https_node_port}); one regional LB needs the same ports on every member"
            )
    return first


def regional_lb_services(region: RegionConfig, ingress: IngressConfig) -> list[dict[str, Any]]:
    """TCP 80 and 443 -> the members' ingress NodePorts, as pulumi_hcloud `LoadBalancerService` args.

    TCP passthrough, not `http`/`https` services: TLS terminates in the members' ingress controllers, which hold
    the tenants' certificates; the LB only needs to know which nodes are alive. The health check probes the
    destination NodePort itself, so with `externalTrafficPolicy: Local` on the ingress Service only nodes running
    an ingress pod pass, and a member whose ingress is gone drops out of the LB within interval x (retries + 1)."""
    hc = region.health_check
    services = []
    for listen, destination in ((80, ingress.http_node_port), (443, ingress.https_node_port)):
        services.append({
            "protocol": "tcp",
            "listen_port": listen,
            "destination_port": destination,
            "proxyprotocol": region.proxy_protocol,
            "health_check": {
                "protocol": "tcp",
                "port": destination,
                "interval": hc.interval,
                "timeout": hc.timeout,
                "retries": hc.retries,
            },
        })
    return services


def member_server_selector(member: MemberConfig) -> str:
    """Hetzner label selector for one member's ingress servers.

    Hetzner selects *servers in the LB's own project* by *Hetzner server labels*; Kubernetes node labels
    (`member.ingress.node_selector`) are invisible to it. CAPH labels each server it creates
    `caph-cluster-<HetznerCluster>=owned` and `machine_type=worker|control_plane`, and offers no field for custom
    server labels, so for CAPI members the selector is all workers of that cluster (the NodePort health check
    then keeps only the nodes that really serve ingress). The HetznerCluster is assumed to carry the CAPI
    Cluster's name, as the CAPH templates do. Members not built by CAPH must label their ingress servers
    `karmada-hub/member=<member>` themselves."""
    if isinstance(member.credentials, CapiCredentials):
        cluster = member.credentials.cluster
        return f"{CAPH_CLUSTER_LABEL_PREFIX}{cluster}={CAPH_OWNED},{CAPH_MACHINE_TYPE_LABEL}={CAPH_WORKER}"
    return f"{MEMBER_SERVER_LABEL}={member.name}"


def regional_lb_target_selector(members: Sequence[MemberConfig], private: bool = True) -> list[dict[str, Any]]:
    """One pulumi_hcloud `LoadBalancerTarget` spec per member of a region (type label_selector).

    A list, not one selector: Hetzner label selectors AND their terms and the CAPH label key embeds the cluster
    name, so no single selector can match two clusters. `private` (the region names its network, `networkId`)
    keeps LB->node traffic on the members' private network: the LB must then be attached to that network
    (`LoadBalancerNetwork`, and the targets depend on it) and live in the members' Hetzner project. Without a
    network the LB reaches the nodes' public IPs, and their firewall must admit the LB's."""
    if not members:
        raise ValueError("a regional load balancer needs at least one member in the region")
    return [
        {"type": "label_selector", "label_selector": member_server_selector(m), "use_private_ip": private}
        for m in sorted(members, key=lambda m: m.name)
    ]


def region_record_name(region: str, domain: str) -> str:
    """The fixed drill name of one region's LB, e.g. `eu-fsn.lb.dev.example.com`.

    The hub's failover controller publishes it from the region's ConfigMap: into the fleet's own zone in dns.mode
    self-hosted, as a DNSEndpoint of its own (labelled with the region) that external-dns writes in mode hetzner.
    No stack writes it at Hetzner: a region stack holds no DNS token (security review 2, H5)."""
    return f"{region}.{REGION_RECORD_LABEL}.{domain}"


# ---------------------------------------------------------------------------------------- external-dns


def external_dns_args(dns: DnsConfig) -> list[str]:
    """external-dns v0.22 flags (pkg/apis/externaldns/types.go at v0.22.0; see docs/traffic-failover.md §4).

    - `--source=crd` alone, `--namespace` and `--label-filter`: the only input is the failover controller's
      DNSEndpoints in this namespace. A second source publishing the same name would win over them: the plan's
      `PerResource` resolver keeps the resource that already owns a record (plan/conflict.go).
    - no `--kubeconfig`: the CRD source reads the host cluster in-cluster (its Role below), not karmada.
    - `--policy=sync`: a name whose DNSEndpoint is gone loses its record (the controller deletes a DNSEndpoint
      only after its Ingress is gone).
    - `--events` with `--min-event-sync-interval=5s`: a DNSEndpoint change schedules a run within
      max(5 s literal, interval) (controller.go `ScheduleRunOnce`); `--interval` is the resync fallback.
    - `--min-ttl`: only fills endpoints without a TTL; the controller sets `recordTTL = dns.ttl` on each."""
    if dns.txt_owner_id is None:
        raise ValueError("external-dns needs dns.txtOwnerId (the fleet's one owner of its names)")
    args = [
        "--provider=webhook",
        f"--webhook-provider-url={WEBHOOK_URL}",
        # The client timeout is read + write; a transport timeout is not a soft error and ends the process.
        # 30 s + 30 s = the webhook server's own 60 s read/write timeouts.
        f"--webhook-provider-read-timeout={WEBHOOK_TIMEOUT_SECONDS}s",
        f"--webhook-provider-write-timeout={WEBHOOK_TIMEOUT_SECONDS}s",
        "--source=crd",
        f"--namespace={EXTERNAL_DNS_NAMESPACE}",
        f"--label-filter=app.kubernetes.io/managed-by={FAILOVER_MANAGED_BY}",
        "--policy=sync",
        "--registry=txt",
        f"--txt-owner-id={dns.txt_owner_id}",
        f"--txt-prefix={TXT_PREFIX}",
        f"--domain-filter={dns.domain}",
        f"--interval={dns.interval_seconds}s",
        "--events",
        f"--min-event-sync-interval={MIN_EVENT_SYNC_SECONDS}s",
        f"--min-ttl={dns.record_ttl}s",
        f"--metrics-address=:{EXTERNAL_DNS_METRICS_PORT}",
        "--log-format=json",
    ]
    args += [f"--managed-record-types={t}" for t in MANAGED_RECORD_TYPES]
    return args


MIN_EVENT_SYNC_SECONDS = 5
"""Upstream's default; a lower value does not help (the 5 s in ScheduleRunOnce is a literal). The failover
budget counts it (operations/budget.py `EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS`, tied by a test)."""
SA_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where client-go's in-cluster config reads the token and CA (rest.InClusterConfig)."""


_RESTRICTED = {**container_security_context(), "privileged": False}


def external_dns_objects(dns: DnsConfig, token_secret: str) -> list[dict[str, Any]]:
    """Namespace, ServiceAccount, Role/RoleBinding and Deployment for external-dns + the Hetzner webhook on the
    hub's host cluster.

    external-dns reads the DNSEndpoints of its own namespace in-cluster: a projected ServiceAccount token is
    mounted into the external-dns container alone (the webhook sidecar, which holds the Hetzner token, gets no
    Kubernetes credentials). One replica with `Recreate`: v0.22 has no leader election (no such flag or code), two
    instances with one owner id would race each other's TXT registry, and a restart only delays DNS changes by a
    few seconds — the records already served stay up. The webhook is a native sidecar (restartable init
    container) so it is listening before external-dns negotiates with it."""
    labels = {"app.kubernetes.io/name": EXTERNAL_DNS_NAME}
    external_dns = {
        "name": EXTERNAL_DNS_NAME,
        "image": EXTERNAL_DNS_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": external_dns_args(dns),
        "ports": [{"name": "http", "containerPort": EXTERNAL_DNS_METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10,
                          "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 2},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5,
                           "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": dict(_RESTRICTED),
        "volumeMounts": [{"name": "host-token", "mountPath": SA_TOKEN_DIR, "readOnly": True}],
    }
    webhook = {
        "name": "hetzner-webhook",
        "image": HETZNER_WEBHOOK_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "env": [
            {"name": "HETZNER_TOKEN", "valueFrom": {"secretKeyRef": {"name": token_secret, "key": TOKEN_SECRET_KEY}}},
            {"name": "INCLUDE_DOMAIN_FILTER", "value": dns.domain},
            {"name": "WEBHOOK_ADDRESS", "value": WEBHOOK_URL.removeprefix("http://")},
            {"name": "METRICS_ADDRESS", "value": f":{WEBHOOK_METRICS_PORT}"},
        ],
        "ports": [{"name": "http-webhook", "containerPort": WEBHOOK_METRICS_PORT, "protocol": "TCP"}],
        # Its metrics server answers /ready and /healthz with 200 only once the provider listener is bound
        # (503 before and after SIGTERM); the port alone is open before the webhook can serve.
        "startupProbe": {"httpGet": {"path": "/ready", "port": "http-webhook"}, "periodSeconds": 2,
                         "failureThreshold": 30},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http-webhook"}, "periodSeconds": 10,
                          "failureThreshold": 3},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": dict(_RESTRICTED),
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(EXTERNAL_DNS_NAME, EXTERNAL_DNS_NAMESPACE),
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 3,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": EXTERNAL_DNS_NAME,
                    "automountServiceAccountToken": False,
                    "securityContext": {"runAsNonRoot": True, "fsGroup": 65534,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "initContainers": [webhook],
                    "containers": [external_dns],
                    "volumes": [{"name": "host-token", "projected": {"defaultMode": 0o440, "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                                                    "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
                    ]}}],
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
    }
    return [
        external_dns_namespace(),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(EXTERNAL_DNS_NAME, EXTERNAL_DNS_NAMESPACE),
         "automountServiceAccountToken": False},
        *external_dns_host_rbac(),
        deployment,
    ]


def external_dns_namespace() -> dict[str, Any]:
    """Pod Security `restricted`: it holds the Hetzner DNS token (external-dns mode) and the failover controller,
    and no pod in it needs more (the metadata guard in components/hetzner/cloud_init.py counts on hostNetwork
    being refused here; security review 2, M6)."""
    meta = _meta(EXTERNAL_DNS_NAMESPACE)
    meta["labels"].update(RESTRICTED)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


EXTERNAL_DNS_HOST_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["externaldns.k8s.io"], "resources": ["dnsendpoints"], "verbs": ["list", "watch"]},
    {"apiGroups": ["externaldns.k8s.io"], "resources": ["dnsendpoints/status"], "verbs": ["update"]},
)
"""What the CRD source does in v0.22.0 (source/crd.go): a controller-runtime cache scoped to `--namespace`
(list + watch), and `Status().Update` of `observedGeneration`. The chart also grants `get`
(charts/external-dns/templates/clusterrole.yaml); reads come from the cache, so it is left out. A Role, not a
ClusterRole: the cache is built for one namespace (`buildCacheOptions`)."""


def external_dns_host_rbac() -> list[dict[str, Any]]:
    name = EXTERNAL_DNS_NAME
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(name, EXTERNAL_DNS_NAMESPACE),
         "rules": [dict(r) for r in EXTERNAL_DNS_HOST_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": _meta(name, EXTERNAL_DNS_NAMESPACE),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": EXTERNAL_DNS_NAMESPACE}]},
    ]


def _secret(name: str, key: str, value: str) -> dict[str, Any]:
    if not value:
        raise ValueError(f"secret {name}: the value for '{key}' is empty")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, EXTERNAL_DNS_NAMESPACE),
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode()},
    }


def external_dns_token_secret(token: str, name: str = TOKEN_SECRET_NAME) -> dict[str, Any]:
    """The Hetzner Cloud API token for the webhook; the lead wraps it in an Output.secret."""
    return _secret(name, TOKEN_SECRET_KEY, token)


# --------------------------------------------------------------------------------- ingress status override


def ingress_namespace(namespace: str = INGRESS_NAMESPACE) -> dict[str, Any]:
    """karmada-apiserver: where the fleet's ingress controller template and its overrides live. Owned by the
    stack that owns the hub, so no two region stacks manage (or destroy) it."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace,
                                                              "labels": {"app.kubernetes.io/part-of": "karmada-hub"}}}


def ingress_status_overrides(
    namespace: str,
    controller_name: str,
    member_to_lb_ip: Mapping[str, str],
    *,
    region: str | None = None,
    kind: str = "Deployment",
    container_name: str = INGRESS_NGINX_CONTAINER,
    flag: str = INGRESS_NGINX_PUBLISH_FLAG,
) -> dict[str, Any]:
    """An OverridePolicy that makes each member's ingress controller publish its region's LB address.

    Targets the controller workload's template in karmada-apiserver; one rule per member (`clusterNames`), adding
    `--publish-status-address=<ip>` to the ingress-nginx `controller` container with an argsOverrider (Karmada
    supports args overrides on Deployments and DaemonSets). ingress-nginx rejects that flag together with
    `--publish-service` (pkg/flags/flags.go), so the template must not carry `--publish-service` (chart:
    `controller.publishService.enabled=false`). For another controller pass its container and flag, e.g.
    Traefik `--providers.kubernetesingress.ingressendpoint.ip`. Members sharing a region share an IP.
    With `region`, the policy is that region's alone (`...-publish-status-<region>`): each region stack owns
    its own policy, and Karmada applies every OverridePolicy that matches, so the regions never collide."""
    if not member_to_lb_ip:
        raise ValueError("ingress_status_overrides needs at least one member -> LB address")
    if kind not in ("Deployment", "DaemonSet"):
        raise ValueError(f"kind must be Deployment or DaemonSet (Karmada's argsOverrider supports those), got {kind}")
    rules = []
    for member in sorted(member_to_lb_ip):
        ip = str(ipaddress.ip_address(member_to_lb_ip[member]))
        rules.append({
            "targetCluster": {"clusterNames": [member]},
            "overriders": {"argsOverrider": [
                {"containerName": container_name, "operator": "add", "value": [f"{flag}={ip}"]},
            ]},
        })
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": f"{controller_name}-publish-status" + (f"-{region}" if region else ""),
                     "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "karmada-hub"}},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": kind, "namespace": namespace, "name": controller_name},
            ],
            "overrideRules": rules,
        },
    }


def external_dns_flows() -> Workload:
    """external-dns on the host: its metrics/health listener and the webhook sidecar's (nobody dials them; the
    provider port is the pod's own loopback). It reads DNSEndpoints from the host's own API server, which is no
    pod here, so it dials nothing in a policed namespace."""
    return Workload(namespace=EXTERNAL_DNS_NAMESPACE, name=EXTERNAL_DNS_NAME,
                    pod_labels={"app.kubernetes.io/name": EXTERNAL_DNS_NAME},
                    listeners=(Listener("http", EXTERNAL_DNS_METRICS_PORT), Listener("http-webhook",
                                                                                     WEBHOOK_METRICS_PORT)))

