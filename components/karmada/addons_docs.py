"""The opt-in addons (karmada.addons) as pure documents: karmada-search and the Karmada dashboard on the hub.

Both run in karmada-system on the host cluster in the control plane's HA shape (manifests.Workload: ×N, required
anti-affinity, PDB, restricted securityContext, Pod Security `restricted`), with their own certificates from the hub
PKI (pki_spec.search_cert_specs, dashboard_cert_specs) and least-privilege identities in the karmada-apiserver:

- karmada-search (karmada-io/karmada v1.18.2 `cmd/karmada-search`) serves `search.karmada.io` through the APIService
  `v1alpha1.search.karmada.io`, like the aggregated apiserver's; its cache holds exactly the resource types and
  members the stack names (one ResourceRegistry), and its memory request follows from them (`search_memory`);
- the dashboard (karmada-io/dashboard at the matrix's release) is two Deployments: `karmada-dashboard-web` (the UI,
  which forwards `/api` to) `karmada-dashboard-api`, which calls the karmada-apiserver with each user's own bearer
  token. Users log in with a token of the `karmada-dashboard-<access>` ServiceAccount in the karmada-apiserver
  (view by default). Neither has a Service outside the cluster: the way in is `kubectl port-forward` through the
  host API the firewall filters (docs/addons.md).

Nothing here is rendered while an addon is off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from components import versions
from components.config import FleetConfig, MemberConfig, SearchAddonConfig
from components.karmada import flags, manifests
from components.karmada.pki_spec import DASHBOARD_USER, SEARCH_SERVICE, SEARCH_USER
from components.kube.flows import Dial, Listener, Workload

NS = flags.NAMESPACE
SEARCH = SEARCH_SERVICE
DASHBOARD_API = "karmada-dashboard-api"
DASHBOARD_WEB = "karmada-dashboard-web"
DASHBOARD_PORT = 8000
"""Both dashboard binaries serve plain HTTP on `--insecure-port` (default 8000); `serve` never opens `--port`
(karmada-io/dashboard v0.4.0 cmd/api/app/api.go, cmd/web/app/web.go). The traffic stays inside the host cluster:
port-forward into the web pod, then the web pod to the API Service, both admitted by NetworkPolicy only so."""
DASHBOARD_CONFIG = "karmada-dashboard-web-config"
DASHBOARD_CONFIG_PATH = "/config/dashboard-config.yaml"
"""karmada-dashboard-web `--dashboard-config-path`: read once at start, a missing file is fatal
(pkg/config/config.go InitDashboardConfigFromMountFile)."""
DASHBOARD_STATIC_DIR = "/static"
"""Where the web image keeps the UI (cluster/images/build-web.Dockerfile `COPY dist /static`)."""
SEARCH_APISERVICE = "v1alpha1.search.karmada.io"
SEARCH_GROUP = "search.karmada.io"
REGISTRY = "karmada-hub"
"""The one ResourceRegistry the stack's `karmada.addons.search` renders."""

SEARCH_BASE_BYTES = 256 * 2**20
"""An idle karmada-search (a generic apiserver with its informers): the floor of its memory request."""
SEARCH_BYTES_PER_OBJECT = 64 * 2**10
"""Memory per cached object, both caches together (the search controller's informers and the proxy's
MultiClusterCache hold every registered object: karmada-io/karmada#4900): ~2 M Pods across ~100 clusters took
~140 GB (karmada-io/karmada#2518, 2026-02), about 70 KB each; 64 KiB rounds that for typical objects."""
SECRET_KINDS = frozenset({("v1", "Secret")})
"""Never cached: anyone allowed `search` reads every cached object of every member."""


def _label(name: str) -> dict[str, str]:
    return manifests.labels(name)


# ------------------------------------------------------------------------------------------------ search


