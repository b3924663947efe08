"""Capacity checked up front (components/operations/capacity.py): the hub's servers against every pod they run,
each load balancer against its targets and services, the spread group against its servers; one line each.

The inventory is not a second copy of the program's numbers: it must equal what the rendered plan applies to
the host cluster, workload by workload.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import fleet_stack
from components.config import ConfigError, FleetConfig
from components.hetzner import limits
from components.operations import capacity, preflight
from hubctl.plan import manifests
from tests.support.tools import copy_program, load_stack, program_env

POD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod", "ReplicaSet")


def _fleet(count: int, **edits: Any) -> FleetConfig:
    raw, secrets = fleet_stack.stack_config(count).project_values()
    for key, edit in edits.items():
        edit(raw[key])
    return FleetConfig.from_mapping(raw, "stacks/Pulumi.fleet.yaml", secrets)


def _host_pods(plan: Any, part: str = "") -> dict[str, capacity.Pods]:
    objects = [o for o in manifests(plan).get("host", []) if o["kind"] in POD_KINDS]
    return {p.name: p for p in (capacity.pods_of(o, part, nodes=3) for o in objects)}  # dev and prod-hub: 3 servers


@pytest.mark.parametrize("stack", ["dev", "prod-hub"])
def test_the_inventory_is_what_the_plan_runs_on_the_hub(stack: str, rendered_dev: Any, rendered_prod_hub: Any) -> None:
    plan = {"dev": rendered_dev, "prod-hub": rendered_prod_hub}[stack]
    applied = _host_pods(plan)
    counted = {p.name: p for p in capacity.hub_pods(load_stack(stack)) if p.part != "k3s"}
    assert sorted(counted) == sorted(applied), "a workload on the hub is missing from (or extra in) the inventory"
    for name, pods in counted.items():
        got = applied[name]
        assert (pods.replicas, pods.millicpu, pods.memory_bytes, pods.spread) == \
            (got.replicas, got.millicpu, got.memory_bytes, got.spread), name


def test_pod_requests_count_sidecars_and_the_largest_init_container() -> None:
    def c(cpu: str, memory: str, **extra: Any) -> dict[str, Any]:
        return {"resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}

    spec = {"initContainers": [c("10m", "32Mi", restartPolicy="Always"), c("500m", "1Gi")],
            "containers": [c("100m", "64Mi"), c("50m", "64Mi")]}
    cpu, memory = capacity.pod_requests(spec)
    assert cpu == pytest.approx(510) and memory == 1024 * 2**20 + 32 * 2**20  # the one-shot init with the sidecar
    spec["initContainers"][1] = c("1m", "1Mi")
    cpu, memory = capacity.pod_requests(spec)
    assert cpu == pytest.approx(160) and memory == 160 * 2**20  # containers plus the sidecar


def test_a_hub_too_small_for_the_control_plane_is_refused_with_the_fix() -> None:
    dev = load_stack("dev")
    karmada = dev.karmada.model_dump(by_alias=True, mode="json", exclude_none=True)
    karmada.pop("addons", None)  # dev's search and dashboard addons: with them cx23 fits at no server count
    config = load_stack("dev", hub={**dev.hub.model_dump(by_alias=True, mode="json"), "serverType": "cx23"},
                        karmada=karmada)
    with pytest.raises(ConfigError) as err:
        preflight.check(config, "stacks/Pulumi.dev.yaml")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith("stacks/Pulumi.dev.yaml: karmada-hub:hub.serverType: 3 x cx23 cannot hold")
    # more servers run more karmada-apiservers (one behind each server's address), so cx23 fits only at 9
    assert "memory requests" in line and "hub.servers: 9" in line and "hub.serverType: cx33" in line
    assert capacity.hub_fit(config, servers=9).fits() and capacity.hub_fit(config, server_type="cx33").fits()
    assert not capacity.hub_fit(config, servers=7).fits()
    assert not capacity.hub_fit(config, servers=3).fits()


def test_every_example_hub_fits() -> None:
    for stack in ("dev", "prod-hub"):
        fit = capacity.hub_fit(load_stack(stack))
        assert fit.fits(), (stack, fit.problems())


def test_estimators_beyond_the_hub_are_refused_and_their_size_is_the_lever() -> None:
    config = _fleet(30)
    assert capacity.hub_fit(config).fits()
    bigger = _fleet(30, karmada=lambda k: k.update(estimator={"replicas": 2, "cpu": "400m", "memory": "128Mi"}))
    fit = capacity.hub_fit(bigger)
    assert fit.problems() and fit.problems()[0].startswith("CPU requests")
    with pytest.raises(ConfigError, match=r"karmada-hub:hub.serverType: .*scheduler-estimators: 60 pods, 24.0 vCPU"):
        capacity.check(bigger, "stacks/Pulumi.fleet.yaml")


def test_pods_per_server_are_capped_at_the_kubelet_default() -> None:
    tiny = {"replicas": 2, "cpu": "1m", "memory": "1Mi"}
    config = _fleet(160, karmada=lambda k: k.update(estimator=tiny),
                    hub=lambda h: h.update(serverType="cx53", servers=3))
    fit = capacity.hub_fit(config)
    assert fit.pod_count > 3 * limits.K3S_MAX_PODS
    assert any("pods of 330 (110 per server)" in p for p in fit.problems())
    assert capacity.hub_fit(config, servers=5).fits()


def test_a_spread_group_holds_ten_servers() -> None:
    dev = load_stack("dev")
    karmada = dev.karmada.model_dump(by_alias=True, mode="json")
    karmada["replicas"]["apiserver"] = 11  # one karmada-apiserver per server (config: externalTrafficPolicy Local)
    config = load_stack("dev", hub={**dev.hub.model_dump(by_alias=True, mode="json"), "servers": 11}, karmada=karmada)
    with pytest.raises(ConfigError, match=r"hub.servers: 11 servers do not fit one spread placement group .* most 9"):
        capacity.check(config, "stacks/Pulumi.dev.yaml")


def test_a_server_type_without_numbers_is_refused() -> None:
    config = load_stack("dev", hub={**load_stack("dev").hub.model_dump(by_alias=True, mode="json"),
                                    "serverType": "cx99"})
    with pytest.raises(ConfigError, match=r"hub.serverType: 'cx99' has no entry in components/hetzner/limits.py"):
        capacity.check(config, "stacks/Pulumi.dev.yaml")


def test_a_regional_lb_counts_every_server_its_selectors_match() -> None:
    config = _fleet(30)  # 10 members per region, 1 ingress server each, lb11
    uses = {u.key: u for u in capacity.load_balancers(config)}
    assert uses["regions.eu-fsn.loadBalancerType"].targets == 10
    three = _fleet(30, members=lambda ms: [m["ingress"].update(servers=3) for m in ms])
    with pytest.raises(ConfigError) as err:
        capacity.check_load_balancers(three, "stacks/Pulumi.fleet.yaml")
    assert str(err.value) == (
        "stacks/Pulumi.fleet.yaml: karmada-hub:regions.eu-fsn.loadBalancerType: lb11 takes at most 25 targets, but "
        "the label selectors of its 10 members match 30 servers (members[].ingress.servers, default 3), and Hetzner "
        "counts every server a selector matches; use lb21 (or fewer servers per member)")


def test_the_hub_lb_and_lb_services_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_stack("dev")
    uses = {u.key: u for u in capacity.load_balancers(config)}
    assert uses["hub.loadBalancer.type"].targets == config.hub.servers
    assert uses["hub.loadBalancer.type"].services == 2
    small = {**limits.LOAD_BALANCER_TYPES, "lb11": limits.LoadBalancerType("lb11", 2, 1, "test")}
    monkeypatch.setattr(limits, "LOAD_BALANCER_TYPES", small)
    with pytest.raises(ConfigError, match=r"karmada-hub:hub.loadBalancer.type: lb11 takes at most 2 targets"):
        capacity.check_load_balancers(config, "stacks/Pulumi.dev.yaml")


def test_a_hub_stack_counts_its_region_stacks_estimators() -> None:
    """The hub owns every estimator (components/fleet/registry.py), its region stacks' included: it reads their
    members from the region files and counts them with its own pods; a region stack runs none on the hub."""
    hub = load_stack("prod-hub")
    members = capacity.estimator_members(hub)
    assert members == [m.name for stack in ("prod-fsn1", "prod-hel1", "prod-ash")
                       for m in load_stack(stack).members if m.scheduler_estimator]
    assert not capacity.estimator_members(load_stack("prod-fsn1"))
    counted = [p for p in capacity.hub_pods(hub) if p.part == "scheduler-estimators"]
    assert len(counted) == len(members)
    cramped = load_stack("prod-hub", karmada={**hub.karmada.model_dump(by_alias=True, mode="json"),
                                              "estimator": {"replicas": 3, "cpu": "2", "memory": "4Gi"}})
    with pytest.raises(ConfigError, match=r"karmada-hub:hub.serverType: .*scheduler-estimators"):
        capacity.check(cramped, "stacks/Pulumi.prod-hub.yaml")


def test_hubctl_refuses_an_over_capacity_hub_with_one_line(tmp_path: Path) -> None:
    repo = copy_program(tmp_path / "repo")
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    doc = yaml.safe_load(stack.read_text())
    doc["config"]["karmada-hub:hub"]["serverType"] = "cx23"
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "plans"
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--out", str(out)], cwd=repo,
                            capture_output=True, text=True, timeout=300, env=program_env())
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: stacks/Pulumi.dev.yaml: karmada-hub:hub.serverType: 3 x cx23 cannot hold")
    assert not out.exists(), "nothing may be written"


def test_the_limits_table_says_where_every_number_comes_from() -> None:
    for table in (limits.SERVER_TYPES, limits.LOAD_BALANCER_TYPES):
        for name, row in table.items():
            assert row.name == name and row.source, name
    assert json.loads(json.dumps(limits.AS_OF)) == limits.AS_OF
