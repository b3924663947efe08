"""Monitoring documents: what the user's Prometheus Operator scrapes on the hub, with which identity, and the
member-readiness exporter.

Scrape targets (`scrape_targets`), each as its component really serves it at the pinned versions (the table
with sources is in docs/monitoring.md):

- etcd, `metrics` 2381, http without auth: `--listen-metrics-urls=http://…` gets no TLS (etcd v3.6.6
  server/embed/etcd.go `createMetricsListener`);
- karmada-scheduler and -scheduler-estimator, `metrics` 8080, http: a plain `http.Server` (karmada v1.18.2
  cmd/scheduler/app/scheduler.go, cmd/scheduler-estimator/app/scheduler-estimator.go `serveMetrics`);
- karmada-controller-manager and karmada-webhook, `metrics` 8080, http: controller-runtime's metrics server with
  `BindAddress` only (cmd/controller-manager/app/controllermanager.go, cmd/webhook/app/webhook.go), so
  `SecureServing` false and no `FilterProvider` (vendored controller-runtime pkg/metrics/server/server.go);
- karmada-apiserver, `https` 5443: authn by `--client-ca-file`, RBAC on the non-resource URL;
- karmada-aggregated-apiserver (`https` 443) and kube-controller-manager (`https` 10257): delegated authn/authz
  (`--authentication-kubeconfig`, `--authorization-kubeconfig`) that always allows only `/healthz,/readyz,/livez`
  (vendored k8s.io/apiserver pkg/server/options/authorization.go `NewDelegatingAuthorizationOptions`), so
  `/metrics` is a SubjectAccessReview to karmada-apiserver. kube-controller-manager serves an in-memory
  self-signed certificate (no `--tls-cert-file`): there is no CA to verify it with;
- karmada-hub-exporter, `metrics` 9100, http (agents/hub_exporter.py);
- with a dns section, in namespace external-dns: the traffic failover controller, `health` 8080, http `/metrics`
  (agents/traffic_failover.py `metrics`: leader, fail-open names, and in dns.mode self-hosted every nameserver's
  answer and serial); in dns.mode hetzner external-dns, `http` 7979 (external-dns v0.22.0
  pkg/apis/externaldns/types.go `--metrics-address`, default `:7979`; controller/metrics.go
  `external_dns_controller_last_sync_timestamp_seconds`).

The client certificate (`PROMETHEUS_USER`, Karmada CA) is the one identity Prometheus gets: the ClusterRole bound to
it in karmada-apiserver allows `get` on the non-resource URL `/metrics` and nothing else; the aggregated apiserver
and kube-controller-manager ask karmada-apiserver the same question by SubjectAccessReview. Prometheus Operator
reads the certificate from the Secret `CLIENT_SECRET` beside the PodMonitors, and both live in Prometheus's own
namespace (`monitoring.prometheusNamespace`, selecting each target's pods by namespaceSelector): the
operator then needs no Secret access in `karmada-system`, where the CA and etcd keys are (security review 2, M10).

Network flows a NetworkPolicy must allow for all this: `flows()` (docs/monitoring.md).

Plain dicts, no Pulumi; certificates arrive as arguments.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from components.karmada import flags, manifests
from components.kube import agent_script
from components.kube import flows as flow_model
from components.operations.alerts import JOBS

NAMESPACE = flags.NAMESPACE
CLIENT_SECRET = "karmada-hub-prometheus-client"
PROMETHEUS_USER = "system:karmada:prometheus"
EXPORTER = JOBS["exporter"]
EXPORTER_USER = "system:karmada:hub-exporter"
EXPORTER_PORT = 9100
EXPORTER_CERT_SECRET = f"{EXPORTER}-karmada-client"
EXPORTER_CERT_DIR = "/etc/karmada-hub/pki"
EXPORTER_SCRIPT = "hub_exporter.py"
EXPORTER_REPLICAS = 2
RULE_NAME = "karmada-hub"
NAME_LABEL = "app.kubernetes.io/name"
_NAME_META = "__meta_kubernetes_pod_label_app_kubernetes_io_name"


def _bind_port(args: Sequence[str], flag: str) -> int:
    return int(flags.flag_values(args)[flag].rsplit(":", 1)[1])


@dataclass(frozen=True)
class ScrapeTarget:
    job: str
    port_name: str
    port: int
    scheme: Literal["http", "https"] = "http"
    path: str = "/metrics"
    client_cert: bool = False
    server_name: str | None = None
    """The DNS name to verify the serving certificate for (Prometheus dials pod IPs, which are not in it)."""
    insecure_skip_verify: bool = False
    name_prefix: bool = False
    """Select every pod whose name label starts with `job-` (one estimator per member)."""
    namespace: str = NAMESPACE
    """Where its pods run (the PodMonitors themselves all live in karmada-system, beside the client Secret)."""


def scrape_targets(dns_mode: str | None = None) -> list[ScrapeTarget]:
    """Every hub component Prometheus scrapes, with port numbers read from the same flag builders the
    workloads are rendered with; `dns_mode`: the stack's dns.mode (None: no dns section)."""
    svc = f"{flags.NAMESPACE}.svc.{flags.CLUSTER_DOMAIN}"
    metrics = "metrics-bind-address"
    etcd_url = flags.flag_values(flags.etcd_args(3, "x"))["listen-metrics-urls"]
    return [
        ScrapeTarget(JOBS["etcd"], "metrics", int(etcd_url.rsplit(":", 1)[1]), scheme=etcd_url.split(":", 1)[0]),
        ScrapeTarget(JOBS["scheduler"], "metrics", _bind_port(flags.scheduler_args(enable_estimator=False), metrics)),
        ScrapeTarget(JOBS["controller_manager"], "metrics", _bind_port(
            flags.controller_manager_args(enable_failover=False, quota_enforcement=False), metrics)),
        ScrapeTarget(JOBS["webhook"], "metrics", _bind_port(
            flags.webhook_args(allow_no_execute_taint_policy=False, quota_enforcement=False), metrics)),
        ScrapeTarget(JOBS["estimator"], "metrics", _bind_port(flags.scheduler_estimator_args("x"), metrics),
                     name_prefix=True),
        ScrapeTarget(JOBS["apiserver"], "https", int(flags.flag_values(flags.karmada_apiserver_args())["secure-port"]),
                     "https", client_cert=True, server_name=f"{flags.APISERVER_SERVICE}.{svc}"),
        ScrapeTarget(JOBS["aggregated"], "https",
                     int(flags.flag_values(flags.aggregated_apiserver_args())["secure-port"]), "https",
                     client_cert=True, server_name=f"karmada-aggregated-apiserver.{svc}"),
        ScrapeTarget(JOBS["kcm"], "https", flags.KCM_PORT, "https", client_cert=True, insecure_skip_verify=True),
        ScrapeTarget(JOBS["exporter"], "metrics", EXPORTER_PORT),
        *_traffic_targets(dns_mode),
    ]