def search_members(config: FleetConfig, members: Sequence[MemberConfig], stack_file: str) -> list[str]:
    """The members karmada-search caches: the named ones, or every Push member. ValueError (one line, naming the key)
    for an unknown member, a Pull member (the hub holds no credential for it: the agent runs with
    `--report-secrets=None`, so karmada-search finds no `secretRef` — pkg/util/membercluster_client.go
    BuildClusterConfig) or a Secret resource type."""
    search = config.karmada.addons.search
    key = f"{stack_file}: karmada-hub:karmada.addons.search"
    by_name = {m.name: m for m in members}
    for i, r in enumerate(search.resources):
        if (r.api_version, r.kind) in SECRET_KINDS:
            raise ValueError(f"{key}.resources[{i}]: Secrets are never cached: whoever may `get` search.karmada.io "
                             "search reads every cached object of every member")
    if not search.members:
        return sorted(m.name for m in members if m.sync_mode == "Push")
    for i, name in enumerate(search.members):
        member = by_name.get(name)
        if member is None:
            raise ValueError(f"{key}.members[{i}]: '{name}' is not a member of this fleet "
                             f"({', '.join(sorted(by_name)) or 'none'})")
        if member.sync_mode != "Push":
            raise ValueError(f"{key}.members[{i}]: '{name}' is a Pull member: the hub holds no credential to read it "
                             "(its agent reports none), so karmada-search cannot cache it; name Push members only")
    return sorted(search.members)


def search_memory(search: SearchAddonConfig, members: int) -> int:
    """The memory request (bytes, whole MiB) of one karmada-search pod caching `objectsPerMember` objects of each of
    `members` members: SEARCH_BASE_BYTES + SEARCH_BYTES_PER_OBJECT per object."""
    total = SEARCH_BASE_BYTES + members * search.objects_per_member * SEARCH_BYTES_PER_OBJECT
    return math.ceil(total / 2**20) * 2**20


def search_workload(config: FleetConfig, members: Sequence[str]) -> manifests.Workload:
    search = config.karmada.addons.search
    memory = search_memory(search, len(members))
    return manifests.Workload(
        name=SEARCH, image=versions.karmada_image(SEARCH, config.karmada.version),
        command=flags.COMMANDS[SEARCH], args=flags.search_args(), replicas=search.replicas,
        ports={"https": flags.SEARCH_PORT},
        # generic apiserver: /livez and /readyz skip authorization and anonymous requests reach them (delegated
        # authentication's anonymous default, k8s.io/apiserver pkg/server/options/authorization.go AlwaysAllowPaths)
        liveness=manifests.Probe(flags.SEARCH_PORT, "/livez", "HTTPS", initial_delay=15),
        readiness=manifests.Probe(flags.SEARCH_PORT, "/readyz", "HTTPS", period=5),
        requests={"cpu": search.cpu, "memory": f"{memory // 2**20}Mi"},
        limits={"memory": f"{2 * memory // 2**20}Mi"},
    )


def search_service() -> dict[str, Any]:
    """The host Service the APIService reaches karmada-search through. It publishes pods that are not Ready yet:
    karmada-search becomes Ready only once its informers have listed ResourceRegistries, which it serves itself
    through the karmada-apiserver's aggregator, so the aggregator must reach it first (found on the real binaries:
    a Service of Ready pods only left it unready and restarting forever). Upstream's manifest avoids the loop by
    giving the pod no readiness probe (karmada-io/karmada v1.18.2 artifacts/deploy/karmada-search.yaml)."""
    service = manifests.service(SEARCH, {"https": (443, flags.SEARCH_PORT)})
    service["spec"]["publishNotReadyAddresses"] = True
    return service


def search_api(ca_bundle: Any) -> list[dict[str, Any]]:
    """APIService v1alpha1.search.karmada.io and the ExternalName Service it points at, in the karmada-apiserver
    (karmada-io/karmada v1.18.2 artifacts/deploy/karmada-search-apiservice.yaml; bootstrap.aggregated_api's shape)."""
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": SEARCH, "namespace": NS, "labels": _label(SEARCH)},
         "spec": {"type": "ExternalName", "externalName": f"{SEARCH}.{NS}.svc.{flags.CLUSTER_DOMAIN}"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": SEARCH_APISERVICE, "labels": _label(SEARCH)},
         "spec": {"group": SEARCH_GROUP, "version": "v1alpha1", "groupPriorityMinimum": 2000,
                  "versionPriority": 10, "caBundle": ca_bundle,
                  "service": {"name": SEARCH, "namespace": NS, "port": 443}}},
    ]


