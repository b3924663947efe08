"""The runtime contract of the traffic containers on the hub: external-dns v0.22.0, its Hetzner webhook sidecar
and the status refresher (agents/status_refresher.py), as data with sources (vocabulary: kube/contract.py)."""

from __future__ import annotations

from collections.abc import Sequence

from components.kube.contract import (
    Connection,
    Contract,
    Endpoint,
    EnvVar,
    Expects,
    Fact,
    FileFlag,
    Listener,
    Match,
    Served,
    Src,
    Use,
    View,
    from_url_flag,
)
from components.traffic import failover_docs
from components.traffic import nameserver_docs as ns
from components.traffic import refresher_docs as refresher
from components.versions import EXTERNAL_DNS_IMAGE, HETZNER_WEBHOOK_IMAGE, KNOT_IMAGE, KNOT_VERSION


def edns(path: str, symbol: str = "") -> Src:
    return Src("kubernetes-sigs/external-dns", "v0.22.0", path, symbol)


def hz(path: str, symbol: str = "") -> Src:
    """hetzner/external-dns-hetzner-webhook: no tag of the v0.3.4 image was fetchable; main.go read at 6df4106
    (and 8569bb7, the v0.3.4-era version), the metrics server in jooola/external-dns-hetzner-webhook (the repo
    before its transfer)."""
    repo = "jooola/external-dns-hetzner-webhook" if path.startswith("internal/metrics") else \
        "hetzner/external-dns-hetzner-webhook"
    return Src(repo, "a5a650a" if path.startswith("internal/metrics") else "6df4106", path, symbol, pinned=False)


def ours(path: str, symbol: str = "") -> Src:
    return Src("karmada-hub", "this checkout", path, symbol)


def _webhook_url(view: View) -> Sequence[Endpoint]:
    return from_url_flag("webhook-provider-url")(view) or [Endpoint("localhost", 8888, "HTTP")]


_EXECUTE = edns("controller/execute.go", "execute")
_CRD = edns("source/crd.go", "NewCRDSource")
SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
"""Where client-go's in-cluster config reads the service account token (rest.InClusterConfig)."""
_IN_CLUSTER = Src("karmada-io/karmada", "v1.18.2", "vendor/k8s.io/client-go/rest/config.go", "InClusterConfig")

EXTERNAL_DNS = Contract(
    key="external-dns", title="external-dns", upstream="kubernetes-sigs/external-dns v0.22.0",
    match=Match(image=EXTERNAL_DNS_IMAGE.rsplit(":", 1)[0]), rendered_by="components/traffic/docs.py "
    "external_dns_objects, external_dns_args", runs_in="host cluster, namespace external-dns",
    env=(
        EnvVar("KUBERNETES_SERVICE_HOST", True, "in-cluster config of the host cluster (no --kubeconfig): the "
               "projected service account token must be mounted", _IN_CLUSTER),
    ),
    files=(
        FileFlag("kubeconfig", "read", "a kubeconfig instead of in-cluster (not rendered)",
                 edns("pkg/apis/externaldns/types.go", "bindFlags")),
        FileFlag(None, "read", "in-cluster service account token (the CRD source reads the host cluster)",
                 _IN_CLUSTER, default=SA_TOKEN),
    ),
    listeners=(
        Listener("metrics", "HTTP", "metrics-address", "hostport", ":7979",
                 (Served("/healthz", True), Served("/metrics", True)), edns("controller/execute.go", "serveMetrics"),
                 note="/healthz is 200 as soon as the server listens"),
    ),
    connections=(
        Connection("host kube-apiserver", "443", "HTTPS (service account token)", "in-cluster",
                   "the DNSEndpoint cache of --namespace (controller-runtime); its status update", _CRD,
                   external=True),
        Connection("hetzner-webhook", "8888", "HTTP (localhost)", "--webhook-provider-url",
                   "negotiation at start (5 tries, then exit), then GET/POST /records, POST /adjustendpoints; "
                   "a transport error or client timeout (read + write timeout) is fatal",
                   edns("provider/webhook/webhook.go", "newProvider, requestWithRetry"), resolve=_webhook_url),
    ),
    uses=(
        Use("host", "externaldns.k8s.io", "dnsendpoints", ("list", "watch"), edns("source/crd.go",
                                                                                 "buildCacheOptions"),
            namespace="external-dns", credential="serviceaccount"),
        Use("host", "externaldns.k8s.io", "dnsendpoints/status", ("update",), edns("source/crd.go",
                                                                                  "crdSource.Endpoints"),
            namespace="external-dns", credential="serviceaccount"),
    ),
    expects=(
        Expects("the DNSEndpoint CRD (externaldns.k8s.io/v1alpha1) on the host cluster: the cache must sync",
                "the plan (traffic/dnsendpoint_crd.py)", _CRD),
    ),
    exits=(
        Fact("flag validation: --provider and --source required, --policy required (no default), "
             "annotation prefix ending in `/`",
             edns("pkg/apis/externaldns/validation/validation.go", "ValidateConfig")),
        Fact("the CRD source's cache not synced; webhook negotiation failed after 5 tries; any non-soft error "
             "of a run (transport errors and timeouts are not soft)", _EXECUTE),
    ),
    facts=(
        Fact("no leader election: one replica", edns("charts/external-dns/templates/deployment.yaml")),
    ),
    kubeconfig_flags=(),
)

