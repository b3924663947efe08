"""The runtime contract of every container the Karmada control plane runs: etcd, karmada-apiserver (a
kube-apiserver), kube-controller-manager and the Karmada binaries (aggregated-apiserver, scheduler,
controller-manager, webhook, scheduler-estimator, agent) and the opt-in addons (karmada-search, the Karmada
dashboard's API and web), as data with sources (vocabulary: kube/contract.py).

Read in the pinned sources: karmada-io/karmada v1.18.2 (with its vendored controller-runtime v0.23.1 and
k8s.io/apiserver v0.35.3, the generic apiserver of Kubernetes 1.35), etcd-io/etcd v3.6.6, and
kubernetes/kubernetes for what is not vendored (marked `pinned=False`: a stored version, not the v1.35.2 tag).
`tests/contract/` checks the rendered plans against these facts; `docs/upstream-contract.md` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from components.karmada import flags
from components.karmada.pki_spec import ESTIMATOR_SERVICE_PREFIX
from components.kube.contract import (
    Connection,
    Contract,
    Endpoint,
    EnvVar,
    Expects,
    Fact,
    FileFlag,
    Listener,
    Makes,
    Match,
    Served,
    Src,
    Use,
    View,
    from_kubeconfig,
    from_url_flag,
    url_endpoint,
)

KARMADA = "karmada-io/karmada v1.18.2"


def k(path: str, symbol: str = "") -> Src:
    return Src("karmada-io/karmada", "v1.18.2", path, symbol)


def cr(path: str, symbol: str = "") -> Src:
    """controller-runtime v0.23.1 as vendored by karmada v1.18.2 (go.mod)."""
    return Src("karmada-io/karmada", "v1.18.2", f"vendor/sigs.k8s.io/controller-runtime/{path}", symbol)


def apis(path: str, symbol: str = "") -> Src:
    """k8s.io/apiserver v0.35.3 (Kubernetes 1.35's generic apiserver) as vendored by karmada v1.18.2."""
    return Src("karmada-io/karmada", "v1.18.2", f"vendor/k8s.io/apiserver/{path}", symbol)


def kas(path: str, symbol: str = "") -> Src:
    """kubernetes/apiserver v0.35.2: the generic apiserver library of the pinned kube-apiserver/KCM (v1.35.4; read
    at v0.35.2)."""
    return Src("kubernetes/apiserver", "v0.35.2", path, symbol)


def kube(path: str, symbol: str = "") -> Src:
    """kubernetes/kubernetes, read in a stored version (the repository is too large to fetch at v1.35.2)."""
    return Src("kubernetes/kubernetes", "stored version", path, symbol, pinned=False)


def etcd_src(path: str, symbol: str = "") -> Src:
    return Src("etcd-io/etcd", "v3.6.6", path, symbol)


# ------------------------------------------------------------------------------------- shared facts

HEALTH_SERVER = cr("pkg/manager/internal.go", "addHealthProbeServer")
PLAIN_HEALTH = k("cmd/scheduler/app/scheduler.go", "serveHealthzAndMetrics")
METRICS = cr("pkg/metrics/server/server.go", "defaultServer.Start")

SHARED: tuple[Fact, ...] = (
    Fact("controller-runtime's health listener mounts `/healthz` (and `/healthz/<check>`) only if the binary "
         "called AddHealthzCheck, `/readyz` only if it called AddReadyzCheck; with neither the port is open and "
         "every path is 404. No authentication on it.", HEALTH_SERVER),
    Fact("Of the Karmada binaries on controller-runtime, the controller-manager and the agent add one healthz "
         "check (`ping`); the webhook adds none; none adds a readyz check.",
         k("cmd/controller-manager/app/controllermanager.go", "Run (AddHealthzCheck)")),
    Fact("`--health-probe-bind-address=0` (or empty) opens no health listener; a listen error makes "
         "controllerruntime.NewManager fail, and the binary exits.",
         cr("pkg/manager/manager.go", "defaultHealthProbeListener")),
    Fact("controller-runtime's metrics server is plain HTTP `/metrics` without authentication (Karmada sets no "
         "SecureServing/FilterProvider); `0` disables it; a listen error fails Start.", METRICS),
    Fact("The scheduler, scheduler-estimator and descheduler serve `/healthz` with a plain ServeMux: exactly that "
         "path (no `/readyz`, `/livez`, no sub-paths), always 200; listen failure exits the process.", PLAIN_HEALTH),
    Fact("Kubernetes expands `$(VAR)` in command/args only from the container's env; an undefined reference stays "
         "literal, so `$(POD_IP):8080` reaches the binary as is and its listen fails.",
         kube("pkg/kubelet/container/helpers.go", "ExpandContainerCommandAndArgs (third_party/forked/golang/"
              "expansion Expand leaves an unknown reference as written)")),
    Fact("Every hub component authenticates to the karmada-apiserver with a client certificate in "
         "`O=system:masters` (components/karmada/pki_spec.py), so their RBAC rows below document what their "
         "clients call; the agent, external-dns, the status refresher and kube-controller-manager are bound by RBAC.",
         Src("karmada-hub", "this checkout", "components/karmada/pki_spec.py", "cert_specs")),
    Fact("An unknown `--feature-gates` name makes a binary exit (`unrecognized feature gate`); every binary but the "
         "descheduler registers all 17 Karmada gates, so a known gate it never reads is a silent no-op.",
         Src("karmada-io/karmada", "v1.18.2", "vendor/k8s.io/component-base/featuregate/feature_gate.go",
             "featureGate.Set")),
)

# ----------------------------------------------------------------------------------- built-in RBAC

BUILTIN_RBAC: tuple[dict[str, Any], ...] = (
    {"kind": "ClusterRoleBinding", "metadata": {"name": "cluster-admin"},
     "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
     "subjects": [{"kind": "Group", "name": "system:masters"}]},
    {"kind": "ClusterRole", "metadata": {"name": "cluster-admin"},
     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]},
    {"kind": "ClusterRoleBinding", "metadata": {"name": "system:public-info-viewer"},
     "roleRef": {"kind": "ClusterRole", "name": "system:public-info-viewer"},
     "subjects": [{"kind": "Group", "name": "system:authenticated"},
                  {"kind": "Group", "name": "system:unauthenticated"}]},
    {"kind": "ClusterRole", "metadata": {"name": "system:public-info-viewer"},
     "rules": [{"nonResourceURLs": ["/livez", "/readyz", "/healthz", "/version", "/version/"], "verbs": ["get"]}]},
    {"kind": "ClusterRoleBinding", "metadata": {"name": "system:kube-controller-manager"},
     "roleRef": {"kind": "ClusterRole", "name": "system:kube-controller-manager"},
     "subjects": [{"kind": "User", "name": "system:kube-controller-manager"}]},
    {"kind": "ClusterRole", "metadata": {"name": "system:kube-controller-manager"},
     "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
               {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"],
                "resourceNames": ["kube-controller-manager"]},
               {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
               {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
               {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}]},
    {"kind": "ClusterRole", "metadata": {"name": "system:node-bootstrapper"},
     "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                "verbs": ["create", "get", "list", "watch"]}]},
    {"kind": "RoleBinding", "metadata": {"name": "system::extension-apiserver-authentication-reader",
                                         "namespace": "kube-system"},
     "roleRef": {"kind": "Role", "name": "extension-apiserver-authentication-reader"},
     "subjects": [{"kind": "User", "name": "system:kube-controller-manager"},
                  {"kind": "User", "name": "system:kube-scheduler"}]},
    {"kind": "Role", "metadata": {"name": "extension-apiserver-authentication-reader", "namespace": "kube-system"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
                "resourceNames": ["extension-apiserver-authentication"]}]},
)
"""The kube-apiserver's bootstrap RBAC the program relies on (it reconciles these itself at start):
kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go `ClusterRoles`/`ClusterRoleBindings` and
namespace_policy.go, read in stored versions (BUILTIN_RBAC_SOURCE)."""
BUILTIN_RBAC_SOURCE = kube("plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go", "ClusterRoles")
BOOTSTRAP_ROLE_NAMES = (
    "cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer",
    "system:auth-delegator", "system:kube-aggregator", "system:kube-controller-manager", "system:kube-scheduler",
    "system:kube-dns", "system:node", "system:node-*", "system:controller:*", "system:aggregate-to-*",
    "system:certificates.k8s.io:*", "system:monitoring", "system:service-account-issuer-discovery",
    "system:volume-scheduler", "system:persistent-volume-provisioner", "system:heapster",
)
"""Names (fnmatch patterns) of the ClusterRoles/ClusterRoleBindings kube-apiserver's bootstrap policy owns."""


# ---------------------------------------------------------------------------------------- resolvers


def _etcd_peers(view: View) -> Sequence[Endpoint]:
    """Every other member's peer URL from `--initial-cluster` (name=url,...)."""
    value = view.flag("initial-cluster") or ""
    return [url_endpoint(item.split("=", 1)[1]) for item in value.split(",") if "=" in item]


def _estimators(view: View, always: bool = False) -> Sequence[Endpoint]:
    """pkg/scheduler/scheduler.go establishEstimatorConnections + pkg/estimator/client/service.go resolveCluster:
    per Cluster (Pull ones skipped with --disable-scheduler-estimator-in-pull-mode), no Service of that name in
    the karmada-apiserver, so `<prefix>-<cluster>.<ns>.svc.cluster.local:<port>` on the host's DNS. The
    descheduler (`always`) dials them whatever the mode, without any enable flag."""
    if not always and view.flag("enable-scheduler-estimator") != "true":
        return []
    skip_pull = view.flag("disable-scheduler-estimator-in-pull-mode") == "true"
    prefix = view.flag("scheduler-estimator-service-prefix") or ESTIMATOR_SERVICE_PREFIX
    namespace = view.flag("scheduler-estimator-service-namespace") or flags.NAMESPACE
    port = int(view.flag("scheduler-estimator-port") or flags.ESTIMATOR_PORT)
    tls = "GRPC" if view.flag("scheduler-estimator-ca-file") else "GRPC-PLAINTEXT"
    return [Endpoint(f"{prefix}-{name}.{namespace}.svc.{flags.CLUSTER_DOMAIN}", port, tls)
            for name, mode in view.clusters() if not (mode == "Pull" and skip_pull)]


def _apiservices(view: View) -> Sequence[Endpoint]:
    """kube-aggregator: an APIService's `spec.service` (a Service in the karmada-apiserver, ExternalName here)."""
    out = []
    services = {(str(s["metadata"].get("namespace")), str(s["metadata"]["name"])): s  # type: ignore[index]
                for s in view.objects("karmada", "Service")}
    for api in view.objects("karmada", "APIService"):
        ref = api["spec"].get("service")  # type: ignore[index,union-attr]
        if not ref:
            continue
        svc = services.get((ref["namespace"], ref["name"]))
        if svc is None:
            out.append(Endpoint(f"{ref['name']}.{ref['namespace']}.svc", int(ref.get("port", 443)), "HTTPS"))
        elif svc["spec"].get("type") == "ExternalName":  # type: ignore[index,union-attr]
            out.append(Endpoint(str(svc["spec"]["externalName"]), int(ref.get("port", 443)), "HTTPS"))  # type: ignore[index]
    return out


def _webhooks(view: View) -> Sequence[Endpoint]:
    """Admission webhook and CRD conversion `clientConfig.url`s the apiserver calls."""
    urls = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for cfg in view.objects("karmada", kind):
            urls += [w["clientConfig"]["url"] for w in cfg.get("webhooks", []) if "url" in w["clientConfig"]]  # type: ignore[union-attr]
    for crd in view.objects("karmada", "CustomResourceDefinition"):
        conv = (crd.get("spec") or {}).get("conversion") or {}  # type: ignore[union-attr]
        url = ((conv.get("webhook") or {}).get("clientConfig") or {}).get("url")
        if url:
            urls.append(url)
    return [url_endpoint(u) for u in sorted(set(urls))]


def anonymous_from_authentication_config(view: View) -> frozenset[str]:
    """kube-apiserver: with `--anonymous-auth=false` nothing is anonymous; with an `--authentication-config`
    whose anonymous section is enabled, exactly its condition paths (all paths if it lists none)."""
    if view.flag("anonymous-auth") == "false":
        return frozenset()
    path = view.flag("authentication-config")
    if not path:
        return frozenset({"*"})  # --anonymous-auth defaults to true
    doc = yaml.safe_load(view.file(path) or "") or {}
    anonymous = doc.get("anonymous") or {}
    if not anonymous.get("enabled"):
        return frozenset()
    return frozenset(c["path"] for c in anonymous.get("conditions") or []) or frozenset({"*"})


def _read(*flag_names: str, why: str, source: Src) -> tuple[FileFlag, ...]:
    return tuple(FileFlag(f, "read", why, source) for f in flag_names)


APISERVER_TO = "karmada-apiserver"

# ------------------------------------------------------------------------------------------- etcd

ETCD = Contract(
    key="etcd", title="etcd", upstream="etcd-io/etcd v3.6.6 (image registry.k8s.io/etcd:3.6.6-0)",
    match=Match(command="etcd"), rendered_by="components/karmada/manifests.py etcd_statefulset, flags/etcd.py",
    files=(
        FileFlag("config-file", "read", "every setting (written by the pod's prepare step from flags.etcd_args); "
                 "with a config file etcd ignores all other flags and ETCD_* env",
                 etcd_src("server/etcdmain/config.go", "config.parse, configFromFile")),
        *_read("trusted-ca-file", "cert-file", "key-file", why="client TLS (with --client-cert-auth)",
               source=etcd_src("server/embed/config.go", "Config.AddFlags")),
        *_read("peer-trusted-ca-file", "peer-cert-file", "peer-key-file", why="peer TLS",
               source=etcd_src("server/embed/config.go", "Config.AddFlags")),
        FileFlag("data-dir", "dir", "WAL and snapshots; not writable -> `cannot access data directory`, exit",
                 etcd_src("server/etcdserver/bootstrap.go", "bootstrap"), default="${name}.etcd"),
    ),
    listeners=(
        Listener("client", "URL", "listen-client-urls", "url", "http://localhost:2379",
                 (Served("/health", False), Served("/livez", False), Served("/readyz", False),
                  Served("/metrics", False), Served("/version", False)),
                 etcd_src("server/embed/etcd.go", "serveClients"),
                 note="gRPC KV API and an HTTP mux; with --client-cert-auth every request needs a cert of the CA"),
        Listener("peer", "URL", "listen-peer-urls", "url", "http://localhost:2380", (),
                 etcd_src("server/embed/etcd.go", "servePeers"), note="raft, peer mTLS"),
        Listener("metrics", "URL", "listen-metrics-urls", "url", "",
                 (Served("/metrics", True), Served("/health", True), Served("/livez", True, subtree=True),
                  Served("/readyz", True, subtree=True)),
                 etcd_src("server/etcdserver/api/etcdhttp/health.go", "HandleHealth, installLivezEndpoints"),
                 note="an http:// URL serves without TLS and without authentication"),
    ),
    connections=(
        Connection("etcd", "2380", "HTTPS (peer mTLS)", "--initial-cluster (every member's peer URL)",
                   "raft replication; a new member asks the peers whether it is already bootstrapped",
                   etcd_src("server/etcdserver/cluster_util.go", "isMemberBootstrapped"), resolve=_etcd_peers),
    ),
    expects=(
        Expects("per-pod DNS names `etcd-N.etcd.karmada-system.svc.cluster.local` before the pods are Ready "
                "(headless Service with publishNotReadyAddresses): bootstrap resolves the peer URLs within 30 s",
                "the plan (Service etcd)", etcd_src("server/config/config.go", "advertiseMatchesCluster")),
        Expects("peer certificates whose SANs resolve to the connecting pod's IP (client/peer SAN check)",
                "the plan (pki_spec etcd-peer)", etcd_src("client/pkg/transport/listener_tls.go", "checkCertSAN")),
    ),
    exits=(
        Fact("empty data dir with `--initial-cluster-state=new` while the peers already list this member with "
             "client URLs: `member <id> has already been bootstrapped`, exit 1 (the rejoin problem, issue 13)",
             etcd_src("server/etcdserver/bootstrap.go", "bootstrapNewClusterNoWAL")),
        Fact("listener error (port taken, unreadable cert/key), bad enum or conflicting bootstrap flags",
             etcd_src("server/embed/config.go", "Config.Validate")),
        Fact("`--cipher-suites` name unknown to Go's tls.CipherSuites(), or set together with TLS 1.3 minimum",
             etcd_src("client/pkg/tlsutil/cipher_suites.go", "GetCipherSuites")),
    ),
    facts=(
        Fact("`--snapshot-count` is deprecated in 3.6 and decommissioned in 3.7 (not rendered)",
             etcd_src("server/embed/config.go", "Config.AddFlags")),
        Fact("the rendered image (registry.k8s.io/etcd) is distroless static plus a static bash as /bin/sh; etcd, "
             "etcdctl and etcdutl are in /usr/local/bin (not etcd-io's own image)",
             Src("kubernetes/kubernetes", "v1.35.4", "cluster/images/etcd/Dockerfile")),
        Fact("`--initial-cluster*` are honoured only on a data dir without WAL; restarts use the WAL",
             etcd_src("server/etcdserver/bootstrap.go", "bootstrap")),
        Fact("a config file starts from embed.NewConfig: in 3.4 that leaves enable-grpc-gateway off (its flag "
             "defaults on), so prepare writes the command line's defaults explicitly",
             Src("etcd-io/etcd", "v3.4.23", "embed/config.go", "NewConfig; etcdmain/config.go newConfig")),
    ),
    kubeconfig_flags=(),
)

_PREPARE = Src("karmada-hub", "this checkout", "agents/etcd_member_prepare.py", "prepare")


def _etcd_clients(view: View) -> Sequence[Endpoint]:
    """prepare asks the members' gRPC gateway on their client port (the peers' hosts, etcd's client port)."""
    port = int(url_endpoint((view.flag("advertise-client-urls") or "https://x:2379").split(",")[0]).port)
    return [Endpoint(ep.host, port, "HTTPS") for ep in _etcd_peers(view)]


ETCD_PREPARE = Contract(
    key="etcd-prepare", title="etcd member prepare (agents/etcd_member_prepare.py)",
    upstream="this program, on python:3.12, against etcd-io/etcd v3.6.6 (and 3.4.23 in the tests)",
    match=Match(script="etcd_member_prepare.py"),
    rendered_by="components/karmada/manifests.py etcd_statefulset, flags/etcd.py etcd_prepare_args",
    env=(EnvVar("POD_NAME", True, "expanded by kubelet into --name and the advertise URLs after `--`", _PREPARE),
         EnvVar("POD_IP", True, "expanded by kubelet into --listen-metrics-urls after `--`", _PREPARE)),
    files=(
        FileFlag("config-file", "write", "etcd's config file, derived from the etcd flags after `--`", _PREPARE),
        FileFlag("client-cert", "read", "a SAN-less client cert of the etcd CA (member API, peer /members)",
                 _PREPARE),
        FileFlag("client-key", "read", "its key", _PREPARE),
        *_read("trusted-ca-file", "peer-trusted-ca-file", why="verifies the members it asks", source=_PREPARE),
        *_read("peer-cert-file", "peer-key-file", why="serves its 'empty' answer on the peer port", source=_PREPARE),
        FileFlag("data-dir", "dir", "looks for a WAL; moves a member/ without one aside to member.incomplete",
                 _PREPARE),
    ),
    listeners=(
        Listener("peer", "URL", "listen-peer-urls", "url", "https://0.0.0.0:2380", (), _PREPARE,
                 note="while it waits: 404 with X-Karmada-Hub-Etcd-Prepare: empty to every mTLS request, so empty "
                      "members can tell each other from members that are down; freed before etcd starts"),
    ),
    connections=(
        Connection("etcd", "2380", "HTTPS (client cert of the etcd CA)", "--initial-cluster",
                   "GET /members on every other member (served before quorum): formed cluster or not",
                   etcd_src("server/etcdserver/api/etcdhttp/peer.go", "peerMembersHandler"), resolve=_etcd_peers),
        Connection("etcd", "2379", "HTTPS (client cert of the etcd CA)", "the members' client URLs",
                   "a linearizable range (quorum check), then member list/remove/add through the gRPC gateway",
                   etcd_src("api/etcdserverpb/gw/rpc.pb.gw.go", "pattern_Cluster_MemberAdd_0"),
                   resolve=_etcd_clients),
    ),
    exits=(
        Fact("without a safe decision (no quorum, a member unreachable) it keeps waiting and answering `empty`, "
             "and says why again every --remind-seconds; an etcd flag without a config-file mapping, --name not "
             "expanded or a foreign CA: exit 1 at once", _PREPARE),
    ),
    facts=(
        Fact("a member without a WAL rejoins as a new member (remove, add, `existing`) only through a member that "
             "serves a linearizable read, and bootstraps (`new`) only when every other member answers and none "
             "has formed a cluster",
             Src("etcd-io/etcd", "v3.4.23", "Documentation/op-guide/runtime-configuration.md",
                 "Replace a failed machine")),
    ),
    kubeconfig_flags=(),
)

# -------------------------------------------------------------------------------- karmada-apiserver

_KAS = kube("cmd/kube-apiserver/app/options/options.go", "ServerRunOptions.Flags")

KARMADA_APISERVER = Contract(
    key=APISERVER_TO, title="karmada-apiserver (kube-apiserver)",
    upstream="kube-apiserver v1.35.4 (registry.k8s.io/kube-apiserver)",
    match=Match(command="kube-apiserver"), rendered_by="components/karmada/control_plane.py, flags/apiserver.py",
    files=(
        *_read("tls-cert-file", "tls-private-key-file", "client-ca-file", "requestheader-client-ca-file",
               "proxy-client-cert-file", "proxy-client-key-file", why="serving, client and front-proxy TLS",
               source=kas("pkg/server/options/serving.go", "SecureServingOptions.AddFlags")),
        *_read("etcd-cafile", "etcd-certfile", "etcd-keyfile", why="etcd client TLS",
               source=kas("pkg/server/options/etcd.go", "EtcdOptions.AddFlags")),
        *_read("service-account-key-file", "service-account-signing-key-file", why="service account tokens",
               source=kube("pkg/kubeapiserver/options/authentication.go", "AddFlags")),
        FileFlag("audit-policy-file", "read", "audit policy", kas("pkg/server/options/audit.go", "AddFlags")),
        FileFlag("audit-log-path", "write", "audit log (rotated)", kas("pkg/server/options/audit.go", "AddFlags"),
                 ignore=("-",)),
        FileFlag("encryption-provider-config", "read", "encryption at rest",
                 kas("pkg/server/options/etcd.go", "EtcdOptions.AddFlags")),
        FileFlag("authentication-config", "read", "AuthenticationConfiguration (anonymous on the health paths)",
                 kube("pkg/kubeapiserver/options/authentication.go", "ToAuthenticationConfig")),
    ),
    listeners=(
        Listener("secure", "HTTPS", "secure-port", "port", "6443",
                 (Served("/livez", False, subtree=True), Served("/readyz", False, subtree=True),
                  Served("/healthz", False, subtree=True), Served("/version", False), Served("/metrics", False)),
                 kas("pkg/server/healthz.go", "installLivez, installReadyz"),
                 note="behind authentication: without a credential 401, unless the authentication config "
                      "admits anonymous on that exact path (then RBAC system:public-info-viewer allows the "
                      "health paths)",
                 anonymous_paths=anonymous_from_authentication_config),
    ),
    connections=(
        Connection("etcd", "2379", "HTTPS (client cert of the etcd CA)", "--etcd-servers",
                   "storage", kas("pkg/server/options/etcd.go", "EtcdOptions"),
                   resolve=from_url_flag("etcd-servers", many=True)),
        Connection("karmada-aggregated-apiserver", "443", "HTTPS (front-proxy client cert)",
                   "APIService v1alpha1.cluster.karmada.io -> Service (ExternalName) -> host Service",
                   "the cluster.karmada.io API (an ExternalName Service is dialled at its externalName)",
                   kas("pkg/util/proxy/proxy.go", "ResolveCluster"), resolve=_apiservices),
        Connection("karmada-webhook", "443", "HTTPS", "admission webhook and CRD conversion clientConfig.url",
                   "fail-closed admission of Karmada objects; conversion of the binding CRDs",
                   kas("pkg/util/webhook/client.go", "ClientManager.HookClient"), resolve=_webhooks),
    ),
    makes=(
        *(Makes("karmada", "Namespace", ns, True, "at start (system namespaces controller)",
                kube("pkg/controlplane/apiserver/options/options.go", "SystemNamespaces"))
          for ns in ("kube-system", "kube-public", "kube-node-lease", "default")),
        Makes("karmada", "Service", "kubernetes", True, "at start",
              kube("pkg/controlplane/controller/kubernetesservice/controller.go", "Controller"), namespace="default"),
        Makes("karmada", "ConfigMap", "extension-apiserver-authentication", True,
              "at start, from --client-ca-file and --requestheader-* (read by aggregated servers)",
              kube("pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go",
                   "Controller"), namespace="kube-system"),
        *(Makes("karmada", kind, name, True, "at start, bootstrap RBAC (reconciled at every start)",
                BUILTIN_RBAC_SOURCE)
          for kind in ("ClusterRole", "ClusterRoleBinding") for name in BOOTSTRAP_ROLE_NAMES),
    ),
    exits=(
        Fact("`--anonymous-auth` set while the authentication config has an anonymous section: "
             "`--anonymous-auth flag cannot be set when anonymous field is configured`",
             kube("pkg/kubeapiserver/options/authentication.go", "ToAuthenticationConfig")),
        Fact("an invalid authentication config (anonymous conditions without `enabled: true`)",
             kas("pkg/apis/apiserver/validation/validation.go", "ValidateAuthenticationConfiguration")),
        Fact("unreadable TLS, etcd, SA key, audit or encryption files; `--service-account-issuer` missing",
             kube("pkg/kubeapiserver/options/authentication.go", "BuiltInAuthenticationOptions.Validate")),
    ),
    facts=(
        Fact("AnonymousAuthConfigurableEndpoints and StructuredAuthenticationConfiguration are GA and locked on "
             "since 1.34", kas("pkg/features/kube_features.go", "defaultVersionedKubernetesFeatureGates")),
        Fact("an anonymous condition matches the request path exactly (`/readyz/etcd` needs its own entry)",
             kas("pkg/authentication/request/anonymous/anonymous.go", "Authenticator.AuthenticateRequest")),
        Fact("Karmada's own manifest probes GET /livez and /readyz on 5443 over HTTPS (with anonymous fully on)",
             k("artifacts/deploy/karmada-apiserver.yaml")),
    ),
    kubeconfig_flags=(),
)

# --------------------------------------------------------------------------- aggregated-apiserver

_AGG_OPTS = k("cmd/aggregated-apiserver/app/options/options.go", "Options.AddFlags")

AGGREGATED_APISERVER = Contract(
    key="karmada-aggregated-apiserver", title="karmada-aggregated-apiserver", upstream=KARMADA,
    match=Match(command="karmada-aggregated-apiserver"),
    rendered_by="components/karmada/control_plane.py, flags/apiserver.py",
    files=(
        *_read("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig",
               why="karmada-apiserver (core API, TokenReview, SubjectAccessReview)", source=_AGG_OPTS),
        *_read("etcd-cafile", "etcd-certfile", "etcd-keyfile", why="etcd client TLS",
               source=apis("pkg/server/options/etcd.go", "EtcdOptions.AddFlags")),
        *_read("tls-cert-file", "tls-private-key-file",
               why="serving cert (without them a self-signed pair is written to the relative --cert-dir, which a "
                   "read-only root file system refuses)",
               source=apis("pkg/server/options/serving.go", "SecureServingOptions.AddFlags")),
        FileFlag("audit-log-path", "write", "audit log; `-` is stdout", apis("pkg/server/options/audit.go"),
                 ignore=("-",)),
    ),
    listeners=(
        Listener("secure", "HTTPS", "secure-port", "port", "443",
                 (Served("/healthz", True), Served("/livez", True), Served("/readyz", True),
                  Served("/healthz", False, subtree=True), Served("/metrics", False), Served("/version", False)),
                 apis("pkg/server/options/authorization.go", "NewDelegatingAuthorizationOptions (AlwaysAllowPaths)"),
                 note="anonymous is on (delegated authentication); exactly /healthz, /livez, /readyz skip "
                      "authorization, everything else is a SubjectAccessReview"),
    ),
    connections=(
        Connection("etcd", "2379", "HTTPS (client cert)", "--etcd-servers", "stores Cluster objects under /registry",
                   _AGG_OPTS, resolve=from_url_flag("etcd-servers", many=True)),
        Connection(APISERVER_TO, "5443", "HTTPS (client cert)", "--kubeconfig, --authentication-kubeconfig, "
                   "--authorization-kubeconfig", "Secrets informer, TokenReview, SubjectAccessReview",
                   _AGG_OPTS, resolve=from_kubeconfig("kubeconfig")),
        Connection("member kube-apiserver", "spec.apiEndpoint", "HTTPS (impersonator token)", "Cluster.spec",
                   "clusters/proxy", k("pkg/registry/cluster/storage/proxy.go", "ProxyREST.Connect"), external=True),
    ),
    uses=(
        Use("karmada", "", "configmaps", ("get", "list", "watch"), apis("pkg/server/options/authentication.go",
                                                                       "DelegatingAuthenticationOptions.ApplyTo"),
            namespace="kube-system", names=("extension-apiserver-authentication",)),
        Use("karmada", "authentication.k8s.io", "tokenreviews", ("create",),
            apis("pkg/server/options/authentication.go")),
        Use("karmada", "authorization.k8s.io", "subjectaccessreviews", ("create",),
            apis("pkg/server/options/authorization.go")),
        Use("karmada", "", "secrets", ("get", "list", "watch"), k("pkg/registry/cluster/storage/proxy.go")),
    ),
    expects=(
        Expects("ConfigMap kube-system/extension-apiserver-authentication (read once at start; failure is fatal "
                "unless --authentication-tolerate-lookup-failure)", "karmada-apiserver",
                apis("pkg/server/options/authentication.go", "DelegatingAuthenticationOptions.ApplyTo")),
        Expects("APIService v1alpha1.cluster.karmada.io and its ExternalName Service", "the plan (KarmadaBootstrap)",
                k("artifacts/deploy/karmada-aggregated-apiserver-apiservice.yaml")),
    ),
    exits=(
        Fact("option validation (etcd servers, ports, audit) or Config() errors (unreadable kubeconfig, ConfigMap "
             "lookup, etcd TLS files): RunE returns the error", k("cmd/aggregated-apiserver/app/options/validation.go",
                                                                  "Options.Validate")),
    ),
    facts=(
        Fact("a Cluster name is a DNS-1123 label of at most 48 characters; syncMode Push or Pull is required",
             k("pkg/apis/cluster/validation/validation.go", "ValidateCluster")),
        Fact("on create, CustomizedClusterResourceModeling defaults spec.resourceModels",
             k("pkg/registry/cluster/strategy.go", "PrepareForCreate")),
    ),
    kubeconfig_flags=("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"),
)

# --------------------------------------------------------------------------- kube-controller-manager

KCM = Contract(
    key="kube-controller-manager", title="kube-controller-manager",
    upstream="kube-controller-manager v1.35.4 (registry.k8s.io/kube-controller-manager)",
    match=Match(command="kube-controller-manager"),
    rendered_by="components/karmada/control_plane.py, flags/kube_controller_manager.py",
    files=(
        *_read("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", why="karmada-apiserver",
               source=kube("cmd/kube-controller-manager/app/options/options.go", "KubeControllerManagerOptions")),
        *_read("client-ca-file", "requestheader-client-ca-file", why="delegated authentication of its own port",
               source=kas("pkg/server/options/authentication.go", "ClientCertAuthenticationOptions")),
        *_read("cluster-signing-cert-file", "cluster-signing-key-file", why="csrsigning for every built-in signer",
               source=kube("cmd/kube-controller-manager/app/options/csrsigningcontroller.go", "Validate")),
        *_read("root-ca-file", "service-account-private-key-file", why="service account token controller",
               source=kube("cmd/kube-controller-manager/app/options/saconfig.go", "AddFlags")),
    ),
    listeners=(
        Listener("secure", "HTTPS", "secure-port", "port", "10257",
                 (Served("/healthz", True, subtree=True), Served("/metrics", False)),
                 kube("cmd/kube-controller-manager/app/options/options.go",
                      "NewKubeControllerManagerOptions (Authorization.AlwaysAllowPaths /healthz)"),
                 note="serving cert generated in memory when no --tls-cert-file; anonymous authentication is on"),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert CN system:kube-controller-manager)", "--kubeconfig",
                   "all controllers; with --use-service-account-credentials each controller as its own SA",
                   kube("cmd/kube-controller-manager/app/controllermanager.go", "Run"),
                   resolve=from_kubeconfig("kubeconfig")),
    ),
    uses=(
        Use("karmada", "coordination.k8s.io", "leases", ("get", "create", "update"),
            kube("staging/src/k8s.io/client-go/tools/leaderelection/resourcelock/leaselock.go", "LeaseLock"),
            namespace="karmada-system", names=("kube-controller-manager",)),
        Use("karmada", "", "configmaps", ("get",), kas("pkg/server/options/authentication.go"),
            namespace="kube-system", names=("extension-apiserver-authentication",)),
        Use("karmada", "authentication.k8s.io", "tokenreviews", ("create",),
            kas("pkg/server/options/authentication.go")),
        Use("karmada", "authorization.k8s.io", "subjectaccessreviews", ("create",),
            kas("pkg/server/options/authorization.go")),
    ),
    makes=(
        Makes("karmada", "Lease", "kube-controller-manager", True, "leader election",
              kube("cmd/kube-controller-manager/app/controllermanager.go", "leaderElectAndRun"),
              namespace="karmada-system"),
    ),
    expects=(
        Expects("ConfigMap kube-system/extension-apiserver-authentication", "karmada-apiserver",
                kas("pkg/server/options/authentication.go")),
    ),
    exits=(
        Fact("--cluster-signing-{cert,key}-file mixed with a per-signer --cluster-signing-*-file, or a cert without "
             "its key", kube("cmd/kube-controller-manager/app/options/csrsigningcontroller.go", "Validate")),
    ),
    facts=(
        Fact("the bootstrap ClusterRole system:kube-controller-manager grants create on leases and get/update on the "
             "lease named kube-controller-manager in every namespace", BUILTIN_RBAC_SOURCE),
        Fact("bootstrapsigner signs an existing kube-public/cluster-info only; nothing in the plan creates it "
             "(issue 12)", kube("pkg/controller/bootstrap/bootstrapsigner.go", "Signer.getConfigMap")),
    ),
)

