"""The runtime contract of the etcd backup job's two containers (etcdctl from the etcd image, then
agents/etcd_backup_upload.py), of the defragmentation job and of the hub exporter, and the registry of
every contract the program renders (the checks in tests/contract/ and docs/upstream-contract.md iterate
`all_contracts()`)."""

from __future__ import annotations

from components.fleet import contract as fleet_contract
from components.hetzner import contract as hetzner_contract
from components.karmada import contract as karmada_contract
from components.karmada import flags
from components.kube.contract import (
    Connection,
    Contract,
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
    from_url_flag,
)
from components.operations import etcd_backup_docs as backup
from components.operations import etcd_maintenance_docs as maintenance
from components.operations import k3s_upgrade_docs as suc
from components.operations import monitoring_docs as monitoring
from components.traffic import contract as traffic_contract


def _etcd(path: str, symbol: str = "") -> Src:
    return Src("etcd-io/etcd", "v3.6.6", path, symbol)


_UPLOAD = Src("karmada-hub", "this checkout", "agents/etcd_backup_upload.py", "main")
_SAVE = _etcd("etcdctl/ctlv3/command/snapshot_command.go", "snapshotSaveCommandFunc")

ETCD_SNAPSHOT = Contract(
    key="etcd-backup-snapshot", title="etcd backup: snapshot (etcdctl)", upstream="etcd-io/etcd v3.6.6",
    match=Match(command="etcdctl"), rendered_by="components/operations/etcd_backup_docs.py cron_job",
    files=(
        FileFlag("cacert", "read", "etcd CA", _etcd("etcdctl/ctlv3/ctl.go", "init")),
        FileFlag("cert", "read", "a SAN-less client cert of the etcd CA", _etcd("etcdctl/ctlv3/ctl.go", "init")),
        FileFlag("key", "read", "its key", _etcd("etcdctl/ctlv3/ctl.go", "init")),
        FileFlag(None, "write", "the snapshot (written as <file>.part, then renamed)", _SAVE, position=2),
    ),
    connections=(
        Connection("etcd", "2379", "HTTPS (client cert)", "--endpoints (one: snapshot save refuses several)",
                   "snapshot of the whole keyspace", _SAVE, resolve=from_url_flag("endpoints")),
    ),
    exits=(
        Fact("more than one endpoint, unreachable endpoint after --dial-timeout, --command-timeout exceeded", _SAVE),
    ),
    facts=(
        Fact("ETCDCTL_API=3 is a no-op in 3.6 (the only API)", _etcd("etcdctl/README.md")),
    ),
    kubeconfig_flags=(),
)

ETCD_UPLOAD = Contract(
    key="etcd-backup-upload", title="etcd backup: upload (agents/etcd_backup_upload.py upload)",
    upstream="this program, on python:3.12", match=Match(script=backup.SCRIPT_KEY),
    rendered_by="components/operations/etcd_backup_docs.py cron_job",
    env=(
        EnvVar("S3_ACCESS_KEY_ID", True, "object storage key id (missing: exit 2)", _UPLOAD),
        EnvVar("S3_SECRET_ACCESS_KEY", True, "object storage secret (missing: exit 2)", _UPLOAD),
    ),
    files=(
        FileFlag("snapshot", "read", "the snapshot written by the first step (read in 1 MiB chunks)", _UPLOAD),
        FileFlag("key-file", "read", "the stack secret the snapshot is encrypted with (at least 32 characters)",
                 _UPLOAD),
    ),
    expects=(
        Expects("the bucket `karmada.etcd.backup.bucket` at `endpoint`, and a key pair allowed to put (multipart "
                "included), list, abort and delete in it", "the operator (docs/runbooks/first-deploy.md)", _UPLOAD),
        Expects("an OpenSSL libcrypto loadable by Python's own `_hashlib` (the python image's libssl3): AES-256-GCM "
                "through ctypes, checked by a known-answer test before use", "the pinned python image", _UPLOAD),
    ),
    connections=(
        Connection("object storage", "443", "HTTPS (SigV4)", "--endpoint, path-style `<endpoint>/<bucket>/<key>`",
                   "multipart upload of the encrypted snapshot, its manifest, list the prefix, delete beyond "
                   "--retain, abort stale uploads; list `--k3s-folder` and delete k3s' scheduled snapshots beyond "
                   "--k3s-retain (with their .metadata copies)", _UPLOAD, external=True),
    ),
    exits=(
        Fact("missing argument (argparse, exit 2), missing S3_* env (exit 2), empty snapshot, a short key, no "
             "working AES-GCM or a store error (exit 1; an unfinished multipart upload is aborted)", _UPLOAD),
    ),
    facts=(
        Fact("the bucket must exist; it is written under `<prefix>/<stack>/` (snapshot path "
             f"{flags.ETCD_SNAPSHOT_PATH})", _UPLOAD),
    ),
    kubeconfig_flags=(),
)