_MAIN = hz("main.go", "main")
_METRICS = hz("internal/metrics/metrics.go", "Server.Serve")

HETZNER_WEBHOOK = Contract(
    key="hetzner-webhook", title="Hetzner webhook (external-dns sidecar)",
    upstream="hetzner/external-dns-hetzner-webhook v0.3.4 (docker.io/hetzner/external-dns-hetzner-webhook)",
    match=Match(image=HETZNER_WEBHOOK_IMAGE.rsplit(":", 1)[0]), rendered_by="components/traffic/docs.py "
    "external_dns_objects", runs_in="host cluster, namespace external-dns (sidecar of external-dns)",
    env=(
        EnvVar("HETZNER_TOKEN", True, "Hetzner Cloud API token (read/write on the zones' project)", _MAIN),
        EnvVar("WEBHOOK_ADDRESS", False, "provider listener, default localhost:8888", _MAIN),
        EnvVar("METRICS_ADDRESS", False, "health/metrics listener, default :8080", _MAIN),
        EnvVar("INCLUDE_DOMAIN_FILTER", False, "comma list of zones it may touch",
               hz("internal/provider/domain_filter.go", "getDomainFilter")),
    ),
    listeners=(
        Listener("provider", "HTTP", "WEBHOOK_ADDRESS", "env-hostport", "localhost:8888",
                 (Served("/", True), Served("/records", True), Served("/adjustendpoints", True)),
                 edns("provider/webhook/api/httpapi.go", "StartHTTPApi"), note="read/write timeouts 60 s"),
        Listener("metrics", "HTTP", "METRICS_ADDRESS", "env-hostport", ":8080",
                 (Served("/", True), Served("/healthz", True), Served("/ready", True), Served("/metrics", True)),
                 _METRICS, note="/, /healthz and /ready answer 200 only once the provider listener is bound "
                                "(503 before, and after SIGTERM); the port opens first"),
    ),
    connections=(
        Connection("Hetzner Cloud API", "443", "HTTPS (token)", "api.hetzner.cloud",
                   "zones and rrsets (15 s client timeout per call)", _MAIN, external=True),
    ),
    expects=(
        Expects("the DNS zone of `dns.domain` in the token's Hetzner Cloud project (no zone matching a name: that "
                "change fails, 500 to external-dns)", "the operator (docs/runbooks/first-deploy.md)",
                hz("internal/provider/helper.go", "findZoneByHostname")),
    ),
    exits=(
        Fact("HETZNER_TOKEN_FILE unreadable; unparsable ALLOW_RELATIVE_CNAME_TARGETS or WEBHOOK_MAX_BODY_SIZE; "
             "provider listener bind failure", _MAIN),
    ),
    kubeconfig_flags=(),
)


_FAILOVER = ours("agents/traffic_failover.py", "main")

