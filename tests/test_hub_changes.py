"""hetzner/changes.py: what one `pulumi up` may change on a running hub, decided from what Hetzner reports.

Pure cases first (each refusal beside the same input without the dangerous change, which must pass), then
the whole program offline with a deployed hub standing in for Hetzner (hubctl.mocks.live_server/live_network):
the rendered servers, their user-data and the refusals exactly as `pulumi preview` would get them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from components.config import EtcdConfig, FleetConfig
from components.hetzner import changes
from components.hetzner.changes import Deployed, LiveServer, UnsafeChange, plan_hub
from hubctl.mocks import live_network, live_server, unwrap
from tests.support.tools import REPO

BIGGER = "cx53"
"""A type no example stack uses, so a resize to it is always a change."""


@pytest.fixture
def dev(dev_raw: tuple[dict[str, Any], frozenset[str]]) -> FleetConfig:
    raw, secrets = dev_raw
    return FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)


def _hub(config: FleetConfig, **changes_: Any) -> Any:
    assert config.hub is not None
    return config.hub.model_copy(update=changes_)


def _live(hub: Any, server_type: str | None = None, skip: tuple[int, ...] = (), status: dict[int, str] | None = None,
          locations: dict[int, str] | None = None, image: str | None = None) -> dict[str, LiveServer]:
    out = {}
    for i in range(hub.servers):
        if i in skip:
            continue
        name = changes.server_name(hub, i)
        out[name] = LiveServer(name=name, server_type=server_type or hub.server_type,
                               location=(locations or {}).get(i, hub.server_location(i)),
                               status=(status or {}).get(i, "running"), image=image or hub.image)
    return out


def _record(hub: Any, etcd: EtcdConfig, **override: str) -> dict[str, str]:
    rec = changes.record_labels(hub, etcd)
    rec.update({f"{changes.RECORD_PREFIX}{k}": v for k, v in override.items()})
    return rec


# ------------------------------------------------------------------------------------------ join mode


def test_first_creation_only_the_first_server_may_initialise(dev: FleetConfig) -> None:
    plan = plan_hub(dev.hub, dev.karmada.etcd, changes.NOTHING)
    assert [p.joins for p in plan.servers] == [False, True, True] and not plan.notices


@pytest.mark.parametrize("lost", [0, 1, 2])
def test_a_server_rebuilt_while_others_run_joins(dev: FleetConfig, lost: int) -> None:
    plan = plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, skip=(lost,))))
    assert all(p.joins for p in plan.servers), "no server may cluster-init while another hub server exists"


def test_running_hub_renders_join_for_every_server(dev: FleetConfig) -> None:
    plan = plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub)))
    assert all(p.joins for p in plan.servers)


# ------------------------------------------------------------------------------------------ serverType


def test_server_type_change_rolls_one_server_per_up(dev: FleetConfig) -> None:
    old = dev.hub.server_type
    hub = _hub(dev, server_type=BIGGER)
    live = _live(dev.hub)  # all three still on the old type
    types, notices = [], []
    for _ in range(3):
        plan = plan_hub(hub, dev.karmada.etcd, Deployed(servers=live))
        changed = [p for p in plan.servers if p.server_type != live[p.name].server_type]
        assert len(changed) == 1, [p.server_type for p in plan.servers]
        assert changed[0].resize_from == old and changed[0].server_type == BIGGER
        types.append(changed[0].index)
        notices += plan.notices
        live = {**live, changed[0].name: LiveServer(changed[0].name, BIGGER, changed[0].location, "running",
                                                    dev.hub.image)}
    assert types == [0, 1, 2], "lowest index first"
    assert "2 more follow" in notices[0] and "1 more follows" in notices[1] and "the last one" in notices[2]
    assert all(changes.RUNBOOK_RESIZE in n for n in notices)
    done = plan_hub(hub, dev.karmada.etcd, Deployed(servers=live))
    assert {p.server_type for p in done.servers} == {BIGGER} and not done.notices


def test_no_resize_while_a_server_is_not_running(dev: FleetConfig) -> None:
    hub = _hub(dev, server_type=BIGGER)
    with pytest.raises(UnsafeChange) as exc:
        plan_hub(hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, status={2: "off"})))
    assert exc.value.key == "hub.serverType" and "karmada-hub-dev-cp-2 is off" in str(exc.value)
    # the same degraded hub without a type change is not refused
    plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, status={2: "off"})))


def test_a_new_server_gets_the_new_type_at_once(dev: FleetConfig) -> None:
    hub = _hub(dev, server_type=BIGGER)
    plan = plan_hub(hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, skip=(1,))))
    by_index = {p.index: p for p in plan.servers}
    assert by_index[1].server_type == BIGGER and by_index[1].resize_from is None
    assert [by_index[0].server_type, by_index[2].server_type].count(BIGGER) == 1


# ------------------------------------------------------------------------------------------ location, image


def test_a_server_cannot_move(dev: FleetConfig) -> None:
    with pytest.raises(UnsafeChange) as exc:
        plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, locations={1: "hel1"})))
    assert exc.value.key == "hub.locations" and "karmada-hub-dev-cp-1 runs in hel1" in str(exc.value)
    assert changes.RUNBOOK_LOST in str(exc.value)


def test_an_image_change_is_said_not_silent(dev: FleetConfig) -> None:
    plan = plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub, image="ubuntu-22.04")))
    assert any("only servers created from now on" in n for n in plan.notices)


# ------------------------------------------------------------------------------------------ the record


def test_storage_size_change_is_refused_with_the_fix(dev: FleetConfig) -> None:
    etcd = dev.karmada.etcd.model_copy(update={"storage_size": "16Gi"})
    record = _record(dev.hub, dev.karmada.etcd)
    with pytest.raises(UnsafeChange) as exc:
        plan_hub(dev.hub, etcd, Deployed(servers=_live(dev.hub), record=record))
    assert exc.value.key == "karmada.etcd.storageSize"
    assert "set it back to 8Gi" in str(exc.value) and changes.RUNBOOK_IMMUTABLE in str(exc.value)
    plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub), record=record))
    plan_hub(dev.hub, etcd, Deployed(servers=_live(dev.hub), record=None))  # no record yet: nothing to compare


def test_storage_class_change_is_refused(dev: FleetConfig) -> None:
    etcd = dev.karmada.etcd.model_copy(update={"storage_class": "hcloud-volumes"})
    with pytest.raises(UnsafeChange, match="set it back to local-path"):
        plan_hub(dev.hub, etcd, Deployed(servers={}, record=_record(dev.hub, dev.karmada.etcd)))


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("v1.34.1+k3s1", "v1.34.2+k3s1", None),
    ("v1.34.1+k3s1", "v1.34.1+k3s2", None),
    ("v1.34.1+k3s1", "v1.35.0+k3s1", None),
    ("v1.34.1+k3s1", "v1.34.1+k3s1", None),
    ("v1.34.2+k3s1", "v1.34.1+k3s1", "downgrade"),
    ("v1.34.1+k3s2", "v1.34.1+k3s1", "downgrade"),
    ("v1.33.5+k3s1", "v1.35.0+k3s1", "skips a minor"),
])
def test_k3s_version_steps(dev: FleetConfig, old: str, new: str, problem: str | None) -> None:
    hub = _hub(dev, k3s_version=new)
    record = _record(dev.hub, dev.karmada.etcd, **{"k3s-version": changes.k3s_label(old)})
    if problem is None:
        plan = plan_hub(hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub), record=record))
        assert (old != new) == any(changes.RUNBOOK_K3S in n for n in plan.notices)
    else:
        with pytest.raises(UnsafeChange, match=problem) as exc:
            plan_hub(hub, dev.karmada.etcd, Deployed(servers=_live(dev.hub), record=record))
        assert exc.value.key == "hub.k3sVersion" and f"set it back to {old}" in str(exc.value)


def test_a_garbled_record_is_refused_not_trusted(dev: FleetConfig) -> None:
    record = _record(dev.hub, dev.karmada.etcd, **{"k3s-version": "latest"})
    with pytest.raises(UnsafeChange, match="is not a k3s version"):
        plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers={}, record=record))


def test_record_labels_are_valid_hetzner_labels(dev: FleetConfig) -> None:
    for key, value in changes.record_labels(dev.hub, dev.karmada.etcd).items():
        assert re.fullmatch(r"([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", key), key
        assert re.fullmatch(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", value), value
    assert changes.k3s_from_label(changes.k3s_label("v1.34.1+k3s1")) == "v1.34.1+k3s1"


# ------------------------------------------------------------------------------------------ the program, offline


def _deployed_dev(config: FleetConfig, server_type: str | None = None, storage: str = "8Gi") -> dict[str, list[Any]]:
    hub = config.hub
    assert hub is not None
    labels = {"karmada-hub/cluster": hub.name, "karmada-hub/role": "control-plane"}
    servers = [live_server(changes.server_name(hub, i), server_type or hub.server_type, hub.server_location(i), labels)
               for i in range(hub.servers)]
    record = {**changes.record_labels(hub, config.karmada.etcd), f"{changes.RECORD_PREFIX}etcd-storage-size": storage}
    network = live_network(hub.name, str(hub.network.cidr), {"karmada-hub/cluster": hub.name, **record})
    return {"servers": servers, "networks": [network]}


def _servers(plan: Any) -> dict[str, dict[str, Any]]:
    return {unwrap(r.inputs)["name"]: unwrap(r.inputs) for r in plan.by_type("hcloud:index/server:Server")}


def test_program_on_a_running_hub_joins_every_server_and_resizes_one(dev: FleetConfig) -> None:
    import yaml

    from hubctl.plan import run_program
    from hubctl.stackfile import read_stack

    assert dev.hub is not None
    new, old = dev.hub.server_type, BIGGER  # the servers run another type than the stack file says
    plan = run_program(REPO, read_stack(REPO, "dev"), live=_deployed_dev(dev, server_type=old))
    servers = _servers(plan)
    assert [servers[f"karmada-hub-dev-cp-{i}"]["serverType"] for i in range(3)] == [new, old, old]
    for name, inputs in servers.items():
        doc = yaml.safe_load(inputs["userData"].split("\n", 1)[1])
        paths = {f["path"] for f in doc["write_files"]}
        config = yaml.safe_load(next(f["content"] for f in doc["write_files"] if f["path"].endswith("config.yaml")))
        assert config["server"] == "https://10.0.1.254:6443" and "cluster-init" not in config, name
        assert not any(p.endswith(".key") for p in paths), f"{name} got CA keys although it joins"
        assert "/usr/local/sbin/k3s-join-mode" not in paths
    dynamic = [unwrap(r.inputs) for r in plan.by_type("pulumi-python:dynamic:Resource")]
    gates = {d["node"]: d["trigger"] for d in dynamic if "node" in d}
    assert gates == {"karmada-hub-dev-cp-0": new, "karmada-hub-dev-cp-1": old, "karmada-hub-dev-cp-2": old}


def test_plan_refuses_an_immutable_change_with_one_line_and_exit_2(dev: FleetConfig, tmp_path: Path) -> None:
    """`hubctl plan` against a recorded deployed state (HUBCTL_DEPLOYED), the way `pulumi preview` sees Hetzner."""
    import json
    import subprocess
    import sys

    from tests.support.tools import program_env

    deployed = tmp_path / "deployed.json"
    deployed.write_text(json.dumps(_deployed_dev(dev, storage="4Gi")))
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--out", str(tmp_path / "plan"), "--quiet"],
                            cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=program_env(HUBCTL_DEPLOYED=str(deployed)))
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines == ["error: stacks/Pulumi.dev.yaml: karmada-hub:karmada.etcd.storageSize: 4Gi -> 8Gi would replace "
                     "the etcd StatefulSet (volumeClaimTemplates are immutable) and restart every member at once; set "
                     "it back to 4Gi, or resize member by member (docs/runbooks/immutable-settings.md)"]
    assert not (tmp_path / "plan" / "dev").exists(), "nothing written"
    same = tmp_path / "same.json"
    same.write_text(json.dumps(_deployed_dev(dev)))
    ok = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--out", str(tmp_path / "plan"), "--quiet"],
                        cwd=REPO, capture_output=True, text=True, timeout=300,
                        env=program_env(HUBCTL_DEPLOYED=str(same)))
    assert ok.returncode == 0, ok.stderr[-2000:]

def test_fewer_servers_or_etcd_members_are_refused(dev: FleetConfig) -> None:
    more = _hub(dev, servers=5)
    with pytest.raises(UnsafeChange, match="would delete karmada-hub-dev-cp-3, karmada-hub-dev-cp-4") as exc:
        plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers=_live(more)))
    assert exc.value.key == "hub.servers"
    plan_hub(more, dev.karmada.etcd, Deployed(servers=_live(dev.hub)))  # growing is fine
    record = _record(dev.hub, dev.karmada.etcd, **{"etcd-replicas": "5"})
    with pytest.raises(UnsafeChange, match="5 -> 3") as exc:
        plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers={}, record=record))
    assert exc.value.key == "karmada.etcd.replicas"
    plan_hub(dev.hub, dev.karmada.etcd, Deployed(servers={}, record=_record(dev.hub, dev.karmada.etcd)))



def test_every_runbook_the_refusals_name_exists() -> None:
    from agents import etcd_member_prepare

    named = {changes.RUNBOOK_RESIZE, changes.RUNBOOK_IMMUTABLE, changes.RUNBOOK_K3S, changes.RUNBOOK_LOST,
             etcd_member_prepare.RUNBOOK}
    for rel in named:
        assert (REPO / rel).is_file(), rel
        assert rel.removeprefix("docs/runbooks/") in (REPO / "docs" / "runbooks" / "README.md").read_text(), rel
        assert rel in (REPO / "README.md").read_text(), rel
