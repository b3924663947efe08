"""Kubernetes objects of the Karmada control plane on the host cluster, as pure functions.

Every control-plane workload gets the same HA shape: required pod anti-affinity on the hostname (two
replicas never share a server), a PodDisruptionBudget of `maxUnavailable: 1`, requests, probes, a
restrictive securityContext, no service-account token (components reach the karmada-apiserver with
their own kubeconfig and client certificate). Which PKI files a pod mounts is derived from the file
paths its flags name, so a flag and its mount cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.karmada import flags
from components.karmada.pki_spec import estimator_service_name
from components.kube import agent_script
from components.kube.pod_security import NON_ROOT_UID, RESTRICTED, container_security_context

PART_OF = "karmada"
PKI_SECRET_SUFFIX = "-pki"
CONFIG_SECRET_SUFFIX = "-config"


def labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": component, "app.kubernetes.io/part-of": PART_OF}


def selector(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": component}


def secret_key(pki_path: str) -> str:
    """`etcd/ca.crt` -> `etcd-ca.crt`: Secret keys cannot hold a slash; the volume item restores it."""
    return pki_path.replace("/", "-")


def pki_files(args: Sequence[str]) -> list[str]:
    """PKI files (relative to flags.PKI_DIR) that these args name."""
    prefix = flags.PKI_DIR + "/"
    rel = {p[len(prefix):] for p in flags.file_paths(args) if p.startswith(prefix)}
    if "--cert-dir=" + flags.PKI_DIR in args:  # the webhook names its files by --tls-*-file-name
        values = flags.flag_values(args)
        rel |= {values["tls-cert-file-name"], values["tls-private-key-file-name"]}
    return sorted(rel)


def pki_volume(secret_name: str, files: Sequence[str]) -> dict[str, Any]:
    """The `pki` volume: `files` (relative to flags.PKI_DIR, as pki_files gives them) from the Secret that holds
    them under secret_key names, each back at its path; group-readable only (fsGroup)."""
    return {"name": "pki", "secret": {"secretName": secret_name, "defaultMode": 0o440,
                                      "items": [{"key": secret_key(f), "path": f} for f in files]}}


def pki_mount() -> dict[str, Any]:
    """The `pki` volume at flags.PKI_DIR, where the flags name the files."""
    return {"name": "pki", "mountPath": flags.PKI_DIR, "readOnly": True}


@dataclass(frozen=True)
class Probe:
    port: int
    path: str | None = None
    scheme: str = "HTTP"
    initial_delay: int = 10
    period: int = 10
    failure_threshold: int = 3

    def render(self) -> dict[str, Any]:
        action: dict[str, Any]
        if self.path is None:
            action = {"tcpSocket": {"port": self.port}}
        else:
            action = {"httpGet": {"port": self.port, "path": self.path, "scheme": self.scheme}}
        return {**action, "initialDelaySeconds": self.initial_delay, "periodSeconds": self.period,
                "timeoutSeconds": 5, "failureThreshold": self.failure_threshold}


@dataclass(frozen=True)
class Workload:
    """One control-plane component on the host cluster."""

    name: str
    image: str
    command: Sequence[str]
    args: Sequence[str]
    replicas: int
    ports: Mapping[str, int]
    liveness: Probe
    readiness: Probe
    requests: Mapping[str, str]
    limits: Mapping[str, str] = field(default_factory=dict)
    kubeconfig: bool = True
    extra_volumes: Sequence[dict[str, Any]] = ()
    extra_mounts: Sequence[dict[str, Any]] = ()
    read_only_root: bool = True
    env: Sequence[dict[str, Any]] = ()


_POD_ENV = [
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
]


def _anti_affinity(component: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector(component)}, "topologyKey": "kubernetes.io/hostname"}
    ]}}


def pod_spec(w: Workload) -> dict[str, Any]:
    files = pki_files(w.args)
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}]
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}]
    if files:
        volumes.append(pki_volume(w.name + PKI_SECRET_SUFFIX, files))
        mounts.append(pki_mount())
    if w.kubeconfig:
        volumes.append({"name": "kubeconfig", "secret": {"secretName": w.name + CONFIG_SECRET_SUFFIX,
                                                         "defaultMode": 0o440}})
        mounts.append({"name": "kubeconfig", "mountPath": flags.KUBECONFIG_PATH.rsplit("/", 1)[0],
                       "readOnly": True})
    volumes += list(w.extra_volumes)
    mounts += list(w.extra_mounts)
    container = {
        "name": w.name,
        "image": w.image,
        "imagePullPolicy": "IfNotPresent",
        "command": list(w.command),
        "args": list(w.args),
        "env": [*_POD_ENV, *w.env],
        "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in w.ports.items()],
        "livenessProbe": w.liveness.render(),
        "readinessProbe": w.readiness.render(),
        "resources": {"requests": dict(w.requests), **({"limits": dict(w.limits)} if w.limits else {})},
        "securityContext": container_security_context(w.read_only_root),
        "volumeMounts": mounts,
    }
    return {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "priorityClassName": "system-cluster-critical",
        "securityContext": {"fsGroup": NON_ROOT_UID, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": _anti_affinity(w.name),
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": volumes,
    }


def deployment(w: Workload, namespace: str = flags.NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": w.name, "namespace": namespace, "labels": labels(w.name)},
        "spec": {
            "replicas": w.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": selector(w.name)},
            # Never below replicas-1 during a rollout; with required anti-affinity a surge pod needs a free node.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {"metadata": {"labels": labels(w.name)}, "spec": pod_spec(w)},
        },
    }


def pdb(component: str, namespace: str = flags.NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": component, "namespace": namespace, "labels": labels(component)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(component)}},
    }


def service(name: str, ports: Mapping[str, tuple[int, int]], namespace: str = flags.NAMESPACE,
            headless: bool = False, node_ports: Mapping[str, int] | None = None,
            component: str | None = None) -> dict[str, Any]:
    """ports: name -> (port, targetPort). `node_ports` makes it a NodePort Service (for the hub LB)."""
    spec: dict[str, Any] = {
        "selector": selector(component or name),
        "ports": [{"name": n, "port": p, "targetPort": t, "protocol": "TCP",
                   **({"nodePort": node_ports[n]} if node_ports and n in node_ports else {})}
                  for n, (p, t) in ports.items()],
    }
    if headless:
        # Peers must resolve each other before they are Ready, or a fresh 3-member etcd never forms.
        spec.update({"clusterIP": "None", "publishNotReadyAddresses": True})
    elif node_ports:
        # Local: no SNAT, so the NetworkPolicy sees the real client address (and every server runs a replica).
        spec.update({"type": "NodePort", "externalTrafficPolicy": "Local"})
    else:
        spec["type"] = "ClusterIP"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": labels(component or name)}, "spec": spec}


def secret(name: str, data: Mapping[str, Any], namespace: str = flags.NAMESPACE,
           component: str | None = None, type_: str = "Opaque") -> dict[str, Any]:
    """`data` values are plain strings (written as stringData); the component marks them secret."""
    return {"apiVersion": "v1", "kind": "Secret", "type": type_,
            "metadata": {"name": name, "namespace": namespace, "labels": labels(component or name)},
            "stringData": dict(data)}


ETCD_PREPARE_SCRIPT = "etcd_member_prepare.py"
ETCD_PREPARE_CONFIGMAP = "etcd-prepare"
ETCD_CONFIG_VOLUME = "etcd-config"


def etcd_prepare_configmap(source: str, namespace: str = flags.NAMESPACE) -> dict[str, Any]:
    """The `prepare` program's text (agents/etcd_member_prepare.py), mounted into every etcd pod."""
    meta = {"name": ETCD_PREPARE_CONFIGMAP, "namespace": namespace, "labels": labels(flags.ETCD_SERVICE)}
    return agent_script.configmap(meta, ETCD_PREPARE_SCRIPT, source)


