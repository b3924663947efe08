"""What the hub decides for the whole fleet besides its feature gates: which binary reads each failover flag.

The controller-manager runs only in the stack that owns the control plane and decides for every member (it
computes Push members' status, watches every Cluster lease and paces every eviction); an agent computes its own
Pull member's status with its own flags. So a region stack's value for a controller-manager flag feeds no binary:
`fleetContract` carries the hub's values (`controller_manager_failover`) and region stacks must agree
(operations/preflight.py). The fleet's feature gates are declared in `karmada.featureGates` and rendered on
their readers by `flags.gates_for` (flags/common.py `GATE_READERS`); `GATE_SOURCES` are the call sites the
reference doc cites for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

CM = "karmada-controller-manager"
AGENT = "karmada-agent"

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
"""failover.<key> -> the binaries whose flag it sets, and the flag (karmada v1.18.2
cmd/controller-manager/app/options/{options,cluster_failover}.go, cmd/agent/app/options/options.go)."""

FAILOVER_SOURCE = ("karmada-io/karmada@v1.18.2 cmd/controller-manager/app/options/cluster_failover.go "
                   "ClusterFailoverOptions.AddFlags, options.go Options.AddFlags; cmd/agent/app/options/options.go")


def controller_manager_failover(failover: Any) -> dict[str, Any]:
    """The failover values the hub's controller-manager runs with, keyed as in the stack file."""
    from pydantic.alias_generators import to_camel

    return {to_camel(name): getattr(failover, name) for name in type(failover).model_fields
            if to_camel(name) in FAILOVER_READERS and CM in FAILOVER_READERS[to_camel(name)][0]}


GATE_SOURCES: Mapping[str, str] = MappingProxyType({
    "Failover": "cmd/controller-manager/app/controllermanager.go:297 (taint manager), :828 (ClusterTaintPolicy)",
    "GracefulEviction": "pkg/controllers/applicationfailover/common.go:166",
    "FederatedQuotaEnforcement": "cmd/controller-manager/app/controllermanager.go:641 (enforcement controller); "
                                 "pkg/webhook/resourcebinding/validating.go:121 (quota admission)",
    "WorkloadAffinity": "pkg/scheduler/framework/plugins/registry.go:44, scheduler.go:704; "
                        "pkg/detector/detector.go:851",
    "SchedulingOvercommitProtection": "pkg/scheduler/scheduler.go:331,709, core/util.go:83; "
                                      "pkg/estimator/server/estimate.go:51,98",
    "PriorityBasedScheduling": "pkg/scheduler/event_handler.go:149-297, scheduler.go:253,344,360; "
                               "pkg/detector/detector.go:865",
    "PropagationPolicyPreemption": "pkg/detector/detector.go:1024,1112; pkg/detector/preemption.go:54",
    "StatefulFailoverInjection": "pkg/controllers/applicationfailover/common.go:145; "
                                 "pkg/controllers/binding/common.go:128; "
                                 "pkg/controllers/cluster/taint_manager.go:284,350",
    "ResourceQuotaEstimate": "pkg/detector/detector.go:1528; "
                             "pkg/estimator/server/framework/plugins/resourcequota/resourcequota.go:78",
})
"""Gate -> where karmada v1.18.2 reads it (`features.FeatureGate.Enabled` call sites), for every gate in
flags.GATE_READERS (a test keeps the two key sets equal)."""