def resource_registry(search: SearchAddonConfig, members: Sequence[str]) -> dict[str, Any]:
    """The one ResourceRegistry: exactly the named types of the named members (pkg/apis/search/v1alpha1
    searchregistry_types.go). No backendStore: the in-memory cache, which `search_memory` sizes."""
    selectors = []
    for r in search.resources:
        selector: dict[str, Any] = {"apiVersion": r.api_version, "kind": r.kind}
        if r.namespace:
            selector["namespace"] = r.namespace
        selectors.append(selector)
    return {"apiVersion": f"{SEARCH_GROUP}/v1alpha1", "kind": "ResourceRegistry",
            "metadata": {"name": REGISTRY, "labels": _label(SEARCH)},
            "spec": {"targetCluster": {"clusterNames": list(members)}, "resourceSelectors": selectors}}


_RBAC = "rbac.authorization.k8s.io/v1"
_READ = ["get", "list", "watch"]


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, Any]],
             namespace: str | None = None, component: str = SEARCH) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _label(component)}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": _RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects}


def _user(name: str) -> list[dict[str, Any]]:
    return [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]


def search_rbac() -> list[dict[str, Any]]:
    """What karmada-search's own identity may do in the karmada-apiserver, from the calls it makes at v1.18.2
    (upstream hands it an admin kubeconfig instead): read Clusters and ResourceRegistries (its informers), read
    Secrets (the proxy's shared informer lists them in every namespace, pkg/search/proxy/controller.go
    NewController; the member credentials by name, pkg/util/membercluster_client.go), and delegated authentication
    and authorization (TokenReviews, SubjectAccessReviews, the extension-apiserver-authentication ConfigMap). It
    writes nothing: no status, no events, no leases (pkg/search)."""
    role = "karmada-hub:karmada-search"
    return [
        {"apiVersion": _RBAC, "kind": "ClusterRole", "metadata": {"name": role, "labels": _label(SEARCH)},
         "rules": [
             {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": _READ},
             {"apiGroups": [SEARCH_GROUP], "resources": ["resourceregistries"], "verbs": _READ},
             {"apiGroups": [""], "resources": ["secrets"], "verbs": _READ},
             {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
             {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
         ]},
        _binding("ClusterRoleBinding", role, "ClusterRole", role, _user(SEARCH_USER)),
        _binding("RoleBinding", f"{role}:authentication-reader", "Role", "extension-apiserver-authentication-reader",
                 _user(SEARCH_USER), namespace="kube-system"),
    ]


# --------------------------------------------------------------------------------------------- dashboard


def dashboard_image(config: FleetConfig, component: str) -> str:
    return versions.karmada_image(component, config.karmada.release.dashboard)


def dashboard_api_args() -> list[str]:
    """karmada-dashboard-api (karmada-io/dashboard v0.4.0 cmd/api/app/options/options.go): the karmada-apiserver
    through its own kubeconfig (its informers and the member-cluster check; every user request goes with the
    user's own token, pkg/client/auth.go), the host API in-cluster (its service account: pkg/client/init.go
    InitKubeConfig prefers it), plain HTTP on 8000 inside the cluster."""
    return [
        f"--karmada-kubeconfig={flags.KUBECONFIG_PATH}",
        "--insecure-bind-address=0.0.0.0",
        f"--insecure-port={DASHBOARD_PORT}",
        "--v=2",
    ]


def dashboard_web_args() -> list[str]:
    """karmada-dashboard-web (cmd/web/app/options/options.go): the UI from /static, `/api` forwarded to the API's
    Service; no kubernetes-dashboard-api (not deployed), so that proxy is off."""
    return [
        f"--static-dir={DASHBOARD_STATIC_DIR}",
        "--insecure-bind-address=0.0.0.0",
        f"--insecure-port={DASHBOARD_PORT}",
        f"--dashboard-config-path={DASHBOARD_CONFIG_PATH}",
        "--enable-api-proxy=true",
        f"--api-proxy-endpoint=http://{DASHBOARD_API}.{NS}.svc.{flags.CLUSTER_DOMAIN}:{DASHBOARD_PORT}",
        "--enable-kubernetes-dashboard-api-proxy=false",
        "--v=2",
    ]


_GIN = ({"name": "GIN_MODE", "value": "release"},)


def dashboard_api_workload(config: FleetConfig) -> manifests.Workload:
    dashboard = config.karmada.addons.dashboard
    return manifests.Workload(
        name=DASHBOARD_API, image=dashboard_image(config, DASHBOARD_API),
        command=(f"/bin/{DASHBOARD_API}",), args=dashboard_api_args(), replicas=dashboard.replicas,
        ports={"http": DASHBOARD_PORT},
        liveness=manifests.Probe(DASHBOARD_PORT, "/livez", initial_delay=10, period=30),
        readiness=manifests.Probe(DASHBOARD_PORT, "/readyz", period=10),
        requests={"cpu": "100m", "memory": "128Mi"}, limits={"memory": "512Mi"}, env=_GIN,
    )


def dashboard_web_workload(config: FleetConfig) -> manifests.Workload:
    dashboard = config.karmada.addons.dashboard
    config_dir, config_file = DASHBOARD_CONFIG_PATH.rsplit("/", 1)
    return manifests.Workload(
        name=DASHBOARD_WEB, image=dashboard_image(config, DASHBOARD_WEB),
        command=(f"/bin/{DASHBOARD_WEB}",), args=dashboard_web_args(), replicas=dashboard.replicas,
        ports={"http": DASHBOARD_PORT},
        liveness=manifests.Probe(DASHBOARD_PORT, "/livez", initial_delay=10, period=30),
        readiness=manifests.Probe(DASHBOARD_PORT, "/readyz", period=10),
        requests={"cpu": "50m", "memory": "64Mi"}, limits={"memory": "256Mi"}, kubeconfig=False, env=_GIN,
        extra_volumes=[{"name": "dashboard-config", "configMap": {
            "name": DASHBOARD_CONFIG, "items": [{"key": config_file, "path": config_file}]}}],
        extra_mounts=[{"name": "dashboard-config", "mountPath": config_dir, "readOnly": True}],
    )


def _no_priority(doc: dict[str, Any]) -> dict[str, Any]:
    """Addons are no control plane: they never preempt it (no system-cluster-critical)."""
    doc["spec"]["template"]["spec"].pop("priorityClassName", None)
    return doc


def search_deployment(config: FleetConfig, members: Sequence[str]) -> dict[str, Any]:
    return _no_priority(manifests.deployment(search_workload(config, members)))


def dashboard_api_deployment(config: FleetConfig) -> dict[str, Any]:
    """The API pod mounts its service account's token: it reads the host API in-cluster (its service account has
    no RBAC; the version request it dies without is allowed to every authenticated user)."""
    doc = _no_priority(manifests.deployment(dashboard_api_workload(config)))
    spec = doc["spec"]["template"]["spec"]
    spec["serviceAccountName"] = DASHBOARD_API
    spec["automountServiceAccountToken"] = True
    return doc


def dashboard_web_deployment(config: FleetConfig) -> dict[str, Any]:
    return _no_priority(manifests.deployment(dashboard_web_workload(config)))


def dashboard_config() -> str:
    """The web UI's menu (pkg/config/model.go DashboardConfig): the read views on-call uses; no registries."""
    menus = [("/overview", "OVERVIEW", []),
             ("/multicloud-resource-manage", "MULTICLOUD-RESOURCE-MANAGE",
              [("namespace", "NAMESPACE"), ("workload", "WORKLOAD"), ("service", "SERVICE"), ("config", "CONFIG"),
               ("topology", "TOPOLOGY")]),
             ("/multicloud-policy-manage", "MULTICLOUD-POLICY-MANAGE",
              [("propagation-policy", "PROPAGATION-POLICY"), ("override-policy", "OVERRIDE-POLICY")]),
             ("/cluster-manage", "CLUSTER-MANAGE", [])]
    lines = ["docker_registries: []", "chart_registries: []", 'path_prefix: ""', "menu_configs:"]
    for path, key, children in menus:
        lines += [f"  - path: {path}", "    enable: true", f"    sidebar_key: {key}"]
        if children:
            lines.append("    children:")
            for child, child_key in children:
                lines += [f"      - path: {child}", "        enable: true", f"        sidebar_key: {child_key}"]
    return "\n".join(lines) + "\n"


def dashboard_host_objects() -> list[dict[str, Any]]:
    """On the host: the API's ServiceAccount (no RBAC), the web config, both Services (ClusterIP only)."""
    config_file = DASHBOARD_CONFIG_PATH.rsplit("/", 1)[1]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": DASHBOARD_API, "namespace": NS, "labels": _label(DASHBOARD_API)}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": DASHBOARD_CONFIG, "namespace": NS, "labels": _label(DASHBOARD_WEB)},
         "data": {config_file: dashboard_config()}},
        manifests.service(DASHBOARD_API, {"http": (DASHBOARD_PORT, DASHBOARD_PORT)}),
        manifests.service(DASHBOARD_WEB, {"http": (DASHBOARD_PORT, DASHBOARD_PORT)}),
    ]