def _traffic_targets(dns_mode: str | None) -> list[ScrapeTarget]:
    from components.traffic import docs as traffic_docs
    from components.traffic import failover_docs

    if dns_mode is None:
        return []
    out = [ScrapeTarget(JOBS["failover"], "health", failover_docs.HEALTH_PORT,
                        namespace=failover_docs.NAMESPACE)]
    if dns_mode == "hetzner":
        out.append(ScrapeTarget(JOBS["external_dns"], "http", traffic_docs.EXTERNAL_DNS_METRICS_PORT,
                                namespace=traffic_docs.EXTERNAL_DNS_NAMESPACE))
    return out


def _meta(name: str, labels: Mapping[str, str], namespace: str = NAMESPACE) -> dict[str, Any]:
    own = {"app.kubernetes.io/part-of": "karmada-hub", "app.kubernetes.io/component": "monitoring"}
    return {"name": name, "namespace": namespace, "labels": {**labels, **own}}


def pod_monitor(target: ScrapeTarget, labels: Mapping[str, str], interval_seconds: int,
                namespace: str) -> dict[str, Any]:
    """monitoring.coreos.com/v1 PodMonitor for one target, in Prometheus's `namespace` (its TLS Secret references
    resolve there); `job` is the target's name (estimators: one job, the member in `member_cluster`)."""
    relabel: list[dict[str, Any]]
    if target.name_prefix:
        selector: dict[str, Any] = {"matchExpressions": [{"key": NAME_LABEL, "operator": "Exists"}]}
        relabel = [
            {"action": "keep", "sourceLabels": [_NAME_META], "regex": f"{target.job}-.+"},
            {"action": "replace", "sourceLabels": [_NAME_META], "regex": f"{target.job}-(.+)",
             "targetLabel": "member_cluster", "replacement": "$1"},
            {"action": "replace", "targetLabel": "job", "replacement": target.job},
        ]
    else:
        selector = {"matchLabels": {NAME_LABEL: target.job}}
        relabel = [{"action": "replace", "targetLabel": "job", "replacement": target.job}]
    endpoint: dict[str, Any] = {"port": target.port_name, "path": target.path, "scheme": target.scheme,
                                "interval": f"{interval_seconds}s", "relabelings": relabel}
    if target.scheme == "https":
        tls: dict[str, Any] = {}
        if target.client_cert:
            tls["cert"] = {"secret": {"name": CLIENT_SECRET, "key": "tls.crt"}}
            tls["keySecret"] = {"name": CLIENT_SECRET, "key": "tls.key"}
        if target.insecure_skip_verify:
            tls["insecureSkipVerify"] = True
        else:
            tls["ca"] = {"secret": {"name": CLIENT_SECRET, "key": "ca.crt"}}
            tls["serverName"] = target.server_name
        endpoint["tlsConfig"] = tls
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(f"karmada-hub-{target.job}", labels, namespace),
        "spec": {"selector": selector, "namespaceSelector": {"matchNames": [target.namespace]},
                 "podMetricsEndpoints": [endpoint]},
    }


