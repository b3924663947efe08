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


# ------------------------------------------------------------------------------------------ every mapping


def test_every_flag_lands_where_etcd_reads_it_in_a_config_file() -> None:
    """The whole table, also for flags the program does not render today: the config file keys and types of etcd
    v3.6.6 `server/embed/config.go` (`configJSON`, `securityConfig` json tags; the peer TLS flags lose `peer-`)."""
    sample = {"str": "s", "int": "7", "bool": "false", "list": "a,,b"}
    values = {flag: sample[kind] for flag, (_, kind) in prep.FLAG_TABLE.items()}
    doc = prep.config_document(values, "existing", "etcd-0=https://x:2380")
    tls = {"client-cert-auth": False, "trusted-ca-file": "s", "cert-file": "s", "key-file": "s"}
    assert doc == {
        "name": "s", "data-dir": "s", "wal-dir": "s", "listen-client-urls": "s", "advertise-client-urls": "s",
        "listen-peer-urls": "s", "initial-advertise-peer-urls": "s", "listen-metrics-urls": "s",
        "initial-cluster": "etcd-0=https://x:2380", "initial-cluster-state": "existing", "initial-cluster-token": "s",
        "client-transport-security": tls, "peer-transport-security": tls, "cipher-suites": ["a", "b"],
        "snapshot-count": 7, "quota-backend-bytes": 7, "auto-compaction-mode": "s", "auto-compaction-retention": "s",
        "heartbeat-interval": 7, "election-timeout": 7, "max-snapshots": 7, "max-wals": 7, "max-request-bytes": 7,
        "max-txn-ops": 7, "strict-reconfig-check": False, "pre-vote": False, "enable-pprof": False, "logger": "s",
        "log-level": "s", "log-outputs": ["a", "b"], "enable-grpc-gateway": False,
    }
    assert len(prep.FLAG_TABLE) == 37


def test_command_line_defaults_fill_what_a_config_file_would_leave_empty() -> None:
    required = ("name", "data-dir", "initial-cluster", "initial-advertise-peer-urls", "listen-peer-urls",
                "peer-trusted-ca-file", "peer-cert-file", "peer-key-file", "trusted-ca-file")
    values = prep.parse_flags([f"--{f}=x" for f in required])
    doc = prep.config_document(values, "new", "a=b")
    assert (doc["enable-grpc-gateway"], doc["auto-compaction-mode"], doc["auto-compaction-retention"]) == (
        True, "periodic", "0")
    assert prep._typed("f", "true", "bool") is True and prep._typed("f", "false", "bool") is False
    with pytest.raises(prep.PrepareError, match="expected true or false"):
        prep._typed("f", "True", "bool")


@pytest.mark.parametrize("arg", ["--name", "name=etcd-0", "-name=etcd-0"])
def test_an_argument_needs_both_the_dashes_and_a_value(arg: str) -> None:
    with pytest.raises(prep.PrepareError, match="not --name=value"):
        prep.parse_flags([arg])


def test_an_initial_cluster_url_may_itself_contain_an_equals_sign() -> None:
    assert prep.initial_cluster_map("a=https://h:2380/?x=y,a=https://i:2380,b=https://j:2380") == {
        "a": ["https://h:2380/?x=y", "https://i:2380"], "b": ["https://j:2380"]}


def test_the_config_file_is_private_complete_and_written_in_one_step(tmp_path: Path) -> None:
    path = tmp_path / "etcd.conf.yaml"
    path.write_text("old")
    prep.write_config(str(path), {"b": 1, "a": {"c": True}})
    assert path.read_text() == '{\n  "a": {\n    "c": true\n  },\n  "b": 1\n}\n'
    assert oct(path.stat().st_mode & 0o777) == "0o600", "the file names the member's key files"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["etcd.conf.yaml"]


def test_a_wal_is_a_wal_file_among_others(tmp_path: Path) -> None:
    wal = tmp_path / "member" / "wal"
    wal.mkdir(parents=True)
    assert not prep.has_wal(str(tmp_path))
    (wal / "0.tmp").write_bytes(b"")
    assert not prep.has_wal(str(tmp_path))
    (wal / "0000000000000000-0000000000000000.wal").write_bytes(b"x")
    assert prep.has_wal(str(tmp_path))
    assert not prep.has_wal(str(tmp_path / "nowhere"))


# ------------------------------------------------------------------------------------------ decision, exactly


