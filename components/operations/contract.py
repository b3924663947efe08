"""The runtime contract of the etcd backup job's two containers (etcdctl from the etcd image, then
agents/etcd_backup_upload.py), and the registry of every contract the program renders (the checks in
tests/contract/ and docs/upstream-contract.md iterate `all_contracts()`)."""

from __future__ import annotations

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
    Makes,
    Match,
    Src,
    Use,
    from_url_flag,
)
from components.operations import etcd_backup_docs as backup
from components.operations import k3s_upgrade_docs as suc
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
    key="etcd-backup-upload", title="etcd backup: upload (agents/etcd_backup_upload.py)",
    upstream="this program, on python:3.12", match=Match(script=backup.SCRIPT_KEY),
    rendered_by="components/operations/etcd_backup_docs.py cron_job",
    env=(
        EnvVar("S3_ACCESS_KEY_ID", True, "object storage key id (missing: exit 2)", _UPLOAD),
        EnvVar("S3_SECRET_ACCESS_KEY", True, "object storage secret (missing: exit 2)", _UPLOAD),
    ),
    files=(
        FileFlag("snapshot", "read", "the snapshot written by the first step (read whole into memory)", _UPLOAD),
    ),
    expects=(
        Expects("the bucket `karmada.etcd.backup.bucket` at `endpoint`, and a key pair allowed to put, list and "
                "delete in it", "the operator (docs/runbooks/first-deploy.md)", _UPLOAD),
    ),
    connections=(
        Connection("object storage", "443", "HTTPS (SigV4)", "--endpoint, path-style `<endpoint>/<bucket>/<key>`",
                   "PUT the snapshot, list the prefix, delete beyond --retain", _UPLOAD, external=True),
    ),
    exits=(
        Fact("missing argument (argparse, exit 2), missing S3_* env (exit 2), empty snapshot or a store error "
             "(exit 1)", _UPLOAD),
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

CONTRACTS: tuple[Contract, ...] = (ETCD_SNAPSHOT, ETCD_UPLOAD, SYSTEM_UPGRADE_CONTROLLER)

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
    return (*karmada_contract.CONTRACTS, *traffic_contract.CONTRACTS, *CONTRACTS, *hetzner_contract.CONTRACTS)