def _suc(path: str, symbol: str = "") -> Src:
    return Src("rancher/system-upgrade-controller", "v0.20.1", path, symbol)


_SUC_NS = suc.NAMESPACE
SYSTEM_UPGRADE_CONTROLLER = Contract(
    key="system-upgrade-controller", title="system-upgrade-controller",
    upstream="rancher/system-upgrade-controller v0.20.1",
    match=Match(image="docker.io/rancher/system-upgrade-controller"),
    rendered_by="components/operations/k3s_upgrade_docs.py deployment",
    runs_in="host cluster, namespace system-upgrade",
    env=(
        EnvVar("SYSTEM_UPGRADE_CONTROLLER_NAME", True, "the controller's name (cli Required)", _suc("main.go", "main")),
        EnvVar("SYSTEM_UPGRADE_CONTROLLER_NAMESPACE", True, "its namespace: Plans, Jobs, Secrets, the Lease (cli "
               "Required)", _suc("main.go", "main")),
        EnvVar("SYSTEM_UPGRADE_CONTROLLER_NODE_NAME", False, "event source; the hostname otherwise",
               _suc("pkg/upgrade/controller.go", "NewController")),
    ),
    connections=(
        Connection("kubernetes API (host)", "443", "HTTPS (service account)", "in-cluster config",
                   "watches Plans, Nodes, Jobs, Secrets; creates upgrade Jobs", _suc("main.go", "Run"), external=True),
    ),
    uses=(
        Use("host", "", "namespaces", ("get",), _suc("pkg/upgrade/controller.go", "Start (cluster id)"),
            names=("kube-system",), credential="serviceaccount"),
        Use("host", "apiextensions.k8s.io", "customresourcedefinitions", ("get", "create", "update"),
            _suc("pkg/upgrade/controller.go", "registerCRD"), names=(suc.PLAN_CRD,), credential="serviceaccount"),
        Use("host", "", "nodes", ("get", "list", "watch", "update"),
            _suc("pkg/upgrade/handle_batch.go", "plan label, uncordon"), credential="serviceaccount"),
        Use("host", "upgrade.cattle.io", "plans", ("get", "list", "watch", "update", "patch"),
            _suc("pkg/upgrade/handle_upgrade.go"), namespace=_SUC_NS, credential="serviceaccount"),
        Use("host", "upgrade.cattle.io", "plans/status", ("update",), _suc("pkg/upgrade/handle_upgrade.go"),
            namespace=_SUC_NS, credential="serviceaccount"),
        Use("host", "batch", "jobs", ("get", "list", "watch", "create", "update", "patch", "delete"),
            _suc("pkg/upgrade/handle_batch.go"), namespace=_SUC_NS, credential="serviceaccount"),
        Use("host", "", "secrets", ("get", "list", "watch"), _suc("pkg/upgrade/handle_core.go"), namespace=_SUC_NS,
            credential="serviceaccount"),
        Use("host", "coordination.k8s.io", "leases", ("get", "update"), _suc("pkg/upgrade/controller.go",
            "leader.RunOrDie"), namespace=_SUC_NS, names=(suc.CONTROLLER,), credential="serviceaccount"),
        Use("host", "coordination.k8s.io", "leases", ("create",), _suc("pkg/upgrade/controller.go", "leader.RunOrDie"),
            namespace=_SUC_NS, credential="serviceaccount"),
        Use("host", "", "events", ("create", "patch"), _suc("pkg/upgrade/controller.go", "NewController recorder"),
            credential="serviceaccount"),
    ),
    makes=(
        Makes("host", "Job", "apply-k3s-server-on-*", True, "one per node and Plan hash",
              _suc("pkg/upgrade/job/job.go", "New"), namespace=_SUC_NS),
        Makes("host", "CustomResourceDefinition", suc.PLAN_CRD, True, "at start, then kept equal to its embedded copy",
              _suc("pkg/upgrade/controller.go", "registerCRD")),
        Makes("host", "Lease", suc.CONTROLLER, True, "leader election", _suc("pkg/upgrade/controller.go", "Start"),
              namespace=_SUC_NS),
    ),
    facts=(
        Fact("with a Plan `version` set it never resolves a channel over the network",
             _suc("pkg/upgrade/handle_upgrade.go", "RegisterPlanStatusHandler")),
        Fact("upgrade Jobs run privileged with hostPID/hostIPC/hostNetwork on the target node, as the Plan's "
             "service account (cordon: kubectl cordon)", _suc("pkg/upgrade/job/job.go", "New")),
    ),
    kubeconfig_flags=(),
)


