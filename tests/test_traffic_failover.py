"""The traffic failover controller (agents/traffic_failover.py): its decisions, its rendered runtime contract, and
the real controller against real sockets on loopback.

The behaviour tests run three real Controllers (the three vantage points) against a fake host API and a fake
karmada-apiserver that enforce the rendered RBAC, probing real HTTP endpoints (one per region) on random
loopback addresses, with a stand-in external-dns writing a real authoritative DNS server. Timings are scaled
down (a 0.3 s probe period) so each scenario takes seconds; every wait is bounded.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.flags
import dns.message
import dns.query
import jsonschema
import pytest

from agents import traffic_failover as tf
from components.traffic import dnsendpoint_crd, failover_docs
from components.traffic import docs as traffic_docs
from tests.support import agent_pod
from tests.support.fake_apiserver import parse_path
from tests.support.fleet_sim import NAMESPACE, World
from tests.support.loopback import wait_for
from tests.support.rbac import Grant
from tests.support.rendered import find
from tests.support.schemas import OBJECT_META, closed_schema, validate_kubernetes
from tests.support.tools import REPO, load_stack

DOMAIN = "dev.example.com"
HOST = "shop.dev.example.com"
OTHER = "keep.dev.example.com"
"""A second name, so that removing HOST's Ingress is not "every name gone at once" (refused, see below)."""

# ------------------------------------------------------------------------------------------ decisions


def votes(**regions: list[tuple[int, int]]) -> dict[str, list[tf.Vote]]:
    return {r: [tf.Vote(f, s) for f, s in v] for r, v in regions.items()}


REGIONS = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
KW: dict[str, Any] = {"vantage_points": 3, "failure_threshold": 3, "success_threshold": 6, "hold_down": 60,
                      "now": 1_000_000.0}
BOTH = ["192.0.2.10", "192.0.2.20"]


def test_a_majority_withdraws_a_minority_holds() -> None:
    two = tf.decide(HOST, REGIONS, BOTH, votes(fsn=[(3, 0), (4, 0), (0, 9)], hel=[(0, 9)] * 3), {}, **KW)
    assert two is not None and two.regions == ("hel",) and two.targets == ("192.0.2.20",) and two.changed
    assert two.withdrawn == {"fsn": tf.format_time(KW["now"])}
    one = tf.decide(HOST, REGIONS, BOTH, votes(fsn=[(9, 0), (2, 0), (0, 9)], hel=[(0, 9)] * 3), {}, **KW)
    assert one is not None and one.regions == ("fsn", "hel") and not one.changed
    # two stale vantage points abstain: one fresh vote can never make a majority of three
    stale = tf.decide(HOST, REGIONS, BOTH, votes(fsn=[(9, 0)], hel=[(0, 9)]), {}, **KW)
    assert stale is not None and stale.regions == ("fsn", "hel")


def test_restore_needs_a_majority_of_successes_and_the_hold_down() -> None:
    withdrawn = {"fsn": tf.format_time(KW["now"] - 30)}
    good = votes(fsn=[(0, 6), (0, 7), (0, 0)], hel=[(0, 9)] * 3)
    held = tf.decide(HOST, REGIONS, ["192.0.2.20"], good, withdrawn, **KW)
    assert held is not None and held.regions == ("hel",), "30 s after the withdrawal: the 60 s hold-down holds"
    later = tf.decide(HOST, REGIONS, ["192.0.2.20"], good, {"fsn": tf.format_time(KW["now"] - 61)}, **KW)
    assert later is not None and later.regions == ("fsn", "hel") and later.changed and later.withdrawn == {}
    few = tf.decide(HOST, REGIONS, ["192.0.2.20"], votes(fsn=[(0, 6), (0, 5), (0, 5)]),
                    {"fsn": tf.format_time(KW["now"] - 61)}, **KW)
    assert few is not None and few.regions == ("hel",), "one vantage point at successThreshold is not a majority"


def test_never_the_last_region_and_never_empty() -> None:
    dead = votes(fsn=[(5, 0)] * 3, hel=[(5, 0)] * 3)
    kept = tf.decide(HOST, REGIONS, ["192.0.2.20"], dead, {"fsn": "2026-01-01T00:00:00.000000Z"}, **KW)
    assert kept is not None and kept.targets == ("192.0.2.20",) and kept.fail_open and not kept.changed
    assert tf.decide(HOST, REGIONS, [], dead, {}, **KW) is None, "nothing was ever published: nothing to keep"
    with pytest.raises(ValueError, match="empty target list"):
        tf.dnsendpoint(NAMESPACE, tf.Decision(HOST, (), ()), 60)
    # a new name is published once a majority sees it serve, with the regions that serve it
    new = tf.decide(HOST, REGIONS, [], votes(fsn=[(0, 6)] * 3, hel=[(5, 0)] * 3), {}, **KW)
    assert new is not None and new.regions == ("fsn",)
    assert tf.pending(HOST, REGIONS, votes(fsn=[(0, 2)] * 3), vantage_points=3, failure_threshold=3)
    assert not tf.pending(HOST, REGIONS, dead, vantage_points=3, failure_threshold=3)


def test_published_hosts_from_ingress_templates() -> None:
    ingresses = {"items": [
        {"metadata": {"namespace": "shop", "name": "web", "annotations": {tf.PROBE_PATH_ANNOTATION: "/healthz"}},
         "spec": {"tls": [{"hosts": ["shop.dev.example.com"]}],
                  "rules": [{"host": "shop.dev.example.com"}, {"host": "other.example.org"},
                            {"host": "*.dev.example.com"}, {"host": "eu-fsn.lb.dev.example.com"}]}},
        {"metadata": {"namespace": "a", "name": "plain"}, "spec": {"rules": [{"host": "API.dev.example.com."}]}},
        {"metadata": {"namespace": "b", "name": "gone", "deletionTimestamp": "2026-01-01T00:00:00Z"},
         "spec": {"rules": [{"host": "gone.dev.example.com"}]}},
    ]}
    hosts = tf.published_hosts(ingresses, DOMAIN, ["lb.dev.example.com"])
    assert hosts == {"shop.dev.example.com": tf.Target("shop.dev.example.com", True, "/healthz"),
                     "api.dev.example.com": tf.Target("api.dev.example.com", False, "/")}
    cms = {"items": [failover_docs.region_configmap("eu-fsn", "203.0.113.10", ["dev-fsn1-a"]),
                     {"metadata": {"labels": {tf.REGION_LABEL: "bad"}}, "data": {"lbIpv4": "not-an-ip"}}]}
    assert tf.region_addresses(cms) == {"eu-fsn": "203.0.113.10"}


