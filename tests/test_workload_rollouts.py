"""Renewed certificates reach the pods: every workload in every stack carries the checksum of exactly the
Secrets it mounts, and rolls one replica at a time within its PodDisruptionBudget.

The expected checksum is recomputed here from the Secret objects the plan applies to the same API server
(`kube.rollouts.secret_content`, what the pod would see), never read back from the annotation; the mounted
names come from the pod spec (volumes, envFrom, secretKeyRef). Mutations prove the checks can fail.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.kube import agent_script
from components.kube import rollouts as wl
from hubctl.commands import load_config
from hubctl.plan import Plan, run_program
from tests.support.rendered import objects
from tests.support.tools import REPO

STACKS = ("dev", "prod-hub", "prod-fsn1", "prod-hel1", "prod-ash")


@pytest.fixture(scope="module")
def plans(rendered_dev: Plan, rendered_prod_hub: Plan) -> dict[str, Plan]:
    out = {"dev": rendered_dev, "prod-hub": rendered_prod_hub}
    for stack in STACKS[2:]:
        cfg, config = load_config(REPO, stack)
        assert config.hub_stack is not None
        out[stack] = run_program(REPO, cfg, {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()})
    return out


def checksum_problems(objs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Every workload whose annotations do not name and hash exactly the Secrets its pods read."""
    secrets = {(t, o["metadata"].get("namespace"), o["metadata"]["name"]): o for t, o in objs if o["kind"] == "Secret"}
    problems = []
    for target, obj in objs:
        template = wl.pod_template(obj)
        if template is None:
            continue
        where = f"{target} {obj['kind']} {obj['metadata']['name']}"
        namespace = obj["metadata"].get("namespace")
        elsewhere = wl.written_elsewhere(template)
        stale = [n for n in elsewhere if n not in wl.mounted_secrets(template["spec"])]
        if stale:
            problems.append(f"{where}: declares {stale} written elsewhere, but does not mount them")
        mounted = wl.checksummed_secrets(template)
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        if not mounted:
            if wl.CHECKSUM_ANNOTATION in annotations:
                problems.append(f"{where}: a checksum but no Secret mounted")
            continue
        missing = [n for n in mounted if (target, namespace, n) not in secrets]
        if missing:
            problems.append(f"{where}: mounts {missing}, which the plan never applies to {target}")
            continue
        if annotations.get(wl.SECRETS_ANNOTATION) != ",".join(mounted):
            problems.append(f"{where}: annotation names {annotations.get(wl.SECRETS_ANNOTATION)!r}, mounts {mounted}")
        expected = wl.secrets_checksum({n: wl.secret_content(secrets[(target, namespace, n)]) for n in mounted})
        if annotations.get(wl.CHECKSUM_ANNOTATION) != expected:
            problems.append(f"{where}: checksum {annotations.get(wl.CHECKSUM_ANNOTATION)!r} is not that of {mounted}")
    return problems


def rollout_findings(objs: list[tuple[str, dict[str, Any]]], host_nodes: int) -> list[str]:
    pdbs = [o for _, o in objs if o["kind"] == "PodDisruptionBudget"]
    found = []
    for target, obj in objs:
        if wl.pod_template(obj) is None:
            continue
        same_target = [p for t, p in objs if t == target and p["kind"] == "PodDisruptionBudget"]
        nodes = host_nodes if target == "host" else None
        found += [f"{target} {p}" for p in wl.rollout_problems(obj, wl.pdb_for(obj, same_target or pdbs), nodes)]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_workload_carries_the_checksum_of_exactly_its_secrets(plans: dict[str, Plan], stack: str) -> None:
    objs = objects(plans[stack])
    assert checksum_problems(objs) == []


