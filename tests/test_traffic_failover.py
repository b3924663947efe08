"""The traffic failover controller (agents/traffic_failover.py): its decisions, its rendered runtime contract, and
the real controller against real sockets on loopback.

The behaviour tests run three real Controllers (the three vantage points) against a fake host API and a fake
karmada-apiserver that enforce the rendered RBAC, probing real HTTP endpoints (one per region) on random
loopback addresses, with a stand-in external-dns writing a real authoritative DNS server. Timings are scaled
down (a 0.3 s probe period) so each scenario takes seconds; every wait is bounded.
"""

from __future__ import annotations

import copy
import socket
import subprocess
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


def test_every_rendered_flag_env_file_and_port_is_what_the_program_uses(rendered_dev: Any) -> None:
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
                 args.host_token_file):
        directory, filename = path.rsplit("/", 1)
        volume = volumes[mounts[directory]]
        if "secret" in volume:
            secret = find(rendered_dev, "host", "Secret", volume["secret"]["secretName"])
            assert filename in secret["data"], path
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
    assert args.exclude == [f"lb.{DOMAIN}"] and args.ttl == 60 and args.vantage_points == 3
    assert (args.http_port, args.https_port) == (80, 443)
    assert {s["listen_port"] for s in traffic_docs.regional_lb_services(
        load_stack().regions["eu-fsn"], load_stack().members[0].ingress)} == {args.http_port, args.https_port}
    assert args.karmada_server == "https://karmada-apiserver.karmada-system.svc.cluster.local:5443"
    # the constants the agent and the documents share
    assert (tf.REGION_LABEL, tf.REGION_IP_KEY, tf.MANAGED_BY) == (
        failover_docs.REGION_LABEL, failover_docs.REGION_IP_KEY, failover_docs.MANAGED_BY)
    ext = find(rendered_dev, "host", "Deployment", traffic_docs.EXTERNAL_DNS_NAME)
    ext_args = ext["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--label-filter={tf.MANAGED_BY_LABEL}={tf.MANAGED_BY}" in ext_args
    assert f"--namespace={args.namespace}" in ext_args


# ------------------------------------------------------------------------------------- real sockets


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, DOMAIN, {"eu-fsn": ["dev-fsn1-a"], "eu-hel": ["dev-hel1-a"]})
    w.add_ingress("shop", "web", HOST)
    w.serve(HOST)
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


def test_the_program_runs_with_its_rendered_command_line(world: World, rendered_dev: Any, tmp_path: Path) -> None:
    """The script as the pod runs it (the rendered command, `python3 -u <script>`, from the rendered ConfigMap
    mounted as the kubelet does, with the rendered args), three processes, files and servers pointed at the
    fakes and `$(VAR)`s expanded as the kubelet would: it publishes, /readyz turns 200, and every call it makes
    is one the rendered RBAC allows — and every verb the RBAC grants is used."""
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
                   "--https-port": str(world.port)}
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
    assert wait_for(lambda: all(c.ready for c in world.controllers), 10)