def test_a_region_is_the_one_its_configmap_name_says() -> None:
    """Review M1: RBAC grants a region its ConfigMap by name (`traffic-region-<region>`); the label is what the region
    wrote. eu-hel's ConfigMap labelled eu-fsn (or a new region) claims nothing: only the name's region counts."""
    own = failover_docs.region_configmap("eu-hel", "198.51.100.7", ["dev-hel1-a"])
    claim = copy.deepcopy(own)
    claim["metadata"]["labels"][tf.REGION_LABEL] = "eu-fsn"
    invented = copy.deepcopy(own)
    invented["metadata"]["labels"][tf.REGION_LABEL] = "zz-new"
    fsn = failover_docs.region_configmap("eu-fsn", "203.0.113.10", ["dev-fsn1-a"])
    assert tf.region_addresses({"items": [fsn, claim]}) == {"eu-fsn": "203.0.113.10"}
    assert tf.region_addresses({"items": [fsn, invented]}) == {"eu-fsn": "203.0.113.10"}
    assert tf.region_addresses({"items": [fsn, own]}) == {"eu-fsn": "203.0.113.10", "eu-hel": "198.51.100.7"}


def test_dnsendpoint_validates_against_the_upstream_crd() -> None:
    crd = dnsendpoint_crd.load(allow_download=False)
    (version,) = crd["spec"]["versions"]
    schema = closed_schema(version["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = OBJECT_META
    decision = tf.Decision(HOST, ("fsn", "hel"), ("192.0.2.10", "192.0.2.20"), {"x": "2026-01-01T00:00:00Z"})
    obj = tf.dnsendpoint(NAMESPACE, decision, 60)
    jsonschema.validate(obj, schema)
    assert obj["spec"]["endpoints"] == [{"dnsName": HOST, "recordType": "A", "recordTTL": 60,
                                         "targets": ["192.0.2.10", "192.0.2.20"]}]
    assert (obj["apiVersion"], obj["kind"]) == (f"{crd['spec']['group']}/{version['name']}",
                                                crd["spec"]["names"]["kind"])
    obj["spec"]["endpoints"][0]["ttl"] = 60  # a misspelt field the API server would prune
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, schema)


def test_the_crd_is_verified_by_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "external-dns"
    bad.mkdir()
    (bad / dnsendpoint_crd.FILE).write_text("kind: CustomResourceDefinition\n")
    monkeypatch.setenv(dnsendpoint_crd.DIR_ENV, str(tmp_path))
    from components.karmada.crds import CrdIntegrityError

    with pytest.raises(CrdIntegrityError, match="expected 7d1c06b1"):
        dnsendpoint_crd.fetch(allow_download=False)


# ----------------------------------------------------------------------------- rendered runtime contract


def test_rendered_objects_validate_and_fit_together(rendered_dev: Any) -> None:
    deploy = find(rendered_dev, "host", "Deployment", failover_docs.NAME)
    role = find(rendered_dev, "host", "Role", failover_docs.NAME)
    binding = find(rendered_dev, "host", "RoleBinding", failover_docs.NAME)
    crd = find(rendered_dev, "host", "CustomResourceDefinition", "dnsendpoints.externaldns.k8s.io")
    configmap = find(rendered_dev, "host", "ConfigMap", failover_docs.CONFIGMAP)
    for obj in (deploy, role, binding, configmap, find(rendered_dev, "host", "PodDisruptionBudget",
                                                       failover_docs.NAME)):
        validate_kubernetes(obj)
    assert configmap["data"][failover_docs.SCRIPT_KEY] == (REPO / "agents" / "traffic_failover.py").read_text()
    assert crd["spec"] == dnsendpoint_crd.load(allow_download=False)["spec"]
    pod = deploy["spec"]["template"]["spec"]
    config = load_stack()
    assert deploy["spec"]["replicas"] == config.hub.servers == 3, "one vantage point per hub server"
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "topologyKey"] == "kubernetes.io/hostname"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                    "namespace": failover_docs.NAMESPACE}]
    for region in ("eu-fsn", "eu-hel"):
        cm = find(rendered_dev, "host", "ConfigMap", f"traffic-region-{region}")
        assert cm["metadata"]["labels"][tf.REGION_LABEL] == region and tf.REGION_IP_KEY in cm["data"]