# ---------------------------------------------------------------------------------------- scheduler

_SCHED_OPTS = k("cmd/scheduler/app/options/options.go", "Options.AddFlags")

SCHEDULER = Contract(
    key="karmada-scheduler", title="karmada-scheduler", upstream=KARMADA, match=Match(command="karmada-scheduler"),
    rendered_by="components/karmada/control_plane.py, flags/scheduler.py",
    files=(
        FileFlag("kubeconfig", "read", "karmada-apiserver (no service account token is mounted)", _SCHED_OPTS),
        *_read("scheduler-estimator-ca-file", "scheduler-estimator-cert-file", "scheduler-estimator-key-file",
               why="estimator mTLS, read at each dial (unreadable: that dial fails)",
               source=k("pkg/util/grpcconnection/config.go", "ClientConfig.DialWithTimeOut")),
    ),
    listeners=(
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":10351", (Served("/healthz", True),),
                 PLAIN_HEALTH),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),),
                 PLAIN_HEALTH),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert)", "--kubeconfig", "bindings, Clusters, leases",
                   k("cmd/scheduler/app/scheduler.go", "run"), resolve=from_kubeconfig("kubeconfig")),
        Connection("karmada-scheduler-estimator", "10352", "gRPC over TLS (client cert)",
                   "`<prefix>-<cluster>.<namespace>.svc.cluster.local` per Cluster (Pull ones too, unless "
                   "--disable-scheduler-estimator-in-pull-mode)",
                   "accurate replica estimates; a missing one costs a 5 s dial per address at every leadership "
                   "start and falls back to the general estimator",
                   k("pkg/estimator/client/service.go", "resolveCluster"), resolve=_estimators),
    ),
    uses=(
        Use("karmada", "cluster.karmada.io", "clusters", ("list", "watch"), k("pkg/scheduler/scheduler.go")),
        Use("karmada", "work.karmada.io", "resourcebindings", ("list", "watch", "patch"),
            k("pkg/scheduler/scheduler.go", "patchScheduleResultForResourceBinding")),
        Use("karmada", "work.karmada.io", "clusterresourcebindings", ("list", "watch", "patch"),
            k("pkg/scheduler/scheduler.go")),
        Use("karmada", "", "services", ("get",), k("pkg/estimator/client/service.go", "resolveCluster"),
            namespace="karmada-system"),
        Use("karmada", "coordination.k8s.io", "leases", ("get", "create", "update"),
            k("cmd/scheduler/app/scheduler.go", "run (resourcelock.New)"), namespace="karmada-system",
            names=("karmada-scheduler",)),
        Use("karmada", "", "events", ("create", "patch", "update"), k("cmd/scheduler/app/scheduler.go")),
    ),
    makes=(
        Makes("karmada", "Lease", "karmada-scheduler", True, "leader election (--leader-elect-resource-name)",
              k("cmd/scheduler/app/scheduler.go", "run"), namespace="karmada-system"),
    ),
    expects=(
        Expects("an estimator Service per Cluster it asks (when --enable-scheduler-estimator)",
                "the stack that joins the member (schedulerEstimator: true)",
                k("pkg/scheduler/scheduler.go", "establishEstimatorConnections")),
    ),
    exits=(
        Fact("estimator port outside 0-65535, negative timeout, empty --scheduler-name",
             k("cmd/scheduler/app/options/validation.go", "Options.Validate")),
        Fact("health or metrics listen failure (os.Exit(1)); leadership lost (klog.Fatalf)", PLAIN_HEALTH),
    ),
)