def test_a_formed_cluster_with_one_unstarted_member_is_still_formed() -> None:
    """Two members started (client URLs) and a third never did: the cluster has run. An empty member must rejoin
    it, never start as `new` against it (the decision is any member started, not all)."""
    formed = (_member(0), _member(1), _member(2, started=False))
    d = prep.decide([prep.PeerState("etcd-0", "members", members=formed),
                     prep.PeerState("etcd-1", "members", members=formed)])
    assert d.action == "rejoin" and [m.id for m in d.members] == ["id0", "id1", "id2"]
    assert d.reason == "the cluster has run before (reported by etcd-0, etcd-1); this member has no data"


def test_the_decisions_say_why() -> None:
    formed = (_member(0), _member(1))
    d = prep.decide([prep.PeerState("etcd-0", "empty"), prep.PeerState("etcd-1", "members", members=formed)])
    assert d.reason == "the cluster has run before (reported by etcd-1); this member has no data"
    d = prep.decide([prep.PeerState("etcd-0", "down"), prep.PeerState("etcd-1", "down", detail="refused"),
                     prep.PeerState("etcd-3", "empty")])
    assert (d.action, d.members) == ("wait", ())
    assert d.reason == ("no member reports a formed cluster and not every member answers (etcd-0: ; etcd-1: "
                        "refused); a member that does not answer may hold the data, so this empty member does not "
                        "bootstrap")
    d = prep.decide([prep.PeerState("etcd-0", "empty")])
    assert d == prep.Decision("new", "every other member answers and none has formed a cluster: creating it")


def test_states_and_decisions_are_values() -> None:
    import dataclasses

    for value in (_member(0), prep.PeerState("etcd-0", "empty"), prep.decide([])):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.name = "x"  # type: ignore[misc]
        hash(value)
    assert prep.PeerState("etcd-0", "empty").detail == "" and prep.decide([]).members == ()


def test_member_json_fields() -> None:
    m = prep.Member.from_json({"ID": "1", "name": "etcd-0", "peerURLs": ["p1", "p2"], "clientURLs": ["c"]})
    assert m == prep.Member("1", "etcd-0", ("p1", "p2"), ("c",))
    assert prep.Member.from_json({}) == prep.Member("", "", (), ())
    assert prep.Member.from_json({"id": "7b", "ID": "123"}).id == "123", "the gateway's ID wins"


# ------------------------------------------------------------------------------------------ rejoin, exactly


def test_rejoin_asks_the_first_healthy_member_only_and_retries_the_add_for_a_minute(
        capsys: pytest.CaptureFixture[str]) -> None:
    formed = [_member(0), _member(1), _member(2, ident="old")]
    gw = FakeGateway(formed, healthy={_url(0, 2379), _url(1, 2379)}, add_failures=99)
    slept: list[float] = []
    with pytest.raises(prep.NotYet, match=f"member add of {re.escape(SELF)} did not succeed: etcdserver: unhealthy"):
        prep.rejoin(gw, formed, "etcd-2", SELF, RENDERED, sleep=slept.append)  # type: ignore[arg-type]
    assert [c for c in gw.calls if c[0] == "health"] == [("health", _url(0, 2379))]
    assert slept == [3.0] * 20, "20 attempts, 3 s apart: an add waits out etcd's 5 s health interval"
    gw = FakeGateway(formed, healthy={_url(1, 2379)}, add_failures=2)
    prep.rejoin(gw, formed, "etcd-2", SELF, RENDERED, sleep=lambda _s: None)  # type: ignore[arg-type]
    assert f"added {SELF} as a new member (attempt 3)" in capsys.readouterr().err


def test_rejoin_with_no_attempt_left_says_so() -> None:
    formed = [_member(0), _member(1)]
    with pytest.raises(prep.NotYet) as exc:
        prep.rejoin(FakeGateway(formed, healthy={_url(0, 2379)}), formed, "etcd-2", SELF, RENDERED,  # type: ignore[arg-type]
                    add_attempts=0)
    assert str(exc.value) == f"member add of {SELF} did not succeed: "


def test_rejoin_without_a_healthy_member_says_whom_it_asked() -> None:
    formed = [_member(0), _member(1), _member(2, ident="old")]
    with pytest.raises(prep.NotYet) as exc:
        prep.rejoin(FakeGateway(formed, healthy=set()), formed, "etcd-2", SELF, RENDERED)  # type: ignore[arg-type]
    assert f"({_url(0, 2379)}: timed out; {_url(1, 2379)}: timed out)" in str(exc.value)
    unstarted = [_member(0, started=False), _member(1, started=False)]
    with pytest.raises(prep.NotYet, match=r"\(no member has a client URL\)"):
        prep.rejoin(FakeGateway(unstarted, healthy=set()), unstarted, "etcd-2", SELF, RENDERED)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ prepare(), exactly