TRAFFIC_FAILOVER = Contract(
    key="traffic-failover", title="traffic failover controller (agents/traffic_failover.py)",
    upstream=f"this program, run by {failover_docs.NAME} on python:3.12", match=Match(script=failover_docs.SCRIPT_KEY),
    rendered_by="components/traffic/failover_docs.py", runs_in="host cluster, namespace external-dns",
    env=(
        EnvVar("KUBERNETES_SERVICE_HOST", True, "the host API when --host-server is empty (in-cluster)", _FAILOVER),
    ),
    files=(
        FileFlag("karmada-ca-file", "read", "the Karmada CA", _FAILOVER),
        FileFlag("karmada-cert-file", "read", "client certificate (CN system:karmada:traffic-failover)", _FAILOVER),
        FileFlag("karmada-key-file", "read", "its key", _FAILOVER),
        FileFlag("host-ca-file", "read", "the host cluster's CA", _FAILOVER,
                 default="/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"),
        FileFlag("host-token-file", "read", "the projected service account token", _FAILOVER,
                 default="/var/run/secrets/kubernetes.io/serviceaccount/token"),
        FileFlag("zone-config", "read", "dns.mode self-hosted: the zone (SOA fields, NS set, static records)",
                 _FAILOVER),
        FileFlag("tsig-name-file", "read", "dns.mode self-hosted: the writer key's name", _FAILOVER),
        FileFlag("tsig-secret-file", "read", "dns.mode self-hosted: the writer key (base64)", _FAILOVER),
    ),
    listeners=(
        Listener("health", "HTTP", "health-port", "port", "8080", (Served("/healthz", True), Served("/readyz", True)),
                 ours("agents/traffic_failover.py", "serve_health"),
                 note="/healthz while the probe loop runs; /readyz once the leader decided every known name"),
    ),
    connections=(
        Connection("karmada-apiserver", "5443", "HTTPS (client cert)", "--karmada-server", "lists Ingresses",
                   _FAILOVER, resolve=from_url_flag("karmada-server")),
        Connection("host kube-apiserver", "443", "HTTPS (service account token)", "in-cluster",
                   "leases, DNSEndpoints, region ConfigMaps of its namespace", _FAILOVER, external=True),
        Connection("regional load balancers", "80, 443", "HTTP/HTTPS probes", "region ConfigMaps",
                   "health probes of every region for every published name", _FAILOVER, external=True),
        Connection("hub nameservers (dns.mode self-hosted)", "53", "DNS over TCP: RFC 2136 UPDATE and AXFR with "
                   "TSIG, SOA queries", "--nameserver, --secondary", "writes the zone to every hub server's Knot (host "
                   "network, the servers' private addresses), watches every nameserver's serial",
                   ours("agents/traffic_failover.py", "ZoneWriter"), external=True),
    ),
    uses=(
        Use("karmada", "networking.k8s.io", "ingresses", ("list",), _FAILOVER, credential="client-cert"),
        Use("host", "coordination.k8s.io", "leases", ("get", "list", "create", "update"), _FAILOVER,
            namespace="external-dns", credential="serviceaccount"),
        Use("host", "externaldns.k8s.io", "dnsendpoints", ("list", "create", "update", "delete"), _FAILOVER,
            namespace="external-dns", credential="serviceaccount"),
        Use("host", "", "configmaps", ("list",), _FAILOVER, namespace="external-dns", credential="serviceaccount"),
    ),
    exits=(
        Fact("unknown or missing argument (argparse, exit 2); unreadable TLS or token files; health port bind "
             "failure; dns.mode self-hosted without --zone-config, --nameserver or the key files", _FAILOVER),
    ),
    facts=(
        Fact("dns.mode self-hosted: the leader keeps the zone file in ConfigMap karmada-dns/dns-zone-snapshot (get, "
             "update, create: nameserver_docs.snapshot_rbac) for nameservers that start from nothing",
             ours("agents/traffic_failover.py", "Controller.write_snapshot")),
    ),
    kubeconfig_flags=(),
)


def knot(path: str, symbol: str = "") -> Src:
    return Src("CZ-NIC/knot", KNOT_VERSION, path, symbol, pinned=False)


_SEED = ours("agents/dns_zone_seed.py", "seed")

KNOT = Contract(
    key="knot", title="Knot DNS (knotd): the fleet's nameservers, dns.mode self-hosted",
    upstream=f"CZ-NIC/knot {KNOT_VERSION} ({KNOT_IMAGE}; the configuration is run by Debian's knot 3.2.6 in "
    "tests/integration/test_dns_lab.py)", match=Match(image=KNOT_IMAGE.rsplit(":", 1)[0]),
    rendered_by="components/traffic/nameserver_docs.py daemonset, knot_conf",
    runs_in=f"host cluster, namespace {ns.NAMESPACE}, host network",
    files=(
        FileFlag("config", "read", "knot.conf, written for this server by the seed init container", knot(
            "doc/man_knotd.rst", "-c, --config")),
    ),
    listeners=(
        Listener("dns", "TCP", None, "port", "53", (), knot("doc/reference.rst", "server.listen"),
                 note="UDP and TCP 53 on the server's public and private addresses (host network; listen addresses "
                 "bind before they exist: 'Non-local address binding is automatically enabled')"),
    ),
    connections=(
        Connection("secondaries", "53", "DNS NOTIFY (UDP) and outgoing transfers (TCP)", "knot.conf remote",
                   "notifies the operator's secondaries after each change; they transfer from it", knot(
                       "doc/reference.rst", "zone.notify"), external=True),
    ),
    facts=(
        Fact("starts as root to bind port 53 and switches to its `knot` user (server.user) before it serves; loads "
             "its zones before it answers (server.async-start off)", knot("doc/reference.rst", "server.user")),
        Fact("an UPDATE that sets the SOA serial keeps it (serial-policy only applies when the update leaves the "
             "serial alone)", knot("doc/reference.rst", "zone.serial-policy")),
    ),
    kubeconfig_flags=(),
)