# ------------------------------------------------------------------------------ controller-manager

_CM = k("cmd/controller-manager/app/controllermanager.go", "Run")

CLIENT_HEALTH_ENV = (
    EnvVar(flags.HTTP2_READ_IDLE_ENV, False, "seconds without a frame before client-go pings an HTTP/2 connection "
           "(default 30; 0 disables the check); rendered only from failover.clientReadIdleSeconds",
           Src("kubernetes/apimachinery", "v0.35.3", "pkg/util/net/http.go", "readIdleTimeoutSeconds")),
    EnvVar(flags.HTTP2_PING_TIMEOUT_ENV, False, "seconds client-go waits for that ping's answer before it closes "
           "the connection (default 15); rendered only from failover.clientPingTimeoutSeconds",
           Src("kubernetes/apimachinery", "v0.35.3", "pkg/util/net/http.go", "pingTimeoutSeconds")),
)
"""client-go's HTTP/2 connection health check, read by every client-go transport (karmada v1.18.2 builds on
client-go v0.35.3): how long a request on a connection to a hub server that died without a reset hangs."""

CONTROLLER_MANAGER = Contract(
    key="karmada-controller-manager", title="karmada-controller-manager", upstream=KARMADA,
    match=Match(command="karmada-controller-manager"),
    rendered_by="components/karmada/control_plane.py, flags/controller_manager.py",
    env=CLIENT_HEALTH_ENV,
    files=(
        FileFlag("kubeconfig", "read", "karmada-apiserver (GetConfig error panics)", _CM),
        FileFlag("cluster-api-kubeconfig", "read", "CAPI management cluster for built-in auto-join (not rendered)",
                 k("cmd/controller-manager/app/options/options.go")),
    ),
    listeners=(
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":10357",
                 (Served("/healthz", True, subtree=True),), _CM, note="one check, `ping`; no /readyz"),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),), METRICS),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert)", "--kubeconfig", "every controller", _CM,
                   resolve=from_kubeconfig("kubeconfig")),
        Connection("member kube-apiserver", "spec.apiEndpoint", "HTTPS (token from Cluster.spec.secretRef)",
                   "Push Clusters only", "cluster status and Work execution for Push members",
                   k("pkg/util/membercluster_client.go", "BuildClusterConfig"), external=True),
    ),
    uses=(
        Use("karmada", "*", "*", ("*",), _CM),
    ),
    makes=(
        Makes("karmada", "Namespace", "karmada-es-<each-cluster>", True,
              "for every Cluster (get-then-create, adopts an existing one); deleted with the Cluster",
              k("pkg/controllers/cluster/cluster_controller.go", "createExecutionSpace, removeExecutionSpace")),
        Makes("karmada", "Lease", "karmada-controller-manager", True, "leader election", _CM,
              namespace="karmada-system"),
    ),
    expects=(
        Expects("all Karmada CRDs and the cluster.karmada.io APIService (informers, StartControllers fail without)",
                "the plan (KarmadaBootstrap)", _CM),
        Expects("Push Clusters' Secrets `token` and `caBundle`", "the plan (MemberCluster)",
                k("pkg/util/membercluster_client.go", "BuildClusterConfig")),
    ),
    exits=(
        Fact("removed flags (--failover-eviction-timeout, --cluster-lease-duration, "
             "--cluster-lease-renew-interval-fraction) are `unknown flag`", k("cmd/controller-manager/app/options/"
                                                                              "options.go", "Options.AddFlags")),
        Fact("non-positive periods, bad namespace regexes, purge mode not Gracefully/Directly, negative eviction rate",
             k("cmd/controller-manager/app/options/validation.go", "Options.Validate")),
    ),
)