def etcd_pki_files(member_args: Sequence[str]) -> list[str]:
    """PKI files an etcd pod mounts: what etcd's flags name plus `prepare`'s own client certificate."""
    prepare = flags.etcd_prepare_args(list(member_args))
    own = prepare[: prepare.index("--")]
    return sorted(set(pki_files(member_args)) | set(pki_files(own)))


def etcd_statefulset(args: Sequence[str], image: str, replicas: int, storage_class: str, storage_size: str,
                     prepare_source: str, namespace: str = flags.NAMESPACE) -> dict[str, Any]:
    """etcd ×N. `args` is `flags.etcd_args(...)`: the `prepare` init container gets it after `--`, decides
    `new` or `existing` (a member that lost its data rejoins as a new member) and writes it into etcd's
    config file, which etcd (image without a shell) then starts from."""
    prepare_args = flags.etcd_prepare_args(list(args))
    files = etcd_pki_files(args)
    config_dir = flags.ETCD_CONFIG_DIR
    w = Workload(
        name=flags.ETCD_SERVICE, image=image, command=flags.COMMANDS["etcd"], args=flags.etcd_config_file_args(),
        replicas=replicas,
        ports={"client": flags.ETCD_CLIENT_PORT, "peer": flags.ETCD_PEER_PORT, "metrics": flags.ETCD_METRICS_PORT},
        liveness=Probe(flags.ETCD_METRICS_PORT, "/livez", initial_delay=60, period=10, failure_threshold=3),
        readiness=Probe(flags.ETCD_METRICS_PORT, "/readyz", initial_delay=10, period=5, failure_threshold=30),
        requests={"cpu": "200m", "memory": "512Mi"}, kubeconfig=False,
        extra_volumes=[
            pki_volume(flags.ETCD_SERVICE + PKI_SECRET_SUFFIX, files),
            {"name": ETCD_CONFIG_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}},
            agent_script.volume(ETCD_PREPARE_CONFIGMAP),
        ],
        extra_mounts=[
            pki_mount(),
            {"name": "data", "mountPath": flags.ETCD_DATA_DIR},
            {"name": ETCD_CONFIG_VOLUME, "mountPath": config_dir, "readOnly": True},
        ],
    )
    spec = pod_spec(w)
    prepare = {
        "name": "prepare",
        "image": agent_script.IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": agent_script.command(ETCD_PREPARE_SCRIPT),
        "args": prepare_args,
        "env": [*_POD_ENV, *agent_script.ENV],  # kubelet expands $(POD_NAME)/$(POD_IP) in the etcd flags it carries
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": container_security_context(True),
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            pki_mount(),
            {"name": "data", "mountPath": flags.ETCD_DATA_DIR},
            {"name": ETCD_CONFIG_VOLUME, "mountPath": config_dir},
            agent_script.mount(),
        ],
    }
    spec["initContainers"] = [prepare]
    template_meta = {"labels": labels(w.name), "annotations": agent_script.pod_annotations(prepare_source)}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": w.name, "namespace": namespace, "labels": labels(w.name)},
        "spec": {
            "replicas": replicas,
            "serviceName": flags.ETCD_SERVICE,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector(w.name)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": template_meta, "spec": spec},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data", "labels": labels(w.name)},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                         "resources": {"requests": {"storage": storage_size}}},
            }],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        },
    }