DNS_ZONE_SEED = Contract(
    key="dns-zone-seed", title="nameserver zone seed (agents/dns_zone_seed.py)",
    upstream="this program, the knot DaemonSet's init container on python:3.12", match=Match(script=ns.SEED_SCRIPT),
    rendered_by="components/traffic/nameserver_docs.py daemonset, seed_args",
    runs_in=f"host cluster, namespace {ns.NAMESPACE}, host network, init container",
    files=(
        FileFlag("template", "read", "knot.conf with @LISTEN@", _SEED),
        FileFlag("zone-config", "read", "the zone's SOA fields and NS set (the base zone of a new fleet)", _SEED),
        FileFlag("nodes", "read", "node name -> the addresses it listens on", _SEED),
        FileFlag("tsig-name-file", "read", "the writer key's name (AXFR from the other servers)", _SEED),
        FileFlag("tsig-secret-file", "read", "the writer key", _SEED),
        FileFlag("out", "write", "knot.conf for this server", _SEED),
        FileFlag("storage", "dir", "the zone file and journal on the server's disk", _SEED),
    ),
    connections=(
        Connection("hub nameservers", "53", "DNS AXFR over TCP with TSIG", "--nodes", "the newest copy of the zone "
                   "from the other hub servers before knotd starts", _SEED, external=True),
    ),
    exits=(
        Fact("a node not in --nodes, or a template without @LISTEN@: exit 1 (the pod does not start, so nothing "
             "answers without the zone)", _SEED),
    ),
    kubeconfig_flags=(),
)


_REFRESHER = ours("agents/status_refresher.py", "main")

STATUS_REFRESHER = Contract(
    key="status-refresher", title="status refresher (agents/status_refresher.py)",
    upstream=f"this program, run by {refresher.NAME} on python:3.12", match=Match(script=refresher.SCRIPT_KEY),
    rendered_by="components/traffic/refresher_docs.py", runs_in="host cluster, namespace external-dns",
    files=(
        FileFlag("ca-file", "read", "the Karmada CA", _REFRESHER),
        FileFlag("cert-file", "read", "client certificate (CN system:karmada:status-refresher)", _REFRESHER),
        FileFlag("key-file", "read", "its key", _REFRESHER),
    ),
    listeners=(
        Listener("health", "HTTP", "health-port", "port", "8080", (Served("/healthz", True),), _REFRESHER,
                 note="200 while the last pass is younger than 3 x period + 30 s, else 503; other paths 503"),
    ),
    connections=(
        Connection("karmada-apiserver", "5443", "HTTPS (client cert)", "--server", "reads Clusters and Works, "
                   "annotates Ingress/Service templates", _REFRESHER, resolve=from_url_flag("server")),
    ),
    uses=(
        Use("karmada", "cluster.karmada.io", "clusters", ("list",), _REFRESHER, credential="client-cert"),
        Use("karmada", "work.karmada.io", "works", ("list",), _REFRESHER, namespace="karmada-es-<each-cluster>",
            credential="client-cert"),
        Use("karmada", "", "services", ("get", "patch"), _REFRESHER, credential="client-cert"),
        Use("karmada", "networking.k8s.io", "ingresses", ("get", "patch"), _REFRESHER, credential="client-cert"),
    ),
    exits=(
        Fact("unknown or missing argument (argparse, exit 2); unreadable TLS files; health port bind failure",
             _REFRESHER),
    ),
    kubeconfig_flags=(),
)

CONTRACTS: tuple[Contract, ...] = (EXTERNAL_DNS, HETZNER_WEBHOOK, TRAFFIC_FAILOVER, STATUS_REFRESHER, KNOT,
                                   DNS_ZONE_SEED)