def test_every_rendered_flag_env_file_and_port_is_what_the_program_uses(rendered_dev: Any,
                                                                      rendered_dev_hetzner: Any) -> None:
    """The container's runtime contract, read from the agent itself: argparse accepts every rendered flag with
    the rendered value, `$(VAR)` references resolve from the container env, every file a flag names is under a
    mounted volume, the health port is the container port, and the probe paths are the ones it serves."""
    deploy = find(rendered_dev, "host", "Deployment", failover_docs.NAME)
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    pod = deploy["spec"]["template"]["spec"]
    args = tf.parse_args(container["args"])
    env = {e["name"]: e for e in container["env"]}
    for arg in container["args"]:
        if "$(" in arg:
            var = arg.split("$(", 1)[1].split(")", 1)[0]
            assert var in env, f"{arg}: {var} is not in the container env"
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for path in (args.karmada_ca_file, args.karmada_cert_file, args.karmada_key_file, args.host_ca_file,
                 args.host_token_file, args.zone_config, args.tsig_name_file, args.tsig_secret_file):
        directory, filename = path.rsplit("/", 1)
        volume = volumes[mounts[directory]]
        if "secret" in volume:
            secret = find(rendered_dev, "host", "Secret", volume["secret"]["secretName"])
            assert filename in secret["data"], path
        elif "configMap" in volume:
            configmap = find(rendered_dev, "host", "ConfigMap", volume["configMap"]["name"])
            assert filename in configmap["data"], path
        else:
            provided = {s.get("serviceAccountToken", {}).get("path") for s in volume["projected"]["sources"]}
            provided |= {i["path"] for s in volume["projected"]["sources"] for i in s.get("configMap", {})
                         .get("items", [])}
            assert filename in provided, path
    assert container["command"][-1].rsplit("/", 1)[0] in mounts
    assert args.health_port == container["ports"][0]["containerPort"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert args.namespace == failover_docs.NAMESPACE and args.domain == DOMAIN
    assert args.exclude == [f"lb.{DOMAIN}"] and args.ttl == 15 and args.vantage_points == 3
    # dev runs dns.mode self-hosted: the controller writes the zone to every hub server's private address
    assert args.dns_mode == "self-hosted" and args.nameserver == ["10.0.1.11:53", "10.0.1.12:53", "10.0.1.13:53"]
    assert (args.http_port, args.https_port) == (80, 443)
    assert {s["listen_port"] for s in traffic_docs.regional_lb_services(
        load_stack().regions["eu-fsn"], load_stack().members[0].ingress)} == {args.http_port, args.https_port}
    assert args.karmada_server == "https://karmada-apiserver.karmada-system.svc.cluster.local:5443"
    # the constants the agent and the documents share
    assert (tf.REGION_LABEL, tf.REGION_IP_KEY, tf.MANAGED_BY) == (
        failover_docs.REGION_LABEL, failover_docs.REGION_IP_KEY, failover_docs.MANAGED_BY)
    ext = find(rendered_dev_hetzner, "host", "Deployment", traffic_docs.EXTERNAL_DNS_NAME)
    ext_args = ext["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--label-filter={tf.MANAGED_BY_LABEL}={tf.MANAGED_BY}" in ext_args
    assert f"--namespace={args.namespace}" in ext_args


# ------------------------------------------------------------------------------------- real sockets


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, DOMAIN, {"eu-fsn": ["dev-fsn1-a"], "eu-hel": ["dev-hel1-a"]})
    w.add_ingress("shop", "web", HOST)
    w.add_ingress("keep", "web", OTHER)
    w.serve(HOST)
    w.serve(OTHER)
    yield w
    w.close()


def _authoritative(world: World, name: str) -> tuple[str, ...]:
    q = dns.message.make_query(name, "A")
    q.flags &= ~dns.flags.RD
    r = dns.query.udp(q, world.dns.address, port=world.dns.port, timeout=2)
    assert r.flags & dns.flags.AA
    return tuple(sorted(rr.to_text() for rrset in r.answer for rr in rrset))


def _regions_in_dns(world: World, name: str) -> tuple[str, ...]:
    by_ip = {e.address: r for r, e in world.regions.items()}
    return tuple(sorted(by_ip[ip] for ip in _authoritative(world, name)))


def _published_steady(world: World) -> None:
    assert wait_for(lambda: world.published(HOST) == ("eu-fsn", "eu-hel"), 15), world.published(HOST)
    assert wait_for(lambda: _regions_in_dns(world, HOST) == ("eu-fsn", "eu-hel"), 5)


def test_withdraws_on_majority_and_restores_with_hysteresis(world: World) -> None:
    t = world.timing
    world.start_controllers()
    _published_steady(world)
    assert wait_for(lambda: world.leader() is not None, 5)
    endpoint = world.dnsendpoint(HOST)
    assert endpoint is not None and endpoint["spec"]["endpoints"][0]["recordTTL"] == 60
    assert wait_for(lambda: all(c.ready for c in world.controllers), 5), "every replica ready once names decided"

    killed = time.monotonic()
    world.regions["eu-fsn"].kill()
    assert wait_for(lambda: world.published(HOST) == ("eu-hel",), 10)
    withdrawn = time.monotonic() - killed
    bound = t.failure_threshold * t.period + t.timeout + 2 * t.decision_period
    # K*P + T plus the decision period (and the host API round trips); no sooner than K-1 periods
    assert (t.failure_threshold - 1) * t.period <= withdrawn <= bound + 0.5, withdrawn
    assert wait_for(lambda: _regions_in_dns(world, HOST) == ("eu-hel",), t.sync_delay + 1)

    revived = time.monotonic()
    world.regions["eu-fsn"].revive()
    assert wait_for(lambda: world.published(HOST) == ("eu-fsn", "eu-hel"), 10)
    restored = time.monotonic() - revived
    # the hold-down counts from the withdrawal; R good rounds from the revival: whichever ends later
    earliest = max(t.hold_down - (revived - killed - withdrawn), (t.success_threshold - 1) * t.period)
    assert restored >= earliest - 0.1, (restored, earliest)
    assert restored <= max(t.hold_down, t.success_threshold * t.period + t.timeout) + 1.0, restored
    assert wait_for(lambda: _regions_in_dns(world, HOST) == ("eu-fsn", "eu-hel"), t.sync_delay + 1)
    assert not world.host.denied and not world.karmada.denied, (world.host.denied, world.karmada.denied)


def test_a_minority_failure_changes_nothing(world: World) -> None:
    t = world.timing
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]
    closed.close()
    # hub-3's path to every region is broken (it probes a port nothing listens on): a hub-side problem
    world.start_controllers(overrides={"hub-3": {"http_port": dead_port, "https_port": dead_port}})
    _published_steady(world)
    broken = world.controllers[2]
    assert wait_for(lambda: broken.counters.get(tf.obs_key(HOST, "eu-fsn"), tf.Counter()).failures
                    >= t.failure_threshold, 5)
    time.sleep(3 * t.failure_threshold * t.period)
    assert world.published(HOST) == ("eu-fsn", "eu-hel"), "one vantage point of three must not withdraw"
    # one more vantage point failing (now a majority) does withdraw: the hold was the minority rule, not a bug
    world.regions["eu-hel"].kill()
    assert wait_for(lambda: world.published(HOST) == ("eu-fsn",), 10)