def _prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, states: Any, *, clock: Any = None,
             wait: float = 30, rejoin: Any = None) -> tuple[int, list[Any], list[float], dict[str, int]]:
    values = _local_values(tmp_path)
    asked: list[Any] = []
    beacon = {"shutdown": 0, "server_close": 0}

    class FakeBeacon:
        def shutdown(self) -> None:
            beacon["shutdown"] += 1

        def server_close(self) -> None:
            beacon["server_close"] += 1

    monkeypatch.setattr(prep, "start_beacon", lambda _v: FakeBeacon())
    rounds = iter(states)

    def probe(name: str, url: str, tls: Any) -> prep.PeerState:
        asked.append((name, url))
        return next(rounds)(name)

    monkeypatch.setattr(prep, "probe_peer", probe)
    if rejoin is not None:
        monkeypatch.setattr(prep, "rejoin", rejoin)
    slept: list[float] = []
    now = iter(range(0, 1000, 10))
    code = prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), wait, str(tmp_path / "etcd.conf.yaml"),
                        clock=clock or (lambda: float(next(now))), sleep=slept.append)
    return code, asked, slept, beacon


def test_prepare_asks_every_other_member_on_its_first_peer_url_and_keeps_waiting_with_reminders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A member without data never bootstraps while a peer is down, and never gives up (exiting would only put the
    pod into back-off while its beacon stops answering "empty"): it says why once, then again every window."""
    def down(name: str) -> prep.PeerState:
        return prep.PeerState(name, "down", detail="refused")

    def empty(name: str) -> prep.PeerState:
        return prep.PeerState(name, "empty")

    code, asked, slept, beacon = _prepare(tmp_path, monkeypatch, [down] * 12 + [empty] * 2)
    # clock: 0 at the start (first reminder due at 30), then 10, 20, ... after each round: six rounds down, a
    # pause of 2 s after each, reminders at 30 and 60 (the next one due a window after the last), then created
    assert code == 0 and slept == [2.0] * 6
    assert asked == [("etcd-0", _url(0)), ("etcd-1", _url(1))] * 7
    assert beacon == {"shutdown": 1, "server_close": 1}
    reason = ("no member reports a formed cluster and not every member answers (etcd-0: refused; etcd-1: refused); "
              "a member that does not answer may hold the data, so this empty member does not bootstrap")
    assert capsys.readouterr().err.splitlines() == [
        f"etcd-prepare: etcd-2: waiting: {reason}",
        f"etcd-prepare: etcd-2: still waiting after 30s: {reason} (runbook: {prep.RUNBOOK})",
        f"etcd-prepare: etcd-2: still waiting after 60s: {reason} (runbook: {prep.RUNBOOK})",
        "etcd-prepare: etcd-2: every other member answers and none has formed a cluster: creating it"]
    assert json.loads((tmp_path / "etcd.conf.yaml").read_text())["initial-cluster-state"] == "new"


def test_a_new_reason_is_said_at_once_not_as_a_reminder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def down(detail: str) -> Any:
        return lambda name: prep.PeerState(name, "down", detail=detail)

    def empty(name: str) -> prep.PeerState:
        return prep.PeerState(name, "empty")

    states = [down("refused")] * 4 + [down("timed out")] * 2 + [empty] * 2
    code, asked, slept, beacon = _prepare(tmp_path, monkeypatch, states, wait=20)
    assert len(asked) == 2 * 4
    assert code == 0 and slept == [2.0] * 3 and beacon == {"shutdown": 1, "server_close": 1}

    def reason(detail: str) -> str:
        return (f"no member reports a formed cluster and not every member answers (etcd-0: {detail}; etcd-1: "
                f"{detail}); a member that does not answer may hold the data, so this empty member does not bootstrap")

    # round 1 (clock 10): said; round 2 (20): the window is over, a reminder; round 3 (30): a new reason, said at
    # once as news, not as a reminder
    assert capsys.readouterr().err.splitlines() == [
        f"etcd-prepare: etcd-2: waiting: {reason('refused')}",
        f"etcd-prepare: etcd-2: still waiting after 20s: {reason('refused')} (runbook: {prep.RUNBOOK})",
        f"etcd-prepare: etcd-2: waiting: {reason('timed out')}",
        "etcd-prepare: etcd-2: every other member answers and none has formed a cluster: creating it"]


def test_prepare_rejoins_and_waits_when_the_rejoin_cannot_happen_yet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    formed = (_member(0), _member(1))
    calls = []

    def rejoin(gateway: Any, members: Any, name: str, url: str, rendered: Any, sleep: Any) -> str:
        calls.append((members, name, url))
        if len(calls) == 1:
            raise prep.NotYet("no quorum")
        return f"etcd-0={_url(0)},etcd-1={_url(1)},etcd-2={SELF}"

    def formed_state(name: str) -> prep.PeerState:
        return prep.PeerState(name, "members", members=formed)

    code, asked, slept, _ = _prepare(tmp_path, monkeypatch, [formed_state] * 4, rejoin=rejoin)
    assert code == 0 and len(asked) == 4 and slept == [2.0]
    assert calls == [(formed, "etcd-2", SELF)] * 2
    doc = json.loads((tmp_path / "etcd.conf.yaml").read_text())
    assert doc["initial-cluster-state"] == "existing"
    assert doc["initial-cluster"] == f"etcd-0={_url(0)},etcd-1={_url(1)},etcd-2={SELF}"
    err = capsys.readouterr().err
    assert "has no data, but no quorum" in err and "joined as a new member, starting with state existing" in err


def test_prepare_creates_once_everyone_is_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def empty(name: str) -> prep.PeerState:
        return prep.PeerState(name, "empty")

    code, asked, slept, _ = _prepare(tmp_path, monkeypatch, [empty] * 2)
    assert (code, len(asked), slept) == (0, 2, [])
    assert json.loads((tmp_path / "etcd.conf.yaml").read_text())["initial-cluster-state"] == "new"


def test_prepare_asks_each_member_on_its_first_listed_peer_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = _local_values(tmp_path)
    values["initial-cluster"] = ",".join(f"etcd-{i}={_url(i)},etcd-{i}=https://10.42.0.{i}:2380" for i in range(3))
    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(prep, "start_beacon", lambda _v: None)

    def probe(name: str, url: str, tls: Any) -> prep.PeerState:
        asked.append((name, url))
        return prep.PeerState(name, "empty")

    monkeypatch.setattr(prep, "probe_peer", probe)
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(tmp_path / "c")) == 0
    assert asked == [("etcd-0", _url(0)), ("etcd-1", _url(1))]


def test_prepare_with_a_wal_keeps_the_rendered_state(tmp_path: Path) -> None:
    values = _local_values(tmp_path)
    wal = tmp_path / "data" / "member" / "wal"
    wal.mkdir(parents=True)
    (wal / "1.wal").write_bytes(b"x")
    config = tmp_path / "etcd.conf.yaml"
    del values["initial-cluster-state"]
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(config)) == 0
    assert json.loads(config.read_text())["initial-cluster-state"] == "new"
    values["initial-cluster-state"] = "existing"
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(config)) == 0
    assert json.loads(config.read_text())["initial-cluster-state"] == "existing"


def test_prepare_takes_its_own_first_advertised_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    values = _local_values(tmp_path)
    values["initial-advertise-peer-urls"] = f"{SELF},https://10.42.0.7:2380"
    monkeypatch.setattr(prep, "start_beacon", lambda _v: None)
    monkeypatch.setattr(prep, "probe_peer", lambda name, url, tls: prep.PeerState(name, "empty"))
    assert prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(tmp_path / "c")) == 0
    values["initial-advertise-peer-urls"] = f"https://10.42.0.7:2380,{SELF}"
    with pytest.raises(prep.PrepareError, match="is not in --initial-cluster"):
        prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(tmp_path / "c"))
    (tmp_path / "data" / "member" / "snap").mkdir(parents=True)
    values["initial-advertise-peer-urls"] = SELF
    prep.prepare(values, prep.Tls("ca", "ca", "c", "k"), 1, str(tmp_path / "c"))
    assert f"{tmp_path / 'data'}/member had no WAL" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ main()


def test_main_runs_as_the_pod_runs_it(tmp_path: Path) -> None:
    """The file itself under python, the way the init container calls it: a member with a WAL writes the file."""
    import subprocess
    import sys

    values = _local_values(tmp_path)
    wal = tmp_path / "data" / "member" / "wal"
    wal.mkdir(parents=True)
    (wal / "1.wal").write_bytes(b"x")
    config = tmp_path / "etcd.conf.yaml"
    args = [f"--{k}={v}" for k, v in values.items()]
    script = Path(prep.__file__)
    result = subprocess.run([sys.executable, str(script), f"--config-file={config}", "--client-cert=c",
                             "--client-key=k", "--", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(config.read_text())["name"] == "etcd-2"
    bad = subprocess.run([sys.executable, str(script), f"--config-file={config}", "--client-cert=c",
                          "--client-key=k", "--", "--name=etcd-2"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr == ("etcd-prepare: refusing: etcd flag --data-dir is required "
                          "(runbook: docs/runbooks/one-hub-server-lost.md)\n")


def test_main_hands_prepare_the_member_tls_and_a_five_minute_window(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    import socket

    got: dict[str, Any] = {}

    def fake_prepare(values: Any, tls: Any, wait_seconds: float, config_path: str) -> int:
        got.update(values=values, tls=tls, wait=wait_seconds, config=config_path, timeout=socket.getdefaulttimeout())
        return 0

    monkeypatch.setattr(prep, "prepare", fake_prepare)
    values = _values()
    args = [f"--{k}={v}" for k, v in values.items()]
    before = socket.getdefaulttimeout()
    try:
        assert prep.main(["--config-file=/x/c.yaml", "--client-cert=/p/c.crt", "--client-key=/p/c.key", "--",
                          *args]) == 0
    finally:
        socket.setdefaulttimeout(before)
    assert got["tls"] == prep.Tls(peer_ca=flags.PATHS["etcd/ca.crt"], client_ca=flags.PATHS["etcd/ca.crt"],
                                  cert="/p/c.crt", key="/p/c.key")
    assert got["tls"].timeout == 3.0
    assert (got["wait"], got["config"], got["timeout"], got["values"]) == (300.0, "/x/c.yaml", 10, values)
    for missing in ("--config-file=/x", "--client-cert=/c", "--client-key=/k"):
        given = [a for a in ("--config-file=/x", "--client-cert=/c", "--client-key=/k") if a != missing]
        with pytest.raises(SystemExit):
            prep.main([*given, "--", *args])


def test_the_runbook_it_names_exists() -> None:
    from tests.support.tools import REPO

    assert (REPO / prep.RUNBOOK).is_file()


def test_the_empty_header_is_the_protocol_between_members() -> None:
    """Every member's prepare agent recognises the others' beacons by this header: a member running another
    version during a rollout must still read as empty, not as down."""
    assert prep.EMPTY_HEADER == "X-Karmada-Hub-Etcd-Prepare"


# ------------------------------------------------------------------------------------------ on loopback


@pytest.fixture(scope="module")
def etcd_tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files of a throwaway etcd CA: a peer certificate for 127.0.0.1, the SAN-less member client certificate,
    and a serving certificate from a CA nobody trusts."""
    from tests.support.testpki import make_ca, make_leaf

    d = tmp_path_factory.mktemp("etcd-tls")
    ca, other = make_ca("etcd-ca"), make_ca("other-ca")
    pairs = {"peer": make_leaf(ca, "etcd-peer", True), "client": make_leaf(ca, "etcd-member-client", False),
             "rogue": make_leaf(other, "rogue", True)}
    out = {"ca": str(d / "ca.crt")}
    (d / "ca.crt").write_text(ca.cert_pem)
    for name, pair in pairs.items():
        (d / f"{name}.crt").write_text(pair.cert_pem)
        (d / f"{name}.key").write_text(pair.key_pem)
        out[name], out[f"{name}-key"] = str(d / f"{name}.crt"), str(d / f"{name}.key")
    return out


