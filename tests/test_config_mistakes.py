"""Mistakes a newcomer makes by plain copy-paste that used to plan clean (review-newcomer.md §1 #3, #6, #10, #12, #13):
each is now refused in one line naming the file, the key and the fix.

Each case starts from an example stack and changes one thing, like tests/test_config.py.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError, FleetConfig
from tests.support.tools import REPO, stack_values

Mutation = Callable[[dict[str, Any]], None]


def set_at(path: list[Any], value: Any) -> Mutation:
    def mutate(raw: dict[str, Any]) -> None:
        node = raw
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


def both(*mutations: Mutation) -> Mutation:
    def mutate(raw: dict[str, Any]) -> None:
        for m in mutations:
            m(raw)

    return mutate


def outcome(stack: str, mutation: Mutation) -> str:
    raw, secrets = stack_values(stack)
    raw = copy.deepcopy(raw)
    mutation(raw)
    try:
        FleetConfig.from_mapping(raw, f"stacks/Pulumi.{stack}.yaml", secrets)
    except ConfigError as exc:
        return str(exc)
    return "accepted"


DEV = "stacks/Pulumi.dev.yaml: karmada-hub:"

REFUSED: list[tuple[str, str, Mutation, str]] = [
    ("tenants-share-a-namespace", "dev", set_at(["tenants", 1, "namespace"], "shop"),
     DEV + "tenants[1].namespace: 'shop' is already tenant shop's namespace (tenants[0]); one tenant per namespace: "
     "both policies would select the same workloads and Karmada would apply only one"),
    ("tenants-share-a-name", "dev", set_at(["tenants", 1, "name"], "shop"),
     DEV + "tenants[1].name: tenant name 'shop' is also tenants[0]'s; give each tenant its own name"),
    ("hub-role-with-members", "dev", set_at(["role"], "hub"),
     DEV + "members: a hub stack reads members from the region stacks in regionStacks, never from its own file; "
     "move them to a region stack (role: region) or use role: all-in-one"),
    ("hub-role-with-tenants", "dev", both(set_at(["role"], "hub"), set_at(["members"], [])),
     DEV + "tenants: a hub stack reads tenants from the region stacks in regionStacks, never from its own file; "
     "move them to a region stack (role: region) or use role: all-in-one"),
    ("hub-role-with-regions", "dev", both(set_at(["role"], "hub"), set_at(["members"], []), set_at(["tenants"], [])),
     DEV + "regions: a hub stack reads regions from the region stacks in regionStacks, never from its own file; "
     "move them to a region stack (role: region) or use role: all-in-one"),
    ("region-key-in-all-in-one", "dev", set_at(["region"], "eu-fsn"),
     DEV + "region: only a region stack (role: region) has region; all-in-one stacks ignore it: remove it here"),
    ("hub-stack-key-in-all-in-one", "dev", set_at(["hubStack"], {"stack": "organization/karmada-hub/prod-hub"}),
     DEV + "hubStack: only a region stack (role: region) has hubStack; all-in-one stacks ignore it: remove it here"),
    ("member-of-another-region-in-a-region-stack", "prod-hel1", set_at(["members", 0, "region"], "eu-fsn"),
     "stacks/Pulumi.prod-hel1.yaml: karmada-hub:members[0].region: this stack rolls out region eu-hel; a member of "
     "eu-fsn belongs in the region stack with region: eu-fsn (its hub reads it from there)"),
    ("min-regions-without-spread", "dev", set_at(["tenants", 0, "placement", "minRegions"], 3),
     DEV + "tenants[0].placement.minRegions: minRegions 3 does nothing without spreadByRegion: true (no region spread "
     "constraint is rendered); set spreadByRegion: true or remove minRegions"),
    ("zero-quota-under-enforce", "dev", set_at(["tenants", 0, "quota"], {"overall": {"cpu": "0", "memory": "0"}}),
     DEV + "tenants[0].quota.overall.cpu: a cpu quota of 0 under enforce: true lets the tenant run nothing; give it a "
     "size (like \"40\") or set enforce: false"),
    ("zero-memory-as-a-number", "dev", set_at(["tenants", 0, "quota"], {"overall": {"cpu": 40, "memory": 0}}),
     DEV + "tenants[0].quota.overall.memory: a memory quota of 0 under enforce: true lets the tenant run nothing; give "
     "it a size (like 80Gi) or set enforce: false"),
    ("hub-network-on-the-pod-cidr", "dev", set_at(["hub", "network"], {"cidr": "10.42.0.0/16",
                                                                       "subnet": "10.42.1.0/24"}),
     DEV + "hub.network.cidr: 10.42.0.0/16 overlaps k3s's pod network 10.42.0.0/16: a node address there is routed "
     "into the cluster, not to the node; use another private range like 10.0.0.0/16"),
    ("hub-network-over-the-service-cidr", "dev", set_at(["hub", "network"], {"cidr": "10.43.0.0/16",
                                                                             "subnet": "10.43.8.0/24"}),
     DEV + "hub.network.cidr: 10.43.0.0/16 overlaps k3s's service network 10.43.0.0/16: a node address there is "
     "routed into the cluster, not to the node; use another private range like 10.0.0.0/16"),
    ("overlapping-region-networks", "dev", set_at(["regions", "eu-hel", "networkCidr"], "10.10.0.0/17"),
     DEV + "regions.eu-hel.networkCidr: 10.10.0.0/17 overlaps region eu-fsn's network 10.10.0.0/16; give each "
     "region's network its own range (or, if both regions' members share one network, the same networkId)"),
    ("one-network-id-two-ranges", "dev", set_at(["regions", "eu-hel", "networkId"], 4711001),
     DEV + "regions.eu-hel.networkCidr: networkId 4711001 is also region eu-fsn's, whose networkCidr is 10.10.0.0/16; "
     "one Hetzner network has one range: write 10.10.0.0/16 here, or the id of this region's own network"),
    ("zone-typo", "dev", set_at(["members", 0, "zones"], ["fsn-1"]),
     DEV + "members[0].zones[0]: 'fsn-1' is not a Hetzner location; did you mean fsn1? (one of: fsn1, nbg1, hel1, "
     "ash, hil, sin)"),
    ("zone-of-another-region", "dev", set_at(["members", 0, "zones"], ["hel1"]),
     DEV + "members[0].zones[0]: hel1 is not where region eu-fsn is (location fsn1): a region's members sit behind its "
     "load balancer there; write zones: [fsn1], or put the member in a region located at hel1"),
    ("five-servers-over-two-locations", "dev", both(set_at(["hub", "servers"], 5),
                                                    set_at(["hub", "locations"], ["fsn1", "nbg1"])),
     DEV + "hub.locations: 5 servers over fsn1, nbg1 put 3 in fsn1: losing fsn1 leaves 2 of 5, no etcd quorum; spread "
     "them over three locations (locations: [fsn1, nbg1, hel1])"),
    ("every-server-in-one-location", "dev", set_at(["hub", "locations"], ["fsn1"]),
     DEV + "hub.locations: 3 servers over fsn1 put 3 in fsn1: losing fsn1 leaves 0 of 3, no etcd quorum; spread them "
     "over three locations (locations: [fsn1, nbg1, hel1])"),
    ("a-location-listed-twice", "dev", set_at(["hub", "locations"], ["fsn1", "fsn1", "nbg1"]),
     DEV + "hub.locations: 3 servers over fsn1, nbg1 put 2 in fsn1: losing fsn1 leaves 1 of 3, no etcd quorum; spread "
     "them over three locations (locations: [fsn1, nbg1, hel1])"),
    ("truncated-ssh-key", "dev", set_at(["hub", "sshKeys", 0, "publicKey"], "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBgX0"
                                                                          "qZk3pXyqJpQ8mW5Jm9r0hX8yA1u1n3Tz2tQe4 ops"),
     DEV + "hub.sshKeys[0].publicKey: the ssh-ed25519 key is cut short or mangled (its base64 does not hold a whole "
     "ssh-ed25519 key); paste the whole line `ssh-keygen -y -f <keyfile>` prints"),
    ("ssh-key-of-another-type", "dev", set_at(["hub", "sshKeys", 0, "publicKey"], "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIBg"
                                                                               "X0qZk3pXyqJpQ8mW5Jm9r0hX8yA1u1n3Tz2tQe4jL"),
     DEV + "hub.sshKeys[0].publicKey: the ssh-rsa key is cut short or mangled (its base64 does not hold a whole "
     "ssh-rsa key); paste the whole line `ssh-keygen -y -f <keyfile>` prints"),
    ("push-member-on-a-private-address", "dev", set_at(["members", 0, "apiEndpoint"], "https://10.10.0.5:6443"),
     DEV + "members[0].apiEndpoint: 10.10.0.5 is not a public address: the hub's karmada-controller-manager dials a "
     "Push member from the hub's own network, which does not reach it; use the member's public API endpoint, or "
     "syncMode: Pull (its agent dials the hub)"),
    ("one-nodeport-for-http-and-https", "dev", set_at(["members", 0, "ingress"], {"httpNodePort": 30080,
                                                                                  "httpsNodePort": 30080}),
     DEV + "members[0].ingress.httpsNodePort: httpNodePort and httpsNodePort are both 30080: the regional LB would "
     "send HTTP and HTTPS to one listener; give HTTPS its own NodePort (default 30443)"),
    ("region-key-not-in-regions", "prod-fsn1", set_at(["region"], "eu-fsn1"),
     "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:region: 'eu-fsn1' is not a key of regions (eu-fsn); role 'region' "
     "needs region: the key of regions this stack rolls out"),
    ("an-empty-value", "dev", set_at(["tenants", 2, "namespace"], None),
     DEV + "tenants[2].namespace: is empty (nothing after the colon): write a value, or remove the key for its "
     "default"),
    ("a-comment-glued-to-a-number", "dev", set_at(["hub", "servers"], "3# one per location"),
     DEV + "hub.servers: must be a whole number like 3 (got '3# one per location'); a # starts a comment only after a "
     "space"),
    ("an-int-where-a-cidr-goes", "dev", set_at(["hub", "firewall", "apiCidrs"], [12345]),
     DEV + "hub.firewall.apiCidrs[0]: must be a network in CIDR notation written as text, like 198.51.100.0/24 (got "
     "the number 12345)"),
    ("a-mapping-where-a-cidr-goes", "dev", set_at(["hub", "firewall", "sshCidrs"], [{"cidr": "198.51.100.0/24"}]),
     DEV + "hub.firewall.sshCidrs[0]: must be a network in CIDR notation written as text, like 198.51.100.0/24 (got a "
     "mapping)"),
]


@pytest.mark.parametrize(("stack", "mutation", "expected"),
                         [pytest.param(s, m, e, id=i) for i, s, m, e in REFUSED])
def test_a_silent_acceptance_is_now_one_line(stack: str, mutation: Mutation, expected: str) -> None:
    assert outcome(stack, mutation) == expected


ACCEPTED: list[tuple[str, str, Mutation]] = [
    ("cpu-as-a-number", "dev", set_at(["tenants", 0, "quota", "overall", "cpu"], 40)),
    ("cpu-as-a-fraction", "dev", set_at(["tenants", 0, "quota"], {"overall": {"cpu": 0.5, "memory": "1Gi"}})),
    ("zero-gpus-is-deliberate", "dev", set_at(["tenants", 0, "quota", "overall", "nvidia.com/gpu"], "0")),
    ("zero-quota-not-enforced", "dev", both(
        set_at(["tenants", 0, "quota"], {"overall": {"cpu": "0"}, "enforce": False}),
        lambda raw: raw["karmada"]["featureGates"].remove("FederatedQuotaEnforcement"))),
    ("zone-as-a-data-centre", "dev", set_at(["members", 0, "zones"], ["fsn1-dc14"])),
    ("five-servers-over-three-locations", "dev", set_at(["hub", "servers"], 5)),
    ("seven-servers-over-three-locations", "dev", set_at(["hub", "servers"], 7)),
    ("two-regions-on-one-network", "dev", both(set_at(["regions", "eu-hel", "networkId"], 4711001),
                                               set_at(["regions", "eu-hel", "networkCidr"], "10.10.0.0/16"))),
    ("min-regions-one-without-spread", "dev", set_at(["tenants", 0, "placement", "minRegions"], 1)),
    ("pull-member-on-a-private-address", "dev", set_at(["members", 1, "apiEndpoint"], "https://10.20.0.5:6443")),
    ("push-member-by-name", "dev", set_at(["members", 0, "apiEndpoint"], "https://api.member.internal:6443")),
]


@pytest.mark.parametrize(("stack", "mutation"), [pytest.param(s, m, id=i) for i, s, m in ACCEPTED])
def test_what_is_right_stays_accepted(stack: str, mutation: Mutation) -> None:
    assert outcome(stack, mutation) == "accepted"


def test_a_number_is_read_as_the_quantity_it_writes() -> None:
    raw, secrets = stack_values("dev")
    raw["tenants"][0]["quota"] = {"overall": {"cpu": 40, "memory": "80Gi", "pods": 0.5}}
    config = FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)
    assert config.tenants[0].quota is not None
    assert config.tenants[0].quota.overall == {"cpu": "40", "memory": "80Gi", "pods": "0.5"}


def test_a_single_location_zone_may_hold_every_server() -> None:
    """us-east has one location: there is nowhere to spread to, so the hub is not refused for it."""
    raw, secrets = stack_values("dev")
    raw["hub"]["locations"] = ["ash"]
    raw["hub"]["loadBalancer"]["location"] = "ash"
    config = FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)
    assert config.hub is not None and config.hub.locations == ["ash"]


def test_the_k3s_networks_are_the_ones_cloud_init_renders() -> None:
    from components.config import K3S_CLUSTER_NETWORKS
    from components.hetzner import cloud_init

    assert {k: str(v) for k, v in K3S_CLUSTER_NETWORKS.items()} == {"pod": cloud_init.POD_CIDR,
                                                                    "service": cloud_init.SERVICE_CIDR}


@pytest.fixture
def stacks_dir(tmp_path: Path) -> Path:
    target = tmp_path / "stacks"
    shutil.copytree(REPO / "stacks", target)
    return target


def test_a_namespace_is_one_tenants_across_a_hubs_region_stacks(stacks_dir: Path) -> None:
    """prod-hel1 taking prod-fsn1's namespace: both planned clean, and eu-hel's identity got write on policies in
    prod-fsn1's namespace. The hub reads every region file, so it refuses, naming the second file and its key."""
    from components.operations.region_intents import region_intents

    path = stacks_dir / "Pulumi.prod-hel1.yaml"
    text = path.read_text()
    assert "namespace: shop" not in text and "    - name: search\n      namespace: search\n" in text
    path.write_text(text.replace("    - name: search\n      namespace: search\n",
                                 "    - name: search\n      namespace: shop\n"))
    raw, secrets = stack_values("prod-hub")
    hub = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    with pytest.raises(ConfigError) as info:
        region_intents(hub, "prod-hub", stacks_dir)
    assert str(info.value) == (
        "stacks/Pulumi.prod-hel1.yaml: karmada-hub:tenants[0].namespace: 'shop' is already tenant shop's namespace in "
        "stacks/Pulumi.prod-fsn1.yaml; one tenant per namespace across the fleet (each region's identity may write "
        "only in its own tenants' namespaces): give this tenant its own")