def test_fails_open_when_every_region_fails(world: World) -> None:
    world.start_controllers()
    _published_steady(world)
    world.regions["eu-fsn"].kill()
    assert wait_for(lambda: world.published(HOST) == ("eu-hel",), 10)
    world.regions["eu-hel"].kill(mode="hang")  # black-holed: connects, never answers (the timeout path)
    assert wait_for(lambda: (world.dnsendpoint(HOST) or {}).get("metadata", {}).get("annotations", {})
                    .get(tf.FAIL_OPEN_ANNOTATION) == "true", 10)
    time.sleep(2 * world.timing.failure_threshold * world.timing.period)
    assert world.published(HOST) == ("eu-hel",), "the last region stays: a blank zone helps nobody"
    assert _regions_in_dns(world, HOST) == ("eu-hel",)
    world.regions["eu-fsn"].revive()  # a healthy region again: the dead last one can go now
    assert wait_for(lambda: world.published(HOST) == ("eu-fsn",), 10)


def test_leader_failover_and_a_removed_name(world: World) -> None:
    world.start_controllers()
    _published_steady(world)
    leader = world.leader()
    index = [c.s.identity for c in world.controllers].index(leader)
    world.stop_controller(index)
    assert wait_for(lambda: world.leader() not in (None, leader), 5 * world.timing.lease_duration)
    world.regions["eu-hel"].kill()
    assert wait_for(lambda: world.published(HOST) == ("eu-fsn",), 10), "two vantage points still make a majority"
    world.karmada.remove("networking.k8s.io", "ingresses", "shop", "web")
    assert wait_for(lambda: world.dnsendpoint(HOST) is None, 10)
    assert wait_for(lambda: _authoritative(world, HOST) == (), 2)


