"""Integration: back up a real 3-member etcd with the rendered backup job, restore it with the runbook, and the
rendered defragmentation job — on etcd 3.4 (Debian's; the pinned image is 3.6.6, see below).

The source cluster runs as the dev plan's etcd pods do (the `prepare` init container, then etcd from the config
file it writes; tests/integration/etcd_pod.py) with the plan's certificates, in network namespaces
(tests/integration/etcd_harness.py). Then, each step as rendered or written, with only the substitutions named:

1. snapshot: the `etcd-backup` CronJob's init container (`etcdctl` + its rendered args). Substituted: the three
   PKI file paths and the snapshot path (temp files holding the rendered Secret's PEMs).
2. upload: its upload container (`agents/etcd_backup_upload.py` + its rendered args), against a local S3 that
   verifies every SigV4 signature and the multipart rules. Substituted: `--endpoint` (the local S3),
   `--snapshot` and `--key-file` paths (the key file holds the rendered Secret's value), and the credentials'
   values in the environment (the rendered Secret's placeholders).
3. download + decrypt, restore: the runbook's blocks marked `restore-test` in docs/runbooks/restore-etcd.md, run
   by bash as written. Substituted for etcd 3.4: `etcdutl` -> `etcdctl`, and the 3.6-only
   `--bump-revision 1000000000 --mark-compacted` dropped; `$ARGS` is the rendered etcd flags (the runbook reads
   them from the live StatefulSet's `prepare` init container with kubectl, after its `--`).
4. a fresh 3-member cluster starts as the rendered pods do on the restored data directories (each `prepare`
   finds a WAL and keeps the rendered settings); every key written before the snapshot is read back from every
   member (serializable: each member's own copy), a key written after it is absent.

Skips without etcd/etcdctl or network namespaces unless KARMADA_HUB_REQUIRE_TOOLS=1 (CI), where that fails.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.karmada.flags import CLUSTER_DOMAIN, ETCD_CLIENT_SERVICE, ETCD_SNAPSHOT_PATH, NAMESPACE, PKI_DIR
from components.operations import etcd_backup_docs as backup_docs
from components.operations import etcd_maintenance_docs as maintenance_docs
from tests.integration.etcd_harness import ETCD, EtcdCluster, HarnessError, require_etcdctl, require_harness
from tests.integration.etcd_pod import RenderedPod, rendered_etcd_pod
from tests.integration.test_etcd_cluster import REPLICAS
from tests.support import agent_pod
from tests.support.fake_s3 import FakeS3
from tests.support.rendered import find, secret_files
from tests.support.tools import REPO

pytestmark = pytest.mark.integration

RUNBOOK = REPO / "docs" / "runbooks" / "restore-etcd.md"
ETCD34 = {"etcdutl": "etcdctl", " --bump-revision 1000000000 --mark-compacted": ""}
"""The only changes to the runbook's blocks: etcd 3.4 has no etcdutl (its etcdctl does snapshot status/restore)
and no revision bump."""



def runbook_block(name: str) -> str:
    """The fenced shell block right after `<!-- restore-test: <name> -->`, dedented."""
    text = RUNBOOK.read_text()
    match = re.search(rf"<!-- restore-test: {name} -->\n(\s*)```sh\n(.*?)\n\s*```", text, re.S)
    assert match, f"{RUNBOOK}: no block marked restore-test: {name}"
    indent = match.group(1)
    return "\n".join(line[len(indent):] if line.startswith(indent) else line for line in match.group(2).splitlines())


def for_etcd34(block: str) -> str:
    for old, new in ETCD34.items():
        block = block.replace(old, new)
    return block


def run_block(block: str, cwd: Path, env: dict[str, str], prelude: str = "") -> subprocess.CompletedProcess[str]:
    script = "set -euo pipefail\n" + prelude + block + "\n"
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def etcd_pod(rendered_dev: Any, tmp_path_factory: pytest.TempPathFactory) -> RenderedPod:
    return rendered_etcd_pod(rendered_dev, tmp_path_factory.mktemp("etcd-pod"))


def etcd_flags(pod: RenderedPod) -> list[str]:
    """The etcd flags of the rendered pod: its `prepare` container's args after `--` (what the runbook reads)."""
    return list(pod.init.args[pod.init.args.index("--") + 1:])


