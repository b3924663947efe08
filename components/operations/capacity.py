"""Capacity checked up front: the hub's servers against every pod scheduled on them, each load balancer against
the targets and services it will have, the spread placement group against the servers in it.

The pods are counted from the very documents the program applies (karmada/workloads.py, manifests.py,
traffic/docs.py, failover_docs.py, refresher_docs.py, etcd_backup_docs.py, etcd_maintenance_docs.py,
monitoring_docs.py), never from a second copy of their numbers; a test holds the inventory equal to the host
manifests of the rendered plan. Hetzner's and k3s's numbers are in hetzner/limits.py with their sources. A hub
fits when, with every server up,

- the pods' CPU and memory requests fit the servers' capacity less what k3s itself keeps
  (`K3S_SERVER_RESERVE_*` per server: k3s reserves nothing for itself, so this check does);
- the pods number at most `K3S_MAX_PODS` per server;
- no workload with required anti-affinity wants more replicas than there are servers.

A hub that does not fit is refused with the smallest server count and the smallest server type that would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.config import ConfigError, FleetConfig
from components.fleet import csr_approver_docs
from components.hetzner import limits
from components.karmada import addons_docs, manifests, workloads
from components.kube import agent_script
from components.kube.quantity import parse_quantity
from components.operations import etcd_backup_docs, etcd_maintenance_docs, k3s_upgrade_docs, monitoring_docs
from components.operations.region_intents import fleet_members, region_intents
from components.traffic import docs as traffic_docs
from components.traffic import failover_docs, refresher_docs

PROJECT_PREFIX = "karmada-hub:"


@dataclass(frozen=True)
class Pods:
    """The pods of one workload: how many, and what each one requests."""

    name: str
    """`<Kind>/<namespace>/<name>` of the workload (or the k3s component)."""
    part: str
    """What it belongs to, for the message: control plane, scheduler-estimators, DNS, backups, k3s."""
    replicas: int
    millicpu: float
    memory_bytes: float
    spread: bool = False
    """Required pod anti-affinity on the hostname: never two on one server."""

    @property
    def total_millicpu(self) -> float:
        return self.replicas * self.millicpu

    @property
    def total_memory(self) -> float:
        return self.replicas * self.memory_bytes


def _requests(container: Mapping[str, Any]) -> tuple[float, float]:
    requests = (container.get("resources") or {}).get("requests") or {}
    cpu = parse_quantity(str(requests["cpu"])) * 1000 if "cpu" in requests else 0.0
    memory = parse_quantity(str(requests["memory"])) if "memory" in requests else 0.0
    return cpu, memory


def pod_requests(spec: Mapping[str, Any]) -> tuple[float, float]:
    """A pod's effective requests (millicpu, bytes) as the scheduler computes them: the app containers plus the
    sidecars (init containers with `restartPolicy: Always`), or the largest one-shot init container together
    with the sidecars started before it, whichever is more (Kubernetes pod resource requests, KEP-753)."""
    sidecar_cpu = sidecar_memory = 0.0
    init_cpu = init_memory = 0.0
    for container in spec.get("initContainers") or []:
        cpu, memory = _requests(container)
        if container.get("restartPolicy") == "Always":
            sidecar_cpu, sidecar_memory = sidecar_cpu + cpu, sidecar_memory + memory
        else:
            init_cpu, init_memory = max(init_cpu, sidecar_cpu + cpu), max(init_memory, sidecar_memory + memory)
    app_cpu = sum(_requests(c)[0] for c in spec.get("containers") or [])
    app_memory = sum(_requests(c)[1] for c in spec.get("containers") or [])
    return max(init_cpu, app_cpu + sidecar_cpu), max(init_memory, app_memory + sidecar_memory)


def _spread(spec: Mapping[str, Any]) -> bool:
    terms = (((spec.get("affinity") or {}).get("podAntiAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    return any(t.get("topologyKey") == "kubernetes.io/hostname" for t in terms)


def pods_of(doc: Mapping[str, Any], part: str, nodes: int = 1) -> Pods:
    """The pods a Deployment, StatefulSet, DaemonSet (one per node of `nodes`) or CronJob document keeps running (a
    CronJob that forbids overlap: one)."""
    kind, meta = doc["kind"], doc["metadata"]
    name = f"{kind}/{meta.get('namespace', '')}/{meta['name']}"
    if kind == "DaemonSet":
        template = doc["spec"]["template"]
        cpu, memory = pod_requests(template["spec"])
        return Pods(name=name, part=part, replicas=nodes, millicpu=cpu, memory_bytes=memory, spread=True)
    if kind in ("Deployment", "StatefulSet"):
        replicas = int(doc["spec"].get("replicas", 1))
        template = doc["spec"]["template"]
    elif kind == "CronJob":
        job = doc["spec"]["jobTemplate"]["spec"]
        overlap = doc["spec"].get("concurrencyPolicy", "Allow") == "Allow"
        replicas = int(job.get("parallelism", 1)) * (2 if overlap else 1)
        template = job["template"]
    else:
        raise ValueError(f"{name}: not a workload the capacity check knows how to count")
    cpu, memory = pod_requests(template["spec"])
    return Pods(name=name, part=part, replicas=replicas, millicpu=cpu, memory_bytes=memory,
                spread=_spread(template["spec"]))


def estimator_members(config: FleetConfig) -> list[str]:
    """Members whose scheduler-estimator this stack runs on the hub's host cluster: an all-in-one stack's own; a
    hub stack's region stacks' members (read from their stack files: the hub owns the estimator workloads,
    components/fleet/registry.py, so it counts every region's at once); none for a region stack, which writes
    only their read-only member credential."""
    if config.role == "region":
        return []
    members = fleet_members(config, region_intents(config, None))
    return [m.name for m in members if m.scheduler_estimator]


def search_members(config: FleetConfig) -> list[str]:
    """Members the search addon caches (its memory request follows from them); none while it is off. An invalid
    choice counts as none here: preflight refuses it first, naming the key."""
    if config.role == "region" or not config.karmada.addons.search.enabled:
        return []
    try:
        return addons_docs.search_members(config, fleet_members(config, region_intents(config, None)), "")
    except ValueError:
        return []


def pull_members(config: FleetConfig) -> list[str]:
    """Pull members whose joins this stack's hub approves (components/fleet/registry.py runs the approver for them):
    an all-in-one stack's own, a hub stack's region stacks' members; none for a region stack."""
    if config.role == "region":
        return []
    return [m.name for m in fleet_members(config, region_intents(config, None)) if m.sync_mode == "Pull"]


def hub_documents(config: FleetConfig) -> list[tuple[str, dict[str, Any]]]:
    """Every pod-running document a stack that owns the hub applies to its host cluster, with what it is part of:
    rendered by the functions the components call."""
    out: list[tuple[str, dict[str, Any]]] = [("Karmada control plane", workloads.etcd(config, "capacity"))]
    out += [("Karmada control plane", manifests.deployment(w)) for w in workloads.deployments(config)]
    out += [("scheduler-estimators", manifests.deployment(workloads.estimator(config, m)))
            for m in estimator_members(config)]
    pull = pull_members(config)
    if pull:
        out.append(("agent CSR approver", csr_approver_docs.deployment(
            pull, agent_script.source(csr_approver_docs.SCRIPT_KEY))))
    if config.dns is not None:
        assert config.hub is not None
        primaries: list[str] = []
        if config.dns.self_hosted_mode:
            from components.hetzner.hub_cluster import private_ip
            from components.traffic import nameserver_docs

            primaries = [private_ip(config.hub, i) for i in range(config.hub.servers)]
            out.append(("nameservers", nameserver_docs.daemonset(
                config.dns, agent_script.source(nameserver_docs.SEED_SCRIPT), "capacity")))
        else:
            objects = traffic_docs.external_dns_objects(config.dns, traffic_docs.TOKEN_SECRET_NAME)
            out += [("external-dns", o) for o in objects if o["kind"] == "Deployment"]
        out.append(("traffic failover controller", failover_docs.deployment(
            config.dns, config.hub.servers, agent_script.source(failover_docs.SCRIPT_KEY), primaries=primaries)))
        out.append(("status refresher", refresher_docs.deployment(
            config.dns.refresh_seconds, agent_script.source(refresher_docs.SCRIPT_KEY))))
    backup = config.karmada.etcd.backup
    if backup is not None:
        out.append(("etcd backup", etcd_backup_docs.cron_job(
            backup, "capacity", "etcd", agent_script.source(etcd_backup_docs.SCRIPT_KEY),
            config.karmada.etcd.quota_backend_bytes)))
    out.append(("etcd defragmentation", etcd_maintenance_docs.cron_job(
        config.karmada.etcd.defrag_schedule, config.karmada.etcd.replicas,
        agent_script.source(etcd_maintenance_docs.SCRIPT_KEY))))
    if config.monitoring.enabled:
        out.append(("hub exporter", monitoring_docs.exporter_deployment(
            agent_script.source(monitoring_docs.EXPORTER_SCRIPT))))
    out.append(("k3s upgrades", k3s_upgrade_docs.deployment()))
    out += addons_docs.host_deployments(config, search_members(config))
    return out


def k3s_pods() -> list[Pods]:
    return [Pods(name=p.name, part="k3s", replicas=p.replicas, millicpu=p.millicpu, memory_bytes=p.memory_bytes)
            for p in limits.K3S_PACKAGED_PODS]


def hub_pods(config: FleetConfig) -> list[Pods]:
    """What the hub's servers run, pod by pod kind: the documents above and what k3s deploys itself."""
    servers = config.hub.servers if config.hub is not None else 1
    return [pods_of(doc, part, servers) for part, doc in hub_documents(config)] + k3s_pods()


@dataclass(frozen=True)
class HubFit:
    """How a hub of `servers` × `server_type` holds `pods`."""

    server_type: limits.ServerType
    servers: int
    pods: Sequence[Pods]

    @property
    def millicpu(self) -> float:
        return sum(p.total_millicpu for p in self.pods)

    @property
    def memory(self) -> float:
        return sum(p.total_memory for p in self.pods)

    @property
    def pod_count(self) -> int:
        return sum(p.replicas for p in self.pods)

    @property
    def allocatable_millicpu(self) -> float:
        return self.servers * (self.server_type.vcpus * 1000 - limits.K3S_SERVER_RESERVE_MILLICPU)

    @property
    def allocatable_memory(self) -> float:
        return self.servers * (self.server_type.memory_bytes - limits.K3S_SERVER_RESERVE_BYTES)

    @property
    def max_pods(self) -> int:
        return self.servers * limits.K3S_MAX_PODS

    def problems(self) -> list[str]:
        out = []
        if self.millicpu > self.allocatable_millicpu:
            out.append(f"CPU requests {self.millicpu / 1000:.1f} of {self.allocatable_millicpu / 1000:.1f} vCPU")
        if self.memory > self.allocatable_memory:
            out.append(f"memory requests {_gib(self.memory)} of {_gib(self.allocatable_memory)}")
        if self.pod_count > self.max_pods:
            out.append(f"{self.pod_count} pods of {self.max_pods} ({limits.K3S_MAX_PODS} per server)")
        for p in self.pods:
            if p.spread and p.replicas > self.servers:
                out.append(f"{p.name} wants {p.replicas} replicas on distinct servers")
        return out

    def fits(self) -> bool:
        return not self.problems()


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def hub_fit(config: FleetConfig, server_type: str | None = None, servers: int | None = None) -> HubFit:
    """How the stack's hub, or the same hub with another type or server count, holds what it would run (some
    workloads run one replica per server, so the pods are counted for that hub)."""
    hub = config.hub
    assert hub is not None
    name, count = server_type or hub.server_type, servers or hub.servers
    if (name, count) != (hub.server_type, hub.servers):
        # a hub of `count` servers runs `count` karmada-apiservers (config: one behind each server's address)
        replicas = config.karmada.replicas.model_copy(update={"apiserver": count})
        config = config.model_copy(update={"hub": hub.model_copy(update={"server_type": name, "servers": count}),
                                           "karmada": config.karmada.model_copy(update={"replicas": replicas})})
    return HubFit(server_type=limits.SERVER_TYPES[name], servers=count, pods=hub_pods(config))


ODD_SERVER_COUNTS = tuple(n for n in range(3, limits.SPREAD_PLACEMENT_GROUP_MAX_SERVERS + 1) if n % 2)
"""Hub server counts the program allows: odd for etcd quorum, all in one spread placement group."""


def _family(name: str) -> str:
    """`cx33` -> `cx`: one line of Hetzner server types, sized by the digits."""
    return name.rstrip("0123456789")


def smallest_fit(config: FleetConfig) -> tuple[int | None, str | None]:
    """(fewest servers of the stack's type that fit, smallest type that fits at the stack's server count): the
    two fixes a refusal names. Types of the stack's own line (cx, cpx, cax, ccx) come first, smallest first;
    then any type of the same architecture."""
    hub = config.hub
    assert hub is not None
    current = limits.SERVER_TYPES[hub.server_type]
    count = next((n for n in ODD_SERVER_COUNTS if n >= hub.servers and hub_fit(config, servers=n).fits()), None)
    candidates = sorted((t for t in limits.SERVER_TYPES.values() if t.arch == current.arch),
                        key=lambda t: (_family(t.name) != _family(current.name), t.memory_gb, t.vcpus, t.name))
    kind = next((t.name for t in candidates if hub_fit(config, server_type=t.name).fits()), None)
    return count, kind


def check_hub(config: FleetConfig, stack_file: str) -> None:
    """Refuse (one line) a hub whose servers cannot hold what it runs, or that a spread group cannot hold."""
    hub = config.hub
    if hub is None or config.role == "region":
        return
    if hub.servers > limits.SPREAD_PLACEMENT_GROUP_MAX_SERVERS:
        raise ConfigError(f"{stack_file}: {PROJECT_PREFIX}hub.servers: {hub.servers} servers do not fit one spread "
                          f"placement group (Hetzner allows {limits.SPREAD_PLACEMENT_GROUP_MAX_SERVERS}); use at most "
                          f"{max(ODD_SERVER_COUNTS)} and a larger hub.serverType")
    if hub.server_type not in limits.SERVER_TYPES:
        raise ConfigError(f"{stack_file}: {PROJECT_PREFIX}hub.serverType: '{hub.server_type}' has no entry in "
                          "components/hetzner/limits.py SERVER_TYPES, so the hub's capacity cannot be checked; add "
                          f"its vCPUs and memory with their source, or use one of: {', '.join(limits.SERVER_TYPES)}")
    fit = hub_fit(config)
    problems = fit.problems()
    if not problems:
        return
    count, kind = smallest_fit(config)
    fixes = []
    if count is not None and count != hub.servers:
        fixes.append(f"hub.servers: {count}")
    if kind is not None and kind != hub.server_type:
        fixes.append(f"hub.serverType: {kind}")
    estimators = sum(p.replicas for p in fit.pods if p.part == "scheduler-estimators")
    if estimators:
        fixes.append(f"fewer or smaller scheduler-estimators (karmada.estimator: {estimators} pods now)")
    raise ConfigError(
        f"{stack_file}: {PROJECT_PREFIX}hub.serverType: {hub.servers} x {hub.server_type} cannot hold what the hub "
        f"runs ({'; '.join(problems)}; {_by_part(fit.pods)}; each server keeps "
        f"{limits.K3S_SERVER_RESERVE_MILLICPU}m and {_gib(limits.K3S_SERVER_RESERVE_BYTES)} for k3s itself): "
        f"set {' or '.join(fixes)}")


def _by_part(pods: Iterable[Pods]) -> str:
    parts: dict[str, list[float]] = {}
    for p in pods:
        total = parts.setdefault(p.part, [0, 0.0, 0.0])
        total[0] += p.replicas
        total[1] += p.total_millicpu
        total[2] += p.total_memory
    return ", ".join(f"{part}: {int(n)} pods, {cpu / 1000:.1f} vCPU, {_gib(mem)}"
                     for part, (n, cpu, mem) in parts.items())


# ---------------------------------------------------------------------------------------------- load balancers


@dataclass(frozen=True)
class LoadBalancerUse:
    key: str
    """The config key that picks the type, for the message."""
    lb_type: str
    targets: int
    services: int
    counted: str
    """How the targets were counted, for the message."""


def load_balancers(config: FleetConfig) -> list[LoadBalancerUse]:
    """Every load balancer this stack creates, with the targets and services it will have."""
    out = []
    hub = config.hub
    if hub is not None and config.role != "region":
        # One label-selector target matching every control-plane server (hub_cluster.py); two TCP services.
        out.append(LoadBalancerUse("hub.loadBalancer.type", hub.load_balancer.type, hub.servers, 2,
                                   f"its selector matches the {hub.servers} hub servers"))
    regions = list(config.regions) if config.role == "all-in-one" else [config.region] if config.region else []
    for name in regions:
        members = traffic_docs.region_members(config.members, name)
        if not members:
            continue  # RegionalTraffic creates no load balancer for a region without members
        region = config.regions[name]
        servers = sum(m.ingress.servers for m in members)
        services = len(traffic_docs.regional_lb_services(region, members[0].ingress))
        out.append(LoadBalancerUse(f"regions.{name}.loadBalancerType", region.load_balancer_type, servers, services,
                                   f"the label selectors of its {len(members)} members match {servers} servers "
                                   "(members[].ingress.servers, default 3)"))
    return out


def check_load_balancers(config: FleetConfig, stack_file: str) -> None:
    for use in load_balancers(config):
        lb = limits.LOAD_BALANCER_TYPES[use.lb_type]
        if use.targets > lb.max_targets:
            bigger = [t.name for t in limits.LOAD_BALANCER_TYPES.values() if t.max_targets >= use.targets]
            fix = f"use {bigger[0]}" if bigger else "split the region's members across more regions"
            raise ConfigError(
                f"{stack_file}: {PROJECT_PREFIX}{use.key}: {use.lb_type} takes at most {lb.max_targets} targets, but "
                f"{use.counted}, and Hetzner counts every server a selector matches; {fix} (or fewer servers per "
                "member)")
        if use.services > lb.max_services:
            raise ConfigError(f"{stack_file}: {PROJECT_PREFIX}{use.key}: {use.lb_type} takes at most "
                              f"{lb.max_services} services, {use.services} are needed")


def check(config: FleetConfig, stack_file: str) -> None:
    check_hub(config, stack_file)
    check_load_balancers(config, stack_file)