# -------------------------------------------------------------------------------------- webhook

_WH = k("cmd/webhook/app/webhook.go", "Run")
WEBHOOK_PATHS = (
    "/mutate-propagationpolicy", "/mutate-clusterpropagationpolicy", "/mutate-overridepolicy",
    "/mutate-resourcebinding", "/mutate-clusterresourcebinding", "/mutate-work", "/mutate-federatedhpa",
    "/mutate-multiclusterservice", "/validate-propagationpolicy", "/validate-clusterpropagationpolicy",
    "/validate-overridepolicy", "/validate-clusteroverridepolicy", "/validate-resourceinterpreterwebhookconfiguration",
    "/validate-resourceinterpretercustomization", "/validate-federatedresourcequota", "/validate-multiclusteringress",
    "/validate-federatedhpa", "/validate-cronfederatedhpa", "/validate-multiclusterservice",
    "/validate-resourcebinding", "/validate-clustertaintpolicy", "/validate-resourcedeletionprotection", "/convert",
)
"""Every path cmd/webhook/app/webhook.go `Run` registers on the webhook server at v1.18.2."""

WEBHOOK = Contract(
    key="karmada-webhook", title="karmada-webhook", upstream=KARMADA, match=Match(command="karmada-webhook"),
    rendered_by="components/karmada/control_plane.py, flags/webhook.py",
    files=(
        FileFlag("kubeconfig", "read", "karmada-apiserver (GetConfig error panics)", _WH),
        FileFlag("cert-dir", "dir", "serving cert and key, watched by the certwatcher; missing: Start fails",
                 k("cmd/webhook/app/options/options.go", "Options.AddFlags"),
                 default="/tmp/k8s-webhook-server/serving-certs",
                 names=(("tls-cert-file-name", "tls.crt"), ("tls-private-key-file-name", "tls.key"))),
    ),
    listeners=(
        Listener("secure", "HTTPS", "secure-port", "port", "8443",
                 (*(Served(p, True) for p in WEBHOOK_PATHS), Served(flags.WEBHOOK_HEALTH_PATH, True)), _WH,
                 note="no client CA (ClientCAName unset): no client certificate required; `/readyz/` is a "
                      "check-less healthz.Handler (`/readyz` is only redirected to it)"),
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":8000", (), HEALTH_SERVER,
                 note="Run adds no healthz/readyz check: the listener serves nothing"),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),), METRICS),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert)", "--kubeconfig",
                   "cached reads of interpreter customizations and quotas; FRQ status", _WH,
                   resolve=from_kubeconfig("kubeconfig")),
    ),
    uses=(
        Use("karmada", "config.karmada.io", "resourceinterpretercustomizations", ("list", "watch"),
            k("pkg/webhook/resourceinterpretercustomization/validating.go")),
        Use("karmada", "policy.karmada.io", "federatedresourcequotas", ("list", "watch"),
            k("pkg/webhook/resourcebinding/validating.go")),
        Use("karmada", "policy.karmada.io", "federatedresourcequotas/status", ("update",),
            k("pkg/webhook/resourcebinding/validating.go", "ValidatingAdmission (FederatedQuotaEnforcement)")),
    ),
    expects=(
        Expects("Mutating/ValidatingWebhookConfigurations and the binding CRDs' conversion pointing at its Service",
                "the plan (KarmadaBootstrap)", k("artifacts/deploy/webhook-configuration.yaml")),
    ),
    exits=(
        Fact("--bind-address not an IP (an unexpanded `$(POD_IP)` exits), secure port outside 0-65535",
             k("cmd/webhook/app/options/validation.go", "Options.Validate")),
        Fact("cert files missing, port or metrics bind failure: Start returns an error", _WH),
    ),
    facts=(
        Fact("Karmada's own manifest probes only `readinessProbe: GET /readyz :8443 HTTPS`",
             k("artifacts/deploy/karmada-webhook.yaml")),
        Fact("no leader election (`LeaderElection: false`): every replica serves", _WH),
    ),
)

