"""The DNS zone's own hcloud provider, and the refusal to use the stack's project token for it.

A Hetzner Cloud token is bound to one project and may do everything in it. The fleet's DNS zone therefore lives
in a project of its own (docs/runbooks/first-deploy.md): the token external-dns and the record sets use can then
edit DNS and nothing else, in particular not delete the hub's servers. Every ZoneRrset the program makes goes
through `DnsProvider`, whose token is the stack secret `dns.tokenConfigKey`. At run time the stack stops, with one
line, if that token is the very token of the stack's own project (`hcloud:token`, else `HCLOUD_TOKEN`, which is
what the default hcloud provider uses); a different token of the same project cannot be told apart offline.
"""

from __future__ import annotations

import os

import pulumi
import pulumi_hcloud as hcloud

from components.config import FleetConfig


def same_token_message(stack_file: str, key: str) -> str:
    return (f"{stack_file}: karmada-hub:{key}: the DNS token is this stack's own HCLOUD_TOKEN; put the DNS zone in "
            "its own Hetzner project and set that project's token (docs/runbooks/first-deploy.md)")


def _stack_token() -> pulumi.Output[str | None]:
    configured = pulumi.Config("hcloud").get_secret("token")
    if configured is not None:
        return pulumi.Output.from_input(configured)
    return pulumi.Output.secret(os.environ.get("HCLOUD_TOKEN"))


def dns_provider(config: FleetConfig, stack_file: str) -> hcloud.Provider | None:
    """The provider every ZoneRrset uses (None without a dns section, and for a region stack, which holds no DNS
    token: the hub owns every record, security review 2 H5); its token is refused if it is the stack's."""
    dns = config.dns
    if dns is None or config.role == "region":
        return None

    def checked(args: list[str | None]) -> str:
        dns_token, stack_token = args
        if stack_token and dns_token == stack_token:
            raise pulumi.RunError(same_token_message(stack_file, dns.token_config_key))
        return str(dns_token)

    token = pulumi.Output.secret(pulumi.Output.all(config.secrets[dns.token_config_key], _stack_token())
                                 .apply(checked))
    return hcloud.Provider("hcloud-dns", token=token, poll_interval="1s")