def test_the_program_runs_with_its_rendered_command_line(world: World, rendered_dev_hetzner: Any,
                                                        tmp_path: Path) -> None:
    """The script as the pod runs it (the rendered command, `python3 -u <script>`, from the rendered ConfigMap
    mounted as the kubelet does, with the rendered args), three processes, files and servers pointed at the
    fakes and `$(VAR)`s expanded as the kubelet would: it publishes, /readyz turns 200, and every call it makes
    is one the rendered RBAC allows — and every verb the RBAC grants is used. dns.mode hetzner (external-dns
    writes the records, here the stand-in); mode self-hosted runs as rendered in tests/integration/test_dns_lab.py."""
    rendered_dev = rendered_dev_hetzner
    deploy = find(rendered_dev, "host", "Deployment", failover_docs.NAME)
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    command, pod_env = agent_pod.prepare(rendered_dev, "host", pod, tmp_path / "script")
    user = failover_docs.USER.replace(":", "_")
    # the rendered RBAC, not the module constants: the fakes enforce exactly what the plan grants
    karmada_role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:traffic-failover")
    host_role = find(rendered_dev, "host", "Role", failover_docs.NAME)
    world.karmada.grants[failover_docs.USER] = Grant(karmada_role["rules"])
    world.host.grants["failover"] = Grant(host_role["rules"], NAMESPACE)
    procs, ports = [], []
    t = world.timing
    for i in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
        replace = {"--karmada-server": world.karmada.url, "--karmada-ca-file": str(world.tls["ca"]),
                   "--karmada-cert-file": str(world.tls[f"{user}.crt"]),
                   "--karmada-key-file": str(world.tls[f"{user}.key"]), "--host-ca-file": str(world.tls["ca"]),
                   "--host-token-file": str(world.token_file), "--health-port": str(ports[i]),
                   "--period": str(t.period), "--timeout": str(t.timeout), "--hold-down": str(t.hold_down),
                   "--success-threshold": str(t.success_threshold), "--lease-duration": str(t.lease_duration),
                   "--decision-period": str(t.decision_period), "--http-port": str(world.port),
                   "--https-port": str(world.port), "--delete-after": str(t.delete_after)}
        env = {"NODE_NAME": f"hub-{i}", "POD_NAME": f"traffic-failover-{i}"}
        args = []
        for a in container["args"]:
            flag = a.split("=", 1)[0]
            value = replace.get(flag, a.split("=", 1)[1] if "=" in a else "")
            for var, v in env.items():
                value = value.replace(f"$({var})", v)
            args.append(f"{flag}={value}")
        assert container["command"][:2] == ["python3", "-u"]
        procs.append(subprocess.Popen([*command, "--host-server", world.host.url, *args], cwd=tmp_path,
                                      env=pod_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        _published_steady(world)

        def ready(port: int) -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as resp:
                    return resp.status == 200
            except OSError:
                return False

        assert wait_for(lambda: all(ready(p) for p in ports), 10), "every replica's /readyz"
        world.regions["eu-fsn"].kill()
        assert wait_for(lambda: world.published(HOST) == ("eu-hel",), 10)
        world.karmada.remove("networking.k8s.io", "ingresses", "shop", "web")
        assert wait_for(lambda: world.dnsendpoint(HOST) is None, 10)
    finally:
        outs = []
        for p in procs:
            p.terminate()
            outs.append(p.communicate(timeout=10)[0])
    assert any(f"{HOST}: now eu-hel" in out for out in outs), outs
    assert not world.host.denied and not world.karmada.denied, (world.host.denied, world.karmada.denied)
    used = {(m, p.split("?")[0]) for u, m, p, _ in world.host.requests if u == "failover"}
    verbs = set()
    for method, path in used:
        target = parse_path(path)
        verbs.add((target.rbac_resource, {"GET": "get" if target.name else "list", "POST": "create",
                                          "PUT": "update", "DELETE": "delete"}[method]))
    granted = {(r, v) for rule in host_role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert granted == verbs, f"granted but never used: {granted - verbs}; used: {verbs}"
    karmada_used = {(m, p.split("?")[0]) for u, m, p, _ in world.karmada.requests if u == failover_docs.USER}
    assert karmada_used == {("GET", tf.INGRESSES_PATH)}


def test_rbac_enforcement_can_fail(world: World) -> None:
    """The fakes do refuse: without the Role's lease verbs, nothing gets published and the denials are recorded."""
    world.host.grants["failover"] = Grant([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
                                          NAMESPACE)
    world.start_controllers()
    time.sleep(1.5)
    assert world.published(HOST) is None
    assert any("leases" in d for d in world.host.denied)


def test_ready_only_when_external_dns_may_switch(world: World) -> None:
    """No region known yet (the region stacks have not published their LBs): with names, not ready (external-dns
    with --policy=sync would delete their records); a fleet without names is ready at once."""
    for region in world.regions:
        world.host.remove("", "configmaps", NAMESPACE, f"traffic-region-{region}")
    world.start_controllers()
    time.sleep(8 * world.timing.period)
    assert not any(c.ready for c in world.controllers) and world.published(HOST) is None
    world.karmada.remove("networking.k8s.io", "ingresses", "shop", "web")
    world.karmada.remove("networking.k8s.io", "ingresses", "keep", "web")
    assert wait_for(lambda: all(c.ready for c in world.controllers), 10)


# ------------------------------------------------------------- defects found by reading the controller
#
# Each test below drives the real Controller against in-memory API clients and fails on the controller as it was
# before the fix (checked by running it against that file): review-host-and-traffic.md F4-F8 and the region
# ConfigMap replace of review-newcomer.md #8.


class MemoryApi:
    """A JSON API client stand-in: `routes` answer GETs by path prefix, every request is recorded, and `fail`
    (method, path prefix) -> HTTP status makes those calls fail."""

    def __init__(self, routes: dict[str, Any] | None = None) -> None:
        self.routes: dict[str, Any] = dict(routes or {})
        self.requests: list[tuple[str, str, Any]] = []
        self.fail: dict[tuple[str, str], int] = {}
        self.down = False

    def request(self, method: str, path: str, body: Any = None, content_type: str = "") -> dict[str, Any]:
        self.requests.append((method, path, body))
        if self.down:
            raise OSError("connection refused")
        for (m, prefix), status in self.fail.items():
            if m == method and path.startswith(prefix):
                raise tf.ApiError(status, path, "refused by the test")
        if method == "GET":
            for prefix, answer in sorted(self.routes.items(), key=lambda kv: -len(kv[0])):
                if path.startswith(prefix):
                    return answer() if callable(answer) else answer
            raise tf.ApiError(404, path, "not found")
        return {**(body or {}), "metadata": {**((body or {}).get("metadata") or {}), "resourceVersion": "1"}}

    def writes(self, method: str | None = None) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] != "GET" and (method is None or r[0] == method)]


IPS = {"eu-fsn": "192.0.2.10", "eu-hel": "192.0.2.20"}
LEASES = tf.LEASES_PATH.format(namespace=NAMESPACE)
ENDPOINTS = tf.DNSENDPOINTS_PATH.format(namespace=NAMESPACE)
CONFIGMAPS = tf.CONFIGMAPS_PATH.format(namespace=NAMESPACE)


def _ingresses(*hosts: str) -> dict[str, Any]:
    return {"items": [{"metadata": {"namespace": h.split(".")[0], "name": "web"}, "spec": {"rules": [{"host": h}]}}
                      for h in hosts]}


def _region_cms(*regions: str) -> dict[str, Any]:
    return {"items": [failover_docs.region_configmap(r, IPS[r], []) for r in regions]}


def _endpoint(host: str, regions: tuple[str, ...]) -> dict[str, Any]:
    obj = tf.dnsendpoint(NAMESPACE, tf.Decision(host, regions, tuple(sorted(IPS[r] for r in regions))), 60, "7")
    return obj


def _vantage(name: str, counts: dict[str, tuple[int, int]], renewed: float, rv: str = "1") -> dict[str, Any]:
    obs = {key: [f, s, ""] for key, (f, s) in counts.items()}
    return {"metadata": {"name": tf.VANTAGE_LEASE_PREFIX + name, "resourceVersion": rv,
                         "annotations": {tf.OBSERVATIONS_ANNOTATION: json.dumps({"obs": obs})}},
            "spec": {"renewTime": tf.format_time(renewed)}}


def _healthy_counts(*hosts: str) -> dict[str, tuple[int, int]]:
    return {tf.obs_key(h, r): (0, 9) for h in hosts for r in IPS}


def _controller(host: MemoryApi, karmada: MemoryApi, **overrides: Any) -> tf.Controller:
    values: dict[str, Any] = dict(
        namespace=NAMESPACE, vantage="hub-1", identity="pod-hub-1", domain=DOMAIN, exclude=(f"lb.{DOMAIN}",), ttl=60,
        period=0.2, timeout=0.1, attempts=1, failure_threshold=3, success_threshold=6, hold_down=60,
        vantage_points=3, decision_period=0.1, lease_duration=15, http_port=1, https_port=1)
    values.update(overrides)
    known = {f.name for f in dataclasses.fields(tf.Settings)}
    return tf.Controller(tf.Settings(**{k: v for k, v in values.items() if k in known}), karmada, host)  # type: ignore


def test_one_list_without_a_name_deletes_nothing() -> None:
    """F4: the absence of a name used to be counted per decision pass (every second) against the Ingress list of
    the last probe round (every five): one list without a name deleted its DNSEndpoint three seconds later."""
    now = time.time()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST, OTHER)})
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(HOST, OTHER), now) for i in range(3)]},
                      ENDPOINTS: {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel")),
                                            _endpoint(OTHER, ("eu-fsn", "eu-hel"))]}})
    c = _controller(host, karmada)
    c.refresh_inputs()
    karmada.routes[tf.INGRESSES_PATH] = _ingresses(OTHER)  # HOST's Ingress is being replaced: one list misses it
    c.refresh_inputs()
    for _ in range(5):  # the decision passes of one probe period
        c.decide_all()
    assert host.writes("DELETE") == [], "one list without the name deleted its record"


