"""The dev stack for real on one machine: the hub's control plane and two members on the pinned upstream binaries.

What runs, in the order a first `pulumi up` brings it up:

1. a stand-in Cluster API management cluster (real kube-apiserver) holding each member's `<cluster>-kubeconfig`
   Secret in CAPI's format, and the members themselves (kwokctl, `members.py`), each in its own namespace;
2. the program, rendered in-process (`hubctl.plan.run_program`) as `pulumi up` would run it, except that what a
   provider reads from a real cluster is read from these: the CAPI Secrets (the stack's `capiKubeconfig` is the
   stand-in's), and each member service-account token, which the member's own token controller fills once the
   first render's member objects are applied (the render then runs again, as a second `up` would see it);
3. the hub's host cluster: a real kube-apiserver standing in for k3s, serving with the program's own k3s CA and
   trusting its k3s client CA (so the program's host kubeconfig is what the harness uses); every host object of
   the plan server-side-applied to it, the workloads too; their pods run by the process kubelet (etcd through its
   prepare step, karmada-apiserver, the Karmada components, the estimators, the hub's agents), and what k3s's
   controllers and kubelets would show of them (Pods, workload status, the servers' Nodes) written by the status
   mirror (kubelet/mirror.py), so what reads the host API (`hubctl doctor`) sees what runs;
4. the Karmada objects applied to the real karmada-apiserver in the plan's dependency order, with the plan's own
   admin credential, then the Pull member's join as the program does it: the PullJoin provider's `create` run with
   the plan's inputs, the join Job and karmada-agent run by the process kubelet inside that member.

Stood in, each named where it is made: Hetzner (servers' public addresses and the API load balancer are addresses
on the bridge whose ports go to what a node port or the load balancer would reach), k3s (a kube-apiserver; no
kubelet, no flannel), container images (images.py), kwok's simulated nodes. Skipped pods are listed in `SKIPPED`
with the reason; their workload objects are applied all the same and show 0 ready. In a member, the status of a
workload applied to it (the Pull agent's Deployment) is its own kube-controller-manager's and kwok's, not that of
the agent the process kubelet runs.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import rpc

from components.config import FleetConfig
from hubctl.mocks import SA_TOKEN_TYPE, SECRET_SIG, PlanMocks, unwrap
from hubctl.plan import Plan, k8s_target, run_program
from hubctl.stackfile import StackConfig, read_stack
from tests.support.kubelet.api import Api, ApiError, wait_for
from tests.support.kubelet.images import ImageTable, python_interpreter
from tests.support.kubelet.mirror import StatusMirror
from tests.support.kubelet.network import Netns, Network, reap_stale
from tests.support.kubelet.pod import ClusterContext, Kubelet, Pod
from tests.support.kubelet.workloads import Controllers, Node, Workload, wait_done, wait_ready
from tests.support.realfleet.members import KwokMember
from tests.support.realfleet.standin import HOST_CONTROLLERS, StandinCluster, kubeconfig_text
from tests.support.testpki import Pair
from tests.support.tools import REPO

SKIPPED = {
    ("system-upgrade", "system-upgrade-controller"): "upgrades k3s on the servers through k3s's own Plans: no k3s here",
    ("external-dns", "external-dns"): "writes to Hetzner DNS through the Hetzner webhook: no Hetzner API here",
    ("karmada-system", "karmada-dashboard-api"): "no binary: the Go module proxy refuses karmada-io/dashboard v0.4.0",
    ("karmada-system", "karmada-dashboard-web"): "no binary: the Go module proxy refuses karmada-io/dashboard v0.4.0",
}
"""(namespace, workload) on the host that is not run, and why."""

CLUSTER_DOMAIN = "cluster.local"
CAPI_SERVER_NAME = "capi.management.invalid"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job", "CronJob", "DaemonSet")
FIRST = ("Namespace", "CustomResourceDefinition")


def _secret(value: Any) -> dict[str, Any]:
    return {**SECRET_SIG, "value": value}


class RealMocks(PlanMocks):
    """The offline stand-ins, except what a provider reads from a cluster that exists here: CAPI's kubeconfig
    Secrets, a member's kube-system Namespace (its UID) and the member service-account tokens their token
    controllers fill."""

    def __init__(self, capi: Api, members: dict[str, Api], read_tokens: bool) -> None:
        super().__init__()
        self.capi, self.members, self.read_tokens = capi, members, read_tokens

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        provider = (args.provider or "").rsplit("::", 1)[0].rsplit("::", 1)[-1]
        if args.resource_id and args.typ == "kubernetes:core/v1:Secret" and provider == "k8s-capi":
            namespace, name = args.resource_id.split("/", 1)
            obj = self.capi.get("v1", "Secret", name, namespace)
            if obj is None:
                raise ApiError(f"the CAPI management cluster has no Secret {args.resource_id}")
            return args.resource_id, {**args.inputs, "data": _secret(obj["data"]), "type": obj["type"],
                                      "metadata": obj["metadata"]}
        if args.resource_id and args.typ == "kubernetes:core/v1:Namespace" and provider.startswith("k8s-member-"):
            obj = self.members[provider.removeprefix("k8s-member-")].get("v1", "Namespace", args.resource_id)
            if obj is None:
                raise ApiError(f"{provider} has no Namespace {args.resource_id}")
            return args.resource_id, {**args.inputs, "metadata": obj["metadata"]}
        rid, state = super().new_resource(args)
        plain = unwrap(args.inputs)
        if (self.read_tokens and args.typ == "kubernetes:core/v1:Secret" and plain.get("type") == SA_TOKEN_TYPE
                and provider.startswith("k8s-member-")):
            api = self.members[provider.removeprefix("k8s-member-")]
            meta = plain["metadata"]
            obj = wait_for(f"token of {meta['namespace']}/{meta['name']}", lambda: _filled(
                api.get("v1", "Secret", meta["name"], meta["namespace"])), 60)
            state = {**state, "data": _secret(obj["data"])}
        return rid, state


def _filled(secret: dict[str, Any] | None) -> dict[str, Any] | None:
    return secret if secret and (secret.get("data") or {}).get("token") else None


# ----------------------------------------------------------------------------------------------- the plan


@dataclass
class Rendered:
    plan: Plan

    def objects(self, target: str) -> list[tuple[Any, dict[str, Any]]]:
        """(record, object) for one API server's objects, in the plan's dependency order."""
        records = [r for r in self.plan.records if r.type.startswith("kubernetes:") and r.custom
                   and not r.options.get("read") and k8s_target(r.provider) == target]
        return [(r, as_sent({k: v for k, v in unwrap(r.inputs).items() if not k.startswith("__")}))
                for r in dependency_order(self.plan, records)]

    @functools.cached_property
    def by_urn(self) -> dict[str, Any]:
        return {r.urn: r for r in self.plan.records}

    def ancestors(self, record: Any) -> list[Any]:
        """Every resource `record` depends on, directly or through other resources (each once)."""
        seen: set[str] = set()
        found = []
        todo = list(record.dependencies)
        while todo:
            urn = todo.pop()
            if urn in seen or urn not in self.by_urn:
                continue
            seen.add(urn)
            found.append(self.by_urn[urn])
            todo += self.by_urn[urn].dependencies
        return found

    def depends_on(self, record: Any, target: str) -> set[str]:
        """URNs of the `target` API server's objects `record` depends on, directly or through other resources."""
        return {dep.urn for dep in self.ancestors(record)
                if dep.type.startswith("kubernetes:") and k8s_target(dep.provider) == target}

    def targets(self) -> set[str]:
        return {k8s_target(r.provider) or "" for r in self.plan.records if r.type.startswith("kubernetes:")}

    def provider_kubeconfig(self, name: str) -> str:
        record = next(r for r in self.plan.records if r.type == "pulumi:providers:kubernetes" and r.name == name)
        return str(unwrap(record.inputs)["kubeconfig"])

    def ca(self, name: str) -> Pair:
        """A CA the program generated (its certificate and key), e.g. `hub-k3s-server-ca`."""
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        cert = next(r for r in self.plan.records if r.type == "tls:index/selfSignedCert:SelfSignedCert"
                    and r.name == name)
        key_urn = next(d for d in cert.dependencies if d.endswith("-key") or "PrivateKey" in d)
        key = next(r for r in self.plan.records if r.urn == key_urn)
        cert_pem = str(unwrap(cert.outputs)["certPem"])
        key_pem = str(unwrap(key.outputs)["privateKeyPem"])
        loaded_key = serialization.load_pem_private_key(key_pem.encode(), None)
        return Pair(cert_pem, key_pem, x509.load_pem_x509_certificate(cert_pem.encode()), loaded_key)  # type: ignore[arg-type]

    def cas(self) -> list[Pair]:
        """Every CA the program generated, with its key."""
        return [self.ca(r.name) for r in self.plan.records if r.type == "tls:index/selfSignedCert:SelfSignedCert"]

    def outputs(self, typ: str) -> list[dict[str, Any]]:
        return [unwrap(r.outputs) or {} for r in self.plan.records if r.type == typ]

    def dynamic(self, name: str) -> Any:
        return next(r for r in self.plan.records if r.type == "pulumi-python:dynamic:Resource" and r.name == name)


