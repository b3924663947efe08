"""The hub's HA and safety invariants as plain functions: one source for CrossGuard and the offline check.

Every rule reads Pulumi *wire* inputs (camelCase, the Kubernetes object itself for `kubernetes:*` types) and
returns messages, so `pulumi preview --policy-pack policy` (through `crossguard_policies()`) and
`python -m hubctl plan <stack> --policy` (through `hubctl.policy_check`) cannot drift apart.

Two value conventions are shared by both callers:

* a secret is the string `"[secret]"` (the offline plan writes it; `install_secret_redaction()` makes the
  analyzer see the same, because pulumi_policy would otherwise hand rules the *plaintext* of secrets);
* a value unknown during preview is `"[computed]"`; rules skip it, since the same rule runs again during
  `pulumi up`, when the value is known.

Split by concern: `props` (the conventions and helpers over wire inputs), `resources` (rules on one
resource), `stacks` (rules on a whole stack), `placement` (tenant policies against the stack's clusters), `registry`
(names and descriptions), `crossguard` (the adapter).
Imports between them are relative, so the package loads both as `policy.rules` (tests, hubctl) and as the
top-level `rules` the engine imports from the pack directory. Only the standard library is needed;
pulumi_policy is imported lazily by the adapter, so the offline check runs without it.
"""

from __future__ import annotations

from .crossguard import (
    crossguard_policies,
    install_secret_redaction,
    plain,
    redact_wire_secrets,
)
from .placement import (
    affinity_groups_resolvable,
    cluster_matches,
    overflow_groups_exist,
    stateful_failover,
)
from .props import (
    _SECRET_SIG,
    _SIG_KEY,
    ADMIN_PORTS,
    API_PORTS,
    COMPUTED,
    CONTROL_PLANE,
    LB_FORBIDDEN_PORTS,
    MAX_DNS_TTL,
    SECRET,
    TTL_ANNOTATION,
    WORLD_REACHABLE_LABEL,
    Props,
    StackResource,
    feature_gates,
    flag_value,
    is_opaque,
    is_unknown,
    k8s_kind,
    selector_matches,
)
from .registry import (
    RESOURCE_RULES,
    STACK_RULES,
    ResourceRule,
    StackRule,
)
from .resources import (
    _K3S_TOKEN,
    control_plane_replicas,
    dns_short_ttl,
    etcd_quorum,
    firewall_admin_ports,
    image_problem,
    images_pinned,
    no_plaintext_secrets,
    parse_ttl,
    region_identity_subject,
)
from .stacks import (
    StackFinding,
    control_plane_pdbs,
    failover_enabled,
)

__all__ = [
    "ADMIN_PORTS",
    "API_PORTS",
    "COMPUTED",
    "CONTROL_PLANE",
    "LB_FORBIDDEN_PORTS",
    "MAX_DNS_TTL",
    "RESOURCE_RULES",
    "SECRET",
    "STACK_RULES",
    "TTL_ANNOTATION",
    "WORLD_REACHABLE_LABEL",
    "_K3S_TOKEN",
    "_SECRET_SIG",
    "_SIG_KEY",
    "Props",
    "ResourceRule",
    "StackFinding",
    "StackResource",
    "StackRule",
    "affinity_groups_resolvable",
    "cluster_matches",
    "control_plane_pdbs",
    "control_plane_replicas",
    "crossguard_policies",
    "dns_short_ttl",
    "etcd_quorum",
    "failover_enabled",
    "feature_gates",
    "firewall_admin_ports",
    "flag_value",
    "image_problem",
    "images_pinned",
    "install_secret_redaction",
    "is_opaque",
    "is_unknown",
    "k8s_kind",
    "no_plaintext_secrets",
    "overflow_groups_exist",
    "parse_ttl",
    "plain",
    "redact_wire_secrets",
    "region_identity_subject",
    "selector_matches",
    "stateful_failover",
]