def test_an_empty_ingress_list_never_deletes_records() -> None:
    """F4: karmada-apiserver answering an empty list (its etcd rebuilt before the restore) deleted every name."""
    now = time.time()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST, OTHER)})
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(HOST, OTHER), now) for i in range(3)]},
                      ENDPOINTS: {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel")),
                                            _endpoint(OTHER, ("eu-fsn", "eu-hel"))]}})
    c = _controller(host, karmada, delete_after=0.0)
    c.refresh_inputs()
    karmada.routes[tf.INGRESSES_PATH] = {"items": []}
    for _ in range(6):
        c.refresh_inputs()
        c.decide_all()
    assert host.writes("DELETE") == [], "an empty Ingress list blanked the fleet"
    assert c.stats["deletions_refused"] > 0
    # a name that really went (one of two, every list, past delete_after) does go
    karmada.routes[tf.INGRESSES_PATH] = _ingresses(OTHER)
    for _ in range(tf.ABSENT_LISTS_BEFORE_DELETE + 1):
        c.refresh_inputs()
        c.decide_all()
    assert [p for _, p, _ in host.writes("DELETE")] == [f"{ENDPOINTS}/{HOST}"]


def test_a_replaced_region_configmap_keeps_the_region_published() -> None:
    """review-newcomer #8: a region ConfigMap replaced by Pulumi (deleted, then created) was missing from one
    list; that round dropped the region from every name, with no hold-down."""
    now = time.time()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST)})
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(HOST), now) for i in range(3)]},
                      ENDPOINTS: {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel"))]}})
    c = _controller(host, karmada)
    c.refresh_inputs()
    host.routes[CONFIGMAPS] = _region_cms("eu-hel")  # eu-fsn's ConfigMap between its delete and its create
    c.refresh_inputs()
    c.decide_all()
    withdrawn = [b for m, _, b in host.writes() if m == "PUT" and IPS["eu-fsn"] not in
                 b["spec"]["endpoints"][0]["targets"]]
    assert withdrawn == [], "a healthy region left DNS while its ConfigMap was replaced"
    host.routes[CONFIGMAPS] = {"items": [*_region_cms("eu-fsn")["items"], *_region_cms("eu-hel")["items"]]}
    c.refresh_inputs()
    assert c.regions == IPS


def test_a_failing_write_does_not_stop_the_other_names() -> None:
    """F7: one ApiError on one name's write aborted the whole decision pass (and the names sorted after it)."""
    now = time.time()
    first, second = "a.dev.example.com", "b.dev.example.com"
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(first, second)})
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(first, second), now)
                                         for i in range(3)]},
                      ENDPOINTS: {"items": []}})
    host.fail[("POST", ENDPOINTS)] = 0
    c = _controller(host, karmada)
    c.refresh_inputs()

    calls = {"n": 0}
    original = host.request

    def one_fails(method: str, path: str, body: Any = None, content_type: str = "") -> dict[str, Any]:
        if method == "POST" and path == ENDPOINTS:
            calls["n"] += 1
            if (body or {}).get("metadata", {}).get("name") == first:
                host.requests.append((method, path, body))
                raise tf.ApiError(422, path, "Unprocessable")
        return original(method, path, body, content_type)

    host.fail.clear()
    host.request = one_fails  # type: ignore[method-assign]
    try:
        note = c.decide_all()
    except tf.ApiError as err:
        raise AssertionError(f"one failing name aborted the pass: {err}") from None
    posted = [b["metadata"]["name"] for m, _, b in host.writes("POST")]
    assert second in posted, "the name after the failing one was never written"
    assert note.get("failed") == 1 and note["pending"] >= 1


def test_the_leader_publishes_each_regions_drill_record() -> None:
    """Review 2 H5: region stacks hold no DNS token, so `<region>.lb.<domain>` is the hub's. In mode hetzner the
    leader writes one DNSEndpoint per region (external-dns writes it like a name) from the hub-granted ConfigMap
    (a ConfigMap whose label claims another region gets none, M1), rewrites it when the address changes, deletes
    it once the region is gone, and never counts it as a name (no absence, no deletion of names)."""
    now = time.time()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST)})
    claim = failover_docs.region_configmap("eu-hel", "198.51.100.66", [])
    claim["metadata"]["name"] = "traffic-region-zz-new"  # labelled eu-hel, named for another region: no identity
    configmaps = {"items": [*_region_cms("eu-fsn", "eu-hel")["items"], claim]}
    endpoints: dict[str, Any] = {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel"))]}
    host = MemoryApi({CONFIGMAPS: lambda: configmaps, ENDPOINTS: lambda: endpoints,
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(HOST), now) for i in range(3)]}})
    c = _controller(host, karmada, period=0.01)
    c.refresh_inputs()
    c.decide_all()
    records = {b["metadata"]["name"]: b for _, _, b in host.writes("POST")}
    assert set(records) == {f"eu-fsn.lb.{DOMAIN}", f"eu-hel.lb.{DOMAIN}"}
    for region in IPS:
        record = records[f"{region}.lb.{DOMAIN}"]
        assert record["metadata"]["labels"] == {tf.MANAGED_BY_LABEL: tf.MANAGED_BY, tf.REGION_LABEL: region}
        assert record["spec"]["endpoints"] == [{"dnsName": f"{region}.lb.{DOMAIN}", "recordType": "A",
                                                "recordTTL": 60, "targets": [IPS[region]]}]
    endpoints["items"] = [*endpoints["items"], *({**r, "metadata": {**r["metadata"], "resourceVersion": "3"}}
                                                 for r in records.values())]
    host.requests.clear()
    c.decide_all()
    assert host.writes() == [], "an unchanged region record was written again"

    moved = failover_docs.region_configmap("eu-hel", "192.0.2.21", [])
    configmaps["items"] = [*_region_cms("eu-fsn")["items"], moved]
    c.refresh_inputs()
    c.decide_all()
    (put,) = [w for w in host.writes("PUT") if ".lb." in w[1]]  # the name's own record follows the address too
    assert put[1] == f"{ENDPOINTS}/eu-hel.lb.{DOMAIN}" and put[2]["spec"]["endpoints"][0]["targets"] == ["192.0.2.21"]
    assert put[2]["metadata"]["resourceVersion"] == "3"

    host.requests.clear()
    configmaps["items"] = _region_cms("eu-fsn")["items"]
    for _ in range(tf.ABSENT_LISTS_BEFORE_DELETE + 1):
        c.refresh_inputs()
        time.sleep(0.03)
    c.decide_all()
    assert [p for _, p, _ in host.writes("DELETE")] == [f"{ENDPOINTS}/eu-hel.lb.{DOMAIN}"], "only the region's record"