def _tls(files: dict[str, str]) -> prep.Tls:
    return prep.Tls(peer_ca=files["ca"], client_ca=files["ca"], cert=files["client"], key=files["client-key"])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_beacon_answers_members_as_an_empty_member(etcd_tls: dict[str, str]) -> None:
    import http.client
    import ssl

    port = _free_port()
    values = {"listen-peer-urls": f"https://127.0.0.1:{port},https://127.0.0.1:1", "peer-trusted-ca-file":
              etcd_tls["ca"], "peer-cert-file": etcd_tls["peer"], "peer-key-file": etcd_tls["peer-key"],
              "name": "etcd-2"}
    beacon = prep.start_beacon(values)
    assert beacon is not None
    try:
        assert prep.probe_peer("etcd-2", f"https://127.0.0.1:{port}", _tls(etcd_tls)) == prep.PeerState(
            "etcd-2", "empty")
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=_tls(etcd_tls).context(etcd_tls["ca"]),
                                           timeout=5)
        conn.request("GET", "/anything")
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 404, "etcd's own bootstrap checks and raft streams get nothing"
        assert resp.getheader("X-Karmada-Hub-Etcd-Prepare") == "empty"
        assert resp.getheader("Content-Type") == "application/json"
        assert resp.getheader("Content-Length") == str(len(body))
        assert json.loads(body) == {"name": "etcd-2", "data": False}
        conn.close()
        anonymous = ssl.create_default_context(cafile=etcd_tls["ca"])  # no client certificate
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            c = http.client.HTTPSConnection("127.0.0.1", port, context=anonymous, timeout=5)
            c.request("GET", "/members")
            c.getresponse().read()
    finally:
        beacon.shutdown()
        beacon.server_close()
    # etcd takes the port the moment the beacon lets go, even with connections of the beacon in TIME_WAIT
    again = prep.start_beacon(values)
    assert again is not None
    again.shutdown()
    again.server_close()