def namespace(name: str = flags.NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": PART_OF, **RESTRICTED}}}


def audit_policy() -> str:
    """Metadata for everything, RequestResponse for what changes placement or credentials."""
    return """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: "policy.karmada.io"
      - group: "cluster.karmada.io"
      - group: "rbac.authorization.k8s.io"
  - level: Metadata
"""


def authentication_config(anonymous_paths: Sequence[str] = flags.HEALTH_PATHS) -> str:
    """AuthenticationConfiguration (apiserver.config.k8s.io/v1) that allows anonymous requests on exactly
    `anonymous_paths` and nowhere else (the anonymous authenticator matches the request path exactly)."""
    if not anonymous_paths:
        raise ValueError("anonymous_paths must name at least one path (else leave anonymous out entirely)")
    for path in anonymous_paths:
        if not path.startswith("/") or "*" in path:
            raise ValueError(f"anonymous path {path!r} must be an exact absolute path")
    conditions = "".join(f"\n    - path: {p}" for p in anonymous_paths)
    return f"""apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:{conditions}
"""


ENCRYPTED_RESOURCES = ("secrets", "works.work.karmada.io")
"""What the karmada-apiserver encrypts at rest: Secrets, and Works, which carry every propagated manifest, tenant
Secrets included (security review 2, M2; custom resources are encryptable since Kubernetes 1.26)."""


def encryption_config(secretbox_key_b64: str, aescbc_key_b64: str) -> str:
    """EncryptionConfiguration: `secretbox` (XSalsa20-Poly1305, an authenticated cipher without aescbc's padding
    oracle; k8s.io/apiserver v0.35.4 pkg/server/options/encryptionconfig `secretboxPrefixTransformer`) writes;
    the earlier `aescbc` key still reads what was written with it, `identity` what was written in clear (Works
    before this configuration); both until a storage migration rewrote every object (rotate-certificates.md)."""
    resources = ", ".join(f'"{r}"' for r in ENCRYPTED_RESOURCES)
    return f"""apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [{resources}]
    providers:
      - secretbox:
          keys:
            - name: key2
              secret: {secretbox_key_b64}
      - aescbc:
          keys:
            - name: key1
              secret: {aescbc_key_b64}
      - identity: {{}}
"""


# ------------------------------------------------------------------------------------ scheduler-estimator

ESTIMATOR_HEALTH_PORT = 10351
ESTIMATOR_REPLICAS = 2
"""Estimators are stateless gRPC servers behind one Service (no leader election); two keep the scheduler's
estimates available through a hub node loss."""
MEMBER_KUBECONFIG_SUFFIX = "-member-kubeconfig"
"""The hub's ConfigMap with the estimator's member kubeconfig: server, and paths to the region's credentials."""
MEMBER_TOKEN_SUFFIX = "-member-token"
"""The region's Secret with the member reader's `token` and the member's `ca.crt`: data only, no kubeconfig, so
nothing a region writes is ever code in a hub pod (a kubeconfig's `exec` plugin would be; security review 2, H3)."""
MEMBER_CREDENTIALS_DIR = "/etc/karmada/member-credentials"
MEMBER_CREDENTIAL_KEYS = ("token", "ca.crt")


def member_kubeconfig(cluster: str, server: str) -> str:
    """The estimator's kubeconfig for its member: the server the hub read from the member's stack file, the CA and
    the token as files from the region's Secret (client-go clientcmd `certificate-authority`, `tokenFile`)."""
    if not server.startswith("https://"):
        raise ValueError(f"{cluster}: a member's API endpoint is an https:// URL (got {server!r})")
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": cluster,
           "clusters": [{"name": cluster, "cluster": {
               "server": server, "certificate-authority": f"{MEMBER_CREDENTIALS_DIR}/ca.crt"}}],
           "users": [{"name": cluster, "user": {"tokenFile": f"{MEMBER_CREDENTIALS_DIR}/token"}}],
           "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def member_kubeconfig_configmap(cluster: str, server: str) -> dict[str, Any]:
    """host: the hub's half of an estimator's member access (no secret in it)."""
    name = estimator_service_name(cluster)
    kube_file = flags.MEMBER_KUBECONFIG_PATH.rsplit("/", 1)[1]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name + MEMBER_KUBECONFIG_SUFFIX, "namespace": flags.NAMESPACE,
                         "labels": labels(name)},
            "data": {kube_file: member_kubeconfig(cluster, server)}}