def test_a_hub_keeps_the_gates_its_region_stacks_tenants_use(stacks_dir: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub rolls out first: dropping WorkloadAffinity there planned clean, and payments' anti-affinity in
    prod-fsn1 would have silently done nothing until that stack's own preview failed."""
    from components.operations.preflight import check

    path = stacks_dir / "Pulumi.prod-hub.yaml"
    text = path.read_text()
    old = "    featureGates: [FederatedQuotaEnforcement, WorkloadAffinity]\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "    featureGates: [FederatedQuotaEnforcement]\n"))
    from hubctl.stackfile import read_stack

    raw, secrets = read_stack(stacks_dir.parent, "prod-hub").project_values()
    hub = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    monkeypatch.setattr("components.operations.region_intents.STACKS_DIR", stacks_dir)
    with pytest.raises(ConfigError) as info:
        check(hub, "stacks/Pulumi.prod-hub.yaml")
    assert str(info.value) == (
        "stacks/Pulumi.prod-hub.yaml: karmada-hub:karmada.featureGates: WorkloadAffinity is off, but tenant payments "
        "of stacks/Pulumi.prod-fsn1.yaml needs it (tenants[1].placement.workloadAffinity); keep it on while a region "
        "stack's tenant uses it")


def test_a_region_file_naming_another_hub_is_named_from_the_hub_planned(stacks_dir: Path) -> None:
    """A copy of prod-hub planned under another name read prod-fsn1 and blamed prod-fsn1's file."""
    from components.operations.region_intents import region_intents

    raw, secrets = stack_values("prod-hub")
    hub = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    with pytest.raises(ConfigError) as info:
        region_intents(hub, "prod-hub-copy", stacks_dir)
    assert str(info.value) == (
        "stacks/Pulumi.prod-hub-copy.yaml: karmada-hub:regionStacks[0]: prod-fsn1 names "
        "organization/karmada-hub/prod-hub as its hub (hubStack.stack in stacks/Pulumi.prod-fsn1.yaml), not "
        "prod-hub-copy; list only this hub's region stacks, or point that file's hubStack.stack here")


@pytest.mark.parametrize(("value", "ok"), [('["kubernetes"]', True), ("[kubernetes, hcloud]", True), ('""', True),
                                           ("kubernetes", False), ("[1]", False), ("{kubernetes: true}", False)])
def test_disable_default_providers_is_a_list_as_the_engine_reads_it(tmp_path: Path, value: str, ok: bool) -> None:
    """pulumi/pulumi pkg/resource/deploy/default_providers.go json-decodes it into a list of strings and fails
    the first default provider request otherwise; hubctl read a bare string as a one-package list."""
    from hubctl.stackfile import read_stack

    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(f"config:\n  pulumi:disable-default-providers: {value}\n"
                                                       "  karmada-hub:role: hub\n")
    if ok:
        read_stack(tmp_path, "t")
        return
    with pytest.raises(ConfigError) as info:
        read_stack(tmp_path, "t")
    assert str(info.value).startswith("stacks/Pulumi.t.yaml: pulumi:disable-default-providers: must be a list of "
                                      "package names, like [\"kubernetes\"] (got ")