def test_every_stack_has_checksummed_workloads(plans: dict[str, Plan]) -> None:
    """Not vacuous: each stack that owns the hub renders workloads that mount Secrets. A region stack runs no
    workload over Secrets it writes (the hub owns the estimators; a Pull agent mounts what its join writes), so
    its Pull agents declare that instead."""
    for stack, plan in plans.items():
        annotations = [(wl.pod_template(o) or {}).get("metadata", {}).get("annotations") or {}
                       for _, o in objects(plan)]
        if stack in ("dev", "prod-hub"):
            assert any(wl.CHECKSUM_ANNOTATION in a for a in annotations), stack
        else:
            assert any(wl.ELSEWHERE_ANNOTATION in a for a in annotations), stack
    kinds = {o["kind"] for _, o in objects(plans["dev"]) if wl.pod_template(o)}
    assert {"Deployment", "StatefulSet", "CronJob"} <= kinds


@pytest.mark.parametrize("stack", STACKS)
def test_every_workload_rolls_one_replica_at_a_time_within_its_pdb(plans: dict[str, Plan], stack: str) -> None:
    _, config = load_config(REPO, stack)
    nodes = config.hub.servers if config.hub is not None else 3
    assert rollout_findings(objects(plans[stack]), nodes) == []


# ------------------------------------------------------------------------------------ mutations


def _first(objs: list[tuple[str, dict[str, Any]]], kind: str, name: str) -> dict[str, Any]:
    return next(o for _, o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def test_a_renewed_certificate_without_a_new_checksum_is_caught(rendered_dev: Plan) -> None:
    objs = copy.deepcopy(objects(rendered_dev))
    secret = _first(objs, "Secret", "karmada-webhook-pki")
    secret["stringData"]["webhook.crt"] += "\n# renewed"
    assert checksum_problems(objs) == ["host Deployment karmada-webhook: checksum "
                                       f"{_annotation(objs, 'karmada-webhook')!r} is not that of "
                                       "['karmada-webhook-config', 'karmada-webhook-pki']"]


def _annotation(objs: list[tuple[str, dict[str, Any]]], name: str) -> str:
    template = wl.pod_template(_first(objs, "Deployment", name))
    return template["metadata"]["annotations"][wl.CHECKSUM_ANNOTATION]


def test_a_secret_mounted_without_its_checksum_is_caught(rendered_dev: Plan) -> None:
    objs = copy.deepcopy(objects(rendered_dev))
    pod = wl.pod_template(_first(objs, "Deployment", "karmada-scheduler"))["spec"]
    pod["containers"][0].setdefault("env", []).append(
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "karmada-webhook-pki", "key": "webhook.crt"}}})
    problems = checksum_problems(objs)
    assert len(problems) == 2 and "annotation names" in problems[0] and "is not that of" in problems[1]
    del wl.pod_template(_first(objs, "CronJob", "etcd-backup"))["metadata"]["annotations"][wl.CHECKSUM_ANNOTATION]
    assert any("CronJob etcd-backup: checksum None" in p for p in checksum_problems(objs))


def test_the_program_refuses_a_checksum_over_other_secrets() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {
        "metadata": {}, "spec": {"volumes": [{"name": "a", "secret": {"secretName": "a"}}], "containers": [
            {"name": "c", "envFrom": [{"secretRef": {"name": "b"}}]}]}}}}
    doc = {"metadata": {"name": "a"}, "stringData": {"k": "v"}}
    with pytest.raises(ValueError, match=r"mounts Secrets \['a', 'b'\], checksum given for \['a'\]"):
        wl.with_checksum(deployment, [doc])
    both = wl.with_checksum(deployment, [doc, {"metadata": {"name": "b"}, "data": {"k": "dg=="}}])
    annotations = both["spec"]["template"]["metadata"]["annotations"]
    assert annotations[wl.SECRETS_ANNOTATION] == "a,b"
    assert "annotations" not in deployment["spec"]["template"]["metadata"]  # the input is not mutated


def test_checksums_differ_exactly_when_contents_do() -> None:
    base = {"a": {"k": b"v"}}
    assert wl.secrets_checksum(base) == wl.secrets_checksum({"a": {"k": b"v"}})
    for other in ({"a": {"k": b"w"}}, {"a": {"k2": b"v"}}, {"b": {"k": b"v"}}, {"a": {"k": b"v", "l": b""}},
                  {"a": {"k": b"v"}, "b": {}}):
        assert wl.secrets_checksum(other) != wl.secrets_checksum(base), other
    # data (base64) and stringData that decode to the same bytes are the same content
    assert wl.secret_content({"data": {"k": "dg=="}}) == wl.secret_content({"stringData": {"k": "v"}})


