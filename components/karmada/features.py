"""What the hub decides for the whole fleet: Karmada feature gates and the controller-manager's failover flags.

A feature gate only works if every binary that reads it gets it: a gate on one side only is silently
half-effective (quota enforced by the controller-manager but not admitted by the webhook). So the hub stack
declares the fleet's gates once (`karmada.features`, keyed by the upstream gate name) and each binary gets
exactly the declared gates it reads (`component_gates`, from `GATES`). Region stacks render agents and
estimators and host tenants, so they check against the hub's declaration carried in `fleetContract`
(operations/preflight.py): a tenant needing a gate the hub does not run, or an agent/estimator gate that differs
from the hub's, is refused with one line.

Adding a gate later is one line: its readers are already in `GATES` (every gate of the release); a tenant option
that needs it adds one `TenantNeed`. Sources: karmada-io/karmada v1.18.2 pkg/features/features.go (names,
defaults) and the `features.FeatureGate.Enabled(...)` call sites named per gate (docs/upstream-contract.md §gates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

GATES_RELEASE = "v1.18.2"
"""The Karmada release `GATES` was read from."""

CM = "karmada-controller-manager"
SCHEDULER = "karmada-scheduler"
WEBHOOK = "karmada-webhook"
AGGREGATED = "karmada-aggregated-apiserver"
ESTIMATOR = "karmada-scheduler-estimator"
AGENT = "karmada-agent"
DESCHEDULER = "karmada-descheduler"

WITHOUT_GATE_FLAG = frozenset({DESCHEDULER})
"""Binaries that register no `--feature-gates` flag: passing one is `unknown flag`, an exit
(cmd/descheduler/app/options/options.go `AddFlags` at v1.18.2)."""


@dataclass(frozen=True)
class Gate:
    """One Karmada feature gate: its default, and which binaries evaluate it."""

    default: bool
    stage: Literal["Alpha", "Beta", "GA"]
    reads: frozenset[str]
    """Binaries with a `FeatureGate.Enabled(gate)` call on an executed path."""
    source: str
    """Where upstream reads it (karmada v1.18.2 paths)."""
    reach: frozenset[str] = frozenset()
    """Binaries that link a package reading it, call path not traced: they get the gate too, so no binary
    evaluates it differently from the others."""

    @property
    def readers(self) -> frozenset[str]:
        return self.reads | self.reach


def _g(default: bool, stage: Literal["Alpha", "Beta", "GA"], reads: set[str], source: str,
       reach: set[str] | None = None) -> Gate:
    return Gate(default, stage, frozenset(reads), source, frozenset(reach or ()))


GATES: Mapping[str, Gate] = MappingProxyType({
    "Failover": _g(False, "Beta", {CM},
                   "cmd/controller-manager/app/controllermanager.go:297 (taint manager), :828 (ClusterTaintPolicy)"),
    "GracefulEviction": _g(True, "Beta", {CM}, "pkg/controllers/applicationfailover/common.go:166"),
    "PropagateDeps": _g(True, "Beta", {CM}, "cmd/controller-manager/app/controllermanager.go:893"),
    "CustomizedClusterResourceModeling": _g(
        True, "Beta", {AGGREGATED, SCHEDULER, CM, AGENT},
        "pkg/registry/cluster/strategy.go:97,117; pkg/estimator/client/general.go:89,242; "
        "pkg/controllers/status/cluster_status_controller.go:284"),
    "PropagationPolicyPreemption": _g(False, "Alpha", {CM},
                                      "pkg/detector/detector.go:1024,1112; pkg/detector/preemption.go:54"),
    "MultiClusterService": _g(False, "Alpha", {CM, AGENT},
                              "cmd/controller-manager/app/controllermanager.go:540,564,777; "
                              "cmd/agent/app/agent.go:407"),
    "ResourceQuotaEstimate": _g(
        False, "Alpha", {CM, ESTIMATOR},
        "pkg/detector/detector.go:1528; pkg/estimator/server/framework/plugins/resourcequota/resourcequota.go:78",
        reach={SCHEDULER, WEBHOOK}),
    "StatefulFailoverInjection": _g(
        False, "Alpha", {CM},
        "pkg/controllers/applicationfailover/common.go:145; pkg/controllers/binding/common.go:128; "
        "pkg/controllers/cluster/taint_manager.go:284,350"),
    "PriorityBasedScheduling": _g(False, "Alpha", {SCHEDULER, CM},
                                  "pkg/scheduler/event_handler.go:149-297, scheduler.go:253,344,360; "
                                  "pkg/detector/detector.go:865"),
    "FederatedQuotaEnforcement": _g(
        False, "Alpha", {CM, WEBHOOK},
        "cmd/controller-manager/app/controllermanager.go:641 (enforcement controller); "
        "pkg/webhook/resourcebinding/validating.go:121 (quota admission)"),
    "MultiplePodTemplatesScheduling": _g(
        False, "Alpha", {SCHEDULER, CM, WEBHOOK},
        "pkg/scheduler/core/common.go:42, core/util.go:114; pkg/detector/detector.go:1501; "
        "pkg/webhook/resourcebinding/validating.go:92", reach={ESTIMATOR}),
    "ControllerPriorityQueue": _g(True, "Beta", {CM, AGENT},
                                  "cmd/controller-manager/app/controllermanager.go:201; cmd/agent/app/agent.go:230"),
    "WorkloadAffinity": _g(False, "Alpha", {SCHEDULER, CM},
                           "pkg/scheduler/framework/plugins/registry.go:44, scheduler.go:704; "
                           "pkg/detector/detector.go:851"),
    "SchedulingOvercommitProtection": _g(
        False, "Alpha", {SCHEDULER, ESTIMATOR},
        "pkg/scheduler/scheduler.go:331,709, core/util.go:83; pkg/estimator/client/general.go:73,179; "
        "pkg/estimator/server/estimate.go:51,98"),
})
"""Every Karmada gate of GATES_RELEASE that a stack may declare (pkg/features/features.go; the component-base
logging gates are left out: they are not fleet features)."""

ALWAYS_ON = MappingProxyType({"Failover": True, "GracefulEviction": True})
"""Gates the hub's cluster failover is built on (flags.FAILOVER_GATES); not the stack's to turn off."""


def effective(gate: str, declared: Mapping[str, bool]) -> bool:
    """The value a binary runs with: declared, else the release default."""
    return bool(declared.get(gate, GATES[gate].default))


def component_gates(component: str, declared: Mapping[str, bool]) -> dict[str, bool]:
    """The declared gates `component` reads, where they differ from the default: its `--feature-gates`."""
    if component in WITHOUT_GATE_FLAG:
        return {}
    return {name: bool(value) for name, value in sorted(declared.items())
            if name in GATES and component in GATES[name].readers and bool(value) != GATES[name].default}


@dataclass(frozen=True)
class TenantNeed:
    """A tenant option that only works with a gate on: `key` is its path under the tenant."""

    key: str
    gate: str
    needs: Callable[[Any], bool] = field(compare=False)


TENANT_NEEDS: tuple[TenantNeed, ...] = (
    TenantNeed("quota.enforce", "FederatedQuotaEnforcement", lambda t: t.quota is not None and t.quota.enforce),
)
"""One line per tenant option that needs a gate (the placement work adds its own here)."""


def tenant_needs(tenants: Any) -> list[tuple[int, str, str]]:
    """`(tenant index, key under the tenant, gate)` for every gate the tenants need."""
    return [(i, need.key, need.gate) for i, tenant in enumerate(tenants) for need in TENANT_NEEDS
            if need.needs(tenant)]


# ------------------------------------------------------------------------------------------ failover

FAILOVER_READERS: Mapping[str, tuple[frozenset[str], str]] = MappingProxyType({
    "clusterStatusUpdateFrequency": (frozenset({CM, AGENT}), "--cluster-status-update-frequency"),
    "clusterFailureThreshold": (frozenset({CM, AGENT}), "--cluster-failure-threshold"),
    "clusterSuccessThreshold": (frozenset({CM, AGENT}), "--cluster-success-threshold"),
    "clusterMonitorPeriod": (frozenset({CM}), "--cluster-monitor-period"),
    "clusterMonitorGracePeriod": (frozenset({CM}), "--cluster-monitor-grace-period"),
    "clusterLeaseDuration": (frozenset({AGENT}), "--cluster-lease-duration"),
    "resourceEvictionRate": (frozenset({CM}), "--resource-eviction-rate"),
    "gracefulEvictionTimeout": (frozenset({CM}), "--graceful-eviction-timeout"),
    "purgeMode": (frozenset({CM}), "--no-execute-taint-eviction-purge-mode"),
})
"""failover.<key> -> the binaries whose flag it sets, and the flag. The controller-manager runs only in the
hub stack and decides for every member (it computes Push members' status and paces every eviction); an agent
computes its own Pull member's status with its own flags (cmd/controller-manager/app/options/
{options,cluster_failover}.go and cmd/agent/app/options/options.go at v1.18.2)."""


def controller_manager_failover(failover: Any) -> dict[str, Any]:
    """The failover values the hub's controller-manager runs with, keyed as in the stack file."""
    from pydantic.alias_generators import to_camel

    return {to_camel(name): getattr(failover, name) for name in type(failover).model_fields
            if to_camel(name) in FAILOVER_READERS and CM in FAILOVER_READERS[to_camel(name)][0]}
