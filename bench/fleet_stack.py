"""Generated all-in-one stacks of N members: the fleet-size benchmark's input (and its smoke test's).

Three regions in eu-central, members alternating Push and Pull across them, every member with a
scheduler-estimator, four tenants (Duplicated with a region preference, Divided by static weights,
Divided by dynamic weights, one with a fleet-wide quota), the dev stack's hub, DNS, backups and
failover profile. Deterministic: the same N always gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import yaml

REGIONS = {"eu-fsn": "fsn1", "eu-hel": "hel1", "eu-nbg": "nbg1"}
SSH_KEY = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBgX0qZk3pXyqJpQ8mW5Jm9r0hX8yA1u1n3Tz2tQe4jL platform-oncall")
_PLACEHOLDER = "v1:QmZNxFleet0Placeholder0000000000==:dGhpcyBpcyBub3QgYSByZWFsIGNpcGhlcnRleHQ="
SECRETS = ("capiKubeconfig", "hetznerDnsToken", "etcdBackupAccessKey", "etcdBackupSecretKey")


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


def stack(members: int) -> dict[str, Any]:
    """The stack file (as a YAML-ready dict) of an all-in-one fleet with `members` members."""
    if members < len(REGIONS):
        raise ValueError(f"a generated fleet has at least one member per region ({len(REGIONS)})")
    names = [member_name(i) for i in range(members)]
    server_type, servers = hub_sizing(members)
    region_lb = lb_type(members_per_region(members))
    member_docs = []
    for i, name in enumerate(names):
        region = list(REGIONS)[i % len(REGIONS)]
        member_docs.append({
            "name": name,
            "region": region,
            "zones": [REGIONS[region]],
            "syncMode": "Push" if i % 2 == 0 else "Pull",
            "kubernetesVersion": "v1.33.4" if i % 2 == 0 else "v1.34.1",
            "apiEndpoint": f"https://{name}.k8s.fleet.example.com:6443",
            "credentials": {"source": "capi", "cluster": name, "namespace": "fleet"},
            "labels": {"tier": "standard" if i % 3 else "premium"},
            "schedulerEstimator": True,
            "ingress": {"servers": INGRESS_SERVERS},
        })
    weighted = names[: min(6, members)]
    quota_members = names[:2]
    tenants = [
        {"name": "shop", "namespace": "shop",
         "placement": {"replicaScheduling": "Duplicated", "preferredRegions": ["eu-fsn", "eu-hel"],
                       "spreadByRegion": True, "minRegions": 2}},
        {"name": "search", "namespace": "search",
         "placement": {"replicaScheduling": "Divided", "weighting": "static",
                       "weights": {n: 1 + i % 3 for i, n in enumerate(weighted)}, "preferredRegions": ["eu-fsn"]}},
        {"name": "media", "namespace": "media",
         "placement": {"replicaScheduling": "Divided", "weighting": "dynamic", "spreadByRegion": True,
                       "minRegions": 1}},
        {"name": "ledger", "namespace": "ledger",
         "placement": {"replicaScheduling": "Duplicated", "preferredRegions": ["eu-hel"]},
         "quota": {"overall": {"cpu": "40", "memory": "80Gi"},
                   "staticAssignments": [{"cluster": n, "hard": {"cpu": "10", "memory": "20Gi"}}
                                         for n in quota_members],
                   "enforce": True}},
    ]
    config: dict[str, Any] = {
        "pulumi:disable-default-providers": ["kubernetes"],
        "hcloud:pollInterval": "1s",
        "karmada-hub:role": "all-in-one",
        "karmada-hub:hub": {
            "name": f"karmada-hub-fleet{members}", "locations": ["fsn1", "nbg1", "hel1"],
            "serverType": server_type, "servers": servers, "apiDnsName": "api.hub.fleet.example.com",
            "sshKeys": [{"name": "platform-oncall", "publicKey": SSH_KEY}],
            "firewall": {"sshCidrs": ["198.51.100.0/24"], "apiCidrs": ["198.51.100.0/24", "203.0.113.0/24"]},
            "loadBalancer": {"type": "lb21", "location": "fsn1"},
        },
        "karmada-hub:karmada": {
            "version": "v1.18.2",
            "etcd": {"replicas": 3, "storageClass": "local-path", "storageSize": "20Gi",
                     "backup": {"schedule": "17 */6 * * *", "endpoint": "https://fsn1.your-objectstorage.com",
                                "region": "fsn1", "bucket": "karmada-hub-fleet-backups", "retain": 28}},
            "schedulerEstimators": True,
        },
        "karmada-hub:regions": {
            region: {"location": location, "loadBalancerType": region_lb,
                     "healthCheck": {"interval": 5, "timeout": 3, "retries": 2},
                     "networkCidr": f"10.{10 * (i + 1)}.0.0/16", "networkId": 4711001 + i}
            for i, (region, location) in enumerate(REGIONS.items())
        },
        "karmada-hub:members": member_docs,
        "karmada-hub:tenants": tenants,
        "karmada-hub:dns": {"domain": "fleet.example.com", "ttl": 30, "txtOwnerId": f"karmada-hub-fleet{members}",
                            "intervalSeconds": 60, "refreshSeconds": 15},
        "karmada-hub:failover": {"clusterStatusUpdateFrequency": 10, "clusterFailureThreshold": 30,
                                 "clusterMonitorPeriod": 5, "clusterMonitorGracePeriod": 40,
                                 "resourceEvictionRate": 0.5, "purgeMode": "Gracefully", "bindingsPerCluster": 50,
                                 "podStartSeconds": 60},
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