@pytest.fixture(scope="module")
def source(etcd_pod: RenderedPod) -> Iterator[EtcdCluster]:
    require_harness()
    client_service = f"{ETCD_CLIENT_SERVICE}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}"
    pod = etcd_pod
    with EtcdCluster([pod.main_args] * REPLICAS, pod.files, pod.client_cert, pod.client_key, etcd_binary=ETCD,
                     service_names=[client_service], path_map=pod.path_map, init=pod.init) as c:
        yield c


def _pod(plan: Any, kind: str, name: str) -> dict[str, Any]:
    obj = find(plan, "host", kind, name)
    return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _pki_to_files(plan: Any, pod: dict[str, Any], tmp: Path) -> dict[str, str]:
    """Container path -> a temp file with the rendered Secret's content, for the pod's `pki` volume."""
    volume = next(v for v in pod["volumes"] if v["name"] == "pki")
    secret = secret_files(find(plan, "host", "Secret", volume["secret"]["secretName"]))
    out = {}
    for item in volume["secret"]["items"]:
        target = tmp / item["path"].replace("/", "-")
        target.write_text(secret[item["key"]])
        out[f"{PKI_DIR}/{item['path']}"] = str(target)
    return out


def _substitute(args: list[str], paths: dict[str, str]) -> list[str]:
    out = []
    for arg in args:
        name, eq, value = arg.partition("=")
        out.append(f"{name}={paths[value]}" if eq and value in paths else paths.get(arg, arg))
    return out


# -------------------------------------------------------------------------------------- restore