def as_sent(value: Any) -> Any:
    """Inputs as pulumi-kubernetes sends them: the engine's numbers are doubles, and Go's JSON encoder writes an
    integral double without a fraction (2381, not 2381.0), which is what int32 fields accept."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: as_sent(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_sent(v) for v in value]
    return value


def dependency_order(plan: Plan, records: list[Any], hoist: bool = True) -> list[Any]:
    """`records` ordered so each comes after every record it depends on, directly or through others (components,
    readiness gates); ties keep registration order. `hoist`: Namespaces and CRDs first (a first bring-up); without,
    the order pulumi itself would step an update in."""
    by_urn = {r.urn: r for r in plan.records}
    wanted = {r.urn for r in records}
    reach: dict[str, set[str]] = {}

    def deps(urn: str, seen: set[str]) -> set[str]:
        if urn in reach:
            return reach[urn]
        out: set[str] = set()
        record = by_urn.get(urn)
        for dep in (record.dependencies if record else []):
            if dep in seen:
                continue
            if dep in wanted:
                out.add(dep)
            out |= deps(dep, seen | {dep})
        reach[urn] = out
        return out

    order, done = [], set()
    pending = list(records)
    while pending:
        progressed = False
        for r in list(pending):
            if deps(r.urn, {r.urn}) <= done:
                order.append(r)
                done.add(r.urn)
                pending.remove(r)
                progressed = True
        if not progressed:
            order += pending
            break
    if not hoist:
        return order
    firsts = [r for r in order if unwrap(r.inputs).get("kind") in FIRST]
    return firsts + [r for r in order if r not in firsts]


def render(stack: StackConfig, mocks: PlanMocks) -> Rendered:
    return Rendered(run_program(REPO, stack, mocks=mocks))


# ----------------------------------------------------------------------------------------------- names


@dataclass
class Names:
    """Every name the pods resolve, written into each pod namespace's /etc/hosts."""

    fixed: dict[str, str | list[str]] = field(default_factory=dict)
    """Names outside any cluster: one address, or several (a name with several A records, each a line, in order;
    Go's and glibc's resolvers return them all from the hosts file)."""
    services: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(cluster, namespace, service) -> ClusterIP."""
    headless: dict[str, str] = field(default_factory=dict)
    """FQDN of a StatefulSet pod under its governing Service -> pod IP."""

    def hosts_for(self, pod: Pod) -> str:
        lines = ["127.0.0.1\tlocalhost"]
        for name, ips in sorted(self.fixed.items()):
            for ip in [ips] if isinstance(ips, str) else ips:
                lines.append(f"{ip}\t{name}")
        for (cluster, namespace, service), ip in sorted(self.services.items()):
            if cluster != pod.cluster.name:
                continue
            names = [f"{service}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{service}.{namespace}.svc",
                     f"{service}.{namespace}"]
            if namespace == pod.namespace:
                names.append(service)
            lines.append(f"{ip}\t{' '.join(names)}")
        for name, ip in sorted(self.headless.items()):
            lines.append(f"{ip}\t{name}")
        return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------- the fleet


@dataclass
class Cluster:
    """One API server the plan writes to, with the controllers and Services of its workloads."""

    name: str
    api: Api
    context: ClusterContext
    controllers: Controllers
    services: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    workloads: dict[tuple[str, str], Workload] = field(default_factory=dict)


@dataclass
class RealFleet:
    """`with RealFleet() as fleet: fleet.up()`; `close()` removes everything, also after a failed bring-up."""

    stack: str = "dev"
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="realfleet-")))
    log: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr, flush=True))
    timings: dict[str, float] = field(default_factory=dict)
    stack_edit: Callable[[StackConfig], StackConfig] | None = None
    """Changes the stack file's config before it is read (the upgrade rehearsal starts from an older release)."""

    def __post_init__(self) -> None:
        # pods take their addresses from k3s's pod CIDR: the rendered nameserver ACL and NetworkPolicies name it
        self.network = Network(pool="10.42.0.0/16")
        self.hub_nodes: list[Node] = []
        self.server_addresses: dict[str, list[str]] = {}
        self.names = Names()
        self.kubelet = Kubelet(self.network, ImageTable.default(), self.workdir / "pods", self.names.hosts_for,
                               self._service_links)
        self.members: dict[str, KwokMember] = {}
        self.clusters: dict[str, Cluster] = {}
        self.capi: StandinCluster | None = None
        self.host: StandinCluster | None = None
        self.host_mirror: StatusMirror | None = None
        """What the host's kube-controller-manager and kubelets would show through its API (mirror.py)."""
        self.rendered: Rendered | None = None
        self.config: FleetConfig | None = None
        self._deferred: list[tuple[set[str], dict[str, Any]]] = []
        """Host workloads waiting for Karmada objects they depend on (karmada-search on its RBAC), with those
        objects' URNs: pulumi-kubernetes creates a Deployment only once its dependencies exist."""
        self._started = time.monotonic()

    def __enter__(self) -> RealFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _mark(self, what: str) -> None:
        self.timings[what] = round(time.monotonic() - self._started, 1)
        self.log(f"[realfleet {self.timings[what]:7.1f} s] {what}")

    # ------------------------------------------------------------------------------------------ bring-up

    def up(self) -> None:
        reap_stale()
        self.network.start()
        stack = read_stack(REPO, self.stack)
        if self.stack_edit is not None:
            stack = self.stack_edit(stack)
        self.config = FleetConfig.from_mapping(stack.project_values()[0], f"stacks/Pulumi.{self.stack}.yaml",
                                               stack.project_values()[1])
        self._capi_and_members()
        stack = self._with_cluster_ids(self._with_capi(stack))
        first = render(stack, RealMocks(self.capi.api, self._member_apis(), read_tokens=False))  # type: ignore[union-attr]
        self._mark("rendered (first pass)")
        for name in self.members:
            self._apply_all(self._member(name).api, first.objects(f"member-{name}"), skip_workloads=True)
        self.rendered = render(stack, RealMocks(self.capi.api, self._member_apis(), read_tokens=True))  # type: ignore[union-attr]
        self._mark("rendered with the members' tokens")
        self._host()
        self._karmada()
        self._member_workloads()
        self._mark("brought up")

    def _member(self, name: str) -> KwokMember:
        return self.members[name]

    def _member_apis(self) -> dict[str, Api]:
        return {name: m.api for name, m in self.members.items() if m.api is not None}

    def _capi_and_members(self) -> None:
        assert self.config is not None
        self.capi = StandinCluster("capi", self.network, self.workdir, dns_names=(CAPI_SERVER_NAME,))
        self.capi.start()
        assert self.capi.netns is not None
        self.names.fixed[CAPI_SERVER_NAME] = self.capi.netns.ip
        self._mark("CAPI stand-in ready")
        for member in self.config.members:
            kwok = KwokMember(member.name, member.api_endpoint, member.region, tuple(member.zones), self.network,
                              self.workdir)
            kwok.start()
            assert kwok.netns is not None
            self.members[member.name] = kwok
            self.names.fixed[kwok.host] = kwok.netns.ip
            self._mark(f"member {member.name} ready (kwok)")
        for member in self.config.members:
            creds = member.credentials
            namespace, cluster = getattr(creds, "namespace", "default"), getattr(creds, "cluster", member.name)
            self.capi.api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            # what CAPI's kubeconfig controller writes (cluster-api util/secret: type cluster.x-k8s.io/secret, key
            # `value`, labelled with the cluster's name)
            self.capi.api.apply({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
                                 "metadata": {"name": f"{cluster}-kubeconfig", "namespace": namespace,
                                              "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
                                 "data": {"value": base64.b64encode(
                                     self.members[member.name].kubeconfig.encode()).decode()}})

    def _with_capi(self, stack: StackConfig) -> StackConfig:
        assert self.config is not None and self.capi is not None
        key = f"karmada-hub:{self.config.capi.kubeconfig_config_key}"
        config = {**stack.config, key: self.capi.admin_kubeconfig(f"https://{CAPI_SERVER_NAME}:6443")}
        return dataclasses.replace(stack, config=config)

    def _with_cluster_ids(self, stack: StackConfig) -> StackConfig:
        """What an operator commits after a region's first `up` prints `pullClusterIds`: each Pull member's real
        kube-system UID as its `clusterId`. The hub makes that member's Cluster with it and the agent checks it
        (karmada v1.18.2 pkg/util/cluster.go `Validate`), so the example file's UID, of another cluster, would not
        join these kwok members."""
        key = "karmada-hub:members"
        members = json.loads(stack.config[key])
        for member in members:
            if member.get("syncMode") == "Pull":
                api = self._member(member["name"]).api
                assert api is not None
                namespace = api.get("v1", "Namespace", "kube-system")
                assert namespace is not None
                member["clusterId"] = namespace["metadata"]["uid"]
        return dataclasses.replace(stack, config={**stack.config, key: json.dumps(members)})

    # ------------------------------------------------------------------------------------------ apply

    def _apply_all(self, api: Api, objects: Iterable[tuple[Any, dict[str, Any]]], skip_workloads: bool = False,
                   timeout: float = 120) -> list[dict[str, Any]]:
        applied = []
        for record, obj in objects:
            if skip_workloads and obj["kind"] in WORKLOAD_KINDS:
                continue
            if record is not None:
                self._await_workloads(record)
            applied.append(wait_for(f"apply {obj['kind']} {obj['metadata'].get('namespace', '')}/"
                                    f"{obj['metadata']['name']}", lambda o=obj: api.apply(o), timeout, 1))
            if obj["kind"] == "CustomResourceDefinition":
                wait_for(f"CRD {obj['metadata']['name']} Established", lambda o=obj: _established(api, o), 60, 0.5)
        return applied

    def _await_workloads(self, record: Any) -> None:
        """pulumi-kubernetes creates a resource only once its dependencies are ready, and a Deployment or
        StatefulSet is ready when its rollout is (await logic for apps/v1): wait for every running workload the
        record depends on, directly or through other resources."""
        if self.rendered is None:  # the first render's member objects: nothing runs yet
            return
        for dep in self.rendered.ancestors(record):
            if dep.type not in ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet"):
                continue
            target = k8s_target(dep.provider) or ""
            meta = unwrap(dep.inputs)["metadata"]
            cluster = self.clusters.get(target)
            workload = cluster.workloads.get((meta["namespace"], meta["name"])) if cluster else None
            for pod in workload.pods if workload else []:
                wait_ready(pod, 600)

    def _cluster(self, name: str, api: Api, context: ClusterContext, nodes: list[Node] | None = None) -> Cluster:
        controllers = Controllers(self.kubelet, context, self.workdir / "storage" / name, nodes=nodes)
        cluster = Cluster(name, api, context, controllers)
        self.clusters[name] = cluster
        return cluster

    def _publish_services(self, cluster: Cluster, applied: Iterable[dict[str, Any]]) -> None:
        for svc in applied:
            if svc.get("kind") != "Service":
                continue
            meta, spec = svc["metadata"], svc["spec"]
            cluster.services[(meta["namespace"], meta["name"])] = svc
            ip = spec.get("clusterIP")
            if ip and ip != "None":
                self.network.add_vip(ip)
                self.names.services[(cluster.name, meta["namespace"], meta["name"])] = ip
                for port in spec.get("ports") or []:
                    self.network.proxy.listen(ip, int(port["port"]), self._backends(cluster, svc, port))
        self.refresh_names()

    def _backends(self, cluster: Cluster, svc: dict[str, Any], port: dict[str, Any]) -> Callable[[],
                                                                                             list[tuple[str, int]]]:
        selector = dict(svc["spec"].get("selector") or {})
        namespace = svc["metadata"]["namespace"]
        target = port.get("targetPort", port["port"])
        unready = bool(svc["spec"].get("publishNotReadyAddresses"))

        def backends() -> list[tuple[str, int]]:
            out = []
            for pod in list(self.kubelet.pods.values()):
                serving = pod.ready or (unready and pod.phase == "Running")
                if (pod.cluster.name == cluster.name and pod.namespace == namespace and serving
                        and selector and all(pod.labels.get(k) == v for k, v in selector.items())):
                    out.append((pod.ip, pod.container_port(target)))
            return out

        return backends

    def _service_links(self, context: ClusterContext, namespace: str) -> dict[str, str]:
        """The `<SERVICE>_SERVICE_HOST`/`_PORT` variables the kubelet gives every pod of a namespace."""
        cluster = self.clusters.get(context.name)
        env: dict[str, str] = {}
        if cluster is None:
            return env
        for (ns, name), svc in cluster.services.items():
            ip = svc["spec"].get("clusterIP")
            if ns != namespace or not ip or ip == "None":
                continue
            prefix = name.upper().replace("-", "_")
            ports = svc["spec"].get("ports") or []
            env[f"{prefix}_SERVICE_HOST"] = ip
            if ports:
                env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
                env[f"{prefix}_PORT"] = f"tcp://{ip}:{ports[0]['port']}"
            for port in ports:
                proto = port.get("protocol", "TCP")
                if port.get("name"):
                    env[f"{prefix}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(port["port"])
                base = f"{prefix}_PORT_{port['port']}_{proto}"
                env.update({base: f"{proto.lower()}://{ip}:{port['port']}", f"{base}_PROTO": proto.lower(),
                            f"{base}_PORT": str(port["port"]), f"{base}_ADDR": ip})
        return env

    # ------------------------------------------------------------------------------------------ host

    def _host(self) -> None:
        assert self.rendered is not None
        self.hub_nodes = self._hub_servers()
        self.host = StandinCluster("host", self.network, self.workdir, controllers=HOST_CONTROLLERS,
                                   ca=self.rendered.ca("hub-k3s-server-ca"),
                                   client_ca=self.rendered.ca("hub-k3s-client-ca"),
                                   serving_ips=tuple(self.hub_addresses()))
        self.host.start()
        assert self.host.netns is not None
        self._mark("host stand-in (k3s) ready")
        host_ip = self.host.netns.ip
        self.network.add_vip(self.host.kubernetes_ip)
        self.network.proxy.listen(self.host.kubernetes_ip, 443, lambda: [(host_ip, 6443)])
        for node in self.hub_nodes:  # k3s's API on every server's addresses
            for address in self.server_addresses[node.name]:
                self.network.proxy.listen(address, 6443, lambda: [(host_ip, 6443)], netns=node.netns.name)
        for address in self.load_balancer_addresses():
            self.network.add_vip(address)
            self.network.proxy.listen(address, 6443, lambda: [(host_ip, 6443)])
        # the program's own host kubeconfig (the first server's public address, k3s's CA, its admin certificate)
        api = Api.from_kubeconfig(self.rendered.provider_kubeconfig("k8s-host"))
        context = ClusterContext("host", api, self.host.kubernetes_ip, 443, node_name=self.hub_nodes[0].name,
                                 host_ip=self.hub_nodes[0].ip)
        cluster = self._cluster("host", api, context, nodes=self.hub_nodes)
        objects = self.rendered.objects("host")
        crds_needed = {o["kind"] for _, o in objects} & {"PodMonitor", "PrometheusRule"}
        self._apply_all(api, [(None, crd) for crd in third_party_crds(crds_needed)])
        if crds_needed:  # the operator's Prometheus stack: its CRDs and its namespace, which the program writes into
            assert self.config is not None
            self._apply_all(api, [(None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": self.config.monitoring.prometheus_namespace}})])
        # the workload objects too, as rendered: nothing in the stand-in acts on them (its kube-controller-manager
        # runs no controller that makes pods); the process kubelet runs their pods and the status mirror shows them
        applied = self._apply_all(api, objects)
        self.host_mirror = StatusMirror(self.kubelet, cluster.controllers,
                                        Api.from_kubeconfig(self.rendered.provider_kubeconfig("k8s-host")),
                                        nodes=self.hub_nodes, interval=2.0).start()
        self._publish_services(cluster, applied)
        for svc in cluster.services.values():  # a node port answers on every server's address, and the LB's
            for port in svc["spec"].get("ports") or []:
                if not port.get("nodePort"):
                    continue
                for node in self.hub_nodes:
                    for address in self.server_addresses[node.name]:
                        self.network.proxy.listen(address, int(port["nodePort"]), self._backends(cluster, svc, port),
                                                  netns=node.netns.name)
                for address in self.load_balancer_addresses():
                    self.network.proxy.listen(address, int(port["nodePort"]), self._backends(cluster, svc, port))
        self._mark("host objects applied")
        workloads = [(r, o) for r, o in objects if o["kind"] in WORKLOAD_KINDS]
        order = ["etcd", "karmada-apiserver", "karmada-aggregated-apiserver", "kube-controller-manager",
                 "karmada-webhook"]
        workloads.sort(key=lambda ro: order.index(ro[1]["metadata"]["name"]) if ro[1]["metadata"]["name"] in order
                       else len(order))
        for record, obj in workloads:
            needs = self.rendered.depends_on(record, "karmada")
            if needs:
                self._deferred.append((needs, obj))
            else:
                self._start_host_workload(obj)

    def _start_host_workload(self, obj: dict[str, Any]) -> None:
        cluster = self.clusters["host"]
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in SKIPPED:
            return
        workload = cluster.controllers.apply(obj)
        cluster.workloads[key] = workload
        if workload.kind == "StatefulSet":
            self._headless(cluster, workload)
        if key[1] in ("etcd", "karmada-apiserver"):
            for pod in workload.pods:
                wait_ready(pod, 600)
            self._mark(f"{key[1]} Ready")

    def _start_deferred(self, applied: set[str]) -> None:
        """Start each deferred host workload whose Karmada objects are all applied."""
        waiting = []
        for needs, obj in self._deferred:
            if needs <= applied:
                self._start_host_workload(obj)
                self._mark(f"{obj['metadata']['name']} started after the Karmada objects it depends on")
            else:
                waiting.append((needs, obj))
        self._deferred = waiting

    def _hub_servers(self) -> list[Node]:
        """The hub's servers as nodes: a namespace each, holding the server's public (Primary IP) and private
        address, where its hostNetwork pods (the nameservers) run and its node ports answer."""
        assert self.rendered is not None
        public = {o["name"].removesuffix("-ipv4"): o["ipAddress"]
                  for o in self.rendered.outputs("hcloud:index/primaryIp:PrimaryIp")
                  if o.get("name", "").endswith("-ipv4")}
        nodes = []
        self.server_addresses: dict[str, list[str]] = {}
        for record in self.rendered.plan.records:
            if record.type != "hcloud:index/server:Server":
                continue
            server = unwrap(record.inputs)
            name, private = server["name"], server["networks"][0]["ip"]
            netns = self.network.add_namespace(f"hub server {name}")
            addresses = [a for a in (public.get(name), private) if a]
            for address in addresses:
                self.network.add_address(netns.name, address)
            self.server_addresses[name] = addresses
            nodes.append(Node(name, netns, private))
        return nodes

    def _headless(self, cluster: Cluster, workload: Workload) -> None:
        service = workload.obj["spec"].get("serviceName")
        for pod in workload.pods:
            self.names.headless[f"{pod.name}.{service}.{pod.namespace}.svc.{CLUSTER_DOMAIN}"] = pod.ip
        self.refresh_names()

    def refresh_names(self) -> None:
        """Every pod's /etc/hosts, and the hub servers' (their hostNetwork pods resolve cluster names:
        `dnsPolicy: ClusterFirstWithHostNet`)."""
        self.kubelet.refresh_hosts()
        for node in self.hub_nodes:
            self.network.write_files(node.netns.name, hosts=self.names.hosts_for(_NodeView(node.name)))

    def hub_addresses(self) -> list[str]:
        """The hub servers' public and private addresses and the API load balancer's: where 6443 and the node
        ports answer (the k3s serving certificate names them)."""
        return [a for addresses in self.server_addresses.values() for a in addresses] + self.load_balancer_addresses()

    def public_addresses(self) -> list[str]:
        return [addresses[0] for addresses in self.server_addresses.values()]

    def load_balancer_addresses(self) -> list[str]:
        """The hub's API load balancer (a VIP here, forwarding to every server)."""
        assert self.rendered is not None
        return [o["ipv4"] for o in self.rendered.outputs("hcloud:index/loadBalancer:LoadBalancer")
                if o.get("name", "").endswith("-api")]

    # ------------------------------------------------------------------------------------------ karmada

    def karmada_api(self) -> Api:
        assert self.rendered is not None
        api = Api.from_kubeconfig(self.rendered.provider_kubeconfig("k8s-karmada"))
        return api

    def _karmada(self) -> None:
        assert self.rendered is not None and self.config is not None
        api = self.karmada_api()
        wait_for("karmada-apiserver through the hub's address", lambda: api.healthz(), 300, 1)
        done: set[str] = set()
        for record, obj in self.rendered.objects("karmada"):
            self._apply_all(api, [(record, obj)], timeout=300)
            done.add(record.urn)
            self._start_deferred(done)
        assert not self._deferred, [obj["metadata"]["name"] for _, obj in self._deferred]
        self.clusters["karmada"] = Cluster("karmada", api, ClusterContext("karmada", api, ""),
                                           Controllers(self.kubelet, ClusterContext("karmada", api, ""),
                                                       self.workdir / "storage" / "karmada"))
        # the API's name has every server's public address (the zone's static record): a dead server is one of three
        self.names.fixed[urlhost(self.pull_hub_url() or "https://api.invalid")] = self.public_addresses()
        self.refresh_names()
        self._mark("Karmada objects applied")

    def pull_hub_url(self) -> str | None:
        assert self.rendered is not None
        for record in self.rendered.plan.records:
            if record.type == "pulumi-python:dynamic:Resource" and "hubUrl" in (unwrap(record.inputs) or {}):
                return str(unwrap(record.inputs)["hubUrl"])
        return None

    # ------------------------------------------------------------------------------------------ members

    def _member_workloads(self) -> None:
        assert self.rendered is not None and self.config is not None
        for member in self.config.members:
            kwok = self.members[member.name]
            assert kwok.api is not None and kwok.netns is not None
            context = ClusterContext(f"member-{member.name}", kwok.api, kwok.netns.ip, kwok.port,
                                     node_name=f"{member.name}-node-0", host_ip=kwok.netns.ip)
            cluster = self._cluster(context.name, kwok.api, context)
            objects = self.rendered.objects(f"member-{member.name}")
            self._apply_all(kwok.api, objects)
            if member.sync_mode != "Pull":
                continue
            self.run_pull_join(member.name)
            for _, obj in objects:
                if obj["kind"] in ("Job", "Deployment"):
                    workload = cluster.controllers.apply(obj)
                    cluster.workloads[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = workload
                    kwok.pods_netns += [p.netns.name for p in workload.pods]
                    if obj["kind"] == "Job":
                        done = wait_done(workload.pods[0], 300)
                        if done.phase != "Succeeded":
                            raise RuntimeError(f"the join Job of {member.name} failed: {done.message}")
                    else:  # pulumi-kubernetes awaits a Deployment's rollout
                        for pod in workload.pods:
                            wait_ready(pod, 300)
            self._mark(f"member {member.name} joined (Pull)")
        if self.config.members:
            self._mark("members' objects applied")

    def run_pull_join(self, member: str) -> dict[str, Any]:
        """The PullJoin provider's `create`, as the engine would run it, from a namespace that resolves the names
        the plan's kubeconfigs use (the operator's machine)."""
        assert self.rendered is not None
        record = self.rendered.dynamic(f"member-{member}-join")
        props = {k: v for k, v in unwrap(record.inputs).items() if not k.startswith("__")}
        operator = self.operator_netns()
        code = ("import json, sys\nfrom components.fleet.pull_join import _PullJoinProvider\n"
                "result = _PullJoinProvider().create(json.load(sys.stdin))\n"
                "print(json.dumps({k: v for k, v in result.outs.items() if k in ('tokenId', 'joined', 'expiresAt')}))")
        res = subprocess.run(self.network.exec_argv(operator.name, [python_interpreter(), "-c", code]),
                             input=json.dumps(props), capture_output=True, text=True, timeout=120, cwd=REPO,
                             env={"PYTHONPATH": f"{REPO}:{sitepackages()}", "PATH": "/usr/bin:/bin"})
        if res.returncode != 0:
            raise RuntimeError(f"PullJoin create for {member} failed: {res.stderr[-2000:]}")
        return dict(json.loads(res.stdout.strip().splitlines()[-1]))

    def operator_netns(self) -> Netns:
        existing = [ns for ns in self.network.namespaces.values() if ns.label == "operator"]
        if existing:
            return existing[0]
        ns = self.network.add_namespace("operator")
        self.network.write_files(ns.name, hosts=self.names.hosts_for(_Placeholder()))  # type: ignore[arg-type]
        return ns

    # ------------------------------------------------------------------------------------------ for tests

    @property
    def karmada(self) -> Api:
        return self.clusters["karmada"].api

    def member_api(self, name: str) -> Api:
        api = self.members[name].api
        assert api is not None
        return api

    def workload(self, cluster: str, namespace: str, name: str) -> Workload:
        return self.clusters[cluster].workloads[(namespace, name)]

    def pods(self, cluster: str | None = None) -> list[Pod]:
        return [p for p in self.kubelet.pods.values() if p.phase != "Terminated"
                and (cluster is None or p.cluster.name == cluster)]

    def restarts(self) -> dict[str, int]:
        """Restarts of every long-running pod's containers (Jobs' pods left out), by `cluster/ns/pod`."""
        return {f"{p.cluster.name}/{p.namespace}/{p.name}": p.restarts() for p in self.pods()
                if p.spec.get("restartPolicy", "Always") == "Always"}

    def restart_stories(self, keys: Iterable[str]) -> str:
        """`Pod.restart_story` of each `cluster/ns/pod` key (as `restarts` names them) that is still running."""
        wanted = set(keys)
        return "\n".join(p.restart_story() for p in self.pods()
                         if f"{p.cluster.name}/{p.namespace}/{p.name}" in wanted)

    def renew_leaf(self, cluster: str, namespace: str, name: str) -> list[str]:
        """What `pulumi up` does when a workload's serving certificate is renewed: every leaf certificate in the
        Secrets its pods mount re-issued by the same CA with the same subject, names and usages and a new key, the
        Secrets updated, and the pods rolled (the program's checksum annotation changes the template). Returns
        the `secret/key` renewed."""
        from tests.support.realfleet.pki import reissue

        assert self.rendered is not None
        workload = self.workload(cluster, namespace, name)
        api = self.clusters[cluster].api
        cas = self.rendered.cas()
        renewed = []
        for volume in workload.obj["spec"]["template"]["spec"].get("volumes") or []:
            secret_name = (volume.get("secret") or {}).get("secretName")
            if not secret_name:
                continue
            secret = api.get("v1", "Secret", secret_name, namespace)
            assert secret is not None
            data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
            changed = reissue(data, cas)
            if changed:
                api.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret_name,
                                                                              "namespace": namespace},
                           "data": {k: base64.b64encode(v).decode() for k, v in data.items()}})
                renewed += [f"{secret_name}/{key}" for key in changed]
        if not renewed:
            raise AssertionError(f"{cluster} {namespace}/{name} mounts no leaf certificate")
        rolled = copy.deepcopy(workload.obj)
        rolled["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[
            "karmada-hub.io/renewed"] = str(time.time())
        self.clusters[cluster].controllers.roll(workload, rolled)
        return renewed

    def write_kubeconfigs(self, directory: Path) -> dict[str, Path]:
        """The kubeconfigs an operator has for this fleet, as files (0600), with the names `hubctl drill` and
        `hubctl doctor` read: `karmada`, `hub` (the host cluster), `<member>`."""
        assert self.rendered is not None
        directory.mkdir(parents=True, exist_ok=True)
        texts = {"karmada": self.rendered.provider_kubeconfig("k8s-karmada"),
                 "hub": self.rendered.provider_kubeconfig("k8s-host"),
                 **{name: m.kubeconfig for name, m in self.members.items()}}
        out = {}
        for name, text in texts.items():
            path = directory / f"{name}.kubeconfig"
            path.touch(mode=0o600)
            path.write_text(text)
            out[name] = path
        return out

    # ------------------------------------------------------------------------------------------ traffic, kills

    def start_traffic(self) -> None:
        """The regional LBs, a recursive resolver, the client's namespace and the control socket the drill's kill
        and restore commands talk to (traffic.py, control.py)."""
        from tests.support.realfleet.control import ControlServer
        from tests.support.realfleet.traffic import HealthCheck, RegionalLB, Resolver

        assert self.config is not None and self.rendered is not None and self.config.dns is not None
        lbs = {o["name"].removeprefix("fleet-"): o["ipv4"]
               for o in self.rendered.outputs("hcloud:index/loadBalancer:LoadBalancer")
               if o.get("name", "").startswith("fleet-")}
        self.lbs: dict[str, Any] = {}
        for member in self.config.members:
            region = self.config.regions[member.region]
            kwok = self.members[member.name]
            assert kwok.netns is not None and kwok.api is not None
            lb = RegionalLB(member.region, lbs[member.region], kwok.api, self.network, kwok.netns,
                            HealthCheck(region.health_check.interval, region.health_check.timeout,
                                        region.health_check.retries))
            lb.start()
            self.lbs[member.region] = lb
        self.resolver = Resolver(self.network, self.workdir, self.config.dns.domain, self.public_addresses())
        self.resolver_ip = self.resolver.start()
        self.client = self.network.add_namespace("client")
        self.network.write_files(self.client.name, hosts=self.names.hosts_for(_Placeholder()),  # type: ignore
                                 resolv=f"nameserver {self.resolver_ip}\noptions timeout:2 attempts:1\n")
        self.control = ControlServer(self.workdir / "control.sock", {
            "blackhole": self.blackhole_member, "heal": self.heal_member, "stop": self.stop_member,
            "start": self.start_member, "stop-server": self.stop_server, "start-server": self.start_server})
        self._mark("traffic: regional LBs, resolver, client")

    def member_namespaces(self, name: str) -> list[str]:
        kwok = self.members[name]
        assert kwok.netns is not None
        pods = [p.netns.name for p in self.pods(f"member-{name}")]
        return [kwok.netns.name, *pods]

    def blackhole_member(self, name: str) -> str:
        for ns in self.member_namespaces(name):
            self.network.blackhole(ns)
        return f"{name} black-holed"

    def heal_member(self, name: str) -> str:
        for ns in self.member_namespaces(name):
            self.network.heal(ns)
        return f"{name} healed"

    def stop_member(self, name: str) -> str:
        """The member dies whole: its control plane and its pods, with nothing to restart them."""
        self.members[name].kill()
        cluster = self.clusters.get(f"member-{name}")
        for pod in self.pods(f"member-{name}"):
            self.kubelet.stop(pod, grace=0)
        return f"{name} stopped" + (f" ({len(cluster.workloads)} workloads' pods)" if cluster else "")

    def start_member(self, name: str) -> str:
        self.members[name].restart()
        cluster = self.clusters.get(f"member-{name}")
        for workload in (cluster.workloads.values() if cluster else []):
            if workload.kind in ("Deployment", "StatefulSet", "DaemonSet"):
                for pod in list(workload.pods):
                    if pod.phase == "Terminated":
                        cluster.controllers.replace(workload, pod)  # type: ignore[union-attr]
        return f"{name} started"

    def stop_server(self, index: str) -> str:
        """Hub server n crashes: every pod bound to it dies, its addresses go silent."""
        node = self.hub_nodes[int(index)]
        stopped = []
        for pod in self.pods("host"):
            if pod.node_name == node.name:
                self.kubelet.stop(pod, grace=0)
                stopped.append(pod.name)
        self.network.blackhole(node.netns.name)
        if self.host_mirror is not None:
            self.host_mirror.down.add(node.name)
        return f"{node.name} down ({', '.join(sorted(stopped))})"

    def start_server(self, index: str) -> str:
        node = self.hub_nodes[int(index)]
        self.network.heal(node.netns.name)
        if self.host_mirror is not None:
            self.host_mirror.down.discard(node.name)
        cluster = self.clusters["host"]
        for workload in cluster.workloads.values():
            for pod in list(workload.pods):
                if pod.node_name == node.name and pod.phase == "Terminated":
                    cluster.controllers.replace(workload, pod)
        return f"{node.name} back"

    def control_command(self, action: str, name: str) -> str:
        """The shell command `hubctl drill --method command` runs to `action` `name` here."""
        import shlex

        return " ".join(shlex.quote(x) for x in ("env", f"PYTHONPATH={REPO}", python_interpreter(), "-m",
                                                   "tests.support.realfleet.control",
                                                   str(self.workdir / "control.sock"), action, name))

    # ------------------------------------------------------------------------------------------ teardown

    def close(self) -> None:
        for part in ("control", "resolver"):
            with contextlib.suppress(Exception):
                getattr(self, part).close() if part == "control" else getattr(self, part).stop()
        for lb in getattr(self, "lbs", {}).values():
            lb.close()
        if self.host_mirror is not None:
            self.host_mirror.close()
        self.kubelet.close()
        for member in self.members.values():
            member.stop()
        for standin in (self.host, self.capi):
            if standin is not None:
                standin.stop()
        self.network.close()
        remove_workdir(self.workdir)


def remove_workdir(workdir: Path, mounts: Path = Path("/proc/self/mounts")) -> bool:
    """Remove what the run wrote (etcd data, pod files, logs: hundreds of MB), unless something is still mounted
    under it: removing through a mount would delete what it shows. True when it is gone."""
    prefix = str(workdir.resolve()) + "/"
    with open(mounts) as fh:
        if any(line.split()[1].startswith(prefix) for line in fh if len(line.split()) > 1):
            return False
    shutil.rmtree(workdir, ignore_errors=True)
    return not workdir.exists()


class _NodeView:
    """What `Names.hosts_for` reads of a pod, for a hub server's own /etc/hosts (host cluster, no namespace)."""

    def __init__(self, node: str) -> None:
        self.node = node

    class cluster:  # noqa: N801 - mimics Pod.cluster
        name = "host"

    namespace = ""


class _Placeholder:
    """The operator's namespace resolves only the fixed names (no cluster's Services)."""

    class cluster:  # noqa: N801 - mimics Pod.cluster
        name = "operator"

    namespace = "default"


def _established(api: Api, crd: dict[str, Any]) -> bool:
    live = api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
    return bool(live) and any(c["type"] == "Established" and c["status"] == "True"
                              for c in (live.get("status") or {}).get("conditions") or [])


def urlhost(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""


def sitepackages() -> str:
    import site

    return ":".join(site.getsitepackages())


def third_party_crds(kinds: set[str]) -> list[dict[str, Any]]:
    """The CRDs a host cluster with the Prometheus Operator has (the workspace's upstream copies)."""
    from tests.support.schemas import upstream_crds_dir

    files = {"PodMonitor": "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
             "PrometheusRule": "prometheus-operator/monitoring.coreos.com_prometheusrules.yaml"}
    out = []
    for kind in sorted(kinds):
        doc = yaml.safe_load((upstream_crds_dir() / files[kind]).read_text())
        out.append(doc)
    return out


_ = rpc  # the SDK's secret markers come through hubctl.mocks.SECRET_SIG
__all__ = ["SKIPPED", "RealFleet", "RealMocks", "dependency_order", "kubeconfig_text"]
