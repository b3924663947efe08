"""The Karmada control plane's workloads as data: one `Workload` per component and etcd's StatefulSet.

Image, command line, replicas, ports, probes and requests of every control-plane pod are decided here, once.
`KarmadaControlPlane` applies these very objects; the hub's capacity check (operations/capacity.py) counts
their pods and requests from them, so the two can never disagree.
"""

from __future__ import annotations

from typing import Any

from components import versions
from components.config import FleetConfig
from components.karmada import flags, manifests
from components.kube import agent_script


def _requests(cpu: str, memory: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory}


def _kube_image(config: FleetConfig, component: str) -> str:
    return f"{versions.KUBE_IMAGE_REGISTRY}/{component}:{config.karmada.release.kube_apiserver}"


APISERVER_AUTHN_CONFIGMAP = "karmada-apiserver-authentication"
"""ConfigMap holding the karmada-apiserver's AuthenticationConfiguration (manifests.authentication_config)."""


def gates(config: FleetConfig) -> frozenset[str]:
    """The fleet's tenant gates (karmada.featureGates), each rendered only on the binaries that read it."""
    return frozenset(config.karmada.feature_gates)


def quota_enforced(config: FleetConfig) -> bool:
    """FederatedQuotaEnforcement on (controller-manager and webhook): one of the fleet's gates."""
    return "FederatedQuotaEnforcement" in gates(config)


ETCD_COMPACTION = ("periodic", "1h")
"""etcd's own compaction, a belt for when both API servers (which compact every 5 min) are down."""


def etcd(config: FleetConfig, cluster_token: str) -> dict[str, Any]:
    """etcd's StatefulSet; `cluster_token` only keeps two etcd clusters from joining each other. The space quota
    is `karmada.etcd.quotaBackendSize`, rendered explicitly."""
    karmada = config.karmada
    mode, retention = ETCD_COMPACTION
    return manifests.etcd_statefulset(
        flags.etcd_args(karmada.etcd.replicas, cluster_token, quota_backend_bytes=karmada.etcd.quota_backend_bytes,
                        auto_compaction_mode=mode, auto_compaction_retention=retention),
        f"{versions.KUBE_IMAGE_REGISTRY}/etcd:{karmada.release.etcd}", karmada.etcd.replicas,
        karmada.etcd.storage_class, karmada.etcd.storage_size,
        agent_script.source(manifests.ETCD_PREPARE_SCRIPT))


def apiserver(config: FleetConfig) -> manifests.Workload:
    return manifests.Workload(
        name="karmada-apiserver", image=_kube_image(config, "kube-apiserver"),
        command=flags.COMMANDS["karmada-apiserver"], args=flags.karmada_apiserver_args(),
        replicas=config.karmada.replicas.apiserver, ports={"https": flags.APISERVER_PORT},
        # Anonymous requests reach exactly flags.HEALTH_PATHS (the authentication config), so kubelet can
        # probe them; the LB gate (KarmadaControlPlane) still calls /readyz with a client cert before anything
        # uses the API.
        liveness=manifests.Probe(flags.APISERVER_PORT, "/livez", "HTTPS", initial_delay=15, failure_threshold=8),
        readiness=manifests.Probe(flags.APISERVER_PORT, "/readyz", "HTTPS", initial_delay=5, period=5),
        requests=_requests("500m", "1Gi"), kubeconfig=False,
        extra_volumes=[
            {"name": "audit-policy", "configMap": {"name": "karmada-apiserver-audit-policy"}},
            {"name": "audit-log", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "encryption", "secret": {"secretName": "karmada-apiserver-encryption", "defaultMode": 0o440}},
            {"name": "authentication", "configMap": {"name": APISERVER_AUTHN_CONFIGMAP}},
        ],
        extra_mounts=[
            {"name": "audit-policy", "mountPath": flags.AUDIT_POLICY_PATH.rsplit("/", 1)[0], "readOnly": True},
            {"name": "audit-log", "mountPath": flags.AUDIT_LOG_PATH.rsplit("/", 1)[0]},
            {"name": "encryption", "mountPath": flags.ENCRYPTION_CONFIG_PATH.rsplit("/", 1)[0], "readOnly": True},
            {"name": "authentication", "mountPath": flags.AUTHENTICATION_CONFIG_PATH.rsplit("/", 1)[0],
             "readOnly": True},
        ],
    )


def aggregated_apiserver(config: FleetConfig) -> manifests.Workload:
    return manifests.Workload(
        name="karmada-aggregated-apiserver",
        image=versions.karmada_image("karmada-aggregated-apiserver", config.karmada.version),
        command=flags.COMMANDS["karmada-aggregated-apiserver"],
        args=flags.aggregated_apiserver_args(feature_gates={}), replicas=config.karmada.replicas.aggregated_apiserver,
        ports={"https": flags.AGGREGATED_APISERVER_PORT},
        liveness=manifests.Probe(flags.AGGREGATED_APISERVER_PORT, "/livez", "HTTPS", initial_delay=15),
        readiness=manifests.Probe(flags.AGGREGATED_APISERVER_PORT, "/readyz", "HTTPS", period=5),
        requests=_requests("100m", "128Mi"),
    )