# ------------------------------------------------------------------------------ scheduler-estimator

_EST = k("cmd/scheduler-estimator/app/scheduler-estimator.go", "run")

ESTIMATOR = Contract(
    key="karmada-scheduler-estimator", title="karmada-scheduler-estimator", upstream=KARMADA,
    match=Match(command="karmada-scheduler-estimator"),
    rendered_by="components/fleet/member.py, karmada/manifests.py scheduler_estimator_workload, flags/estimator.py",
    files=(
        FileFlag("kubeconfig", "read", "the member cluster's API", _EST),
        *_read("grpc-auth-cert-file", "grpc-auth-key-file", "grpc-client-ca-file",
               why="gRPC TLS; with a client CA, RequireAndVerifyClientCert (either cert/key empty: plaintext)",
               source=k("pkg/util/grpcconnection/config.go", "ServerConfig.NewServer")),
    ),
    listeners=(
        Listener("grpc", "TCP", "server-port", "port", "10352", (), k("pkg/estimator/server/server.go", "Start"),
                 note="gRPC over TLS on all interfaces; opens only after the member informers synced; no gRPC "
                      "health service"),
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":10351", (Served("/healthz", True),),
                 _EST, note="a constant 200, not the gRPC state"),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),), _EST),
    ),
    connections=(
        Connection("member kube-apiserver", "6443", "HTTPS", "--kubeconfig", "nodes, pods, replicasets, deployments",
                   _EST, external=True),
    ),
    uses=(
        *(Use("member", g, r, ("list", "watch"), k("pkg/estimator/server/server.go", "NewEstimatorServer"),
              credential="member-admin")
          for g, r in (("", "nodes"), ("", "pods"), ("apps", "replicasets"), ("apps", "deployments"))),
    ),
    exits=(
        Fact("empty --cluster-name, port outside 0-65535", k("cmd/scheduler-estimator/app/options/validation.go",
                                                           "Options.Validate")),
        Fact("unreadable TLS files or gRPC listen failure; health/metrics listen failure (os.Exit(1))",
             k("pkg/estimator/server/server.go", "Start")),
    ),
)

