"""agents/etcd_member_prepare.py without a network: the config file it derives from `flags.etcd_args`, the
start-up decision, the rejoin steps against a fake member API, and the StatefulSet that runs it.

The real thing (3 etcd processes, a wiped member rejoining, the refusals) is tests/integration/test_etcd_rejoin.py.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agents import etcd_member_prepare as prep
from components.karmada import flags, manifests
from components.kube import agent_script

SELF = "https://etcd-2.etcd.karmada-system.svc.cluster.local:2380"


def _url(i: int, port: int = 2380) -> str:
    return f"https://etcd-{i}.etcd.karmada-system.svc.cluster.local:{port}"


def _values(**extra: str) -> dict[str, str]:
    args = [a.replace("$(POD_NAME)", "etcd-2").replace("$(POD_IP)", "10.42.0.7") for a in flags.etcd_args(3, "tok")]
    return {**prep.parse_flags(args), **extra}


# ------------------------------------------------------------------------------------------ config file


def test_config_file_carries_every_rendered_flag() -> None:
    values = _values()
    doc = prep.config_document(values, "new", values["initial-cluster"])
    assert doc["name"] == "etcd-2" and doc["data-dir"] == flags.ETCD_DATA_DIR
    assert doc["client-transport-security"] == {
        "client-cert-auth": True, "trusted-ca-file": flags.PATHS["etcd/ca.crt"],
        "cert-file": flags.PATHS["etcd/server.crt"], "key-file": flags.PATHS["etcd/server.key"]}
    assert doc["peer-transport-security"] == {
        "client-cert-auth": True, "trusted-ca-file": flags.PATHS["etcd/ca.crt"],
        "cert-file": flags.PATHS["etcd/peer.crt"], "key-file": flags.PATHS["etcd/peer.key"]}
    assert doc["cipher-suites"] == list(flags.ETCD_CIPHER_SUITES)
    if "snapshot-count" in values:
        assert doc["snapshot-count"] == int(values["snapshot-count"]) and isinstance(doc["snapshot-count"], int)
    assert doc["listen-client-urls"] == "https://0.0.0.0:2379" and isinstance(doc["listen-client-urls"], str)
    assert doc["initial-cluster-state"] == "new" and doc["initial-cluster-token"] == "tok"
    assert doc["listen-metrics-urls"] == values["listen-metrics-urls"]
    # the command line's defaults where a 3.4 config file would differ (the gateway would be off)
    assert doc["enable-grpc-gateway"] is True and doc["auto-compaction-mode"] == "periodic"
    # every rendered flag is somewhere in the document: nothing is dropped silently
    leaves = json.dumps(doc)
    for name, value in values.items():
        assert name in prep.FLAG_TABLE
        assert (value in leaves) or value in ("true", "false") or value.isdigit() or "," in value, name


def test_config_file_takes_the_decision() -> None:
    values = _values()
    doc = prep.config_document(values, "existing", f"etcd-0={_url(0)},etcd-2={SELF}")
    assert doc["initial-cluster-state"] == "existing" and doc["initial-cluster"] == f"etcd-0={_url(0)},etcd-2={SELF}"
    with pytest.raises(prep.PrepareError, match="new or existing"):
        prep.config_document(values, "maybe", values["initial-cluster"])


def test_every_flag_the_program_can_render_maps_into_the_file() -> None:
    # quota and log level are optional in etcd_args; all of them must have a mapping
    args = flags.etcd_args(5, "tok", quota_backend_bytes=8 * 2**30, log_level="warn")
    values = prep.parse_flags([a.replace("$(POD_NAME)", "etcd-4").replace("$(POD_IP)", "10.42.0.7") for a in args])
    doc = prep.config_document(values, "new", values["initial-cluster"])
    assert doc["quota-backend-bytes"] == 8 * 2**30 and doc["log-level"] == "warn"
    assert set(prep.FLAG_TABLE) <= flags.KNOWN_FLAGS["etcd"] | {"enable-grpc-gateway"}
    assert "enable-grpc-gateway" in flags.KNOWN_FLAGS["etcd"]


def test_every_flag_literal_in_etcd_args_has_a_config_file_mapping() -> None:
    """Also the flags another change adds to `etcd_args` later: read from its source, not from one call."""
    import inspect

    from components.karmada.flags import etcd as etcd_flags

    source = inspect.getsource(etcd_flags.etcd_args)
    literals = set(re.findall(r'"--([a-z0-9-]+)=', source))
    assert {"name", "initial-cluster", "peer-key-file", "cipher-suites"} <= literals
    assert literals <= set(prep.FLAG_TABLE), sorted(literals - set(prep.FLAG_TABLE))


def test_an_unmapped_flag_is_refused_not_dropped() -> None:
    values = _values(**{"experimental-initial-corrupt-check": "true"})
    with pytest.raises(prep.PrepareError, match="no config-file mapping"):
        prep.config_document(values, "new", values["initial-cluster"])


@pytest.mark.parametrize(("args", "message"), [
    (["--name=etcd-0", "positional"], "not --name=value"),
    (["--name=etcd-0", "--name=etcd-1"], "given twice"),
    (["--name=etcd-0"], "is required"),
])
def test_bad_args_are_refused(args: list[str], message: str) -> None:
    with pytest.raises(prep.PrepareError, match=message):
        prep.parse_flags(args)


def test_unexpanded_pod_env_is_refused() -> None:
    with pytest.raises(prep.PrepareError, match="did not expand"):
        prep.parse_flags(flags.etcd_args(3, "tok"))
    half = [a.replace("$(POD_NAME)", "etcd-0") for a in flags.etcd_args(3, "tok")]
    if any("$(POD_IP)" in a for a in half):  # the metrics listener binds the pod's own address
        with pytest.raises(prep.PrepareError, match="listen-metrics-urls"):
            prep.parse_flags(half)


def test_bad_typed_values_are_refused() -> None:
    values = _values(**{"snapshot-count": "many"})
    with pytest.raises(prep.PrepareError, match="integer"):
        prep.config_document(values, "new", values["initial-cluster"])


# ------------------------------------------------------------------------------------------ decision


def _member(i: int, started: bool = True, ident: str | None = None) -> prep.Member:
    return prep.Member(id=ident or f"id{i}", name=f"etcd-{i}" if started else "", peer_urls=(_url(i),),
                       client_urls=(_url(i, 2379),) if started else ())


def test_all_others_empty_means_create() -> None:
    d = prep.decide([prep.PeerState("etcd-0", "empty"), prep.PeerState("etcd-1", "empty")])
    assert d.action == "new"


def test_unformed_etcd_and_empty_beacon_means_create() -> None:
    unformed = (_member(0, started=False), _member(1, started=False), _member(2, started=False))
    d = prep.decide([prep.PeerState("etcd-0", "members", members=unformed), prep.PeerState("etcd-1", "empty")])
    assert d.action == "new"


def test_someone_down_means_wait_never_create() -> None:
    d = prep.decide([prep.PeerState("etcd-0", "empty"), prep.PeerState("etcd-1", "down", detail="refused")])
    assert d.action == "wait" and "etcd-1: refused" in d.reason


def test_a_formed_cluster_means_rejoin_even_if_someone_is_down() -> None:
    formed = (_member(0), _member(1), _member(2))
    d = prep.decide([prep.PeerState("etcd-0", "members", members=formed), prep.PeerState("etcd-1", "down")])
    assert d.action == "rejoin" and {m.id for m in d.members} == {"id0", "id1", "id2"}


# ------------------------------------------------------------------------------------------ rejoin


class FakeGateway:
    def __init__(self, members: list[prep.Member], healthy: set[str], add_failures: int = 0) -> None:
        self.members_ = list(members)
        self.healthy_ = healthy
        self.add_failures = add_failures
        self.calls: list[tuple[str, str]] = []

    def unhealthy(self, endpoint: str) -> str | None:
        self.calls.append(("health", endpoint))
        return None if endpoint in self.healthy_ else "timed out"

    def members(self, endpoint: str) -> list[prep.Member]:
        return list(self.members_)

    def remove(self, endpoint: str, member_id: str) -> None:
        self.calls.append(("remove", member_id))
        self.members_ = [m for m in self.members_ if m.id != member_id]

    def add(self, endpoint: str, peer_url: str) -> list[prep.Member]:
        if self.add_failures:
            self.add_failures -= 1
            raise prep.NotYet("etcdserver: unhealthy cluster")
        self.calls.append(("add", peer_url))
        self.members_.append(prep.Member(id="new", name="", peer_urls=(peer_url,), client_urls=()))
        return list(self.members_)


RENDERED = {f"etcd-{i}": [_url(i)] for i in range(3)}


def test_rejoin_removes_the_old_entry_then_adds_a_new_one() -> None:
    formed = [_member(0), _member(1), _member(2, ident="old")]
    gw = FakeGateway(formed, healthy={_url(1, 2379)}, add_failures=2)
    initial = prep.rejoin(gw, formed, "etcd-2", SELF, RENDERED, sleep=lambda _s: None)  # type: ignore[arg-type]
    assert ("remove", "old") in gw.calls and gw.calls.index(("remove", "old")) < gw.calls.index(("add", SELF))
    assert initial == ",".join(sorted(f"etcd-{i}={_url(i)}" for i in range(3)))
    assert [m.id for m in gw.members_] == ["id0", "id1", "new"]


def test_rejoin_without_quorum_changes_nothing() -> None:
    formed = [_member(0), _member(1), _member(2, ident="old")]
    gw = FakeGateway(formed, healthy=set())
    with pytest.raises(prep.NotYet, match="no quorum"):
        prep.rejoin(gw, formed, "etcd-2", SELF, RENDERED, sleep=lambda _s: None)  # type: ignore[arg-type]
    assert [c for c in gw.calls if c[0] != "health"] == []
    assert ("health", _url(2, 2379)) not in gw.calls, "never asks the lost member itself"


def test_rejoin_gives_up_after_the_add_keeps_failing() -> None:
    formed = [_member(0), _member(1)]
    gw = FakeGateway(formed, healthy={_url(0, 2379)}, add_failures=99)
    with pytest.raises(prep.NotYet, match="did not succeed"):
        prep.rejoin(gw, formed, "etcd-2", SELF, RENDERED, add_attempts=3, sleep=lambda _s: None)  # type: ignore[arg-type]


def test_initial_cluster_names_unstarted_members_from_the_rendered_list() -> None:
    members = [_member(0), _member(1, started=False), prep.Member("n", "", (SELF,), ())]
    assert prep.rejoin_initial_cluster(members, RENDERED, "etcd-2", SELF).split(",") == [
        f"etcd-0={_url(0)}", f"etcd-1={_url(1)}", f"etcd-2={SELF}"]
    with pytest.raises(prep.PrepareError, match="does not contain"):
        prep.rejoin_initial_cluster(members[:2], RENDERED, "etcd-2", SELF)
    stranger = prep.Member("x", "", ("https://elsewhere:2380",), ())
    with pytest.raises(prep.PrepareError, match="no name"):
        prep.rejoin_initial_cluster([*members, stranger], RENDERED, "etcd-2", SELF)


def test_member_json_in_both_shapes() -> None:
    gateway = prep.Member.from_json({"ID": "123", "name": "etcd-0", "peerURLs": ["p"], "clientURLs": ["c"]})
    peer = prep.Member.from_json({"id": "7b", "peerURLs": ["p"]})
    assert (gateway.id, gateway.client_urls) == ("123", ("c",)) and (peer.id, peer.name, peer.client_urls) == (
        "7b", "", ())


# ------------------------------------------------------------------------------------------ prepare()


def _local_values(tmp_path: Path) -> dict[str, str]:
    return _values(**{"data-dir": str(tmp_path / "data")})


def test_a_member_with_a_wal_starts_as_rendered_without_asking_anyone(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    values = _local_values(tmp_path)
    wal = tmp_path / "data" / "member" / "wal"
    wal.mkdir(parents=True)
    (wal / "0000000000000000-0000000000000000.wal").write_bytes(b"x")
    monkeypatch.setattr(prep, "probe_peer", lambda *a: pytest.fail("asked a peer although the WAL is there"))
    config = tmp_path / "etcd.conf.yaml"
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(config)) == 0
    doc = json.loads(config.read_text())
    assert doc["initial-cluster-state"] == "new" and doc["initial-cluster"] == values["initial-cluster"]


def test_an_empty_member_keeps_waiting_until_its_peers_arrive_and_never_exits_to_be_restarted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A slow first formation (a peer Pending for 20 minutes on a slow volume): the agent stays up, answering
    `empty`, and repeats why every --remind-seconds; once every peer answers empty it creates the cluster. Exiting
    after a window instead put it in kubelet's back-off, where its peers saw it as down."""
    values = _local_values(tmp_path)
    (tmp_path / "data" / "member" / "snap").mkdir(parents=True)  # a start that never completed
    monkeypatch.setattr(prep, "start_beacon", lambda _v: None)
    now = [0.0]
    arrives = 1200.0

    def probe(name: str, url: str, tls: prep.Tls) -> prep.PeerState:
        return prep.PeerState(name, "empty") if now[0] >= arrives else prep.PeerState(name, "down", detail="refused")

    def sleep(seconds: float) -> None:
        assert now[0] < arrives + 60, "it did not decide once everyone answered"
        now[0] += seconds

    monkeypatch.setattr(prep, "probe_peer", probe)
    config = tmp_path / "etcd.conf.yaml"
    code = prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 300, str(config), clock=lambda: now[0], sleep=sleep)
    assert code == 0 and json.loads(config.read_text())["initial-cluster-state"] == "new"
    err = capsys.readouterr().err
    assert err.count("waiting: no member reports a formed cluster") == 1, "the reason once, when it changes"
    reminders = [line for line in err.splitlines() if "still waiting after" in line]
    assert len(reminders) == 3 and prep.RUNBOOK in reminders[0], err  # at 300, 600, 900 s
    assert "still waiting after 300s" in reminders[0] and "refusing" not in err
    assert (tmp_path / "data" / "member.incomplete" / "snap").is_dir() and not (tmp_path / "data" / "member").exists()