def test_in_self_hosted_mode_the_drill_records_are_in_the_zone_not_dnsendpoints() -> None:
    """Mode self-hosted: the zone carries `<region>.lb.<zone>` (ZoneWriter.desired); a leftover region DNSEndpoint
    (a stack that was in mode hetzner) goes, and none is written."""
    writer = tf.ZoneWriter({"zone": DOMAIN, "soa": {"mname": f"ns0.{DOMAIN}", "rname": f"hostmaster.{DOMAIN}",
                                                    "refresh": 60, "retry": 10, "expire": 600, "minimum": 15,
                                                    "ttl": 15},
                            "ns": [f"ns0.{DOMAIN}"], "nsTtl": 60, "recordTtl": 15, "regionLabel": "lb"},
                           [], [], None, 1.0)  # type: ignore[arg-type]
    zone = writer.desired({HOST: [IPS["eu-fsn"]]}, IPS)
    assert {k for k in zone if k[1] == "A"} >= {(f"eu-fsn.lb.{DOMAIN}.", "A"), (f"eu-hel.lb.{DOMAIN}.", "A")}

    class NoZone:
        current = None

        def desired(self, names: Any, regions: Any) -> dict[Any, Any]:
            return {}

        def publish(self, want: Any) -> dict[str, Any]:
            return {}

        def in_step(self) -> int:
            return 1

        def snapshot_text(self) -> None:
            return None

    now = time.time()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST)})
    leftover = tf.region_dnsendpoint(NAMESPACE, "eu-fsn", DOMAIN, IPS["eu-fsn"], 60, "5")
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      ENDPOINTS: {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel")), leftover]},
                      LEASES: {"items": [_vantage(f"hub-{i}", _healthy_counts(HOST), now) for i in range(3)]}})
    c = _controller(host, karmada)
    c.zone = NoZone()  # type: ignore[assignment]
    c.refresh_inputs()
    c.decide_all()
    assert [p for m, p, _ in host.writes() if "lb." in p or m == "DELETE"] == [f"{ENDPOINTS}/eu-fsn.lb.{DOMAIN}"]
    assert not [b for _, _, b in host.writes("POST") if tf.REGION_LABEL in b["metadata"]["labels"]]


def test_a_new_leader_ignores_leases_of_long_dead_probers() -> None:
    """F8: a new leader dated every Lease by when it first saw it, so a prober that died minutes ago (its last
    counts: eu-fsn failing) voted as fresh for three periods; with one genuinely failing prober that made a
    majority and withdrew a healthy region."""
    now = time.time()
    failing = {tf.obs_key(HOST, "eu-fsn"): (9, 0), tf.obs_key(HOST, "eu-hel"): (0, 9)}
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST)})
    host = MemoryApi({CONFIGMAPS: _region_cms("eu-fsn", "eu-hel"),
                      LEASES: {"items": [_vantage("hub-dead", failing, now - 600),  # died ten minutes ago
                                         _vantage("hub-2", failing, now),  # its own network is broken
                                         _vantage("hub-3", _healthy_counts(HOST), now)]},
                      ENDPOINTS: {"items": [_endpoint(HOST, ("eu-fsn", "eu-hel"))]}})
    c = _controller(host, karmada)
    c.refresh_inputs()
    c.decide_all()
    names = [w for w in host.writes() if tf.REGION_LABEL not in ((w[2] or {}).get("metadata") or {}).get("labels", {})]
    assert names == [], f"a dead prober's Lease voted: {names}"  # (the regions' drill records are written)