# ------------------------------------------------------------------------------------------ agent

_AGENT = k("cmd/agent/app/agent.go", "run")
_REGISTER = k("pkg/util/cluster.go", "CreateOrUpdateClusterObject")

AGENT = Contract(
    key="karmada-agent", title="karmada-agent (in a Pull member)", upstream=KARMADA,
    match=Match(command="karmada-agent"),
    rendered_by="components/fleet/member.py, fleet/member_docs.py agent_deployment, karmada/flags/agent.py",
    runs_in="each Pull member, namespace karmada-system",
    env=(
        EnvVar("KUBERNETES_SERVICE_HOST", True, "in-cluster config of its own member (a mounted service account "
               "token too); also the silent fallback when the --karmada-kubeconfig file is missing",
               k("pkg/karmadactl/util/apiclient/apiclient.go", "RestConfig")),
        *CLIENT_HEALTH_ENV,
    ),
    files=(
        FileFlag("karmada-kubeconfig", "read", "the karmada-apiserver; if the file does not exist the agent falls "
                 "back to in-cluster config (its own member) without an error", k("pkg/karmadactl/util/apiclient/"
                                                                                 "apiclient.go", "RestConfig")),
        FileFlag("kubeconfig", "read", "its member (empty: in-cluster)", cr("pkg/client/config/config.go",
                                                                           "loadConfig")),
    ),
    listeners=(
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":10357",
                 (Served("/healthz", True, subtree=True),), _AGENT, note="one check, `ping`; no /readyz"),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),), METRICS),
    ),
    connections=(
        Connection(APISERVER_TO, "32443", "HTTPS (client cert CN system:karmada:agent:<cluster>)",
                   "--karmada-kubeconfig (written by the join: the hub's karmadaApiEndpoint, the API name on the "
                   "hub servers' addresses, karmada-apiserver's NodePort)",
                   "registration, Cluster status and lease, Works of its execution namespace", _AGENT,
                   resolve=from_kubeconfig("karmada-kubeconfig")),
        Connection("member kube-apiserver", "443", "HTTPS (service account token)", "in-cluster",
                   "applies Works, reads status", _AGENT, external=True),
    ),
    uses=(
        Use("karmada", "cluster.karmada.io", "clusters", ("list", "watch"), k("pkg/util/cluster.go",
                                                                             "ClusterRegisterOption.Validate")),
        Use("karmada", "cluster.karmada.io", "clusters", ("get",), _REGISTER, names=("<cluster>",)),
        Use("karmada", "cluster.karmada.io", "clusters/status", ("update",),
            k("pkg/util/helper/status.go", "UpdateStatus"), names=("<cluster>",)),
        Use("karmada", "", "namespaces", ("get",), k("pkg/util/namespace.go", "EnsureNamespaceExist"),
            names=("karmada-cluster",)),
        Use("karmada", "coordination.k8s.io", "leases", ("get", "update"),
            k("pkg/controllers/status/cluster_status_controller.go", "initLeaseController"),
            namespace="karmada-cluster", names=("<cluster>",)),
        Use("karmada", "coordination.k8s.io", "leases", ("create",),
            k("pkg/controllers/status/cluster_status_controller.go", "initLeaseController"),
            namespace="karmada-cluster"),
        Use("karmada", "coordination.k8s.io", "leases", ("get", "update"), _AGENT, namespace="karmada-system",
            names=("karmada-agent-<cluster>",)),
        Use("karmada", "coordination.k8s.io", "leases", ("create",), _AGENT, namespace="karmada-system"),
        Use("karmada", "certificates.k8s.io", "certificatesigningrequests", ("create", "get"),
            k("pkg/controllers/certificate/cert_rotation_controller.go", "createCSRInControlPlane")),
        Use("karmada", "", "events", ("create", "patch", "update"), _AGENT),
        Use("karmada", "work.karmada.io", "works", ("get", "list", "watch", "create", "update", "delete"),
            k("pkg/controllers/execution/execution_controller.go"), namespace="karmada-es-<cluster>"),
        Use("karmada", "work.karmada.io", "works/status", ("update",),
            k("pkg/controllers/status/work_status_controller.go"), namespace="karmada-es-<cluster>"),
        Use("karmada", "config.karmada.io", "resourceinterpreterwebhookconfigurations", ("list", "watch"),
            k("pkg/resourceinterpreter/interpreter.go")),
        Use("karmada", "config.karmada.io", "resourceinterpretercustomizations", ("list", "watch"),
            k("pkg/resourceinterpreter/interpreter.go")),
        Use("karmada", "", "services", ("list", "watch"), k("cmd/agent/app/agent.go", "setupControllers "
                                                            "(WaitForCacheSync blocks if forbidden)")),
        Use("member", "*", "*", ("*",), _AGENT, credential="serviceaccount"),
    ),
    makes=(
        Makes("karmada", "Lease", "<cluster>", True, "cluster heartbeat", k("pkg/util/clusterlease.go"),
              namespace="karmada-cluster"),
        Makes("karmada", "Lease", "karmada-agent-<cluster>", True, "leader election", _AGENT,
              namespace="karmada-system"),
        Makes("karmada", "Namespace", "karmada-cluster", False, "at start if missing (get-then-create)",
              k("pkg/util/namespace.go", "EnsureNamespaceExist")),
        Makes("member", "Namespace", "karmada-cluster", False, "at start if missing", k("pkg/util/credential.go",
                                                                                       "ObtainCredentialsFromMemberCluster")),
    ),
    expects=(
        Expects("its hub RBAC (ClusterRole, agent-lease Role in karmada-cluster, agent-leader Role in "
                "karmada-system, agent-work Role in karmada-es-<cluster>) before it starts: registration fails "
                "(exit) without it", "the hub stack (member_docs.pull_hub_objects)", _AGENT),
        Expects("Secret `karmada-system/karmada-kubeconfig` (key `karmada-kubeconfig`, a client certificate for "
                "CN system:karmada:agent:<cluster>): the pods wait for the mount", "the join Job (pull-join)",
                k("pkg/controllers/certificate/cert_rotation_controller.go", "KarmadaKubeconfigName")),
        Expects("a Cluster of its name with spec.id = its kube-system UID (else `the cluster ID ... or the cluster "
                "name ... has been registered`, exit) and exactly the spec it derives from its flags (else it creates "
                "or updates it, which its RBAC refuses: exit)", "the hub stack (member_docs.cluster_object, with the "
                "member's clusterId)", k("pkg/util/cluster.go", "CreateOrUpdateClusterObject")),
    ),
    exits=(
        Fact("cluster name not a DNS-1123 label of at most 48 characters; negative status/lease durations",
             k("cmd/agent/app/options/validation.go", "Options.Validate")),
        Fact("any error of ObtainClusterID, Validate, credential reporting or registration (before the manager "
             "starts); then NewManager (health listen), informer sync, Start", _AGENT),
    ),
    facts=(
        Fact("`certRotation` is off unless --controllers names it (the plan does: `*,certRotation`); it renews the "
             "certificate through a CSR with the old subject when a fifth of its life is left and rewrites the "
             "member's `karmada-system/karmada-kubeconfig` (get, update: the member service account)",
             k("cmd/agent/app/agent.go", "controllersDisabledByDefault")),
        Fact("`--report-secrets=None`: no member credential or impersonator ServiceAccount, Secret or ClusterRole "
             "is made, and nothing is written to the hub's karmada-cluster Secrets (the karmada-cluster namespace "
             "is still ensured on both sides)", k("pkg/util/credential.go", "ObtainCredentialsFromMemberCluster")),
        Fact("the agent has no flag for Cluster labels", k("cmd/agent/app/options/options.go", "Options.AddFlags")),
        Fact("registration creates the Cluster when none of its name exists and updates it when the spec it derives "
             "(syncMode Pull, apiEndpoint, proxyURL, id, provider, zones, region, insecureSkipTLSVerification, secret "
             "references) differs from the stored one; equal, it writes nothing",
             k("cmd/agent/app/agent.go", "generateClusterInControllerPlane")),
    ),
    kubeconfig_flags=("karmada-kubeconfig",),
)

