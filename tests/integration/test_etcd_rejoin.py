"""Integration: a Karmada etcd member that lost its disk comes back by itself, and never at the cost of data.

Each test starts a real 3-member etcd exactly as the dev plan's etcd pods run (see test_etcd_cluster: the
`prepare` init container with its rendered args, then etcd from the config file it wrote), writes keys, then
loses a member's disk the way a replaced hub server does (process killed, data dir empty) and starts that
member's pod again with the very same rendered command:

- with the two others up it rejoins as a new member (remove the old entry, add a new one, start `existing`):
  3 members, the other two keep their IDs, every key is on the new member;
- with quorum gone (a second member down) it refuses to touch membership and starts nothing, and rejoins on
  its own once quorum is back;
- with every member down it does not bootstrap a cluster of its own; once the others (with their data) are
  back it rejoins.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.etcd_harness import ETCD, EtcdCluster, HarnessError, require_harness
from tests.integration.etcd_pod import rendered_etcd_pod

pytestmark = pytest.mark.integration

REPLICAS = 3



@pytest.fixture
def cluster(rendered_dev: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    require_harness()
    pod = rendered_etcd_pod(rendered_dev, tmp_path_factory.mktemp("etcd-pod"))
    with EtcdCluster([pod.main_args] * REPLICAS, pod.files, pod.client_cert, pod.client_key, etcd_binary=ETCD,
                     path_map=pod.path_map, init=pod.init, start_timeout_s=90) as c:
        yield c


def _write(c: EtcdCluster, via: list[int], prefix: str, n: int, into: dict[str, str]) -> None:
    """Acknowledged writes only: a put that timed out on a loaded machine is retried with the same value."""
    for k in range(n):
        key, value = f"/rejoin/{prefix}/{k}", secrets.token_hex(8)
        for attempt in range(3):
            try:
                c.put(via[k % len(via)], key, value, timeout_s=10)
                break
            except (TimeoutError, OSError, HarnessError) as exc:
                # an election after a member went away: "request timed out, possibly due to previous leader
                # failure" (HTTP 503); anything else is a real failure
                transient = not isinstance(exc, HarnessError) or "leader" in str(exc) or "timed out" in str(exc)
                if attempt == 2 or not transient:
                    raise
                time.sleep(2)
        into[key] = value


def _ids(c: EtcdCluster, via: int) -> dict[str, str]:
    return {m["name"]: str(m["ID"]) for m in c.member_list(via)}


def _mark(c: EtcdCluster, i: int) -> int:
    """Where member i's log ends now: what it logs from here on is its next start's."""
    return len(c.members[i].log_path.read_text(errors="replace"))


def _since(c: EtcdCluster, i: int, mark: int) -> str:
    return c.members[i].log_path.read_text(errors="replace")[mark:]


def _wait_for_log(c: EtcdCluster, i: int, text: str, mark: int, timeout_s: float = 45.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in _since(c, i, mark):
            return
        time.sleep(0.5)
    raise AssertionError(f"{c.members[i].pod_name} never logged {text!r}:\n{c.log_tail(i)}")


def _config(c: EtcdCluster, i: int) -> dict[str, Any]:
    return json.loads((c.members[i].run_dir / "etcd.conf.yaml").read_text())


def _assert_whole(c: EtcdCluster, written: dict[str, str], before: dict[str, str], replaced: str) -> None:
    """3 started members, the survivors kept their IDs, the replaced one has a new ID, one leader, every key
    readable from every member's own copy (serializable reads: local, no quorum round-trip)."""
    after = _ids(c, 0)
    assert sorted(after) == ["etcd-0", "etcd-1", "etcd-2"], after
    assert all(m["clientURLs"] for m in c.member_list(1)), "every member has started and published itself"
    for name, ident in before.items():
        assert (after[name] != ident) if name == replaced else (after[name] == ident), (name, before, after)
    assert len({c.status(i)["leader"] for i in range(REPLICAS)}) == 1
    for i in range(REPLICAS):
        for key, value in written.items():
            assert c.get(i, key, serializable=True) == value, f"{key} missing on {c.members[i].pod_name}"
    index = [m.pod_name for m in c.members].index(replaced)
    config = _config(c, index)
    assert config["initial-cluster-state"] == "existing"
    assert sorted(e.split("=", 1)[0] for e in config["initial-cluster"].split(",")) == sorted(after)


def test_wiped_member_rejoins_as_a_new_member(cluster: EtcdCluster) -> None:
    written: dict[str, str] = {}
    _write(cluster, [0, 1, 2], "before", 30, written)
    before = _ids(cluster, 0)

    cluster.stop(2)
    cluster.wipe(2)
    cluster.wait_ready([0, 1], 60)  # a new leader if etcd-2 was it
    _write(cluster, [0, 1], "while-down", 10, written)  # two of three keep committing
    mark = _mark(cluster, 2)
    cluster.restart(2)
    cluster.wait_ready(range(REPLICAS), 120)
    _write(cluster, [2], "after", 5, written)

    _assert_whole(cluster, written, before, "etcd-2")
    log = _since(cluster, 2, mark)
    assert f"removing member {before['etcd-2']} (etcd-2)" in log and "joined as a new member" in log, log

    # the rejoined member restarts from its own WAL like any other (the config's `existing` is ignored then)
    cluster.stop(2)
    mark = _mark(cluster, 2)
    cluster.restart(2)
    cluster.wait_ready(range(REPLICAS), 60)
    assert "the data dir has a WAL" in _since(cluster, 2, mark)
    assert all(cluster.get(2, k, serializable=True) == v for k, v in written.items())


def test_refuses_while_quorum_is_lost_and_rejoins_once_it_is_back(cluster: EtcdCluster) -> None:
    written: dict[str, str] = {}
    _write(cluster, [0, 1, 2], "before", 20, written)
    before = _ids(cluster, 0)

    cluster.stop(1)
    cluster.stop(2)
    cluster.wipe(2)
    mark = _mark(cluster, 2)
    cluster.restart(2)
    _wait_for_log(cluster, 2, "no member serves a linearizable read, so the cluster has no quorum", mark)
    time.sleep(5)  # a few more rounds of asking: it must still not act
    assert not (cluster.members[2].run_dir / "etcd.conf.yaml").exists(), "prepare wrote a config without quorum"
    assert cluster.running(2), "prepare keeps waiting (and answering as empty) inside its window"
    assert _ids(cluster, 0) == before, "membership changed although there was no quorum"
    assert "removing member" not in _since(cluster, 2, mark)

    cluster.restart(1)  # quorum is back (etcd-0 and etcd-1 with their data)
    cluster.wait_ready(range(REPLICAS), 120)
    _assert_whole(cluster, written, before, "etcd-2")


def test_total_outage_wiped_member_does_not_bootstrap_alone(cluster: EtcdCluster) -> None:
    written: dict[str, str] = {}
    _write(cluster, [0, 1, 2], "before", 20, written)
    before = _ids(cluster, 0)

    for i in range(REPLICAS):
        cluster.stop(i)
    cluster.wipe(2)
    mark = _mark(cluster, 2)
    cluster.restart(2)  # the empty member comes back first, nobody else is there
    _wait_for_log(cluster, 2, "not every member answers", mark)
    time.sleep(5)
    assert not (cluster.members[2].run_dir / "etcd.conf.yaml").exists(), "an empty member bootstrapped alone"
    assert cluster.running(2)

    cluster.restart(0)
    cluster.restart(1)
    cluster.wait_ready(range(REPLICAS), 120)
    _assert_whole(cluster, written, before, "etcd-2")
