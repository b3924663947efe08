"""Every committed stack file loads with FleetConfig, and the prod stacks have the roles and wiring they claim.

Stack files are read as the engine would hand them over (keys without `karmada-hub:`, `secure:` values
replaced by a placeholder and listed as secret), so these tests need neither the CLI nor the passphrase.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import ConfigError, FleetConfig
from hubctl.rollout import load_config
from hubctl.stackfile import placeholder
from tests.support.tools import load_stack, stack_values

REPO = Path(__file__).resolve().parent.parent
STACKS = REPO / "stacks"
STACK_FILES = sorted(STACKS.glob("Pulumi.*.yaml"))
PROVIDER_ENDPOINTS = {"fsn1.your-objectstorage.com"}
"""Public service endpoints the examples may name as they are (Hetzner Object Storage, Falkenstein)."""
DOC_NETS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")






def test_every_rollout_stack_has_a_file_and_every_file_is_rolled_out() -> None:
    rolled = load_config(STACKS / "rollout.yaml").stacks()
    assert sorted(rolled) == sorted(stack_name(p) for p in STACK_FILES)
    assert {"dev", "prod-hub", "prod-fsn1", "prod-hel1", "prod-ash"} <= set(rolled)


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_stack_file_loads(path: Path) -> None:
    raw, secret = stack_values(stack_name(path))
    config = FleetConfig.from_mapping(raw, f"stacks/{path.name}", secret)
    assert set(config.secrets) == set(secret) and all(v == placeholder(k) for k, v in config.secrets.items())


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_stack_file_uses_documentation_ranges_and_example_names(path: Path) -> None:
    text = yaml.safe_dump(yaml.safe_load(path.read_text())["config"])  # values only, not the comments
    for cidr in re.findall(r"\b\d+\.\d+\.\d+\.\d+/\d+\b", text):
        net = ipaddress.ip_network(cidr)
        assert net.is_private or any(net.subnet_of(d) for d in DOC_NETS), f"{path.name}: {cidr}"
    for host in re.findall(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", text):
        if not re.fullmatch(r"ubuntu-\d+\.\d+", host) and host not in PROVIDER_ENDPOINTS:
            assert host.endswith("example.com"), f"{path.name}: {host}"


def test_prod_hub() -> None:
    config = load_stack("prod-hub")
    assert config.role == "hub" and config.hub is not None
    assert config.hub.protect is True
    assert config.hub.locations == ["fsn1", "nbg1", "hel1"] and config.hub.network_zone == "eu-central"
    assert config.karmada.etcd.replicas == 3 and config.members == []
    assert all(n >= 2 for n in config.karmada.replicas.model_dump().values())


@pytest.mark.parametrize(("stack", "region", "location", "zone"),
                         [("prod-fsn1", "eu-fsn", "fsn1", "eu-central"), ("prod-hel1", "eu-hel", "hel1", "eu-central"),
                          ("prod-ash", "us-ash", "ash", "us-east")])
def test_region_stacks(stack: str, region: str, location: str, zone: str) -> None:
    config = load_stack(stack)
    assert config.role == "region" and config.hub is None
    assert config.hub_stack is not None
    assert (config.hub_stack.stack, config.hub_stack.plan_stack) == ("organization/karmada-hub/prod-hub", "prod-hub")
    assert config.region == region and list(config.regions) == [region]
    assert config.regions[region].location == location and config.regions[region].network_zone == zone
    assert config.members and all(m.region == region for m in config.members)
    assert config.tenants and config.dns is not None and config.dns.ttl <= 60


def test_hub_stack_of_regions_is_rolled_out_before_them() -> None:
    prod = load_config(STACKS / "rollout.yaml").environment("prod")
    order = [s for w in prod.plan() for s in w.stacks]
    for stack in ("prod-fsn1", "prod-hel1", "prod-ash"):
        plan_stack = load_stack(stack).hub_stack.plan_stack  # type: ignore[union-attr]
        assert order.index(plan_stack) < order.index(stack)


@pytest.mark.parametrize(
    ("stack", "overrides", "error"),
    [
        ("prod-hub", {"hub": {"locations": ["fsn1", "ash"]}}, "span network zones"),
        ("prod-fsn1", {"region": "us-ash"}, "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:region: 'us-ash' is not a key "
                                            "of regions (eu-fsn)"),
        ("prod-ash", {"hubStack": {"stack": "prod-hub"}}, "karmada-hub:hubStack.stack"),
        ("prod-hel1", {"dns": {"domain": "prod.example.com", "ttl": 300, "txtOwnerId": "x"}}, "dns.ttl"),
    ],
)
def test_broken_stack_values_are_rejected(stack: str, overrides: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_stack(stack, **overrides)
    assert error in str(exc.value)


def test_missing_secret_is_rejected() -> None:
    raw, secret = stack_values("prod-ash")
    raw.pop("ashLegacyKubeconfig")
    with pytest.raises(ConfigError, match="ashLegacyKubeconfig is not set"):
        FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-ash.yaml", secret - {"ashLegacyKubeconfig"})