# ---------------------------------------------------------------------------------------- descheduler

_DESCHED = k("cmd/descheduler/app/descheduler.go", "run")
_DESCHED_CORE = k("pkg/descheduler/descheduler.go", "NewDescheduler")

DESCHEDULER = Contract(
    key="karmada-descheduler", title="karmada-descheduler", upstream=KARMADA,
    match=Match(command="karmada-descheduler"),
    rendered_by="components/karmada/control_plane.py, manifests.py descheduler_workload, flags/descheduler.py",
    files=(
        FileFlag("kubeconfig", "read", "karmada-apiserver (no service account token is mounted)", _DESCHED),
        *_read("scheduler-estimator-ca-file", "scheduler-estimator-cert-file", "scheduler-estimator-key-file",
               why="estimator mTLS (CA empty and not insecure: a plaintext dial, refused by a TLS estimator)",
               source=k("pkg/util/grpcconnection/config.go", "ClientConfig.DialWithTimeOut")),
    ),
    listeners=(
        Listener("health", "HTTP", "health-probe-bind-address", "hostport", ":10358", (Served("/healthz", True),),
                 k("cmd/descheduler/app/descheduler.go", "serveHealthzAndMetrics")),
        Listener("metrics", "HTTP", "metrics-bind-address", "hostport", ":8080", (Served("/metrics", True),),
                 k("cmd/descheduler/app/descheduler.go", "serveHealthzAndMetrics")),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert CN system:karmada:karmada-descheduler)", "--kubeconfig",
                   "bindings, Clusters, its lease", _DESCHED, resolve=from_kubeconfig("kubeconfig")),
        Connection("karmada-scheduler-estimator", "10352", "gRPC over TLS (client cert)",
                   "`<prefix>-<cluster>.<namespace>.svc.cluster.local` for every Cluster (no Pull-mode opt-out)",
                   "GetUnschedulableReplicas; a missing estimator means no descheduling there, after 5 s dials",
                   k("pkg/descheduler/descheduler.go", "establishEstimatorConnections"),
                   resolve=lambda view: _estimators(view, always=True)),
    ),
    uses=(
        Use("karmada", "work.karmada.io", "resourcebindings", ("list", "watch", "update"),
            k("pkg/descheduler/descheduler.go", "updateScheduleResult")),
        Use("karmada", "cluster.karmada.io", "clusters", ("list", "watch"), _DESCHED_CORE),
        Use("karmada", "", "services", ("get",), k("pkg/estimator/client/service.go", "resolveCluster"),
            namespace="karmada-system"),
        Use("karmada", "coordination.k8s.io", "leases", ("get", "create", "update"), _DESCHED,
            namespace="karmada-system", names=("karmada-descheduler",)),
        Use("karmada", "", "events", ("create", "patch", "update"),
            k("pkg/descheduler/descheduler.go", "recordDescheduleResultEventForResourceBinding")),
    ),
    makes=(
        Makes("karmada", "Lease", "karmada-descheduler", True, "leader election (name fixed)", _DESCHED,
              namespace="karmada-system"),
    ),
    expects=(
        Expects("an estimator for every Cluster", "the stack that joins the member (schedulerEstimator: true)",
                k("pkg/descheduler/descheduler.go", "establishEstimatorConnections")),
    ),
    exits=(
        Fact("`--feature-gates` is `unknown flag` (it registers none); estimator port outside 0-65535, negative "
             "interval or threshold", k("cmd/descheduler/app/options/validation.go", "Options.Validate")),
        Fact("health or metrics listen failure; leadership lost (klog.Fatalf)", _DESCHED),
    ),
    facts=(
        Fact("it only lowers a Divided (dynamic/aggregated) Deployment's share where replicas stayed unschedulable "
             "past --unschedulable-threshold; it never moves replicas back", k("pkg/descheduler/core/filter.go",
                                                                             "FilterBindings")),
    ),
)

# ------------------------------------------------------------------------------------------ addons

_SEARCH = k("cmd/karmada-search/app/karmada-search.go", "run")
_SEARCH_OPTS = k("cmd/karmada-search/app/options/options.go", "Options.AddFlags")

SEARCH = Contract(
    key="karmada-search", title="karmada-search (addon)", upstream=KARMADA,
    match=Match(command="karmada-search"),
    rendered_by="components/karmada/addons.py, addons_docs.py, flags/search.py",
    files=(
        *_read("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig",
               why="karmada-apiserver (informers, TokenReview, SubjectAccessReview)", source=_SEARCH_OPTS),
        *_read("etcd-cafile", "etcd-certfile", "etcd-keyfile", why="etcd client TLS (its ResourceRegistries)",
               source=apis("pkg/server/options/etcd.go", "EtcdOptions.AddFlags")),
        *_read("tls-cert-file", "tls-private-key-file",
               why="serving cert (without them a self-signed pair for localhost is made: "
                   "MaybeDefaultWithSelfSignedCerts, which the APIService's caBundle would not verify)",
               source=_SEARCH),
        FileFlag("audit-log-path", "write", "audit log; `-` is stdout", apis("pkg/server/options/audit.go"),
                 ignore=("-",)),
    ),
    listeners=(
        Listener("secure", "HTTPS", "secure-port", "port", "443",
                 (Served("/healthz", True), Served("/livez", True), Served("/readyz", True),
                  Served("/apis/search.karmada.io", False, subtree=True), Served("/metrics", False)),
                 apis("pkg/server/options/authorization.go", "NewDelegatingAuthorizationOptions (AlwaysAllowPaths)"),
                 note="a generic apiserver: anonymous reaches exactly /healthz, /livez, /readyz; everything else is "
                      "a SubjectAccessReview for the caller"),
    ),
    connections=(
        Connection("etcd", "2379", "HTTPS (client cert)", "--etcd-servers",
                   "stores ResourceRegistry objects under /registry", _SEARCH_OPTS,
                   resolve=from_url_flag("etcd-servers", many=True)),
        Connection(APISERVER_TO, "5443", "HTTPS (client cert CN system:karmada:karmada-search)",
                   "--kubeconfig, --authentication-kubeconfig, --authorization-kubeconfig",
                   "Cluster, ResourceRegistry and Secret informers, TokenReview, SubjectAccessReview; requests under "
                   "/proxying/karmada/proxy are forwarded there with this identity, not the caller's",
                   k("pkg/search/proxy/framework/plugins/karmada/karmada.go", "Karmada.Connect"),
                   resolve=from_kubeconfig("kubeconfig")),
        Connection("member kube-apiserver", "Cluster.spec.apiEndpoint", "HTTPS (the Push member's credential Secret)",
                   "Cluster.spec.secretRef", "list/watch the registered resource types of the registered members",
                   k("pkg/util/membercluster_client.go", "BuildClusterConfig"), external=True),
    ),
    uses=(
        Use("karmada", "", "configmaps", ("get", "list", "watch"), apis("pkg/server/options/authentication.go",
                                                                       "DelegatingAuthenticationOptions.ApplyTo"),
            namespace="kube-system", names=("extension-apiserver-authentication",)),
        Use("karmada", "authentication.k8s.io", "tokenreviews", ("create",),
            apis("pkg/server/options/authentication.go")),
        Use("karmada", "authorization.k8s.io", "subjectaccessreviews", ("create",),
            apis("pkg/server/options/authorization.go")),
        Use("karmada", "cluster.karmada.io", "clusters", ("list", "watch"), k("pkg/search/controller.go",
                                                                             "NewController")),
        Use("karmada", "search.karmada.io", "resourceregistries", ("list", "watch"),
            k("pkg/search/controller.go", "addAllEventHandlers")),
        Use("karmada", "", "secrets", ("list", "watch"), k("pkg/search/proxy/controller.go", "NewController")),
        Use("karmada", "", "secrets", ("get",), k("pkg/util/membercluster_client.go", "BuildClusterConfig"),
            namespace="karmada-cluster"),
    ),
    expects=(
        Expects("ConfigMap kube-system/extension-apiserver-authentication (read at start)", "karmada-apiserver",
                apis("pkg/server/options/authentication.go", "DelegatingAuthenticationOptions.ApplyTo")),
        Expects("APIService v1alpha1.search.karmada.io and its ExternalName Service", "the plan (KarmadaAddons)",
                k("artifacts/deploy/karmada-search-apiservice.yaml")),
        Expects("a ResourceRegistry naming what to cache (none: nothing is cached)", "the plan (KarmadaAddons)",
                k("pkg/search/controller.go", "getClusterMatchedRegistries")),
        Expects("a `secretRef` on every registered Cluster (Push members; a Pull member's agent reports none)",
                "the plan (MemberRegistry)", k("pkg/util/membercluster_client.go", "BuildClusterConfig")),
    ),
    exits=(
        Fact("option validation (etcd servers, serving, audit) or config errors (unreadable kubeconfig, the "
             "authentication ConfigMap, etcd TLS files): RunE returns the error",
             k("cmd/karmada-search/app/options/validation.go", "Options.Validate")),
        Fact("`--disable-proxy` panics at start: the post-start hook `search-storage-cache-readiness` calls the nil "
             "proxy controller's Hook, which dereferences it", k("pkg/search/proxy/controller.go", "Controller.Hook")),
    ),
    facts=(
        Fact("it registers no --feature-gates and has no leader election: every replica caches everything and serves",
             _SEARCH),
        Fact("the proxy's Secret informer lists Secrets in every namespace of the karmada-apiserver",
             k("pkg/search/proxy/controller.go", "NewController")),
        Fact("`/search/cache/...` answers from the search controller's per-member informers, with each object "
             "annotated with its cluster", k("pkg/registry/search/storage/cache.go", "newCacheHandler")),
    ),
    kubeconfig_flags=("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"),
)