def login_identity(access: str) -> str:
    """The ServiceAccount in the karmada-apiserver whose token a user logs in with."""
    return f"karmada-dashboard-{access}"


def dashboard_rbac(access: str) -> list[dict[str, Any]]:
    """In the karmada-apiserver:

    - karmada-dashboard-api's own identity reads Clusters (the member-cluster check, pkg/client middleware),
      ResourceBindings and Works (the topology informer, pkg/informer/informer.go): nothing else, nothing written;
    - the login identity, a ServiceAccount whose token users paste into the UI: Kubernetes' `view` (or `edit`)
      role, which aggregates Karmada's `karmada-view`/`karmada-edit` (KarmadaBootstrap), plus reading Clusters and
      asking karmada-search's cache. `view` shows no Secrets; never `proxying` (karmada-search proxies those
      requests with its own identity)."""
    own = "karmada-hub:karmada-dashboard"
    login = login_identity(access)
    login_role = f"karmada-hub:{login}"
    sa = [{"kind": "ServiceAccount", "name": login, "namespace": NS}]
    return [
        {"apiVersion": _RBAC, "kind": "ClusterRole", "metadata": {"name": own, "labels": _label(DASHBOARD_API)},
         "rules": [
             {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": _READ},
             {"apiGroups": ["work.karmada.io"], "resources": ["resourcebindings", "works"], "verbs": _READ},
         ]},
        _binding("ClusterRoleBinding", own, "ClusterRole", own, _user(DASHBOARD_USER), component=DASHBOARD_API),
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": login, "namespace": NS, "labels": _label(DASHBOARD_API)}},
        {"apiVersion": _RBAC, "kind": "ClusterRole", "metadata": {"name": login_role, "labels": _label(DASHBOARD_API)},
         "rules": [
             {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": _READ},
             {"apiGroups": [SEARCH_GROUP], "resources": ["search"], "verbs": ["get"]},
         ]},
        _binding("ClusterRoleBinding", login_role, "ClusterRole", login_role, sa, component=DASHBOARD_API),
        _binding("ClusterRoleBinding", f"{login_role}:{access}", "ClusterRole", access, sa, component=DASHBOARD_API),
    ]


# ----------------------------------------------------------------------------------- flows and capacity


def flow_workloads(config: FleetConfig) -> list[Workload]:
    """The addons' listeners and dials on the host (components/kube/flows.py). karmada-search is dialled by the
    karmada-apiserver (its APIService; karmada/network.py adds that dial) and dials the karmada-apiserver and etcd;
    its member dials leave the cluster. The dashboard web pod is reached only by `kubectl port-forward` (inside
    the pod's own network namespace, which NetworkPolicy never sees) and dials the API; the API dials the
    karmada-apiserver and the host API (outside the policed namespaces)."""
    addons = config.karmada.addons
    out: list[Workload] = []
    apiserver = Dial(NS, flags.APISERVER_SERVICE, "https")
    if addons.search.enabled:
        out.append(Workload(NS, SEARCH, manifests.selector(SEARCH), (Listener("https", flags.SEARCH_PORT),),
                            (apiserver, Dial(NS, flags.ETCD_SERVICE, "client"))))
    if addons.dashboard.enabled:
        out.append(Workload(NS, DASHBOARD_API, manifests.selector(DASHBOARD_API),
                            (Listener("http", DASHBOARD_PORT),), (apiserver,)))
        out.append(Workload(NS, DASHBOARD_WEB, manifests.selector(DASHBOARD_WEB),
                            (Listener("http", DASHBOARD_PORT),), (Dial(NS, DASHBOARD_API, "http"),)))
    return out


def host_deployments(config: FleetConfig, members: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every pod-running document the addons put on the host, with what it is part of (operations/capacity.py)."""
    addons = config.karmada.addons
    out: list[tuple[str, dict[str, Any]]] = []
    if addons.search.enabled:
        out.append(("karmada-search", search_deployment(config, members)))
    if addons.dashboard.enabled:
        out += [("dashboard", dashboard_api_deployment(config)), ("dashboard", dashboard_web_deployment(config))]
    return out