def prometheus_rule(groups: list[dict[str, Any]], labels: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": _meta(RULE_NAME, labels),
            "spec": {"groups": groups}}


def client_secret(namespace: str, ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    """host: Prometheus's client certificate and the Karmada CA it verifies the API servers with, in Prometheus's
    `namespace` beside the PodMonitors."""
    files = {"ca.crt": ca_pem, "tls.crt": cert_pem, "tls.key": key_pem}
    if not all(files.values()):
        raise ValueError("prometheus client secret: empty certificate or key")
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": _meta(CLIENT_SECRET, {}, namespace),
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()}}


def _rbac(name: str, user: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    meta = {"name": name, "labels": {"app.kubernetes.io/part-of": "karmada-hub"}}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": dict(meta), "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": dict(meta),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
    ]


def karmada_rbac() -> list[dict[str, Any]]:
    """karmada-apiserver: Prometheus may GET /metrics (and nothing else: the built-in `system:monitoring` would
    add the health URLs); the exporter may list Clusters."""
    return [
        *_rbac("karmada-hub:prometheus", PROMETHEUS_USER, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
        *_rbac("karmada-hub:hub-exporter", EXPORTER_USER,
               [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["list"]}]),
    ]


# ------------------------------------------------------------------------------------------ exporter


def exporter_cert_secret(ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    return agent_script.client_cert_secret(_meta(EXPORTER_CERT_SECRET, {}), ca_pem, cert_pem, key_pem,
                                           "exporter secret")


def exporter_args(period_seconds: int = 30) -> list[str]:
    return [
        f"--server={flags.apiserver_url()}",
        f"--ca-file={EXPORTER_CERT_DIR}/ca.crt",
        f"--cert-file={EXPORTER_CERT_DIR}/tls.crt",
        f"--key-file={EXPORTER_CERT_DIR}/tls.key",
        f"--period={period_seconds}",
        f"--port={EXPORTER_PORT}",
    ]


def exporter_configmap(source: str) -> dict[str, Any]:
    return agent_script.configmap(_meta(EXPORTER, {}), EXPORTER_SCRIPT, source)


def exporter_deployment(source: str, period_seconds: int = 30) -> dict[str, Any]:
    """host: two replicas on different servers (the alerts take the max over them), one at a time."""
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 10, "timeoutSeconds": 3}
    container = agent_script.container(
        EXPORTER, EXPORTER_SCRIPT, exporter_args(period_seconds),
        {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        ports=[{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        liveness={**probe, "initialDelaySeconds": 10, "failureThreshold": 6},
        readiness={**probe, "failureThreshold": 1},
        mounts=[{"name": "pki", "mountPath": EXPORTER_CERT_DIR, "readOnly": True}])
    volumes = [agent_script.volume(EXPORTER),
               {"name": "pki", "secret": {"secretName": EXPORTER_CERT_SECRET, "defaultMode": 0o440}}]
    labels = manifests.labels(EXPORTER)
    return agent_script.deployment(
        {"name": EXPORTER, "namespace": NAMESPACE, "labels": labels}, manifests.selector(EXPORTER),
        EXPORTER_REPLICAS, agent_script.pod_template(labels, source, [container], volumes, service_links=False))


# --------------------------------------------------------------------------------------------- flows


@dataclass(frozen=True)
class Flow:
    """One connection a NetworkPolicy must allow: from pods to pods (or an address range), TCP port."""

    source_namespace: str
    source_pods: Mapping[str, str]
    destination_namespace: str | None
    destination_pods: Mapping[str, str] | None
    port: int
    why: str
    destination_cidr: str | None = None


def flows(prometheus_namespace: str, prometheus_pods: Mapping[str, str], backup_endpoint: str | None,
          dns_mode: str | None = None) -> list[Flow]:
    """Every connection the monitoring and the etcd jobs need (a NetworkPolicy for karmada-system must allow
    exactly these; docs/monitoring.md lists them). `backup_endpoint`: the object storage URL, if backups run."""
    out = []
    for t in scrape_targets(dns_mode):
        pods = {"app.kubernetes.io/part-of": "karmada"} if t.name_prefix else {NAME_LABEL: t.job}
        out.append(Flow(prometheus_namespace, dict(prometheus_pods), t.namespace, pods, t.port, f"scrape {t.job}"))
    etcd = {NAME_LABEL: flags.ETCD_SERVICE}
    out += [
        Flow(NAMESPACE, {NAME_LABEL: EXPORTER}, NAMESPACE, {NAME_LABEL: flags.APISERVER_SERVICE},
             flags.APISERVER_PORT, "the exporter lists Clusters"),
        Flow(NAMESPACE, {NAME_LABEL: "etcd-defrag"}, NAMESPACE, etcd, flags.ETCD_CLIENT_PORT,
             "defragmentation, on each member's own client URL"),
        Flow(NAMESPACE, {NAME_LABEL: "etcd-backup"}, NAMESPACE, etcd, flags.ETCD_CLIENT_PORT,
             "the backup's snapshot through the etcd-client Service"),
    ]
    if backup_endpoint is not None:
        port = int(backup_endpoint.rsplit(":", 1)[1]) if backup_endpoint.count(":") == 2 else 443
        out.append(Flow(NAMESPACE, {NAME_LABEL: "etcd-backup"}, None, None, port,
                        "the backup upload to object storage", destination_cidr="0.0.0.0/0"))
    return out


def flow_workloads(prometheus_namespace: str, prometheus_pods: Mapping[str, str],
                   estimator_names: Sequence[str], dns_mode: str | None = None) -> list[flow_model.Workload]:
    """The same connections as `flows()`, as declarations for the host's NetworkPolicies
    (`components/trust/network_policy.py`): the user's Prometheus (pods the program does not run) dials every
    scrape target's listener by the target's port name, one per estimator; the exporter listens on `metrics` and
    dials the karmada-apiserver. The etcd jobs declare their own (etcd_backup_docs, etcd_maintenance_docs)."""
    dials = []
    for t in scrape_targets(dns_mode):
        for job in (estimator_names if t.name_prefix else [t.job]):
            dials.append(flow_model.Dial(t.namespace, job, t.port_name))
    return [
        flow_model.Workload(namespace=prometheus_namespace, name="prometheus", pod_labels=dict(prometheus_pods),
                            dials=tuple(dials), runs_elsewhere=True),
        flow_model.Workload(namespace=NAMESPACE, name=EXPORTER, pod_labels=manifests.selector(EXPORTER),
                            listeners=(flow_model.Listener("metrics", EXPORTER_PORT),),
                            dials=(flow_model.Dial(NAMESPACE, flags.APISERVER_SERVICE, "https"),)),
    ]