def member_token_secret(cluster: str, token: str, ca_pem: str) -> dict[str, Any]:
    """host: the region's half, written with the region's identity: the reader token and the member's CA."""
    name = estimator_service_name(cluster)
    return secret(name + MEMBER_TOKEN_SUFFIX, {"token": token, "ca.crt": ca_pem}, component=name)


ESTIMATOR_REQUESTS = {"cpu": "100m", "memory": "128Mi"}


def scheduler_estimator_workload(cluster: str, image: str, replicas: int = ESTIMATOR_REPLICAS,
                                 feature_gates: Mapping[str, bool] | None = None,
                                 requests: Mapping[str, str] = ESTIMATOR_REQUESTS) -> Workload:
    """One member's karmada-scheduler-estimator on the host cluster, as the scheduler expects to find it:
    named `karmada-scheduler-estimator-<cluster>`, gRPC on flags.ESTIMATOR_PORT with the serving cert and
    the Karmada CA its flags name (mounted from `<name>-pki`), the member kubeconfig the hub renders (ConfigMap
    `<name>-member-kubeconfig`) at flags.MEMBER_KUBECONFIG_PATH, and only the keys `token` and `ca.crt` of the
    region's Secret `<name>-member-token` beside it."""
    name = estimator_service_name(cluster)
    kube_dir, kube_file = flags.MEMBER_KUBECONFIG_PATH.rsplit("/", 1)
    return Workload(
        name=name, image=image, command=flags.COMMANDS["karmada-scheduler-estimator"],
        args=flags.scheduler_estimator_args(cluster, feature_gates=feature_gates), replicas=replicas,
        ports={"grpc": flags.ESTIMATOR_PORT, "metrics": 8080, "health": ESTIMATOR_HEALTH_PORT},
        liveness=Probe(ESTIMATOR_HEALTH_PORT, "/healthz", initial_delay=15),
        # `/healthz` is a constant 200; the gRPC port opens only once the member informers synced, so ready
        # means "the port accepts" (no gRPC health service exists for a grpc probe).
        readiness=Probe(flags.ESTIMATOR_PORT, period=5),
        requests=dict(requests), kubeconfig=False,
        extra_volumes=[{"name": "member-kubeconfig", "configMap": {
                           "name": name + MEMBER_KUBECONFIG_SUFFIX, "items": [{"key": kube_file, "path": kube_file}]}},
                       {"name": "member-credentials", "secret": {
                           "secretName": name + MEMBER_TOKEN_SUFFIX, "defaultMode": 0o440,
                           "items": [{"key": k, "path": k} for k in MEMBER_CREDENTIAL_KEYS]}}],
        extra_mounts=[{"name": "member-kubeconfig", "mountPath": kube_dir, "readOnly": True},
                      {"name": "member-credentials", "mountPath": MEMBER_CREDENTIALS_DIR, "readOnly": True}],
    )