def test_the_beacon_runs_in_the_background_and_lets_go_quickly(monkeypatch: pytest.MonkeyPatch,
                                                              etcd_tls: dict[str, str]) -> None:
    import threading

    started: list[dict[str, Any]] = []

    class Thread:
        def __init__(self, target: Any, kwargs: dict[str, Any], daemon: bool) -> None:
            started.append({"kwargs": kwargs, "daemon": daemon})

        def start(self) -> None:
            pass

    monkeypatch.setattr(threading, "Thread", Thread)
    port = _free_port()
    beacon = prep.start_beacon({"listen-peer-urls": f"https://127.0.0.1:{port}", "peer-trusted-ca-file":
                                etcd_tls["ca"], "peer-cert-file": etcd_tls["peer"], "peer-key-file":
                                etcd_tls["peer-key"], "name": "etcd-2"})
    assert beacon is not None
    beacon.server_close()
    assert started == [{"kwargs": {"poll_interval": 0.2}, "daemon": True}]
    assert prep._Beacon.daemon_threads and prep._Beacon.allow_reuse_address
    import socket

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        with pytest.raises(prep.PrepareError, match="is etcd already running"):
            prep.start_beacon({"listen-peer-urls": f"https://127.0.0.1:{port}", "peer-trusted-ca-file":
                               etcd_tls["ca"], "peer-cert-file": etcd_tls["peer"], "peer-key-file":
                               etcd_tls["peer-key"], "name": "etcd-2"})