def test_liveness_survives_a_hub_api_outage() -> None:
    """F6: /healthz needed a successful Lease write within 3 periods + 30 s, so a hub API outage failed every
    replica's liveness probe and put them all into CrashLoopBackOff; a restart fixes nothing there."""
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(HOST)})
    host = MemoryApi()
    host.down = True
    c = _controller(host, karmada)
    c.last_round = time.monotonic() - 600  # the last write that worked, ten minutes ago
    stop = threading.Event()
    thread = threading.Thread(target=c.probe_loop, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(1.0)  # five probe periods
        assert tf.respond(c, "/healthz")[0] == 200, "liveness failed while the probe loop runs"
        assert tf.respond(c, "/readyz")[0] == 503
    finally:
        stop.set()
        thread.join(timeout=5)


def test_a_round_probes_every_pair_at_once() -> None:
    """F5: a round gave each (name, region) pair one of 32 threads and waited for all, so with a black-holed
    region it lasted timeout x pairs / 32 (20 s at 300 names) and detection stretched with the fleet. Now every
    attempt is in flight together: a listener that accepts and never answers sees all of them within the first
    timeout (bench/failover_probe.py times rounds up to 500 names)."""
    names = [f"n{i}.{DOMAIN}" for i in range(120)]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    listener.settimeout(0.05)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    karmada = MemoryApi({tf.INGRESSES_PATH: _ingresses(*names)})
    host = MemoryApi({CONFIGMAPS: {"items": [failover_docs.region_configmap("eu-fsn", "127.0.0.1", [])]}})
    port = listener.getsockname()[1]
    c = _controller(host, karmada, timeout=2.0, period=4.0, attempts=2, http_port=port, https_port=port)
    c.refresh_inputs()
    rounds = threading.Thread(target=c.probe_all, daemon=True)
    try:
        rounds.start()
        time.sleep(1.5)  # inside the first timeout: nothing has given up yet
        in_flight = len(accepted)
        rounds.join(timeout=30)
    finally:
        stop.set()
        thread.join(timeout=5)
        for s in accepted:
            s.close()
        listener.close()
    assert in_flight >= len(names) * 2 * 0.9, f"only {in_flight} of {len(names) * 2} attempts were in flight"
    assert all(c.counters[tf.obs_key(n, "eu-fsn")].failures == 1 for n in names)


def test_a_member_change_updates_the_region_configmap_in_place() -> None:
    """review-newcomer #8, the program's half: the members used to be in the ConfigMap's `data`, which
    pulumi-kubernetes replaces (delete, then create) on any change; a member added or removed now changes an
    annotation only, which it patches in place (hubctl diff's replacement rules, with their upstream source)."""
    from hubctl.diff import diff_values
    from hubctl.replacement import replace_reason

    before = failover_docs.region_configmap("eu-fsn", "203.0.113.10", ["dev-fsn1-a"])
    after = failover_docs.region_configmap("eu-fsn", "203.0.113.10", ["dev-fsn1-a", "dev-fsn1-b"])
    changed = [path for path, _, _ in diff_values(before, after)]
    assert changed, "the members are still recorded"
    replaced = {p: replace_reason("kubernetes:core/v1:ConfigMap", p, after, {}) for p in changed}
    assert not any(replaced.values()), replaced


def test_the_alerts_read_metrics_the_controller_exports() -> None:
    """Every traffic_failover_* series an alert names is in the controller's /metrics (leader, self-hosted)."""
    import re

    from agents import _dnswire
    from components.operations import alerts

    zone = tf.ZoneWriter({"zone": DOMAIN, "soa": {"mname": "ns0.example.com.", "rname": "h.example.com.",
                                                  "refresh": 1, "retry": 1, "expire": 1, "minimum": 1, "ttl": 1},
                          "ns": ["ns0.example.com."], "nsTtl": 60, "recordTtl": 15},
                         ["192.0.2.1:53"], ["192.0.2.9:53"], _dnswire.TsigKey("k.", b"x" * 32), 0.1)
    zone.current = zone.soa(7)
    c = _controller(MemoryApi(), MemoryApi(), zone=zone)  # type: ignore[call-arg]
    c.zone = zone
    c.leader = True
    text = tf.metrics(c)
    exported = {line.split("{")[0].split()[0] for line in text.splitlines() if line and not line.startswith("#")}
    thresholds = alerts.Thresholds(3, 2, None, "37 3 * * 0", dns_mode="self-hosted")
    wanted = {m for _, group in alerts.alert_groups(thresholds) for a in group
              for m in re.findall(r"traffic_failover_[a-z_]+", a.expr)}
    assert wanted and wanted <= exported, wanted - exported
    assert 'traffic_failover_nameserver_up{nameserver="192.0.2.9:53",role="secondary"} 0' in text


def test_a_tls_round_ends_within_its_timeout() -> None:
    """TLS names: the socket an attempt is wrapped into must replace the plain one in the round's bookkeeping,
    or a round against a black hole never ends (found by bench/failover_probe.py --tls)."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)  # accepts (the kernel), never answers the ClientHello
    tls = [tf.Target(f"t{i}.{DOMAIN}", tls=True) for i in range(5)]
    karmada = MemoryApi({tf.INGRESSES_PATH: {"items": [
        {"metadata": {"namespace": "t", "name": t.host}, "spec": {"tls": [{"hosts": [t.host]}],
                                                                 "rules": [{"host": t.host}]}} for t in tls]}})
    host = MemoryApi({CONFIGMAPS: {"items": [failover_docs.region_configmap("eu-fsn", "127.0.0.1", [])]}})
    port = hole.getsockname()[1]
    c = _controller(host, karmada, timeout=0.5, period=2.0, attempts=2, http_port=port, https_port=port)
    c.refresh_inputs()
    assert all(t.tls for t in c.targets.values())
    rounds = threading.Thread(target=c.probe_all, daemon=True)
    try:
        rounds.start()
        rounds.join(timeout=10)
        assert not rounds.is_alive(), "a TLS round against a black hole never ended"
    finally:
        hole.close()
    assert all(c.counters[tf.obs_key(t.host, "eu-fsn")].failures == 1 for t in tls)


def test_a_tls_name_is_probed_through_tls_with_its_sni(tmp_path: Path) -> None:
    """The non-blocking TLS path end to end: handshake with SNI = the name, then the request over TLS."""
    import ssl

    from tests.support.loopback import tls_material

    pki = tls_material(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["server.crt"], pki["server.key"])
    seen: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: seen.append(name)  # type: ignore[assignment]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(raw, server_side=True) as conn:
                    request = conn.recv(4096)
                    host = next((line.split(b":", 1)[1].strip() for line in request.split(b"\r\n")
                                 if line.lower().startswith(b"host:")), b"")
                    status = b"200 OK" if host == HOST.encode() else b"404 Not Found"
                    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
            except (OSError, ssl.SSLError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        prober = tf.Prober(timeout=2.0, attempts=2, max_inflight=16)
        port = listener.getsockname()[1]
        results = prober.run([("ok", "127.0.0.1", port, tf.Target(HOST, tls=True)),
                              ("other", "127.0.0.1", port, tf.Target(OTHER, tls=True))])
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
    assert results == {"ok": None, "other": "HTTP 404"}
    assert HOST in seen and OTHER in seen
