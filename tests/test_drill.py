"""`python -m hubctl drill` end to end against a simulated fleet that plays a scripted timeline.

The drill runs as the operator runs it (a subprocess of `python -m hubctl drill dev --yes`), with kubeconfigs
for a fake karmada-apiserver, hub host API, member APIs and CAPI management API, a fake Hetzner API whose
poweroff is the cue, the real failover controller (three vantage points) probing real loopback endpoints, a
stand-in external-dns writing a real authoritative DNS server, and a caching resolver in front of it.

What must hold: the phases the drill measures match the script within `TOLERANCE` (Karmada's scripted
reactions) or the bounds the controller's settings give (DNS phases); the JSON, Markdown and SVG are written;
Ctrl-C restores the member and removes the probe service; without `--yes` nothing is touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubctl.drill import service
from hubctl.drill.timeline import Phase, Timeline
from tests.support.drill_sim import DRILL_NS, DrillFleet, Script
from tests.support.httpfake import Handler, LoopbackServer
from tests.support.loopback import wait_for
from tests.support.tools import REPO, load_stack

TOLERANCE = 1.0
"""Seconds between an event of the simulated fleet and the drill's measurement of it: one poll (0.05 s) plus one
observation pass (a handful of HTTPS, DNS and HTTP round trips on loopback, each a new TLS handshake), which took
up to 0.6 s on a loaded 2-core CI machine. Events are compared with when the simulation made them, never before."""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[DrillFleet]:
    f = DrillFleet(tmp_path / "sim", load_stack("dev"))
    f.world.start_controllers()
    yield f
    f.close()


_MAIN_WITH_SIGINT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                     "sys.argv[0] = 'hubctl'; runpy.run_module('hubctl', run_name='__main__', alter_sys=True)")


def _drill(fleet: DrillFleet, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    w = fleet.world
    # as `python -m hubctl`, with Ctrl-C's handler installed even when the test runs with SIGINT ignored (a
    # background job's children inherit SIG_IGN and Python then leaves it: the Ctrl-C test's drill ran to the end).
    # Not preexec_fn as in test_interrupt.py: this process runs the fake fleet's threads when it forks.
    args = [sys.executable, "-c", _MAIN_WITH_SIGINT, "drill", "dev",
            "--kubeconfigs", str(fleet.kubeconfigs(tmp_path / "kc")),
            "--nameserver", f"{w.dns.address}:{w.dns.port}", "--resolver", f"{w.resolver.address}:{w.resolver.port}",
            "--hcloud-endpoint", fleet.hetzner.url, "--http-port", str(w.port), "--poll", "0.05",
            "--connect-timeout", "0.3", "--timeout", "20", "--settle-timeout", "20", "--out", str(tmp_path / "out"),
            *extra]
    env = {**os.environ, "HCLOUD_TOKEN": "sim-token"}
    env.pop("HCLOUD_ENDPOINT", None)
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _phases(out: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((out / "timeline.json").read_text())
    return {p["key"]: p for p in data["phases"]}


def _since(fleet: DrillFleet, cue: str, start: str) -> float:
    """Seconds from the simulated fleet's `start` cue to its `cue`, as it happened (monotonic clock)."""
    at, began = fleet.cue(cue), fleet.cue(start)
    assert at is not None and began is not None, (cue, start, fleet.cues)
    return at - began