def test_the_beacon_listens_on_every_interface_and_the_peer_port_unless_told(monkeypatch: pytest.MonkeyPatch,
                                                                              etcd_tls: dict[str, str]) -> None:
    import threading

    bound: list[tuple[str, int]] = []

    class Beacon:
        def __init__(self, address: tuple[str, int], ctx: Any, name: str) -> None:
            bound.append(address)

        def serve_forever(self, poll_interval: float) -> None:
            pass

    monkeypatch.setattr(prep, "_Beacon", Beacon)
    monkeypatch.setattr(threading, "Thread", lambda target, kwargs, daemon: type("T", (), {"start": lambda s: None})())
    tls = {"peer-trusted-ca-file": etcd_tls["ca"], "peer-cert-file": etcd_tls["peer"],
           "peer-key-file": etcd_tls["peer-key"], "name": "etcd-2"}
    for url in ("https://:0", "https://10.42.0.7:0", "https://:2390"):
        prep.start_beacon({**tls, "listen-peer-urls": url})
    assert bound == [("0.0.0.0", 2380), ("10.42.0.7", 2380), ("0.0.0.0", 2390)]


def test_the_beacon_handshakes_in_its_handler_thread_with_a_timeout() -> None:
    calls: list[Any] = []

    class Request:
        def settimeout(self, seconds: float) -> None:
            calls.append(("timeout", seconds))

        def do_handshake(self) -> None:
            calls.append(("handshake",))

        def makefile(self, *args: Any, **kwargs: Any) -> Any:
            import io

            return io.BytesIO()

    handler = prep._BeaconHandler.__new__(prep._BeaconHandler)
    handler.request = Request()
    handler.setup()
    assert calls == [("timeout", 5), ("handshake",)]


def test_the_beacon_hands_the_handshake_to_the_handler_thread(etcd_tls: dict[str, str]) -> None:
    import socket
    import ssl

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(etcd_tls["peer"], etcd_tls["peer-key"])
    beacon = prep._Beacon(("127.0.0.1", 0), ctx, "etcd-2")
    try:
        with socket.create_connection(beacon.server_address, timeout=5):
            sock, _ = beacon.get_request()
            try:
                assert isinstance(sock, ssl.SSLSocket) and sock.server_side
                assert sock.do_handshake_on_connect is False, "a silent client must not block the accept loop"
            finally:
                sock.close()
    finally:
        beacon.server_close()


class FakePeer:
    """A running etcd's peer port (or its gateway) on loopback: answers from `self.answers[path]`."""

    def __init__(self, files: dict[str, str], serving: str = "peer") -> None:
        from tests.support.httpfake import Handler, LoopbackServer, server_tls

        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.answers: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        fake = self

        class PeerHandler(Handler):
            def _answer(self) -> None:
                body = self.body()
                fake.requests.append((self.command, self.path, dict(self.headers), json.loads(body) if body else None))
                status, payload, headers = fake.answers.get(self.path, (404, b"", {}))
                self.reply(status, payload, headers)

            do_GET = _answer  # noqa: N815 - http.server names it
            do_POST = _answer  # noqa: N815

        tls = server_tls(files[serving], files[f"{serving}-key"], files["ca"], require_client_cert=True)
        self.server = LoopbackServer(PeerHandler, tls)
        self.url = f"https://127.0.0.1:{self.server.port}"

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def fake_peer(etcd_tls: dict[str, str]) -> Any:
    peer = FakePeer(etcd_tls)
    yield peer
    peer.close()


