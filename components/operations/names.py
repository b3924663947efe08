"""Every name the program derives from what the operator chose, checked against its limit before anything runs.

Hub, member, region and tenant names end up inside Hetzner server names and labels, Kubernetes object names
and label values, DNS names and certificate common names, each with a limit of its own. This module renders
those names with the functions the components use (member_docs, workloads, manifests, pki_spec, policy_docs,
traffic docs, hub_cluster), for every member, region and tenant of the stack, and refuses the first one over
its limit with one line naming the key, the derived name, the rule and the longest value that would fit.
(A 44-character Pull member used to crash the offline plan on its agent certificate's 65-byte CN; Go's
crypto/x509 would have signed it, non-compliant, under `pulumi up`.) Hetzner names without a documented limit
(networks, firewalls, load balancers, SSH keys) are not checked; see hetzner/limits.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.config import ConfigError, FleetConfig, MemberConfig
from components.fleet import member_docs, policy_docs
from components.hetzner import hub_cluster
from components.hetzner import limits as hetzner
from components.karmada import flags, manifests, network, pki_spec, workloads
from components.kube import flows
from components.kube import names as rules
from components.traffic import docs as traffic_docs

PREFIX = "karmada-hub:"


@dataclass(frozen=True)
class DerivedName:
    key: str
    """The config key whose value the name is made from."""
    source: str
    """That value."""
    what: str
    value: str
    rule: rules.Rule | None
    """None: a label key (rules.label_key_violation)."""


HETZNER_LABEL_VALUE = rules.Rule("a Hetzner label value", hetzner.LABEL_VALUE_MAX, rules.LABEL_VALUE.pattern,
                                 "hcloud-go ValidateResourceLabels (hetzner/limits.py LABEL_VALUE_MAX)")
HETZNER_SERVER_NAME = rules.Rule("a Hetzner server name (RFC 1123 hostname label)", hetzner.SERVER_NAME_LABEL_MAX,
                                 rules.DNS_LABEL.pattern, "pulumi_hcloud Server.name: a valid RFC 1123 hostname")


def _objects(key: str, source: str, objects: list[dict[str, Any]]) -> Iterator[DerivedName]:
    for obj in objects:
        for what, value, rule in rules.object_names(obj):
            yield DerivedName(key, source, what, value, rule)


def _selector(key: str, source: str, selector: str) -> Iterator[DerivedName]:
    """A Hetzner label selector `k=v,k2=v2`: each key and value is a Hetzner label's."""
    for term in selector.split(","):
        label, _, value = term.partition("=")
        yield DerivedName(key, source, "Hetzner LB target selector key", label, None)
        yield DerivedName(key, source, f"Hetzner LB target selector {label}", value, HETZNER_LABEL_VALUE)


def member_names(config: FleetConfig, index: int, member: MemberConfig) -> Iterator[DerivedName]:
    key, name = f"members[{index}].name", member.name
    for label, value in member.labels.items():  # the operator's own labels first: they are the Cluster's too
        yield DerivedName(f"members[{index}].labels", label, "Cluster label key", label, None)
        yield DerivedName(f"members[{index}].labels.{label}", value, "Cluster label value", value, rules.LABEL_VALUE)
    yield DerivedName(key, name, "Karmada Cluster name", name, rules.CLUSTER_NAME)
    # Karmada's cluster controller makes every member's execution namespace, Push or Pull.
    yield from _objects(key, name, [member_docs.namespace(member_docs.execution_namespace(name))])
    if member.sync_mode == "Push":
        yield from _objects(key, name, [member_docs.cluster_object(member), *member_docs.push_member_objects(name),
                                        member_docs.cluster_secret(name, "token", "ca"),
                                        member_docs.impersonator_secret(name, "token")])
    else:
        args = flags.agent_args(name, member.api_endpoint.rstrip("/"), region=member.region, zones=member.zones,
                                failover=flags.FailoverSettings.from_config(config.failover))
        pull_cluster = [member_docs.cluster_object(member)] if member.cluster_id else []
        yield from _objects(key, name, [*pull_cluster, *member_docs.pull_hub_objects(name),
                                        *member_docs.pull_member_objects(name, config.karmada.version, args, "x")])
        spec = pki_spec.agent_cert_spec(name)
        yield DerivedName(key, name, "Pull agent certificate CN", spec.common_name, rules.COMMON_NAME)
    if member.scheduler_estimator:
        workload = workloads.estimator(config, name)
        yield from _objects(key, name, [
            manifests.deployment(workload), manifests.pdb(workload.name),
            manifests.service(workload.name, {"grpc": (flags.ESTIMATOR_PORT, flags.ESTIMATOR_PORT)}),
            manifests.secret(workload.name + manifests.PKI_SECRET_SUFFIX, {}, component=workload.name),
            manifests.member_token_secret(name, "token", "ca"),
            manifests.member_kubeconfig_configmap(name, member.api_endpoint.rstrip("/")),
            *(p for p in flows.network_policies(network.control_plane_workloads((), [name]), [flags.NAMESPACE])
              if p["metadata"]["name"] == workload.name + flows.POLICY_SUFFIX)])
        for dns_name in pki_spec.estimator_cert_spec(name).dns_names:
            yield DerivedName(key, name, "estimator certificate DNS name", dns_name, rules.DNS_NAME)
    yield from _selector(key, name, traffic_docs.member_server_selector(member))


