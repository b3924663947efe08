"""What a hub serves: its region stacks' intents, read from their stack files in this checkout.

A hub stack (`regionStacks: [prod-fsn1, …]`) owns everything a region's identity cannot be trusted to write:
the Cluster objects of Push members (a `secretRef` is content RBAC cannot constrain, and the aggregated
apiserver runs no admission), the Pull agents' RBAC (creating a Role needs its permissions or `escalate`),
tenant namespaces, estimator workloads and their serving certificates, and the region identities with their
RBAC. It reads each region's members, tenants and identity CSR from that region's own stack file, so a
member is declared once. A CSR is accepted only as components/kube/region_csr.py says (exact subject, nothing
else requested, a valid self-signature, an allowed key the offline planner cannot derive). An all-in-one stack
serves its own members; a region stack serves nothing.

Every problem is a `ConfigError` naming the file and key: a named file that does not exist or is no region
stack of this hub, two files for one region, a member name, Pull token id or tenant namespace used twice across the
fleet (one region's identity writes a tenant's policies by name), an identity CSR the hub will not sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from components.config import ConfigError, FleetConfig, MemberConfig, TenantConfig, did_you_mean, read_stack_file
from components.fleet.member_docs import token_id
from components.kube.region_csr import RegionCsr, check_region_csr

STACKS_DIR = Path(__file__).resolve().parents[2] / "stacks"


@dataclass(frozen=True)
class RegionIntent:
    """One region stack as its hub reads it."""

    stack: str
    region: str
    config: FleetConfig
    csr: RegionCsr | None = None
    """The region's identity CSR as the hub accepted it (None: the file carries none yet)."""

    @property
    def members(self) -> list[MemberConfig]:
        return [m for m in self.config.members if m.region == self.region]

    @property
    def tenants(self) -> list[TenantConfig]:
        return list(self.config.tenants)

    @property
    def identity_csr(self) -> str | None:
        return self.config.identity_csr


def region_intents(config: FleetConfig, this_stack: str | None, stacks_dir: Path = STACKS_DIR) -> list[RegionIntent]:
    """The hub's region stacks, validated against this hub; [] for other roles. `this_stack` None: only read
    (for counting what the hub runs), without checking that each file names this hub."""
    if config.role != "hub":
        return []
    out: list[RegionIntent] = []
    for i, name in enumerate(config.region_stacks):
        rel = f"stacks/Pulumi.{name}.yaml"
        if not (stacks_dir / f"Pulumi.{name}.yaml").is_file():
            known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks_dir.glob("Pulumi.*.yaml"))
            hub_file = f"stacks/Pulumi.{this_stack}.yaml" if this_stack else "the hub stack"
            raise ConfigError(f"{hub_file}: karmada-hub:regionStacks[{i}]: no stack file {name} in stacks/"
                              f"{did_you_mean(name, known)}; list the region stacks' names")
        region_config = read_stack_file(stacks_dir / f"Pulumi.{name}.yaml", rel)
        if region_config.role != "region" or region_config.region is None or region_config.hub_stack is None:
            raise ConfigError(f"{rel}: karmada-hub:role: listed in stacks/Pulumi.{this_stack}.yaml regionStacks "
                              "but is not a region stack (role: region)")
        if this_stack is not None and region_config.hub_stack.stack.rsplit("/", 1)[-1] != this_stack:
            raise ConfigError(f"stacks/Pulumi.{this_stack}.yaml: karmada-hub:regionStacks[{i}]: {name} names "
                              f"{region_config.hub_stack.stack} as its hub (hubStack.stack in {rel}), not "
                              f"{this_stack}; list only this hub's region stacks, or point that file's hubStack.stack "
                              "here")
        out.append(RegionIntent(stack=name, region=region_config.region, config=region_config))
    _check_fleet(out)
    return [_with_csr(i, [o.region for o in out]) for i in out]


def _with_csr(intent: RegionIntent, regions: Sequence[str]) -> RegionIntent:
    pem = intent.config.identity_csr
    if pem is None:
        return intent
    try:
        csr = check_region_csr(pem, intent.region, regions)
    except ValueError as err:
        raise ConfigError(f"stacks/Pulumi.{intent.stack}.yaml: karmada-hub:identityCsr: {err}; make a key and CSR "
                          f"with `hubctl region-key {intent.stack}` and commit the CSR it prints") from None
    return RegionIntent(stack=intent.stack, region=intent.region, config=intent.config, csr=csr)


def _check_fleet(intents: Sequence[RegionIntent]) -> None:
    regions: dict[str, str] = {}
    members: dict[str, str] = {}
    tokens: dict[str, str] = {}
    namespaces: dict[str, tuple[str, str]] = {}
    for intent in intents:
        rel = f"stacks/Pulumi.{intent.stack}.yaml"
        for t_i, tenant in enumerate(intent.config.tenants):
            owner = namespaces.get(tenant.namespace)
            if owner is not None:
                raise ConfigError(f"{rel}: karmada-hub:tenants[{t_i}].namespace: '{tenant.namespace}' is already "
                                  f"tenant {owner[1]}'s namespace in stacks/Pulumi.{owner[0]}.yaml; one tenant per "
                                  "namespace across the fleet (each region's identity may write only in its own "
                                  "tenants' namespaces): give this tenant its own")
            namespaces[tenant.namespace] = (intent.stack, tenant.name)
        if intent.region in regions:
            raise ConfigError(f"{rel}: karmada-hub:region: {intent.region} is also rolled out by "
                              f"stacks/Pulumi.{regions[intent.region]}.yaml; one stack per region")
        regions[intent.region] = intent.stack
        for i, m in enumerate(intent.config.members):
            if m.name in members:
                raise ConfigError(f"{rel}: karmada-hub:members[{i}].name: {m.name} is also a member in "
                                  f"stacks/Pulumi.{members[m.name]}.yaml")
            members[m.name] = intent.stack
            if m.sync_mode == "Pull":
                tid = token_id(m.name)
                if tid in tokens:
                    raise ConfigError(f"{rel}: karmada-hub:members[{i}].name: {m.name}'s bootstrap token id {tid} "
                                      f"collides with {tokens[tid]}'s; rename one of them")
                tokens[tid] = m.name


def fleet_members(config: FleetConfig, intents: Sequence[RegionIntent]) -> list[MemberConfig]:
    """Every member the hub's own objects (Clusters, agent RBAC, estimators) are for."""
    if config.role == "all-in-one":
        return list(config.members)
    return [m for intent in intents for m in intent.members]


def fleet_tenants(config: FleetConfig, intents: Sequence[RegionIntent]) -> list[TenantConfig]:
    """Every tenant whose namespace the hub creates (one per namespace, in region order: `_check_fleet` refuses a
    namespace two region stacks claim; within one stack the config does)."""
    tenants = list(config.tenants) if config.role == "all-in-one" else [t for i in intents for t in i.tenants]
    seen: dict[str, TenantConfig] = {}
    for t in tenants:
        seen.setdefault(t.namespace, t)
    return list(seen.values())