def test_an_empty_member_among_empty_members_creates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = _local_values(tmp_path)
    monkeypatch.setattr(prep, "start_beacon", lambda _v: None)
    monkeypatch.setattr(prep, "probe_peer", lambda name, url, tls: prep.PeerState(name, "empty"))
    config = tmp_path / "etcd.conf.yaml"
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 30, str(config), sleep=lambda _s: None) == 0
    assert json.loads(config.read_text())["initial-cluster-state"] == "new"


def test_usage_without_separator() -> None:
    assert prep.main(["--config-file=/x"]) == 2


# ------------------------------------------------------------------------------------------ the rendered pod


def test_statefulset_runs_prepare_then_etcd_from_one_flag_list() -> None:
    args = flags.etcd_args(3, "tok")
    source = agent_script.source(manifests.ETCD_PREPARE_SCRIPT)
    sts = manifests.etcd_statefulset(args, "registry.k8s.io/etcd:3.6.6-0", 3, "local-path", "8Gi", source)
    template = sts["spec"]["template"]
    spec: dict[str, Any] = template["spec"]
    (init,) = spec["initContainers"]
    (etcd,) = spec["containers"]
    assert init["args"] == flags.etcd_prepare_args(args)
    assert init["args"][init["args"].index("--") + 1:] == args, "etcd's settings are exactly etcd_args"
    assert etcd["args"] == [f"--config-file={flags.ETCD_CONFIG_FILE}"] and etcd["command"] == ["/usr/local/bin/etcd"]
    assert init["image"] == agent_script.IMAGE and init["command"][-1].endswith(manifests.ETCD_PREPARE_SCRIPT)
    assert {e["name"] for e in init["env"]} >= {"POD_NAME", "POD_IP"}
    mounts = {c["name"]: {m["name"]: m for m in c["volumeMounts"]} for c in (init, etcd)}
    assert mounts["prepare"]["etcd-config"]["mountPath"] == flags.ETCD_CONFIG_DIR
    assert not mounts["prepare"]["etcd-config"].get("readOnly") and mounts["etcd"]["etcd-config"]["readOnly"]
    assert mounts["prepare"]["data"]["mountPath"] == mounts["etcd"]["data"]["mountPath"] == flags.ETCD_DATA_DIR
    pki = next(v for v in spec["volumes"] if v["name"] == "pki")["secret"]
    paths = {i["path"] for i in pki["items"]}
    assert {"etcd/member-client.crt", "etcd/member-client.key", "etcd/peer.key", "etcd/server.key"} <= paths
    assert template["metadata"]["annotations"][agent_script.CHECKSUM_ANNOTATION] == hashlib.sha256(
        source.encode()).hexdigest()
    cm = manifests.etcd_prepare_configmap(source)
    assert cm["data"] == {manifests.ETCD_PREPARE_SCRIPT: source}
    assert next(v for v in spec["volumes"] if v["name"] == "script")["configMap"]["name"] == cm["metadata"]["name"]


def test_prepare_args_refuse_a_bare_separator() -> None:
    with pytest.raises(ValueError):
        flags.etcd_prepare_args(["--name=x", "--"])


def test_the_restore_runbook_reads_the_etcd_flags_from_prepare() -> None:
    """restore-etcd.md step 6 prints the `prepare` container's args and cuts them at `--` with sed: run that sed
    on the rendered args; it must give exactly flags.etcd_args."""
    import subprocess

    from tests.support.tools import REPO, require_tool

    line = next(x for x in (REPO / "docs" / "runbooks" / "restore-etcd.md").read_text().splitlines()
                if x.strip().startswith("ARGS=$(kubectl"))
    assert "initContainers 0" in line, line
    expression = re.search(r"\| sed '([^']+)'\)$", line.strip())
    assert expression, line
    args = flags.etcd_args(3, "tok")
    printed = "\n".join(flags.etcd_prepare_args(args)) + "\n"  # what the go-template prints, one arg a line
    out = subprocess.run([require_tool("sed"), expression.group(1)], input=printed, capture_output=True, text=True,
                         timeout=10, check=True).stdout
    assert out.splitlines() == args
