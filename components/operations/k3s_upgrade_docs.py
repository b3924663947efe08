"""k3s upgrades, the way k3s users expect: system-upgrade-controller and one `Plan`, as pure documents.

A new `hub.k3sVersion` changes only the `k3s-server` Plan's `version` (user-data is ignored on running
servers). The controller (rancher/system-upgrade-controller v0.20.1) then upgrades the servers matching the
Plan's node selector `concurrency` at a time: per node a Job that cordons it (`kubectl cordon`, the Plan's
service account), replaces the k3s binary from `rancher/k3s-upgrade:<version>` and sends k3s SIGTERM; systemd
(`Restart=always`, `KillMode=process`, cloud_init.SYSTEMD_UNIT) starts the new binary while the pods keep
running; on success the controller labels the node with the Plan's hash and uncordons it
(`pkg/upgrade/job/job.go` `New`, `pkg/upgrade/handle_batch.go`). A rebuilt server (no label yet) is brought to
the Plan's version the same way. `cordon` without `drain`: draining would evict an etcd member on every hop.

The Plan CRD is the upstream file of the pinned tag, fetched at deploy time and checked against its sha256,
offline from the workspace's copy (`shared/upstream-crds/`), exactly like Karmada's CRDs (`karmada/crds.py`).
The controller's own objects are written here after upstream's `manifests/` at v0.20.1, narrowed: the
controller's identity keeps upstream's ClusterRole (it registers its CRD, watches nodes and plans, updates
nodes to uncordon) but with CRD update/patch limited to the Plan CRD; the Jobs run as `k3s-upgrade`, which
may only get and patch nodes (cordon). Upstream's drainer role (evict and delete any pod) is not created,
since no Plan drains.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from components import versions
from components.config import HubConfig
from components.kube import yamlutil
from components.kube.pod_security import container_security_context

NAMESPACE = "system-upgrade"
CONTROLLER = "system-upgrade-controller"
JOB_SERVICE_ACCOUNT = "k3s-upgrade"
PLAN_NAME = "k3s-server"
PLAN_CRD = "plans.upgrade.cattle.io"
CONCURRENCY = 1

CRD_REL = "pkg/crds/yaml/generated/upgrade.cattle.io_plans.yaml"
CRD_SHA256 = {"v0.20.1": "68a2e6b786dc3a3d47f0ac557b06833d2f773d801f482f43d37c7e819309c656"}
"""sha256 of `pkg/crds/yaml/generated/upgrade.cattle.io_plans.yaml` at each supported tag."""
CRDS_DIR_ENV = "KARMADA_HUB_UPSTREAM_CRDS_DIR"
"""A directory laid out like `shared/upstream-crds` (this CRD under `system-upgrade-controller/`), as for
traffic/dnsendpoint_crd.py."""
FOLDER = "system-upgrade-controller"

_LABELS = {"app.kubernetes.io/name": CONTROLLER, "app.kubernetes.io/part-of": "karmada-hub"}
CONTROLLER_LABEL = "upgrade.cattle.io/controller"


class CrdIntegrityError(RuntimeError):
    pass


def crd_url(version: str = versions.SYSTEM_UPGRADE_CONTROLLER_VERSION) -> str:
    return f"https://raw.githubusercontent.com/rancher/system-upgrade-controller/{version}/{CRD_REL}"


def _local_dirs() -> list[Path]:
    from components.karmada.crds import upstream_crds_dirs

    dirs = [Path(os.environ[CRDS_DIR_ENV]) / FOLDER] if os.environ.get(CRDS_DIR_ENV) else []
    dirs += [d / FOLDER for d in upstream_crds_dirs()]  # <workspace>/shared/upstream-crds
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "karmada-hub" / "upstream-crds"
    dirs.append(cache / f"system-upgrade-controller-{versions.SYSTEM_UPGRADE_CONTROLLER_VERSION}")
    return dirs


def plan_crd(version: str = versions.SYSTEM_UPGRADE_CONTROLLER_VERSION, allow_download: bool | None = None
             ) -> dict[str, Any]:
    """The Plan CRD of the pinned release, verified; downloaded (and cached) only when no local copy exists."""
    expected = CRD_SHA256[version]
    name = CRD_REL.rsplit("/", 1)[1]
    data = None
    for directory in _local_dirs():
        path = directory / name
        if path.is_file():
            data, where = path.read_bytes(), str(path)
            break
    if data is None:
        if allow_download is None:
            allow_download = os.environ.get("KARMADA_HUB_NO_DOWNLOAD") != "1"
        if not allow_download:
            raise CrdIntegrityError(f"the system-upgrade-controller {version} Plan CRD is not available offline "
                                    f"(set {CRDS_DIR_ENV})")
        where = crd_url(version)
        try:
            with urllib.request.urlopen(where, timeout=30) as resp:
                data = resp.read()
        except (urllib.error.URLError, OSError) as err:
            raise CrdIntegrityError(f"the Plan CRD: no local copy and the download from {where} failed "
                                    f"({getattr(err, 'reason', err)}); set {CRDS_DIR_ENV}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CrdIntegrityError(f"the Plan CRD from {where} has sha256 {actual}, expected {expected}")
    if where.startswith("https://"):
        cache = _local_dirs()[-1]
        cache.mkdir(parents=True, exist_ok=True)
        (cache / name).write_bytes(data)
    doc = yamlutil.load(data)
    if doc.get("kind") != "CustomResourceDefinition" or doc["metadata"]["name"] != PLAN_CRD:
        raise CrdIntegrityError(f"{where} is not the {PLAN_CRD} CRD")
    return {k: v for k, v in doc.items() if k != "status"}


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespaced:
        meta["namespace"] = NAMESPACE
    return meta


def namespace() -> dict[str, Any]:
    """Upgrade Jobs run privileged with the host's PID/IPC/network (job.go `New`): this namespace only."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {**_LABELS, "pod-security.kubernetes.io/enforce": "privileged"},
                         "annotations": {"karmada-hub.io/pod-security-exception": (
                             "the k3s upgrade Jobs replace the k3s binary on the host: hostPID, hostNetwork and "
                             "privileged (system-upgrade-controller pkg/upgrade/job/job.go)")}}}