DASHBOARD = "karmada-io/dashboard v0.4.0"


def dash(path: str, symbol: str = "") -> Src:
    return Src("karmada-io/dashboard", "v0.4.0", path, symbol)


_DASH_HEALTH = (Served("/livez", True), Served("/readyz", True))

DASHBOARD_API = Contract(
    key="karmada-dashboard-api", title="karmada-dashboard-api (addon)", upstream=DASHBOARD,
    match=Match(command="karmada-dashboard-api"),
    rendered_by="components/karmada/addons.py, addons_docs.py dashboard_api_workload",
    env=(
        EnvVar("KUBERNETES_SERVICE_HOST", True, "the host API in-cluster (preferred over --kubeconfig)",
               dash("pkg/client/init.go", "InitKubeConfig")),
        EnvVar("KUBERNETES_SERVICE_PORT", True, "the host API in-cluster",
               dash("pkg/client/init.go", "InitKubeConfig")),
        EnvVar("GIN_MODE", False, "gin's release mode (less logging)", dash("cmd/api/app/router/setup.go", "init")),
    ),
    files=(
        FileFlag("karmada-kubeconfig", "read", "the karmada-apiserver: its own informers and checks; user requests "
                 "go there with the user's bearer token", dash("pkg/client/init.go", "InitKarmadaConfig")),
    ),
    listeners=(
        Listener("http", "HTTP", "insecure-port", "port", "8000",
                 (*_DASH_HEALTH, Served("/api/v1", False, subtree=True)), dash("cmd/api/app/api.go", "serve"),
                 note="plain HTTP; /api/v1 needs an Authorization header (AuthMiddleware) whose token goes on to the "
                      "karmada-apiserver; --port (HTTPS) is never opened"),
    ),
    connections=(
        Connection(APISERVER_TO, "5443", "HTTPS (client cert CN system:karmada:karmada-dashboard; users' tokens)",
                   "--karmada-kubeconfig", "Clusters, ResourceBindings, Works; every /api/v1 request with the "
                   "caller's token", dash("pkg/client/auth.go", "buildAuthInfo"),
                   resolve=from_kubeconfig("karmada-kubeconfig")),
        Connection("host kube-apiserver", "443", "HTTPS (service account token)", "in-cluster config",
                   "/version at start (fatal without it)", dash("cmd/api/app/api.go", "ensureAPIServerConnectionOrDie"),
                   external=True),
    ),
    uses=(
        Use("karmada", "cluster.karmada.io", "clusters", ("get",), dash("cmd/api/app/router/middleware.go",
                                                                         "EnsureMemberClusterMiddleware")),
        Use("karmada", "work.karmada.io", "resourcebindings", ("list", "watch"),
            dash("pkg/informer/informer.go", "Init")),
        Use("karmada", "work.karmada.io", "works", ("list", "watch"), dash("pkg/informer/informer.go", "Init")),
    ),
    exits=(
        Fact("unreadable --karmada-kubeconfig (os.Exit(1)); the host API's or the karmada-apiserver's /version "
             "failing at start (klog.Fatalf)", dash("cmd/api/app/api.go", "ensureAPIServerConnectionOrDie")),
    ),
    facts=(
        Fact("a ConfigMap informer over every namespace of the host (the UI settings) and, for the overview, an exec "
             "into a controller-manager pod and a terminal that creates pods: its host service account is granted "
             "none of them, so those views fall back or are refused", dash("pkg/config/config.go",
                                                                           "InitDashboardConfig")),
        Fact("member views (/api/v1/member/<cluster>) go through clusters/proxy with its own identity, which is not "
             "granted: they are refused", dash("pkg/client/init.go", "InClusterClientForMemberCluster")),
    ),
    kubeconfig_flags=("karmada-kubeconfig",),
)

DASHBOARD_WEB = Contract(
    key="karmada-dashboard-web", title="karmada-dashboard-web (addon)", upstream=DASHBOARD,
    match=Match(command="karmada-dashboard-web"),
    rendered_by="components/karmada/addons.py, addons_docs.py dashboard_web_workload",
    env=(EnvVar("GIN_MODE", False, "gin's release mode", dash("cmd/api/app/router/setup.go", "init")),),
    files=(
        FileFlag("dashboard-config-path", "read", "the UI settings; missing is fatal",
                 dash("pkg/config/config.go", "InitDashboardConfigFromMountFile"),
                 default="./config/dashboard-config.yaml"),
    ),
    listeners=(
        Listener("http", "HTTP", "insecure-port", "port", "8000", (*_DASH_HEALTH, Served("/", True, subtree=True)),
                 dash("cmd/web/app/web.go", "serve"),
                 note="plain HTTP: the UI, and /api/* forwarded (with the caller's Authorization header) to "
                      "--api-proxy-endpoint"),
    ),
    connections=(
        Connection("karmada-dashboard-api", "8000", "HTTP", "--api-proxy-endpoint", "every /api request",
                   dash("cmd/web/app/web.go", "generateAPIProxy"), resolve=from_url_flag("api-proxy-endpoint")),
    ),
    exits=(Fact("--dashboard-config-path missing or not YAML", dash("cmd/web/app/web.go", "run")),),
    facts=(Fact("--static-dir is the UI the image ships at /static (read only; cluster/images/build-web.Dockerfile)",
                dash("cmd/web/app/web.go", "serve")),),
)

CONTRACTS: tuple[Contract, ...] = (ETCD, ETCD_PREPARE, KARMADA_APISERVER, AGGREGATED_APISERVER, KCM, SCHEDULER,
                                   CONTROLLER_MANAGER, WEBHOOK, DESCHEDULER, ESTIMATOR, AGENT, SEARCH, DASHBOARD_API,
                                   DASHBOARD_WEB)

PULUMI_MAY_OWN: tuple[tuple[str, str, str, str], ...] = (
    ("host", "CustomResourceDefinition", "plans.upgrade.cattle.io",
     "system-upgrade-controller registers its Plan CRD at start and updates it to its embedded copy; the program "
     "installs the same file of the same tag (sha256-checked), so that update changes nothing, and the Plan it "
     "renders needs the CRD before the controller runs (rancher/system-upgrade-controller v0.20.1 "
     "pkg/upgrade/controller.go registerCRD)"),
    ("karmada", "Namespace", "karmada-es-<pull-cluster>",
     "a Pull agent caches Works only in its execution namespace and its agent-work Role must exist there before it "
     "starts; karmada-controller-manager adopts the namespace (createExecutionSpace is get-then-create) and deletes "
     "it with the Cluster, so a Pull member is removed Cluster first (docs/runbooks/members.md); karmadactl register "
     "pre-creates it the same way (pkg/karmadactl/register/register.go)"),
)
"""Objects a binary also manages that the program owns anyway, with the reason (the ownership check's only
exceptions)."""