def test_the_drill_measures_the_scripted_timeline(fleet: DrillFleet, tmp_path: Path) -> None:
    proc = _drill(fleet, tmp_path, "--yes")
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    out = tmp_path / "out"
    data = json.loads((out / "timeline.json").read_text())
    assert data["outcome"] == "complete", output
    p = {k: v["at"] for k, v in _phases(out).items()}
    t = fleet.world.timing

    # the kill: the cue (poweroff) came at most one HTTP round trip after the drill's T0
    assert p["client_fail"] <= TOLERANCE
    # Karmada's scripted reactions, measured from T0 (the poweroff lands a moment after it): never before the
    # simulated fleet made the change (its own clock: a loaded machine fires the script's timers late), and at
    # most one observation pass after it
    for key, cue in (("ready", "ready_false"), ("noschedule", "ready_false"), ("noexecute", "noexecute"),
                     ("binding", "evict"), ("survivors", "evict")):
        happened = _since(fleet, cue, "poweroff")
        assert happened - 0.01 <= p[key] <= happened + TOLERANCE, (key, p[key], happened)
    # the failover controller: a majority needs K failed rounds, the K-th ending at its timeout, plus a decision
    detect_max = t.failure_threshold * t.period + t.timeout + 2 * t.decision_period
    assert (t.failure_threshold - 1) * t.period - TOLERANCE <= p["dnsendpoint"] <= detect_max + TOLERANCE
    # external-dns's sync delay after the DNSEndpoint, then the resolver's cache (TTL 60 s scaled)
    assert abs(p["authoritative"] - p["dnsendpoint"] - t.sync_delay) <= TOLERANCE
    cache = t.ttl * t.ttl_scale
    assert p["authoritative"] - TOLERANCE <= p["recursive"] <= p["authoritative"] + cache + TOLERANCE
    # clients: one that falls back to the next address is served at once; one that does not waits for DNS
    assert p["retrying_client"] <= TOLERANCE
    assert abs(p["first_client"] - p["recursive"]) <= TOLERANCE
    # every DNS phase comes long before Karmada evicts: the traffic clock does not wait for the capacity clock
    assert p["authoritative"] < p["binding"] + t.sync_delay
    # the way back
    assert p["path_back"] <= TOLERANCE
    for key, cue in (("ready_back", "ready_true"), ("binding_back", "binding_back")):
        happened = _since(fleet, cue, "poweron")
        assert happened - 0.01 <= p[key] <= happened + TOLERANCE, (key, p[key], happened)
    assert p["dnsendpoint_back"] >= (t.success_threshold - 1) * t.period - TOLERANCE
    assert p["authoritative_back"] >= p["dnsendpoint_back"]

    # the member was really killed the reversible way: CAPI paused during, unpaused after; powered on again
    assert fleet.paused_during_kill is True
    (cluster,) = fleet.capi.items("cluster.x-k8s.io", "clusters", "fleet-dev")[:1]
    assert cluster["metadata"]["name"] in ("dev-fsn1-a", "dev-hel1-a")
    assert all(c["spec"]["paused"] is False for c in fleet.capi.items("cluster.x-k8s.io", "clusters"))
    assert all(s["status"] == "running" for s in fleet.hetzner.servers.values())
    posts = [path for m, path in fleet.hetzner.calls if m == "POST"]
    assert sorted(posts) == sorted([f"/v1/servers/{i}/actions/{a}" for i in (100, 101) for a in ("poweroff",
                                                                                                   "poweron")])
    assert fleet.hetzner.unauthorized == 0
    # the probe service is gone again
    assert not fleet.world.karmada.items("apps", "deployments", DRILL_NS)
    assert not fleet.world.karmada.items("networking.k8s.io", "ingresses", DRILL_NS)

    # the three outputs
    md = (out / "timeline.md").read_text()
    assert "| authoritative answer without the dead region |" in md and "## `hubctl budget dev`" in md
    assert "| *authoritative answer without the dead region* | *14* | |" in md  # the budget beside it
    svg = ET.fromstring((out / "timeline.svg").read_text())
    assert svg.tag.endswith("svg") and len([e for e in svg.iter() if e.tag.endswith("circle")]) == len(p)
    assert "[kill" in output and "drill complete" in output


@pytest.fixture
def slow_fleet(tmp_path: Path) -> Iterator[DrillFleet]:
    """Karmada reacts 10 s after the kill: the drill is surely still in its kill phase when the test interrupts it."""
    f = DrillFleet(tmp_path / "sim", load_stack("dev"), Script(ready_false=10.0, noexecute=10.4, evict=10.8))
    f.world.start_controllers()
    yield f
    f.close()


