"""The DNS zone lives in its own Hetzner project: every record set goes through the DNS token's own provider, and a
stack whose DNS token is its own project token (HCLOUD_TOKEN or hcloud:token) stops with one line."""

from __future__ import annotations

import dataclasses

import pulumi
import pytest

from components.hetzner.dns_provider import same_token_message
from hubctl.plan import Plan, run_program
from hubctl.stackfile import placeholder, read_stack
from tests.support.tools import REPO

DNS_KEY = "karmada-hub:hetznerDnsToken"


@pytest.mark.parametrize("stack", ["dev", "prod-hub"])
def test_every_record_set_uses_the_dns_projects_provider(stack: str, rendered_dev: Plan,
                                                         rendered_prod: dict[str, Plan]) -> None:
    plan = rendered_dev if stack == "dev" else rendered_prod[stack]
    records = [r for r in plan.records if r.type == "hcloud:index/zoneRrset:ZoneRrset"]
    assert records
    assert {r.provider.rsplit("::", 1)[-1] for r in records} == {"hcloud-dns"}
    (provider,) = [r for r in plan.records if r.type == "pulumi:providers:hcloud" and r.name == "hcloud-dns"]
    assert plan.outputs  # planned; the provider's token is a secret input
    assert "token" in provider.inputs


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