def hub_names(config: FleetConfig) -> Iterator[DerivedName]:
    hub = config.hub
    if hub is None or config.role == "region":
        return
    key = "hub.name"
    for index in range(hub.servers):
        server = hub_cluster.hub_server_name(hub, index)
        yield DerivedName(key, hub.name, "hub server name (hostname, k3s node name)", server, HETZNER_SERVER_NAME)
        yield DerivedName(key, hub.name, "k3s node label kubernetes.io/hostname", server, rules.LABEL_VALUE)
    for label, value in hub_cluster.hub_server_labels(hub).items():
        yield DerivedName(key, hub.name, "Hetzner label key", label, None)
        yield DerivedName(key, hub.name, f"Hetzner label {label}", value, HETZNER_LABEL_VALUE)
    if hub.api_dns_name:
        yield DerivedName("hub.apiDnsName", hub.api_dns_name, "API DNS name", hub.api_dns_name, rules.DNS_NAME)


def region_names(config: FleetConfig) -> Iterator[DerivedName]:
    for region in config.regions:
        key = f"regions.{region}"
        members = sorted(m.name for m in config.members if m.region == region)
        if not members:
            continue
        yield DerivedName(key, region, "Hetzner label karmada-hub/region", region, HETZNER_LABEL_VALUE)
        yield from _objects(key, region, [traffic_docs.ingress_status_overrides(
            traffic_docs.INGRESS_NAMESPACE, traffic_docs.INGRESS_CONTROLLER, dict.fromkeys(members, "192.0.2.1"),
            region=region)])
        if config.dns is not None:
            record = traffic_docs.region_record_name(region, config.dns.domain)
            yield DerivedName(key, region, "region DNS record", record, rules.DNS_NAME)


def tenant_names(config: FleetConfig) -> Iterator[DerivedName]:
    regions, members = list(config.regions), list(config.members)
    for index, tenant in enumerate(config.tenants):
        key = f"tenants[{index}]"
        objects = [policy_docs.tenant_namespace(tenant),
                   policy_docs.propagation_policy(tenant, regions, members, config.failover),
                   policy_docs.override_policy(tenant, config.regions, config.members)]
        if tenant.quota is not None:
            objects.append(policy_docs.federated_resource_quota(tenant))
        yield from _objects(key, tenant.name, objects)


def derived_names(config: FleetConfig) -> Iterator[DerivedName]:
    """Every derived name of the stack, with the key it comes from."""
    yield from hub_names(config)
    for index, member in enumerate(config.members):
        if config.role != "region" or member.region == config.region:
            yield from member_names(config, index, member)
    yield from region_names(config)
    yield from tenant_names(config)


def _problem(name: DerivedName) -> str | None:
    return rules.label_key_violation(name.value) if name.rule is None else rules.violation(name.rule, name.value)


def longest_source(name: DerivedName) -> int | None:
    """The longest value of the key that keeps this derived name within its limit (the value must appear in the
    derived name once), or None when the name is not made by adding fixed text to the value."""
    if name.rule is None or name.value.count(name.source) != 1:
        return None
    fixed = name.rule.length(name.value) - name.rule.length(name.source)
    return max(name.rule.limit - fixed, 0)


def longest_value(derived: list[DerivedName], key: str) -> int | None:
    """The longest value of `key` that keeps every name derived from it within its limit: the tightest of them,
    which need not be the first one found over."""
    limits = [n for n in (longest_source(d) for d in derived if d.key == key) if n is not None]
    return min(limits) if limits else None


def check(config: FleetConfig, stack_file: str) -> None:
    """Refuse the first derived name over its limit, with the key, the name, the rule and the fix."""
    derived = list(derived_names(config))
    for name in derived:
        problem = _problem(name)
        if problem is None:
            continue
        longest = longest_value(derived, name.key)
        too_long = name.rule is not None and name.rule.length(name.value) > name.rule.limit
        fix = (f"use at most {longest} characters" if too_long and longest is not None
               else "choose a value that makes it valid")
        shown = name.value if len(name.value) <= 80 else name.value[:77] + "..."
        raise ConfigError(f"{stack_file}: {PREFIX}{name.key}: '{name.source}' makes the {name.what} '{shown}' "
                          f"{problem}; {fix}")
