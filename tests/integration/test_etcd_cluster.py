"""Integration: a real 3-member etcd started as the dev plan's etcd pods run: the `prepare` init container with
its rendered args (the etcd flags after `--`), then etcd with its own rendered args (`--config-file`), and the
certificates the plan renders.

What the harness substitutes (and nothing more; see etcd_harness, etcd_pod):
- `$(POD_NAME)` is expanded to etcd-0/1/2 per member, exactly as kubelet expands container args.
- `/etc/karmada/pki/etcd/*` point at temp files holding the rendered `etcd-pki` Secret's items.
- `--data-dir=/var/lib/etcd` and the `/run/etcd` emptyDir point at per-member temp dirs.
- the init container's `python3 /opt/karmada-hub/etcd_member_prepare.py` runs the ConfigMap's text with
  this interpreter.
No bind rewrite: each member has its own network namespace, so `0.0.0.0` listen URLs are used as
rendered, and `etcd-N.etcd.karmada-system.svc.cluster.local` resolve through per-namespace
/etc/hosts to the members' addresses on a private bridge (plus the `etcd-client` Service name, mapped
to the first member, for the backup job's etcdctl). The test talks to members through the v3
gRPC-gateway JSON API over mTLS, verifying each server cert for the member's advertised DNS name.

Skips when /usr/bin/etcd or network namespaces are unavailable, unless KARMADA_HUB_REQUIRE_TOOLS=1
(CI), where that is a failure.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.karmada.flags import (
    CLUSTER_DOMAIN,
    ETCD_CLIENT_SERVICE,
    ETCD_SNAPSHOT_PATH,
    NAMESPACE,
    PKI_DIR,
    flag_values,
)
from tests.integration.etcd_harness import ETCD, EtcdCluster, HarnessError, require_etcdctl, require_harness
from tests.integration.etcd_pod import rendered_etcd_pod

pytestmark = pytest.mark.integration

REPLICAS = 3



# ------------------------------------------------------------------------------------ fixture


@pytest.fixture(scope="module")
def cluster(rendered_dev: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    require_harness()
    pod = rendered_etcd_pod(rendered_dev, tmp_path_factory.mktemp("etcd-pod"))
    client_service = f"{ETCD_CLIENT_SERVICE}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}"
    with EtcdCluster([pod.main_args] * REPLICAS, pod.files, pod.client_cert, pod.client_key, etcd_binary=ETCD,
                     service_names=[client_service], path_map=pod.path_map, init=pod.init) as c:
        yield c


def _leader_index(c: EtcdCluster, via: int) -> int:
    """Index of the member whose raft ID is the leader, as seen by member `via`."""
    status = c.status(via)
    ids = {int(m["ID"]): m["name"] for m in c.member_list(via)}
    name = ids[int(status["leader"])]
    return [m.pod_name for m in c.members].index(name)


# -------------------------------------------------------------------------------------- tests


def test_cluster_forms_with_rendered_args(cluster: EtcdCluster) -> None:
    members = cluster.member_list(0)
    assert sorted(m["name"] for m in members) == ["etcd-0", "etcd-1", "etcd-2"]
    for m in members:  # peers and clients advertise the per-pod FQDN over https, as rendered
        fqdn = f"{m['name']}.etcd.karmada-system.svc.cluster.local"
        assert m["peerURLs"] == [f"https://{fqdn}:2380"]
        assert m["clientURLs"] == [f"https://{fqdn}:2379"]
    leaders = {cluster.status(i)["leader"] for i in range(REPLICAS)}
    assert len(leaders) == 1 and int(leaders.pop()) != 0, "all members must agree on one leader"
    # what the harness changed is only env expansion, cert paths, the data dir and the config emptyDir
    assert all(("POD_NAME" in s) or ("POD_IP" in s) or ("/etc/karmada/pki/etcd/" in s) or ("/var/lib/etcd" in s)
               or ("/run/etcd" in s)
               for s in cluster.substitutions), cluster.substitutions
    assert "--listen-peer-urls=https://0.0.0.0:2380" in cluster.members[0].args
    # etcd itself ran from the config file prepare wrote (its only flag), and the decision was `new`
    assert [a.split("=", 1)[0] for a in cluster.members[0].main_args] == ["--config-file"]
    # every member decided `new` with every other member answering, or (a slow one, after the other two had
    # already formed the cluster) joined it as a new member; either way through its own prepare step
    for i, m in enumerate(cluster.members):
        config = json.loads((m.run_dir / "etcd.conf.yaml").read_text())
        assert config["peer-transport-security"]["client-cert-auth"] is True
        log = cluster.log_tail(i, 5000)
        if config["initial-cluster-state"] == "new":
            assert "every other member answers and none has formed a cluster" in log, m.pod_name
        else:
            assert "joined as a new member" in log and config["initial-cluster-state"] == "existing", m.pod_name
    states = [json.loads((m.run_dir / "etcd.conf.yaml").read_text())["initial-cluster-state"] for m in cluster.members]
    assert states.count("new") >= 2, "a quorum of members created the cluster"


def test_metrics_are_served_on_the_pod_address_only(cluster: EtcdCluster) -> None:
    """Plain-HTTP metrics (and the probes' /livez, /readyz) bind `$(POD_IP)`, not every interface: the
    kubelet's probes reach them, loopback inside the pod does not (the NetworkPolicy admits only the node)."""
    probe = ("import sys, urllib.request\n"
             "try: print(urllib.request.urlopen(sys.argv[1], timeout=2).status)\n"
             "except OSError as exc: print('refused', type(exc).__name__)\n")
    member = cluster.members[0]
    assert f"--listen-metrics-urls=http://{member.ip}:2381" in member.args
    on_pod_ip = cluster.run_in(0, sys.executable, "-c", probe, f"http://{member.ip}:2381/metrics").stdout.strip()
    on_loopback = cluster.run_in(0, sys.executable, "-c", probe, "http://127.0.0.1:2381/metrics").stdout.strip()
    assert on_pod_ip == "200" and on_loopback.startswith("refused"), (on_pod_ip, on_loopback)


def test_quorum_loss_and_recovery(cluster: EtcdCluster) -> None:
    written: dict[str, str] = {}

    def write(via: int, key: str) -> None:
        value = secrets.token_hex(8)
        cluster.put(via, key, value, timeout_s=5)
        written[key] = value

    for n in range(5):
        write(n % REPLICAS, f"/it/healthy/{n}")

    # lose the leader: the other two elect a new one and keep accepting writes
    first = _leader_index(cluster, 0)
    cluster.stop(first)
    survivors = [i for i in range(REPLICAS) if i != first]
    cluster.wait_ready(survivors, timeout_s=30)
    for n in range(5):
        write(survivors[n % 2], f"/it/one-down/{n}")

    # lose a second member: no quorum, writes through the last one must not succeed
    second, last = survivors
    cluster.stop(second)
    with pytest.raises((HarnessError, TimeoutError)) as lost:
        cluster.put(last, "/it/no-quorum", "must-not-commit", timeout_s=10)
    assert isinstance(lost.value, TimeoutError) or re.search(r"timed out|no leader", str(lost.value)), lost.value

    # bring both back with the same args: every acknowledged write is readable from every member
    cluster.restart(first)
    cluster.restart(second)
    cluster.wait_ready(range(REPLICAS), timeout_s=60)
    for i in range(REPLICAS):
        for key, value in written.items():
            assert cluster.get(i, key) == value, f"{key} lost on {cluster.members[i].pod_name}"
            assert cluster.get(i, key, serializable=True) == value, f"{key} not replicated to member {i}"
    assert len(written) == 10
    assert flag_values(cluster.members[0].args)["initial-cluster-state"] == "new"  # restart reused the args


def test_backup_job_snapshots_with_its_rendered_command(cluster: EtcdCluster, rendered_dev: Any,
                                                        tmp_path: Path) -> None:
    """The etcd-backup CronJob's snapshot step, as rendered: its etcdctl args (endpoint = the client
    Service's name, which the harness resolves to a member), its own client cert from its PKI Secret.
    Substituted: the container paths of the three PKI files and of the snapshot, nothing else."""
    from tests.support.rendered import find, secret_files

    etcdctl = require_etcdctl()
    cluster.wait_ready(range(REPLICAS), 60)
    cluster.put(1, "/it/backup/marker", "present")
    job = find(rendered_dev, "host", "CronJob", "etcd-backup")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    step = job["initContainers"][0]
    volume = next(v for v in job["volumes"] if v["name"] == "pki")
    secret = secret_files(find(rendered_dev, "host", "Secret", volume["secret"]["secretName"]))
    container_files = {f"{PKI_DIR}/{item['path']}": secret[item["key"]] for item in volume["secret"]["items"]}
    local = {}
    for path, pem in container_files.items():
        target = tmp_path / path.rsplit("/", 1)[1]
        target.write_text(pem)
        local[path] = str(target)
    snapshot = tmp_path / "snapshot.db"
    args = []
    for arg in step["args"]:
        name, _, value = arg.partition("=")
        args.append(f"{name}={local[value]}" if value in local else
                    str(snapshot) if arg == ETCD_SNAPSHOT_PATH else arg)
    assert step["command"][0].endswith("/etcdctl") and len(local) == 3
    saved = cluster.run_in(2, etcdctl, *args)
    assert saved.returncode == 0, saved.stderr
    status = cluster.run_in(2, etcdctl, "snapshot", "status", str(snapshot), "-w", "json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["revision"] > 0 and info["totalKey"] > 0