_DEFRAG = Src("karmada-hub", "this checkout", "agents/etcd_defrag.py", "run")
_GATEWAY = _etcd("api/etcdserverpb/gw/rpc.pb.gw.go", "pattern_Maintenance_Defragment_0")

ETCD_DEFRAG = Contract(
    key="etcd-defrag", title="etcd defragmentation (agents/etcd_defrag.py)",
    upstream="this program, on python:3.12", match=Match(script=maintenance.SCRIPT_KEY),
    rendered_by="components/operations/etcd_maintenance_docs.py cron_job",
    files=(
        FileFlag("ca-file", "read", "etcd CA", _DEFRAG),
        FileFlag("cert-file", "read", "a SAN-less client cert of the etcd CA (CN karmada-etcd-maintenance)", _DEFRAG),
        FileFlag("key-file", "read", "its key", _DEFRAG),
    ),
    connections=(
        Connection("etcd", "2379", "HTTPS (client cert)", "--endpoints (each member's own client URL)",
                   "gRPC gateway: maintenance status, alarm list, defragment (one member at a time, leader last)",
                   _GATEWAY, resolve=from_url_flag("endpoints", many=True)),
    ),
    exits=(
        Fact("a member does not answer, or the members disagree on the leader (exit 1, nothing defragmented)",
             _DEFRAG),
    ),
    kubeconfig_flags=(),
)

_EXPORTER = Src("karmada-hub", "this checkout", "agents/hub_exporter.py", "main")

HUB_EXPORTER = Contract(
    key="hub-exporter", title="hub exporter (agents/hub_exporter.py)",
    upstream="this program, on python:3.12", match=Match(script=monitoring.EXPORTER_SCRIPT),
    rendered_by="components/operations/monitoring_docs.py exporter_deployment",
    files=(
        FileFlag("ca-file", "read", "the Karmada CA", _EXPORTER),
        FileFlag("cert-file", "read", f"client certificate (CN {monitoring.EXPORTER_USER})", _EXPORTER),
        FileFlag("key-file", "read", "its key", _EXPORTER),
    ),
    listeners=(
        Listener("metrics", "HTTP", "port", "port", "9100", (Served("/metrics", True), Served("/healthz", True)),
                 _EXPORTER, note="/healthz: 200 while the last list is younger than 3 x period + 30 s, else 503"),
    ),
    connections=(
        Connection("karmada-apiserver", "5443", "HTTPS (client cert)", "--server", "lists Clusters", _EXPORTER,
                   resolve=from_url_flag("server")),
    ),
    uses=(
        Use("karmada", "cluster.karmada.io", "clusters", ("list",), _EXPORTER, credential="client-cert"),
    ),
    exits=(
        Fact("unknown or missing argument (argparse, exit 2); unreadable TLS files; port bind failure", _EXPORTER),
    ),
    kubeconfig_flags=(),
)

CONTRACTS: tuple[Contract, ...] = (ETCD_SNAPSHOT, ETCD_UPLOAD, ETCD_DEFRAG, HUB_EXPORTER, SYSTEM_UPGRADE_CONTROLLER)

PRECONDITIONS: tuple[Expects, ...] = (
    Expects("for each CAPI member, Secret `<namespace>/<cluster>-kubeconfig` (key `value`) in the CAPI management "
            "cluster: the program reads it (a read, not a create)", "Cluster API",
            Src("karmada-io/karmada", "v1.18.2", "vendor/sigs.k8s.io/cluster-api/util/secret/consts.go",
                "KubeconfigDataName")),
    Expects("each member's `apiEndpoint` resolving and reachable from the hub (Push) and from the member itself "
            "(Pull: the agent reports it; the aggregated-apiserver proxies to it)", "the member's DNS / Cluster API",
            Src("karmada-io/karmada", "v1.18.2", "pkg/registry/cluster/storage/proxy.go", "ProxyREST.Connect")),
)
"""What the program needs but no component of it creates or owns."""


def all_contracts() -> tuple[Contract, ...]:
    """Every container (and k3s) the program renders, in the order the doc prints them."""
    return (*karmada_contract.CONTRACTS, *fleet_contract.CONTRACTS, *traffic_contract.CONTRACTS, *CONTRACTS,
            *hetzner_contract.CONTRACTS)