def test_backup_then_restore_with_the_runbook(source: EtcdCluster, etcd_pod: RenderedPod, rendered_dev: Any,
                                             tmp_path: Path) -> None:
    etcdctl = require_etcdctl()
    source.wait_ready(range(REPLICAS), 60)
    before = {f"/restore-test/{i:04d}": secrets.token_hex(8 + i % 50) for i in range(300)}
    for n, (key, value) in enumerate(before.items()):
        source.put(n % REPLICAS, key, value)

    # 1. the rendered snapshot step
    pod = _pod(rendered_dev, "CronJob", backup_docs.NAME)
    step = pod["initContainers"][0]
    snapshot = tmp_path / "snapshot.db"
    paths = {**_pki_to_files(rendered_dev, pod, tmp_path), ETCD_SNAPSHOT_PATH: str(snapshot)}
    assert step["command"] == ["/usr/local/bin/etcdctl"]
    saved = source.run_in(2, etcdctl, *_substitute(step["args"], paths))
    assert saved.returncode == 0, saved.stderr
    source.put(0, "/restore-test/after-snapshot", "must-not-come-back")

    # 2. the rendered upload step, against a verifying S3
    upload = pod["containers"][0]
    creds = secret_files(find(rendered_dev, "host", "Secret", backup_docs.CREDENTIALS_SECRET))
    key_value = secret_files(find(rendered_dev, "host", "Secret", backup_docs.ENCRYPTION_SECRET))["key"]
    key_file = tmp_path / "mounted-key"
    key_file.write_text(key_value)
    values = dict(a.removeprefix("--").split("=", 1) for a in upload["args"][1:])
    s3 = FakeS3(values["bucket"], values["region"], creds["S3_ACCESS_KEY_ID"], creds["S3_SECRET_ACCESS_KEY"])
    try:
        env = {**os.environ, **creds}
        args = _substitute(upload["args"], {values["endpoint"]: s3.endpoint, ETCD_SNAPSHOT_PATH: str(snapshot),
                                            f"{backup_docs.KEY_DIR}/{backup_docs.ENCRYPTION_KEY}": str(key_file)})
        done = subprocess.run([sys.executable, str(REPO / "agents" / "etcd_backup_upload.py"), *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        stored = [k for k in s3.objects if k.endswith(".db.enc")]
        assert len(stored) == 1 and b"/restore-test/0001" not in s3.objects[stored[0]]  # encrypted at rest
        assert not s3.rejected

        # 3. the runbook: download + decrypt, the flags, the per-member restore
        work = tmp_path / "workstation"
        (work / "etcd-backup").mkdir(parents=True)
        (work / "agents").symlink_to(REPO / "agents")
        (work / "etcd-backup" / "backup.key").write_text(key_value + "\n")  # `pulumi config get` adds a newline
        shell_env = {**env, "ETCDCTL_API": "3", "PATH": f"{Path(etcdctl).parent}:{os.environ['PATH']}",
                     "ENDPOINT": s3.endpoint, "REGION": values["region"], "BUCKET": values["bucket"],
                     "PREFIX": values["prefix"], "STACK": values["stack"],
                     "ARGS": "\n".join(etcd_flags(etcd_pod))}
        blocks = [for_etcd34(runbook_block(name)) for name in ("fetch", "flags", "restore")]
        result = run_block("\n".join(blocks), work, shell_env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "karmada-hub-dev-etcd" in result.stdout and f"{stored[0]}\t" in result.stdout
        restored = {f"etcd-{n}": work / "etcd-backup" / "restore" / f"etcd-{n}" for n in range(REPLICAS)}
        assert all((d / "member" / "wal").is_dir() for d in restored.values())
    finally:
        s3.close()

    # 4. a fresh cluster on the restored data, started as the rendered pods start
    with EtcdCluster([etcd_pod.main_args] * REPLICAS, etcd_pod.files, etcd_pod.client_cert, etcd_pod.client_key,
                     etcd_binary=ETCD, seed_data_dirs=restored, path_map=etcd_pod.path_map,
                     init=etcd_pod.init) as fresh:
        assert all("the data dir has a WAL" in fresh.log_tail(i, 5000) for i in range(REPLICAS))
        assert sorted(m["name"] for m in fresh.member_list(0)) == ["etcd-0", "etcd-1", "etcd-2"]
        assert len({fresh.status(i)["leader"] for i in range(REPLICAS)}) == 1
        missing = [(i, k) for i in range(REPLICAS) for k, v in before.items()
                   if fresh.get(i, k, serializable=True) != v]
        assert not missing, f"{len(missing)} keys lost, e.g. {missing[:3]}"
        assert fresh.get(0, "/restore-test/after-snapshot") is None


def test_the_runbook_blocks_are_the_ones_tested() -> None:
    """The substitution list is exact: a block that drifts (a renamed flag, a new 3.6-only option) fails here."""
    restore = runbook_block("restore")
    assert restore.count("etcdutl snapshot restore") == 1 and restore.count("--bump-revision 1000000000") == 1
    assert "etcdutl" not in for_etcd34(restore) and "--mark-compacted" not in for_etcd34(restore)
    fetch = runbook_block("fetch")
    assert "agents/etcd_backup_upload.py fetch" in fetch and "--key-file etcd-backup/backup.key" in fetch
    assert "sed -n 's/^--initial-cluster=//p'" in runbook_block("flags")


# ----------------------------------------------------------------------------------------- defrag


def _compact_all(cluster: EtcdCluster) -> None:
    revision = int(cluster.call(0, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
    cluster.call(0, "/v3/kv/compaction", {"revision": revision, "physical": True}, timeout_s=30)


def test_defrag_job_frees_space_one_member_at_a_time(source: EtcdCluster, rendered_dev: Any, tmp_path: Path) -> None:
    """The rendered `etcd-defrag` CronJob container (its command from the rendered ConfigMap, mounted as the kubelet
    would), run in a member's network namespace. Substituted: its PKI paths, and `--min-db-mib=100` -> 4
    (reaching 100 MiB would mean writing 100 MiB into the test cluster)."""
    source.wait_ready(range(REPLICAS), 60)
    for i in range(48):
        source.put(i % REPLICAS, f"/defrag-test/{i}", "x" * (512 * 1024), timeout_s=20)
    for i in range(48):
        source.call(0, "/v3/kv/deleterange", {"key": base64.b64encode(f"/defrag-test/{i}".encode()).decode()})
    _compact_all(source)
    deadline = time.monotonic() + 30
    while True:  # compaction frees pages asynchronously; the next backend commits make them count as unused
        source.put(0, "/defrag-test/tick", str(time.monotonic()))
        status = [source.status(i) for i in range(REPLICAS)]
        if all(int(s["dbSizeInUse"]) < int(s["dbSize"]) / 2 for s in status) or time.monotonic() > deadline:
            break
        time.sleep(1)
    sizes = {i: int(s["dbSize"]) for i, s in enumerate(status)}
    assert min(sizes.values()) > 16 * 2**20, sizes

    pod = _pod(rendered_dev, "CronJob", maintenance_docs.NAME)
    container = pod["containers"][0]
    assert container["args"][-3:-1] == [f"--min-db-mib={maintenance_docs.MIN_DB_MIB}", "--min-free-ratio=0.5"]
    paths = _pki_to_files(rendered_dev, pod, tmp_path)
    args = [a.replace("--min-db-mib=100", "--min-db-mib=4") for a in _substitute(container["args"], paths)]
    command, _ = agent_pod.prepare(rendered_dev, "host", pod, tmp_path / "script")  # the ConfigMap, as mounted
    leader = int(source.status(0)["leader"])
    done = source.run_in(1, *command, *args, timeout_s=300)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    order = re.findall(r"defragmented https://(etcd-\d)\.", done.stdout)
    assert sorted(order) == ["etcd-0", "etcd-1", "etcd-2"], done.stdout
    ids = {m["name"]: int(m["ID"]) for m in source.member_list(0)}
    assert ids[order[-1]] == leader, f"leader must go last: {done.stdout}"
    after = {i: int(source.status(i)["dbSize"]) for i in range(REPLICAS)}
    assert all(after[i] < sizes[i] / 2 for i in range(REPLICAS)), (sizes, after)
    source.wait_ready(range(REPLICAS), 30)

    # not every member answers: it defragments nothing and says why
    source.stop(2)
    try:
        refused = source.run_in(0, *command, *args, timeout_s=120)
        assert refused.returncode == 1 and "not every member answers" in refused.stderr, refused.stderr
        assert "defragmented" not in refused.stdout
    finally:
        source.restart(2)
        source.wait_ready(range(REPLICAS), 60)
    with pytest.raises(HarnessError, match="compacted"):  # the history really went away before the defrag
        source.call(0, "/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "revision": 1})


# ---------------------------------------------------------------------------------------- metrics


def test_etcd_serves_the_metrics_the_alerts_use(source: EtcdCluster, rendered_dev: Any) -> None:
    """The etcd PodMonitor's endpoint (plain http on the rendered metrics port, /metrics) answers on a real member,
    and every etcd_* series the rendered rules read exists there (etcd 3.4 here; names checked against 3.6.6's
    source in components/operations/alerts.py)."""
    import urllib.request

    from components.operations import alerts
    from components.operations import monitoring_docs as mdocs

    monitor = find(rendered_dev, "host", "PodMonitor", "karmada-hub-etcd")["spec"]["podMetricsEndpoints"][0]
    target = next(t for t in mdocs.scrape_targets() if t.job == "etcd")
    assert (monitor["scheme"], monitor["path"]) == ("http", "/metrics")
    text = urllib.request.urlopen(f"http://{source.members[0].ip}:{target.port}{monitor['path']}", timeout=10).read()
    served = {line.split("{")[0].split(" ")[0] for line in text.decode().splitlines() if line and line[0] != "#"}
    groups = find(rendered_dev, "host", "PrometheusRule", mdocs.RULE_NAME)["spec"]["groups"]
    used = {name for g in groups for r in g["rules"] for name in re.findall(r"\betcd_[a-z_]+", r["expr"])}
    assert used == {"etcd_server_has_leader", "etcd_mvcc_db_total_size_in_bytes", "etcd_server_quota_backend_bytes",
                    "etcd_mvcc_db_total_size_in_use_in_bytes"}
    assert used <= served, used - served
    quota = next(line for line in text.decode().splitlines() if line.startswith("etcd_server_quota_backend_bytes "))
    assert float(quota.split()[1]) == 2 * 2**30  # the rendered --quota-backend-bytes reached the member
    assert alerts.JOBS["etcd"] == target.job
