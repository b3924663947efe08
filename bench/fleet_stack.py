"""Generated all-in-one stacks of N members: the fleet-size benchmark's input (and its smoke test's).

Three regions in eu-central, members alternating Push and Pull across them, every member with a
scheduler-estimator and one ingress server, the dev stack's four tenants (its placement options, quota, state
stories), Karmada settings, DNS, backups and failover profile, and a hub sized to hold the fleet.
Deterministic: the same N (and the same dev stack) always gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hubctl.mocks import offline_uid

REPO = Path(__file__).resolve().parent.parent

REGIONS = {"eu-fsn": "fsn1", "eu-hel": "hel1", "eu-nbg": "nbg1"}
_PLACEHOLDER = "v1:QmZNxFleet0Placeholder0000000000==:dGhpcyBpcyBub3QgYSByZWFsIGNpcGhlcnRleHQ="
SECRETS = ("capiKubeconfig", "hetznerDnsToken", "etcdBackupAccessKey", "etcdBackupSecretKey", "etcdBackupEncryptionKey")


def member_name(index: int) -> str:
    region = list(REGIONS)[index % len(REGIONS)]
    return f"{region}-m{index:03d}"


def hub_sizing(members: int) -> tuple[str, int]:
    """(server type, servers) of a hub that holds `members` scheduler-estimators of 2 x 100m/128Mi with the
    control plane (operations/capacity.py: the smallest such hub, rounded to one type per size band)."""
    if members <= 30:
        return "cx33", 3
    if members <= 100:
        return "cx43", 5
    return "cx53", 7


INGRESS_SERVERS = 1
"""Hetzner servers each member's LB selector matches: one ingress server per member keeps 100 members of a
region under lb31's 150 targets (operations/capacity.py counts every matched server)."""


def lb_type(members_in_region: int) -> str:
    targets = members_in_region * INGRESS_SERVERS
    return "lb11" if targets <= 25 else "lb21" if targets <= 75 else "lb31"


def members_per_region(members: int) -> int:
    return -(-members // len(REGIONS))


def _dev() -> dict[str, Any]:
    """The dev stack's config: the generated fleets take its hub, Karmada, tenants, DNS and failover profile, so
    they follow whatever the example stack shows."""
    return yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())["config"]


def _tenants(dev: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """dev's tenants, their member names (quota assignments, weights) mapped onto the first member of the same
    region in the generated fleet."""
    first = {region: next(n for n in names if n.startswith(region)) for region in REGIONS}
    mapping = {"dev-fsn1-a": first["eu-fsn"], "dev-hel1-a": first["eu-hel"]}
    text = yaml.safe_dump(dev["karmada-hub:tenants"], sort_keys=False)
    for old, new in mapping.items():
        text = text.replace(old, new)
    return yaml.safe_load(text)


def stack(members: int) -> dict[str, Any]:
    """The stack file (as a YAML-ready dict) of an all-in-one fleet with `members` members."""
    if members < len(REGIONS):
        raise ValueError(f"a generated fleet has at least one member per region ({len(REGIONS)})")
    dev = _dev()
    names = [member_name(i) for i in range(members)]
    server_type, servers = hub_sizing(members)
    region_lb = lb_type(members_per_region(members))
    member_docs = []
    for i, name in enumerate(names):
        region = list(REGIONS)[i % len(REGIONS)]
        push = i % 2 == 0
        doc: dict[str, Any] = {
            "name": name,
            "region": region,
            "zones": [REGIONS[region]],
            "syncMode": "Push" if push else "Pull",
            "kubernetesVersion": "v1.33.4" if push else "v1.34.1",
            "apiEndpoint": f"https://{name}.k8s.fleet.example.com:6443",
            "credentials": {"source": "capi", "cluster": name, "namespace": "fleet"},
            "schedulerEstimator": True,
            "ingress": {"servers": INGRESS_SERVERS},
        }
        if push:
            doc["labels"] = {"tier": "standard" if i % 3 else "premium"}
        else:  # the hub makes a Pull member's Cluster with its kube-system UID: the one the offline plan reads
            doc["clusterId"] = offline_uid(f"kubernetes:core/v1:Namespace::member-{name}-kube-system")
        member_docs.append(doc)
    hub = {**dev["karmada-hub:hub"], "name": f"karmada-hub-fleet{members}", "serverType": server_type,
           "servers": servers, "apiDnsName": "api.hub.fleet.example.com",
           "loadBalancer": {"type": "lb21", "location": "fsn1"}}
    karmada = dict(dev["karmada-hub:karmada"])
    # the opt-in addons are sized on their own (docs/fleet-scale.md "karmada-search"); the fleet rows measure the hub
    karmada.pop("addons", None)
    karmada["etcd"] = {**karmada["etcd"], "storageSize": "20Gi",
                       "backup": {**karmada["etcd"]["backup"], "bucket": "karmada-hub-fleet-backups"}}
    failover = {k: v for k, v in dev["karmada-hub:failover"].items() if k != "rtoSeconds"}
    config: dict[str, Any] = {
        "pulumi:disable-default-providers": ["kubernetes"],
        "hcloud:pollInterval": "1s",
        "karmada-hub:role": "all-in-one",
        "karmada-hub:hub": hub,
        "karmada-hub:karmada": karmada,
        "karmada-hub:regions": {
            region: {"location": location, "loadBalancerType": region_lb,
                     "healthCheck": {"interval": 5, "timeout": 3, "retries": 2},
                     "networkCidr": f"10.{10 * (i + 1)}.0.0/16", "networkId": 4711001 + i}
            for i, (region, location) in enumerate(REGIONS.items())
        },
        "karmada-hub:members": member_docs,
        "karmada-hub:tenants": _tenants(dev, names),
        "karmada-hub:dns": {**dev["karmada-hub:dns"], "domain": "fleet.example.com"},
        "karmada-hub:failover": failover,
    }
    for key in SECRETS:
        config[f"karmada-hub:{key}"] = {"secure": _PLACEHOLDER}
    return {"config": config}


def stack_name(members: int) -> str:
    return f"fleet-{members}"


def render(members: int) -> str:
    header = f"# Generated by bench/fleet_stack.py: an all-in-one fleet of {members} members (benchmark input).\n"
    return header + yaml.safe_dump(stack(members), sort_keys=False, default_flow_style=False, width=1000)


def stack_config(members: int) -> Any:
    """The generated stack as `hubctl plan` reads a stack file (hubctl.stackfile's rules), without writing one into
    stacks/: for tests that run the program on it in-process."""
    import json
    from pathlib import Path

    from hubctl.stackfile import StackConfig, placeholder

    doc = yaml.safe_load(render(members))
    config: dict[str, str] = {}
    secrets = []
    for key, value in doc["config"].items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = placeholder(key)
            secrets.append(key)
        else:
            config[key] = value if isinstance(value, str) else json.dumps(value)
    return StackConfig(stack=stack_name(members), path=Path("stacks") / f"Pulumi.{stack_name(members)}.yaml",
                       config=config, secret_keys=tuple(sorted(secrets)))