def test_probe_reads_a_running_members_list(fake_peer: FakePeer, etcd_tls: dict[str, str]) -> None:
    fake_peer.answers["/members"] = (200, json.dumps([
        {"id": "7b", "name": "etcd-0", "peerURLs": [_url(0)], "clientURLs": [_url(0, 2379)]},
        {"id": "8c", "peerURLs": [_url(1)]}]).encode(), {"Content-Type": "application/json"})
    state = prep.probe_peer("etcd-0", fake_peer.url, _tls(etcd_tls))
    assert state == prep.PeerState("etcd-0", "members", members=(
        prep.Member("7b", "etcd-0", (_url(0),), (_url(0, 2379),)), prep.Member("8c", "", (_url(1),), ())))
    ((method, path, headers, body),) = fake_peer.requests
    assert (method, path, body) == ("GET", "/members", None) and "Content-Type" not in headers


@pytest.mark.parametrize(("answer", "detail"), [
    ((500, b"", {}), "HTTP 500 on /members"),
    ((201, b"[]", {}), "HTTP 201 on /members"),
    ((404, b"", {}), "HTTP 404 on /members"),
    ((200, b"not json", {}), "unreadable /members answer (Expecting value: line 1 column 1 (char 0))"),
    ((200, b"[1]", {}), "unreadable /members answer ('int' object has no attribute 'get')"),
    ((200, b'[{"peerURLs": 5}]', {}), "unreadable /members answer ('int' object is not iterable)"),
])
def test_probe_counts_anything_else_as_down(fake_peer: FakePeer, etcd_tls: dict[str, str],
                                            answer: tuple[int, bytes, dict[str, str]], detail: str) -> None:
    fake_peer.answers["/members"] = answer
    assert prep.probe_peer("etcd-1", fake_peer.url, _tls(etcd_tls)) == prep.PeerState("etcd-1", "down", detail=detail)


def test_probe_trusts_the_empty_header_whatever_the_status(fake_peer: FakePeer, etcd_tls: dict[str, str]) -> None:
    fake_peer.answers["/members"] = (200, b"[]", {"X-Karmada-Hub-Etcd-Prepare": "empty"})
    assert prep.probe_peer("etcd-1", fake_peer.url, _tls(etcd_tls)).kind == "empty"
    fake_peer.answers["/members"] = (404, b"", {"X-Karmada-Hub-Etcd-Prepare": "full"})
    assert prep.probe_peer("etcd-1", fake_peer.url, _tls(etcd_tls)).kind == "down"


def test_probe_refuses_a_peer_without_our_ca_and_one_that_is_not_there(etcd_tls: dict[str, str]) -> None:
    rogue = FakePeer(etcd_tls, serving="rogue")
    try:
        state = prep.probe_peer("etcd-1", rogue.url, _tls(etcd_tls))
    finally:
        rogue.close()
    assert state.kind == "down" and not rogue.requests
    assert state.detail == (f"certificate not from the etcd CA for {rogue.url} (unable to get local issuer "
                            "certificate)")
    port = _free_port()
    state = prep.probe_peer("etcd-1", f"https://127.0.0.1:{port}", _tls(etcd_tls))
    assert state == prep.PeerState("etcd-1", "down", detail="ConnectionRefusedError: [Errno 111] Connection refused")