def test_ctrl_c_restores_the_member_and_removes_the_probe_service(slow_fleet: DrillFleet, tmp_path: Path) -> None:
    fleet = slow_fleet
    proc = _drill(fleet, tmp_path, "--yes")
    try:
        assert wait_for(lambda: fleet.cue("poweroff") is not None, 60), "the drill never killed the member"
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output
    assert fleet.cue("poweron") is not None, output
    assert all(s["status"] == "running" for s in fleet.hetzner.servers.values())
    assert all(c["spec"]["paused"] is False for c in fleet.capi.items("cluster.x-k8s.io", "clusters"))
    assert not fleet.world.karmada.items("apps", "deployments", DRILL_NS)
    data = json.loads((tmp_path / "out" / "timeline.json").read_text())
    assert data["outcome"] == "interrupted" and data["phases"]
    assert (tmp_path / "out" / "timeline.svg").is_file() and (tmp_path / "out" / "timeline.md").is_file()


def test_without_yes_nothing_is_touched(fleet: DrillFleet, tmp_path: Path) -> None:
    proc = _drill(fleet, tmp_path)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert output.strip().splitlines() == [
        "error: hubctl drill kills member dev-fsn1-a of dev for real (poweroff: the member's API and ingress "
        "(servers powered off)); add --yes to go ahead"]
    assert not fleet.hetzner.calls and not fleet.world.karmada.items("apps", "deployments", DRILL_NS)
    assert not (tmp_path / "out").exists()


def test_a_firewall_cannot_kill_a_member_behind_a_private_network(fleet: DrillFleet, tmp_path: Path) -> None:
    proc = _drill(fleet, tmp_path, "--yes", "--method", "firewall")
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, output
    assert "regions.eu-fsn.networkId is set" in output and "--method poweroff" in output
    assert not fleet.hetzner.calls


