"""The runtime contract of the etcd backup job's two containers (etcdctl from the etcd image, then
agents/etcd_backup_upload.py), and the registry of every contract the program renders (the checks in
tests/contract/ and docs/upstream-contract.md iterate `all_contracts()`)."""

from __future__ import annotations

from components.hetzner import contract as hetzner_contract
from components.karmada import contract as karmada_contract
from components.karmada import flags
from components.kube.contract import Connection, Contract, EnvVar, Expects, Fact, FileFlag, Match, Src, from_url_flag
from components.operations import etcd_backup_docs as backup
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

CONTRACTS: tuple[Contract, ...] = (ETCD_SNAPSHOT, ETCD_UPLOAD)

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
