"""Stack rules: each looks at all of a stack's resources together."""

from __future__ import annotations

from collections.abc import Sequence

from .props import (
    API_PORTS,
    WORLD_REACHABLE_LABEL,
    Props,
    StackResource,
    _argv,
    _as_int,
    _containers,
    _control_plane_component,
    _get,
    _list,
    _namespace,
    _object_name,
    feature_gates,
    flag_value,
    k8s_kind,
    selector_matches,
)

StackFinding = tuple[str, str | None]
"""(message, urn or None for the stack as a whole)."""


def control_plane_pdbs(resources: Sequence[StackResource]) -> list[StackFinding]:
    """Without a PDB a node drain may evict both replicas at once; a PDB that allows nothing blocks every drain."""
    pdbs = [(_namespace(p), p) for t, p, _ in resources if k8s_kind(t) == "PodDisruptionBudget"]
    out: list[StackFinding] = []
    for rtype, props, urn in resources:
        component = _control_plane_component(k8s_kind(rtype), props)
        if component is None:
            continue
        labels = _get(props, "spec", "template", "metadata", "labels") or {}
        ns = _namespace(props)
        matching = [p for pns, p in pdbs if pns == ns and selector_matches(_get(p, "spec", "selector"), labels)]
        if not matching:
            out.append((f"{component} has no PodDisruptionBudget in {ns} selecting its pods", urn))
            continue
        replicas = _as_int(_get(props, "spec", "replicas"))
        for pdb in matching:
            pdb_name = _object_name(pdb) or "?"
            max_unavailable = _get(pdb, "spec", "maxUnavailable")
            min_available = _as_int(_get(pdb, "spec", "minAvailable"))
            if max_unavailable in (0, "0", "0%"):
                out.append((f"PodDisruptionBudget {pdb_name} for {component} has maxUnavailable 0 and blocks every "
                            "drain", urn))
            elif min_available is not None and replicas is not None and min_available >= replicas:
                out.append((f"PodDisruptionBudget {pdb_name} for {component} has minAvailable {min_available} with "
                            f"{replicas} replicas and blocks every drain", urn))
    return out


def failover_enabled(resources: Sequence[StackResource]) -> list[StackFinding]:
    """Karmada >= 1.14 moves workloads off a dead cluster only with all four switches on (the gate alone does nothing).

    Applies to stacks that run the control plane (a controller-manager, webhook or ClusterTaintPolicy is present).
    """
    argv: dict[str, list[str]] = {}
    urns: dict[str, str] = {}
    policies: list[tuple[Props, str]] = []
    for rtype, props, urn in resources:
        kind = k8s_kind(rtype)
        if kind == "ClusterTaintPolicy":
            policies.append((props, urn))
        component = _control_plane_component(kind, props)
        if component in ("karmada-controller-manager", "karmada-webhook"):
            argv[component] = [a for c in _containers(kind or "", props) for a in _argv(c)]
            urns[component] = urn
    if not argv and not policies:
        return []
    out: list[StackFinding] = []
    cm = argv.get("karmada-controller-manager")
    if cm is None:
        out.append(("no karmada-controller-manager Deployment in a stack that configures failover", None))
    else:
        if feature_gates(cm).get("Failover") is not True:
            out.append(("karmada-controller-manager needs --feature-gates=...Failover=true", urns[
                "karmada-controller-manager"]))
        if flag_value(cm, "--enable-no-execute-taint-eviction") != "true":
            out.append(("karmada-controller-manager needs --enable-no-execute-taint-eviction=true (off by default "
                        "since v1.14)", urns["karmada-controller-manager"]))
    webhook = argv.get("karmada-webhook")
    if webhook is None:
        out.append(("no karmada-webhook Deployment in a stack that configures failover", None))
    elif flag_value(webhook, "--allow-no-execute-taint-policy") != "true":
        out.append(("karmada-webhook needs --allow-no-execute-taint-policy=true, or it rejects NoExecute "
                    "ClusterTaintPolicies", urns["karmada-webhook"]))
    effective = [
        urn for props, urn in policies
        if any(_get(t, "effect") == "NoExecute" for t in _list(_get(props, "spec", "taints")))
        and _list(_get(props, "spec", "addOnConditions"))
    ]
    if not effective:
        out.append(("no ClusterTaintPolicy adds a NoExecute taint (with addOnConditions), so nothing ever evicts "
                    "workloads from a failed cluster", None))
    return out


def _urn_parts(urn: str) -> tuple[str, str, str]:
    """(parent type chain, own type, logical name) of an engine URN."""
    qualified, name = urn.split("::")[2], urn.rsplit("::", 1)[-1]
    chain, _, own = qualified.rpartition("$")
    return chain, own, name


def _world_reachable_lbs(resources: Sequence[StackResource]) -> list[tuple[str, list[int], bool]]:
    """(urn, API ports it serves, opted in?) for every load balancer with a public interface that serves an API.

    A service or network belongs to the load balancer of the same parent whose name prefixes its own
    (`hub-api-lb` -> `hub-api-lb-k3s`, `hub-api-lb-network`): the program's naming, read from the URNs, because
    load balancer ids are unknown in a preview. Without a network whose `enablePublicInterface` is false, the
    load balancer answers on its public addresses.
    """
    lbs = [(urn, props) for rtype, props, urn in resources if rtype == "hcloud:index/loadBalancer:LoadBalancer"]
    out = []
    for lb_urn, lb_props in lbs:
        chain, _, lb_name = _urn_parts(lb_urn)

        def belongs(urn: str, lb_name: str = lb_name, chain: str = chain) -> bool:
            c, _, n = _urn_parts(urn)
            return c == chain and n.startswith(lb_name + "-")

        ports = sorted({port for rtype, props, urn in resources
                        if rtype == "hcloud:index/loadBalancerService:LoadBalancerService" and belongs(urn)
                        for port in [_as_int(props.get("listenPort"))] if port in API_PORTS})
        private = any(props.get("enablePublicInterface") is False for rtype, props, urn in resources
                      if rtype == "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork" and belongs(urn))
        if ports and not private:
            labels = lb_props.get("labels") if isinstance(lb_props.get("labels"), dict) else {}
            out.append((lb_urn, ports, str(labels.get(WORLD_REACHABLE_LABEL)) == "true"))
    return out


def api_lb_not_world_reachable(resources: Sequence[StackResource]) -> list[StackFinding]:
    """A Hetzner load balancer has no firewall: with its public interface on, the API it serves skips apiCidrs."""
    return [(f"load balancer serves tcp {', '.join(map(str, ports))} on its public interface, which no firewall "
             "filters (apiCidrs do not apply); disable the public interface or opt in with "
             "hub.loadBalancer.worldReachable: true", urn)
            for urn, ports, opted_in in _world_reachable_lbs(resources) if not opted_in]


def api_lb_world_reachable(resources: Sequence[StackResource]) -> list[StackFinding]:
    """Advisory: names every load balancer the stack opted in to serving an API to the whole internet."""
    return [(f"WORLD-REACHABLE: tcp {', '.join(map(str, ports))} from any address on the internet "
             "(hub.loadBalancer.worldReachable: true; authentication still applies)", urn)
            for urn, ports, opted_in in _world_reachable_lbs(resources) if opted_in]