def _deployment(replicas: int, strategy: dict[str, Any] | None, anti: bool = True) -> dict[str, Any]:
    labels = {"app": "x"}
    spec: dict[str, Any] = {"containers": [{"name": "x"}]}
    if anti:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": labels}, "topologyKey": wl.HOSTNAME}]}}
    obj = {"kind": "Deployment", "metadata": {"name": "x", "namespace": "n"},
           "spec": {"replicas": replicas, "template": {"metadata": {"labels": labels}, "spec": spec}}}
    if strategy is not None:
        obj["spec"]["strategy"] = strategy
    return obj


PDB = {"kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "n"},
       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}}}
ONE_AT_A_TIME = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


@pytest.mark.parametrize(("obj", "pdb", "expect"), [
    (_deployment(2, ONE_AT_A_TIME), PDB, None),
    (_deployment(2, None), PDB, "explicit RollingUpdate"),
    (_deployment(2, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}), PDB,
     "surge pod cannot schedule"),
    (_deployment(3, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}}), PDB,
     "one replica at a time"),
    (_deployment(2, {"type": "Recreate"}), PDB, "Recreate takes all 2"),
    (_deployment(4, ONE_AT_A_TIME), PDB, "4 replicas with required hostname anti-affinity on 3 nodes"),
    (_deployment(2, ONE_AT_A_TIME), None, "no PodDisruptionBudget"),
    (_deployment(2, ONE_AT_A_TIME), {**PDB, "spec": {**PDB["spec"], "maxUnavailable": 0}}, "allows no disruption"),
    (_deployment(3, ONE_AT_A_TIME), {**PDB, "spec": {"minAvailable": 1, "selector": PDB["spec"]["selector"]}},
     "more than one replica"),
])
def test_rollout_problems(obj: dict[str, Any], pdb: dict[str, Any] | None, expect: str | None) -> None:
    problems = wl.rollout_problems(obj, pdb, nodes=3)
    if expect is None:
        assert problems == []
    else:
        assert any(expect in p for p in problems), problems