def service_accounts() -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name)}
            for name in (CONTROLLER, JOB_SERVICE_ACCOUNT)]


def rbac() -> list[dict[str, Any]]:
    read = ["get", "list", "watch"]
    controller_rules = [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": read},
        # registers its own CRD at start (pkg/upgrade/controller.go registerCRD -> wrangler BatchCreateCRDs)
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": [*read, "create"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "resourceNames": [PLAN_CRD], "verbs": ["patch", "update"]},
        {"apiGroups": [""], "resources": ["namespaces", "nodes"], "verbs": read},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["update"]},  # plan label, uncordon
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "create", "patch", "update"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [CONTROLLER],
         "verbs": ["get", "update"]},
        {"apiGroups": ["upgrade.cattle.io"], "resources": ["plans", "plans/status"],
         "verbs": [*read, "create", "patch", "update", "delete"]},
    ]
    namespaced_rules = [
        {"apiGroups": ["batch"], "resources": ["jobs"],
         "verbs": ["create", "delete", "deletecollection", "patch", "update", *read]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": read},
    ]
    cordon_rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]

    def binding(kind: str, name: str, role: str, sa: str) -> dict[str, Any]:
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                "metadata": _meta(name, namespaced=kind == "RoleBinding"),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind.replace("Binding", ""),
                            "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}]}

    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(CONTROLLER, False),
         "rules": controller_rules},
        binding("ClusterRoleBinding", CONTROLLER, CONTROLLER, CONTROLLER),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(CONTROLLER),
         "rules": namespaced_rules},
        binding("RoleBinding", CONTROLLER, CONTROLLER, CONTROLLER),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": _meta(f"{JOB_SERVICE_ACCOUNT}-cordon", False), "rules": cordon_rules},
        binding("ClusterRoleBinding", f"{JOB_SERVICE_ACCOUNT}-cordon", f"{JOB_SERVICE_ACCOUNT}-cordon",
                JOB_SERVICE_ACCOUNT),
    ]


CONTROLLER_ENV = {
    "SYSTEM_UPGRADE_CONTROLLER_DEBUG": "false",
    "SYSTEM_UPGRADE_CONTROLLER_THREADS": "2",
    "SYSTEM_UPGRADE_CONTROLLER_LEADER_ELECT": "true",
    "SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS": "900",
    "SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT": "99",
    "SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY": "IfNotPresent",
    "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE": versions.SYSTEM_UPGRADE_KUBECTL_IMAGE,
    "SYSTEM_UPGRADE_JOB_PRIVILEGED": "true",
    "SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH": "900",
}
"""The env upstream's `default-controller-env` ConfigMap sets (names read in main.go and pkg/upgrade/job/job.go),
with pinned tags pulled IfNotPresent."""


def deployment() -> dict[str, Any]:
    """One replica with leader election on a server (it must survive the node it upgrades: Recreate is fine,
    a Job in flight finishes on its own). No host mounts: with a fixed `version` it never resolves a channel
    over HTTPS (pkg/upgrade/handle_upgrade.go), so it needs no host CA bundle."""
    pod_labels = {**_LABELS, CONTROLLER_LABEL: CONTROLLER}  # the label also names the controller and keeps it undrained
    env = [{"name": k, "value": v} for k, v in CONTROLLER_ENV.items()]
    env += [
        {"name": "SYSTEM_UPGRADE_CONTROLLER_NAME",
         "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{CONTROLLER_LABEL}']"}}},
        {"name": "SYSTEM_UPGRADE_CONTROLLER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "SYSTEM_UPGRADE_CONTROLLER_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(CONTROLLER),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {CONTROLLER_LABEL: CONTROLLER}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "serviceAccountName": CONTROLLER,
                    "enableServiceLinks": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "containers": [{
                        "name": CONTROLLER,
                        "image": versions.SYSTEM_UPGRADE_CONTROLLER_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "env": env,
                        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                        "securityContext": container_security_context(),
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def server_plan(hub: HubConfig) -> dict[str, Any]:
    """The k3s-server Plan: this hub's servers, one at a time, to `hub.k3sVersion`."""
    return {
        "apiVersion": "upgrade.cattle.io/v1", "kind": "Plan", "metadata": _meta(PLAN_NAME),
        "spec": {
            "concurrency": CONCURRENCY,
            "version": hub.k3s_version,
            "nodeSelector": {"matchExpressions": [
                {"key": "karmada-hub/cluster", "operator": "In", "values": [hub.name]},
                {"key": "karmada-hub/role", "operator": "In", "values": ["control-plane"]},
            ]},
            "serviceAccountName": JOB_SERVICE_ACCOUNT,
            "cordon": True,
            "postCompleteDelay": "2m",
            "upgrade": {"image": versions.K3S_UPGRADE_IMAGE},
        },
    }