def test_probe_counts_a_broken_http_answer_as_down(etcd_tls: dict[str, str]) -> None:
    import socket
    import ssl
    import threading

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=etcd_tls["ca"])
    ctx.load_cert_chain(etcd_tls["peer"], etcd_tls["peer-key"])
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with ctx.wrap_socket(conn, server_side=True) as tls_conn:
            tls_conn.recv(4096)
            tls_conn.sendall(b"NOT HTTP\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        state = prep.probe_peer("etcd-1", f"https://127.0.0.1:{listener.getsockname()[1]}", _tls(etcd_tls))
    finally:
        thread.join(10)
        listener.close()
    assert state.kind == "down" and state.detail.startswith("BadStatusLine: ")


def test_requests_default_to_https_port_443(monkeypatch: pytest.MonkeyPatch) -> None:
    import http.client

    made: list[tuple[Any, ...]] = []

    class Conn:
        def __init__(self, host: str, port: int, context: Any, timeout: float) -> None:
            made.append((host, port, timeout))

        def request(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("stop here")

        def close(self) -> None:
            made.append(("closed",))

    monkeypatch.setattr(http.client, "HTTPSConnection", Conn)
    with pytest.raises(OSError, match="stop here"):
        prep._request("https://etcd-0.example", None, "GET", "/members", None, 1.5)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="stop here"):
        prep._request("https://:2380", None, "GET", "/members", None, 1.5)  # type: ignore[arg-type]
    assert made == [("etcd-0.example", 443, 1.5), ("closed",), ("", 2380, 1.5), ("closed",)]


def test_the_gateway_calls_etcds_member_api(fake_peer: FakePeer, etcd_tls: dict[str, str]) -> None:
    gw = prep.Gateway(_tls(etcd_tls))
    member = {"ID": "11", "name": "etcd-0", "peerURLs": [_url(0)], "clientURLs": [_url(0, 2379)]}
    fake_peer.answers = {
        "/v3/kv/range": (200, b"{}", {}),
        "/v3/cluster/member/list": (200, json.dumps({"members": [member]}).encode(), {}),
        "/v3/cluster/member/remove": (200, b"{}", {}),
        "/v3/cluster/member/add": (200, json.dumps({"members": [member, {"ID": "12", "peerURLs": [SELF]}]}).encode(),
                                   {}),
    }
    assert gw.unhealthy(fake_peer.url) is None
    assert gw.members(fake_peer.url) == [prep.Member("11", "etcd-0", (_url(0),), (_url(0, 2379),))]
    gw.remove(fake_peer.url, "11")
    assert [m.id for m in gw.add(fake_peer.url, SELF)] == ["11", "12"]
    assert [(m, p, b) for m, p, _, b in fake_peer.requests] == [
        ("POST", "/v3/kv/range", {"key": "aGVhbHRo"}),  # base64("health"): etcdctl endpoint health's key
        ("POST", "/v3/cluster/member/list", {}),
        ("POST", "/v3/cluster/member/remove", {"ID": "11"}),
        ("POST", "/v3/cluster/member/add", {"peerURLs": [SELF]}),
    ]
    assert {h.get("Content-Type") for _, _, h, _ in fake_peer.requests} == {"application/json"}
    fake_peer.answers["/v3/cluster/member/list"] = (200, b"{}", {})
    assert gw.members(fake_peer.url) == []
    fake_peer.answers["/v3/cluster/member/add"] = (200, b"", {})
    assert gw.add(fake_peer.url, SELF) == []


@pytest.mark.parametrize(("answer", "said"), [
    ((503, b'{"message": "no leader"}', {}), "/v3/kv/range: HTTP 503 no leader"),
    ((200, b'{"error": "etcdserver: request timed out"}', {}), "/v3/kv/range: HTTP 200 etcdserver: request timed out"),
    ((500, b"x" * 300 + b"\xff", {}), "/v3/kv/range: HTTP 500 " + "x" * 200),
    ((502, b"\xff\xfe", {}), "/v3/kv/range: HTTP 502 \ufffd\ufffd"),
    ((500, b"{}", {}), "/v3/kv/range: HTTP 500 {}"),
])
def test_the_gateway_counts_errors_as_not_yet(fake_peer: FakePeer, etcd_tls: dict[str, str],
                                              answer: tuple[int, bytes, dict[str, str]], said: str) -> None:
    fake_peer.answers["/v3/kv/range"] = answer
    problem = prep.Gateway(_tls(etcd_tls)).unhealthy(fake_peer.url)
    assert problem == f"NotYet: {fake_peer.url}{said}"


def test_the_gateway_counts_an_unreachable_or_broken_member_as_unhealthy(etcd_tls: dict[str, str]) -> None:
    port = _free_port()
    problem = prep.Gateway(_tls(etcd_tls)).unhealthy(f"https://127.0.0.1:{port}")
    assert problem == "ConnectionRefusedError: [Errno 111] Connection refused"


def test_the_gateway_waits_longer_for_the_health_read(monkeypatch: pytest.MonkeyPatch,
                                                      etcd_tls: dict[str, str]) -> None:
    import http.client

    timeouts: list[float] = []

    def request(url: str, ctx: Any, method: str, path: str, body: Any, timeout: float) -> Any:
        timeouts.append(timeout)
        if path == "/v3/kv/range":
            raise http.client.RemoteDisconnected("gone")
        return 200, {}, b"{}"

    monkeypatch.setattr(prep, "_request", request)
    gw = prep.Gateway(_tls(etcd_tls))
    assert gw.unhealthy("https://x") == "RemoteDisconnected: gone"
    gw.members("https://x")
    assert timeouts == [6.0, 3.0], "a linearizable read gets 6 s, a member-API call the client's 3 s"
