"""The registry: every rule with its name and description, as CrossGuard and `hubctl plan --policy` run them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .placement import affinity_groups_resolvable, overflow_groups_exist, stateful_failover
from .props import MAX_DNS_TTL, Props, StackResource
from .resources import (
    control_plane_replicas,
    dns_short_ttl,
    etcd_quorum,
    firewall_admin_ports,
    images_pinned,
    no_plaintext_secrets,
    region_identity_subject,
)
from .stacks import (
    StackFinding,
    api_lb_not_world_reachable,
    api_lb_world_reachable,
    control_plane_pdbs,
    failover_enabled,
)


@dataclass(frozen=True)
class ResourceRule:
    name: str
    description: str
    check: Callable[[str, Props], list[str]]


@dataclass(frozen=True)
class StackRule:
    name: str
    description: str
    check: Callable[[Sequence[StackResource]], list[StackFinding]]
    advisory: bool = False
    """Advisory rules name what a stack opted in to; they never fail a run."""


RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule("etcd-quorum", "etcd runs an odd number >= 3 of members, one per node.", etcd_quorum),
    ResourceRule("control-plane-replicas", "Every Karmada control-plane Deployment runs >= 2 replicas.",
                 control_plane_replicas),
    ResourceRule("firewall-admin-ports", "SSH, etcd and the Kubernetes API are never open to 0.0.0.0/0 or ::/0.",
                 firewall_admin_ports),
    ResourceRule("dns-short-ttl", f"Every DNS TTL the stack sets is <= {MAX_DNS_TTL} seconds.", dns_short_ttl),
    ResourceRule("images-pinned", "No container image uses the tag latest or no tag.", images_pinned),
    ResourceRule("no-plaintext-secrets", "Private keys, tokens and Secret data are secret inputs, never plain.",
                 no_plaintext_secrets),
    ResourceRule("region-identity-subject", "A region certificate is signed only for a CSR asking for exactly "
                 "CN=karmada-hub:region:<region>, with the subject karmada-hub:region:<region>:<key id>; region "
                 "RBAC binds that one user.", region_identity_subject),
    ResourceRule("stateful-failover-needs-state", "A stateful tenant never fails over automatically without a state "
                 "story (statePreservation, purge mode Directly, a restore source).", stateful_failover),
)

STACK_RULES: tuple[StackRule, ...] = (
    StackRule("control-plane-pdb", "Every control-plane Deployment has a PodDisruptionBudget that allows drains.",
              control_plane_pdbs),
    StackRule("failover-enabled", "Cluster failover is really on: Failover gate, NoExecute eviction, webhook "
              "permission and a NoExecute ClusterTaintPolicy.", failover_enabled),
    StackRule("api-lb-private", "No load balancer serves 6443 or 5443 on its public interface unless the stack "
              "opted in by name (hub.loadBalancer.worldReachable).", api_lb_not_world_reachable),
    StackRule("api-lb-world-reachable", "Names every load balancer the stack opted in to serving an API to the "
              "whole internet.", api_lb_world_reachable, advisory=True),
    StackRule("overflow-groups-exist", "Every overflowAffinities group selects at least one member cluster.",
              overflow_groups_exist),
    StackRule("affinity-groups-resolvable", "Every cluster affinity group selects a member, and every declared "
              "workload group fits the members it can reach.", affinity_groups_resolvable),
)