def webhook(config: FleetConfig) -> manifests.Workload:
    return manifests.Workload(
        name="karmada-webhook", image=versions.karmada_image("karmada-webhook", config.karmada.version),
        command=flags.COMMANDS["karmada-webhook"],
        args=flags.webhook_args(allow_no_execute_taint_policy=True, quota_enforcement=quota_enforced(config),
                                feature_gates=flags.gates_for("karmada-webhook", gates(config))),
        replicas=config.karmada.replicas.webhook, ports={"https": flags.WEBHOOK_PORT, "metrics": 8080},
        # `/readyz/` on the webhook port is the only health path the binary serves (a check-less
        # healthz.Handler); `/readyz` would only be redirected there.
        liveness=manifests.Probe(flags.WEBHOOK_PORT, flags.WEBHOOK_HEALTH_PATH, "HTTPS", initial_delay=15),
        readiness=manifests.Probe(flags.WEBHOOK_PORT, flags.WEBHOOK_HEALTH_PATH, "HTTPS", period=5),
        requests=_requests("100m", "128Mi"),
    )


def kube_controller_manager(config: FleetConfig) -> manifests.Workload:
    return manifests.Workload(
        name="kube-controller-manager", image=_kube_image(config, "kube-controller-manager"),
        command=flags.COMMANDS["kube-controller-manager"], args=flags.kube_controller_manager_args(),
        replicas=config.karmada.replicas.kube_controller_manager, ports={"https": flags.KCM_PORT},
        liveness=manifests.Probe(flags.KCM_PORT, "/healthz", "HTTPS", initial_delay=15),
        readiness=manifests.Probe(flags.KCM_PORT, "/healthz", "HTTPS", period=5),
        requests=_requests("200m", "256Mi"),
    )


def scheduler(config: FleetConfig) -> manifests.Workload:
    return manifests.Workload(
        name="karmada-scheduler", image=versions.karmada_image("karmada-scheduler", config.karmada.version),
        command=flags.COMMANDS["karmada-scheduler"],
        args=flags.scheduler_args(enable_estimator=config.karmada.scheduler_estimators,
                                  feature_gates=flags.gates_for("karmada-scheduler", gates(config))),
        replicas=config.karmada.replicas.scheduler, ports={"metrics": 8080, "health": 10351},
        liveness=manifests.Probe(10351, "/healthz", initial_delay=15),
        readiness=manifests.Probe(10351, "/healthz", period=5),
        requests=_requests("100m", "128Mi"),
    )


def controller_manager(config: FleetConfig) -> manifests.Workload:
    failover = flags.FailoverSettings.from_config(config.failover)
    return manifests.Workload(
        name="karmada-controller-manager",
        image=versions.karmada_image("karmada-controller-manager", config.karmada.version),
        command=flags.COMMANDS["karmada-controller-manager"],
        args=flags.controller_manager_args(
            enable_failover=True, quota_enforcement=quota_enforced(config), failover=failover,
            feature_gates=flags.gates_for("karmada-controller-manager", gates(config))),
        # it reads the Pull agents' leases over its own connection to karmada-apiserver (failover.clientReadIdle…)
        env=failover.client_env(),
        replicas=config.karmada.replicas.controller_manager, ports={"metrics": 8080, "health": 10357},
        liveness=manifests.Probe(10357, "/healthz", initial_delay=15),
        readiness=manifests.Probe(10357, "/healthz", period=5),
        requests=_requests("200m", "512Mi"),
    )


def descheduler(config: FleetConfig) -> manifests.Workload | None:
    """karmada-descheduler, when the fleet runs it (karmada.descheduler)."""
    karmada = config.karmada
    if not karmada.descheduler_enabled:
        return None
    return manifests.descheduler_workload(
        versions.karmada_image(manifests.DESCHEDULER, karmada.version), karmada.replicas.descheduler,
        karmada.descheduler.interval_seconds, karmada.descheduler.unschedulable_threshold_seconds)


def controllers(config: FleetConfig) -> list[manifests.Workload]:
    """The Deployments that start once the bootstrap is in (KarmadaControlPlane.start_controllers)."""
    out = [kube_controller_manager(config), scheduler(config), controller_manager(config)]
    deschedule = descheduler(config)
    return out + ([deschedule] if deschedule is not None else [])


def deployments(config: FleetConfig) -> list[manifests.Workload]:
    """Every control-plane Deployment, in the order KarmadaControlPlane applies them."""
    return [apiserver(config), aggregated_apiserver(config), webhook(config), *controllers(config)]


def estimator(config: FleetConfig, cluster: str) -> manifests.Workload:
    """One member's scheduler-estimator on the host cluster, sized by `karmada.estimator`."""
    pods = config.karmada.estimator
    return manifests.scheduler_estimator_workload(
        cluster, versions.karmada_image("karmada-scheduler-estimator", config.karmada.version),
        replicas=pods.replicas, requests=_requests(pods.cpu, pods.memory),
        feature_gates=flags.gates_for("karmada-scheduler-estimator", config.karmada.feature_gates))
