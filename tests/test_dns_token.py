"""The DNS zone lives in its own Hetzner project: every record set goes through the DNS token's own provider, and a
stack whose DNS token is its own project token (HCLOUD_TOKEN or hcloud:token) stops with one line.

dns.mode self-hosted: the hub stack still writes the Hetzner zone (the delegation's NS and glue records). In either
mode region stacks hold no DNS token, write no record and make no DNS provider (security review 2, H5): the hub's
failover controller publishes each region's drill record from its region ConfigMap."""

from __future__ import annotations

import dataclasses

import pulumi
import pytest

from components.hetzner.dns_provider import same_token_message
from hubctl.plan import Plan, run_program
from hubctl.stackfile import placeholder, read_stack
from tests.conftest import to_hetzner_mode
from tests.support.tools import REPO, edited_stack

DNS_KEY = "karmada-hub:hetznerDnsToken"
RRSET = "hcloud:index/zoneRrset:ZoneRrset"


def region_to_hetzner_mode(dns: dict) -> None:
    to_hetzner_mode(dns)
    dns.pop("txtOwnerId")  # external-dns runs in the hub stack only


@pytest.fixture(scope="module")
def hetzner_prod() -> dict[str, Plan]:
    """prod-hub and prod-fsn1 in dns.mode hetzner (the region stack holds no DNS token in this mode either)."""
    hub = run_program(REPO, edited_stack("prod-hub", {"dns": to_hetzner_mode}))
    region = run_program(REPO, edited_stack("prod-fsn1", {"dns": region_to_hetzner_mode}),
                         {"organization/karmada-hub/prod-hub": hub.as_stack_reference()})
    return {"prod-hub": hub, "prod-fsn1": region}


@pytest.mark.parametrize("stack", ["dev", "prod-hub", "dev-hetzner", "prod-hub-hetzner"])
def test_every_record_set_uses_the_dns_projects_provider(stack: str, rendered_dev: Plan, rendered_prod: dict[str, Plan],
                                                         rendered_dev_hetzner: Plan,
                                                         hetzner_prod: dict[str, Plan]) -> None:
    plan = {"dev": rendered_dev, "prod-hub": rendered_prod["prod-hub"], "dev-hetzner": rendered_dev_hetzner,
            **{f"{k}-hetzner": v for k, v in hetzner_prod.items()}}[stack]
    records = [r for r in plan.records if r.type == RRSET]
    assert records
    assert {r.provider.rsplit("::", 1)[-1] for r in records} == {"hcloud-dns"}
    (provider,) = [r for r in plan.records if r.type == "pulumi:providers:hcloud" and r.name == "hcloud-dns"]
    assert plan.outputs  # planned; the provider's token is a secret input
    assert "token" in provider.inputs


@pytest.mark.parametrize("stack", ["prod-fsn1", "prod-hel1", "prod-ash", "prod-fsn1-hetzner"])
def test_a_region_stack_writes_no_hetzner_record(stack: str, rendered_prod: dict[str, Plan],
                                                 hetzner_prod: dict[str, Plan]) -> None:
    """Review H5, in both dns modes: a region stack holds no DNS token, so no DNS provider and no record set; its
    drill record <region>.lb.<domain> is the hub's (the failover controller, from the region ConfigMap)."""
    plan = hetzner_prod["prod-fsn1"] if stack.endswith("-hetzner") else rendered_prod[stack]
    assert [r.name for r in plan.records if r.type == RRSET] == []
    assert [r.name for r in plan.records if r.type == "pulumi:providers:hcloud" and r.name == "hcloud-dns"] == []


def test_the_stacks_own_token_as_dns_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = read_stack(REPO, "dev")
    monkeypatch.setenv("HCLOUD_TOKEN", placeholder(DNS_KEY))
    with pytest.raises(pulumi.RunError) as info:
        run_program(REPO, stack)
    assert str(info.value) == same_token_message("stacks/Pulumi.dev.yaml", "hetznerDnsToken")
    assert "\n" not in str(info.value) and placeholder(DNS_KEY) not in str(info.value)


def test_the_configured_hcloud_token_counts_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HCLOUD_TOKEN", raising=False)
    stack = read_stack(REPO, "prod-hub")
    same = dataclasses.replace(stack, config={**stack.config, "hcloud:token": stack.config[DNS_KEY]},
                               secret_keys=(*stack.secret_keys, "hcloud:token"))
    with pytest.raises(pulumi.RunError, match=r"^stacks/Pulumi\.prod-hub\.yaml: karmada-hub:hetznerDnsToken: "):
        run_program(REPO, same)
    other = dataclasses.replace(stack, config={**stack.config, "hcloud:token": "another-projects-token"},
                                secret_keys=(*stack.secret_keys, "hcloud:token"))
    run_program(REPO, other)