def test_the_rendered_check_catches_a_surging_control_plane(rendered_dev: Plan) -> None:
    objs = copy.deepcopy(objects(rendered_dev))
    _first(objs, "Deployment", "karmada-apiserver")["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = 1
    assert rollout_findings(objs, 3) == ["host Deployment karmada-apiserver: maxSurge 1 with required hostname "
                                         "anti-affinity: the surge pod cannot schedule while every server runs a "
                                         "replica or one server is down"]


def test_a_secret_written_elsewhere_is_declared_and_only_then_exempt(plans: dict[str, Plan]) -> None:
    """A Pull agent's kubeconfig (written by its join Job at run time) and an estimator's member kubeconfig
    (written by the region stack) are in no checksum: the templates say so by name, and without that the check
    reports them; a stale declaration is reported too."""
    region = copy.deepcopy(objects(plans["prod-fsn1"]))
    agent = wl.pod_template(_first(region, "Deployment", "karmada-agent"))
    assert wl.written_elsewhere(agent) == ["karmada-kubeconfig"]
    hub = copy.deepcopy(objects(plans["prod-hub"]))
    estimator = next(o for _, o in hub if o["kind"] == "Deployment"
                     and o["metadata"]["name"].startswith("karmada-scheduler-estimator-"))
    name = estimator["metadata"]["name"]
    assert wl.written_elsewhere(wl.pod_template(estimator)) == [f"{name}-member-token"]
    assert wl.pod_template(estimator)["metadata"]["annotations"][wl.SECRETS_ANNOTATION] == f"{name}-pki"
    del agent["metadata"]["annotations"][wl.ELSEWHERE_ANNOTATION]
    assert any("Deployment karmada-agent: mounts ['karmada-kubeconfig'], which the plan never applies" in p
               for p in checksum_problems(region))
    agent["metadata"]["annotations"][wl.ELSEWHERE_ANNOTATION] = "karmada-kubeconfig,gone"
    assert any("declares ['gone'] written elsewhere, but does not mount them" in p for p in checksum_problems(region))


# ------------------------------------------------------------------------------------------ agent programs


def program_problems(objs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Every workload running an agent script whose ConfigMap does not carry exactly the program the checkout
    ships for it (the script and the helpers it imports), or whose script checksum is not that of the whole
    ConfigMap's program: a helper change must roll the pods like a script change."""
    configmaps = {(t, o["metadata"].get("namespace"), o["metadata"]["name"]): o for t, o in objs
                  if o["kind"] == "ConfigMap"}
    problems = []
    for target, obj in objs:
        template = wl.pod_template(obj)
        if template is None:
            continue
        spec = template["spec"]
        volume = next((v for v in spec.get("volumes") or [] if v["name"] == agent_script.VOLUME), None)
        if volume is None:
            continue
        where = f"{target} {obj['kind']} {obj['metadata']['name']}"
        configmap = configmaps.get((target, obj["metadata"].get("namespace"), volume["configMap"]["name"]))
        if configmap is None:
            problems.append(f"{where}: its script ConfigMap {volume['configMap']['name']} is not applied")
            continue
        data = configmap["data"]
        scripts = {c["command"][-1].rsplit("/", 1)[1] for c in [*spec.get("initContainers", []), *spec["containers"]]
                   if c.get("command", [""])[-1].startswith(agent_script.MOUNT_DIR + "/")}
        if len(scripts) != 1:
            problems.append(f"{where}: runs {sorted(scripts)} from its script mount, expected one script")
            continue
        (script,) = scripts
        if script not in data:
            problems.append(f"{where}: runs {script}, which its ConfigMap does not carry")
            continue
        if data != agent_script.program(script, data[script]):
            problems.append(f"{where}: its ConfigMap carries {sorted(data)}, the program is "
                            f"{sorted(agent_script.program(script, data[script]))} (or a file differs)")
        expected = agent_script.digest(data[script], {k: v for k, v in data.items() if k != script})
        if (template["metadata"].get("annotations") or {}).get(agent_script.CHECKSUM_ANNOTATION) != expected:
            problems.append(f"{where}: script checksum is not that of its ConfigMap's files")
    return problems


@pytest.mark.parametrize("stack", STACKS)
def test_every_agent_pod_runs_and_checksums_its_whole_program(plans: dict[str, Plan], stack: str) -> None:
    assert program_problems(objects(plans[stack])) == []


def test_agents_with_helpers_are_rendered_and_a_stale_helper_is_caught(rendered_dev: Plan) -> None:
    """Not vacuous: the dev stack runs agents whose ConfigMap carries a helper beside the script. A helper edited
    in the ConfigMap without a new checksum, or left out of it, is reported."""
    objs = copy.deepcopy(objects(rendered_dev))
    with_helper = [o for _, o in objs if o["kind"] == "ConfigMap" and "_incluster.py" in (o.get("data") or {})]
    assert {o["metadata"]["name"] for o in with_helper} >= {"status-refresher", "traffic-failover",
                                                            "karmada-hub-exporter", "etcd-defrag"}
    refresher = next(o for o in with_helper if o["metadata"]["name"] == "status-refresher")
    refresher["data"]["_incluster.py"] += "\n# edited\n"
    assert program_problems(objs) == [
        "host Deployment status-refresher: its ConfigMap carries ['_incluster.py', 'status_refresher.py'], the "
        "program is ['_incluster.py', 'status_refresher.py'] (or a file differs)",
        "host Deployment status-refresher: script checksum is not that of its ConfigMap's files"]
    del refresher["data"]["_incluster.py"]
    assert program_problems(objs) == [
        "host Deployment status-refresher: its ConfigMap carries ['status_refresher.py'], the program is "
        "['_incluster.py', 'status_refresher.py'] (or a file differs)",
        "host Deployment status-refresher: script checksum is not that of its ConfigMap's files"]