# ------------------------------------------------------------------------------------------ descheduler

DESCHEDULER = "karmada-descheduler"


def descheduler_workload(image: str, replicas: int, interval_s: int, unschedulable_threshold_s: int) -> Workload:
    """karmada-descheduler on the host cluster, in the same HA shape as the rest (×N, anti-affinity, PDB).

    Probes: upstream serves only `/healthz` (always 200 "ok", no readiness path, no leader awareness) on the
    health address, so liveness and readiness both use it; readiness therefore means "the process serves", which
    is all a leader-elected component without a Service needs. Files it opens: its kubeconfig and, from its flags,
    the Karmada CA and its own gRPC client cert/key (derived from the args, like every workload here)."""
    return Workload(
        name=DESCHEDULER, image=image, command=flags.COMMANDS[DESCHEDULER],
        args=flags.descheduler_args(interval_s=interval_s, unschedulable_threshold_s=unschedulable_threshold_s),
        replicas=replicas, ports={"metrics": 8080, "health": flags.DESCHEDULER_HEALTH_PORT},
        liveness=Probe(flags.DESCHEDULER_HEALTH_PORT, "/healthz", initial_delay=15, period=15),
        readiness=Probe(flags.DESCHEDULER_HEALTH_PORT, "/healthz", period=10),
        requests={"cpu": "50m", "memory": "64Mi"},
    )