def test_probe_service_documents_validate() -> None:
    from tests.support.schemas import validate_any

    docs = service.documents("dev.example.com", "dev-fsn1-a", "dev-hel1-a")
    for obj in docs:
        validate_any(obj)
    pp = docs[-1]
    assert pp["spec"]["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Duplicated"}
    assert pp["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["dev-fsn1-a", "dev-hel1-a"]
    assert docs[3]["spec"]["rules"][0]["host"] == "drill.dev.example.com"


def test_timeline_outputs_say_what_was_late() -> None:
    tl = Timeline("dev", "a", "b", "poweroff", "drill.example.com", phases=[
        Phase("dnsendpoint", "DNSEndpoint", "kill", "terms", 19), Phase("authoritative", "auth", "kill", "t", 36),
        Phase("recursive", "rec", "kill", "t", 96)])
    tl.mark("dnsendpoint", 12.5)
    tl.mark("authoritative", 40)
    assert not tl.mark("authoritative", 41), "a phase is marked once"
    tl.derive()
    assert tl.derived == {"external-dns + propagation (measured)": 27.5}
    md = tl.to_markdown(None)
    assert "| DNSEndpoint | 12.5 | 19 | terms | yes |" in md and "| auth | 40 | 36 | t | **no** |" in md
    assert "| rec | - | 96 | t |  |" in md
    svg = ET.fromstring(tl.to_svg())
    fills = [e.get("fill") for e in svg.iter() if e.tag.endswith("circle")]
    assert fills == ["#1565c0", "#c62828"], "late phases are drawn red"


class _Recorder:
    """A Hetzner API stand-in that records every call and answers what the firewall and LB methods need."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        rec = self

        class RecorderHandler(Handler):
            def _go(self) -> None:
                rec.calls.append((self.command, self.path, self.json_body()))
                if self.path.startswith("/v1/load_balancers?"):
                    out: Any = {"load_balancers": [{"id": 7, "name": "fleet-eu-fsn"}]}
                elif self.path == "/v1/firewalls":
                    out = {"firewall": {"id": 9}, "actions": [{"id": 1, "status": "success"}]}
                elif self.command == "DELETE":
                    out = {}
                else:
                    out = {"action": {"id": 2, "status": "success"}, "actions": [{"id": 3, "status": "success"}]}
                self.reply_json(200, out)

            do_GET = do_POST = do_DELETE = _go  # noqa: N815 - http.server's names

        self.server = LoopbackServer(RecorderHandler)
        self.url = f"{self.server.url}/v1"

    def close(self) -> None:
        self.server.close()


def test_firewall_and_lb_detach_undo_exactly_what_they_did() -> None:
    from hubctl.drill import hcloud

    rec = _Recorder()
    try:
        hc = hcloud.Hcloud(rec.url, token="t")
        fw = hcloud.Firewall(hc, "caph-cluster-dev-fsn1-a=owned", "dev-fsn1-a", lambda _: None)
        fw.kill()
        fw.restore()
        lb = hcloud.LbDetach(hc, "fleet-eu-fsn", "caph-cluster-dev-fsn1-a=owned,machine_type=worker", True,
                             lambda _: None)
        lb.kill()
        lb.restore()
    finally:
        rec.close()
    selector = {"type": "label_selector", "label_selector": {"selector": "caph-cluster-dev-fsn1-a=owned"}}
    (create, remove, delete, find, detach, attach) = rec.calls
    assert create[:2] == ("POST", "/v1/firewalls")
    assert create[2]["apply_to"] == [selector]
    assert [r["direction"] for r in create[2]["rules"]] == ["out"], "no inbound rule: inbound is implicit deny"
    assert remove == ("POST", "/v1/firewalls/9/actions/remove_from_resources", {"remove_from": [selector]})
    assert delete[:2] == ("DELETE", "/v1/firewalls/9")
    assert find[:2] == ("GET", "/v1/load_balancers?name=fleet-eu-fsn")
    target = {"type": "label_selector",
              "label_selector": {"selector": "caph-cluster-dev-fsn1-a=owned,machine_type=worker"}}
    assert detach == ("POST", "/v1/load_balancers/7/actions/remove_target", target)
    assert attach == ("POST", "/v1/load_balancers/7/actions/add_target", {**target, "use_private_ip": True})


def test_no_token_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from hubctl.drill import hcloud
    from hubctl.drill.kube import DrillError, Kube

    monkeypatch.delenv("HCLOUD_TOKEN", raising=False)
    with pytest.raises(DrillError, match=r"^HCLOUD_TOKEN is not set"):
        hcloud.Hcloud("http://127.0.0.1:9")
    with pytest.raises(DrillError, match="no such kubeconfig"):
        Kube(Path("/nonexistent/karmada.kubeconfig"))


def test_method_command_needs_both_commands_and_no_token(fleet: DrillFleet, tmp_path: Path) -> None:
    proc = _drill(fleet, tmp_path, "--yes", "--method", "command", "--kill-command", "true")
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, output
    assert output.strip().splitlines() == [
        "error: --method command needs both --kill-command and --restore-command (the drill restores the member "
        "with the second, also when it stops early)"]
    assert not fleet.hetzner.calls


def test_method_command_runs_the_operators_commands_with_the_member(tmp_path: Path) -> None:
    from hubctl.drill.command import Command
    from hubctl.drill.kube import DrillError

    log: list[str] = []
    seen = tmp_path / "seen"
    method = Command(f'echo "kill $DRILL_MEMBER $DRILL_REGION" >> {seen}', f'echo "restore $DRILL_MEMBER" >> {seen}',
                     "dev-fsn1-a", "eu-fsn", log.append)
    method.kill()
    method.restore()
    assert seen.read_text().splitlines() == ["kill dev-fsn1-a eu-fsn", "restore dev-fsn1-a"]
    assert log == ["--kill-command done", "--restore-command done"]
    failing = Command("echo refused >&2; exit 3", "true", "dev-fsn1-a", "eu-fsn", log.append)
    with pytest.raises(DrillError, match="--kill-command exited 3: refused"):
        failing.kill()


def test_a_client_blip_before_the_region_fails_is_not_its_first_success() -> None:
    """Found on the real fleet: one slow request before the kill took effect marked the first client's "first
    success" at 4 s, before the clients ever failed (9.6 s). Only failures after the dead region is seen failing
    count."""
    import argparse

    from components.operations.budget import failover_budget
    from hubctl.drill.run import Drill, Fleet, phases

    config = load_stack("dev")
    drill = Drill.__new__(Drill)
    drill.args = argparse.Namespace(poll=1.0)
    drill.print = lambda text: None
    drill.tty = False
    drill.timeline = Timeline("dev", "dev-fsn1-a", "dev-hel1-a", "command", "drill.dev.example.com",
                              phases=phases(failover_budget(config), "command"))
    drill.fleet = Fleet(config, config.members[0], config.members[1], "203.0.113.43", "198.51.100.86")
    drill.first_client_failed = False
    drill.t0 = 0.0
    base = {"cluster": ("True", []), "binding": ["dev-fsn1-a", "dev-hel1-a"], "survivor_ready": True,
            "dnsendpoint": None, "authoritative": None, "recursive": None, "retrying_client": True}
    drill.judge("kill", {**base, "victim_path": True, "first_client": False}, 2.0)   # a blip: the path still works
    drill.judge("kill", {**base, "victim_path": True, "first_client": True}, 4.0)
    assert drill.timeline.phase("first_client").at is None
    drill.judge("kill", {**base, "victim_path": False, "first_client": False}, 9.0)  # the region fails
    drill.judge("kill", {**base, "victim_path": False, "first_client": True}, 20.0)
    assert drill.timeline.phase("client_fail").at == 9.0 and drill.timeline.phase("first_client").at == 20.0


def test_a_previous_drills_terminating_namespace_is_waited_for() -> None:
    """Found on the real fleet: a drill right after another failed with 'unable to create new content in namespace
    karmada-hub-drill because it is being terminated'."""
    import argparse

    from hubctl.drill.kube import DrillError
    from hubctl.drill.run import Drill

    class Karmada:
        def __init__(self, terminating: int) -> None:
            self.left = terminating

        def get(self, path: str) -> Any:
            assert path == f"/api/v1/namespaces/{service.NAMESPACE}"
            self.left -= 1
            return {"status": {"phase": "Terminating"}} if self.left >= 0 else None

    drill = Drill.__new__(Drill)
    drill.args = argparse.Namespace(poll=0.01, settle_timeout=5.0)
    drill.karmada = Karmada(terminating=3)  # type: ignore[assignment]
    drill.wait_namespace_gone()
    assert drill.karmada.left < 0  # type: ignore[attr-defined]
    drill.args = argparse.Namespace(poll=0.01, settle_timeout=0.05)
    drill.karmada = Karmada(terminating=10**6)  # type: ignore[assignment]
    with pytest.raises(DrillError, match="still terminating"):
        drill.wait_namespace_gone()


def test_each_observation_is_timed_when_it_returned_not_behind_a_hung_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A black-holed region makes every request to it wait for its timeout. The DNS and API observations of the
    same pass must not wait behind those: the real fleet's serial pass took 6-14 s and stamped the authoritative
    answer's change that much late."""
    import argparse
    import time
    import types

    from hubctl.drill import run as drill_run
    from hubctl.drill.run import Drill
    from hubctl.drill.timeline import Timeline

    victim_ip, survivor_ip, hang = "203.0.113.10", "198.51.100.20", 1.0

    def http_ok(ip: str, port: int, host: str, timeout: float) -> bool:
        if ip == victim_ip:
            time.sleep(hang)  # the connect timeout of a black-holed address
            return False
        return True

    monkeypatch.setattr(drill_run, "http_ok", http_ok)
    monkeypatch.setattr(drill_run.dnsq, "query", lambda server, host, recursive: (survivor_ip,) if not recursive
                        else (survivor_ip, victim_ip))

    class Api:
        def get(self, path: str) -> Any:
            return None

    drill = Drill.__new__(Drill)
    drill.args = argparse.Namespace(http_port=80, connect_timeout=hang)
    victim = types.SimpleNamespace(name="dev-fsn1-a", region="eu-fsn")
    survivor = types.SimpleNamespace(name="dev-hel1-a", region="eu-hel")
    drill.fleet = types.SimpleNamespace(victim=victim, survivor=survivor, victim_ip=victim_ip,  # type: ignore[assignment]
                                        survivor_ip=survivor_ip)
    drill.karmada = drill.hub = drill.survivor_kube = Api()  # type: ignore[assignment]
    drill.host, drill.nameservers, drill.resolver = "drill.example.com", [("ns", 53)], ("resolver", 53)  # type: ignore[assignment]
    drill.timeline = Timeline("dev", victim.name, survivor.name, "command", drill.host,
                              phases=drill_run.phases(drill_run.failover_budget(load_stack("dev")), "command"))
    drill.first_client_failed, drill.tty, drill.print = True, False, lambda s: None
    drill.stage_start = drill.t0 = time.monotonic()

    s = drill.snapshot()
    pass_ends = time.monotonic() - drill.stage_start
    # the victim's request (and the clients that try it first) hang one timeout, in parallel, not one after another
    assert hang <= pass_ends < 2.5 * hang, pass_ends
    drill.judge("kill", s, pass_ends)
    at = {p.key: p.at for p in drill.timeline.phases}
    assert at["authoritative"] is not None and at["authoritative"] < 0.5 * hang, at  # stamped when DNS answered
    assert at["client_fail"] is not None and at["client_fail"] >= hang  # the failure took its timeout
    # the cached answer still holds the dead region: a client that tries it first fails, one that retries the next
    # address is served after its one timeout
    assert at["recursive"] is None and at["first_client"] is None
    assert at["retrying_client"] is not None and hang <= at["retrying_client"] <= pass_ends + 0.001  # ms rounding


def test_the_steady_state_waits_for_the_resolver_to_hold_both_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found on the real fleet: right after a drill the resolver still cached the survivor-only answer, and the next
    drill measured 'recursive answer without the dead region' 0.07 s after its kill."""
    import argparse
    import types

    from hubctl.drill import run as drill_run
    from hubctl.drill.run import Drill

    victim_ip, survivor_ip = "203.0.113.10", "198.51.100.20"
    both = (survivor_ip, victim_ip)
    answers = [(survivor_ip,), (survivor_ip,), both]
    monkeypatch.setattr(drill_run, "http_ok", lambda *a: True)
    drill = Drill.__new__(Drill)
    drill.args = argparse.Namespace(settle_timeout=5.0, poll=0.01, http_port=80, connect_timeout=1.0)
    victim = types.SimpleNamespace(name="dev-fsn1-a", region="eu-fsn")
    drill.fleet = types.SimpleNamespace(victim=victim, survivor=types.SimpleNamespace(name="dev-hel1-a",  # type: ignore[assignment]
                                        region="eu-hel"), victim_ip=victim_ip, survivor_ip=survivor_ip)
    drill.host, drill.tty, drill.print = "drill.example.com", False, lambda s: None  # type: ignore[assignment]
    drill.timeline = types.SimpleNamespace(events=[])  # type: ignore[assignment]
    seen: list[tuple[str, ...]] = []

    def snapshot() -> dict[str, Any]:
        seen.append(answers[min(len(seen), len(answers) - 1)])
        return {"authoritative": both, "recursive": seen[-1], "victim_path": True, "binding": [victim.name],
                "survivor_ready": True}

    drill.snapshot = snapshot  # type: ignore[method-assign]
    drill.steady()
    assert len(seen) == 3  # not steady while the resolver still answered without the victim's region
    answers[:] = [(survivor_ip,)]
    seen.clear()
    drill.args.settle_timeout = 0.05
    with pytest.raises(drill_run.DrillError, match="through the resolver"):
        drill.steady()
