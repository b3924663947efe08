"""A fleet on loopback for `hubctl doctor`: fake API servers (tests/support/fake_apiserver.py) for the hub's host
cluster, the karmada-apiserver and each member, holding what a healthy fleet of a stack shows, and one method per
fault of tests/support/doctor_faults.py that leaves behind what that fault leaves in a real fleet.

Healthy means what the stack declares, running: nodes Ready, etcd's members and every Deployment ready, APIServices
Available, leader leases held and fresh, Clusters Ready with their Kubernetes version, the Pull agent's leases fresh
and its Deployment at the pinned version, bindings scheduled and applied, Works applied, quotas with room, the DNS
failover controller publishing every region, certificates a year from expiry. `renew()` stamps the leases with the
current time (as their holders would) right before doctor reads.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from components import versions
from components.config import FleetConfig
from components.karmada import flags
from components.traffic import failover_docs
from hubctl.doctor.checks import Expect, expect_from
from tests.support.fake_apiserver import FakeApiServer, Target, User
from tests.support.loopback import tls_material
from tests.support.rbac import ALLOW_ALL

ADMIN = "admin"
TOKEN = "doctor-admin-token"
NS = flags.NAMESPACE
WEBHOOK_REFUSAL = ('Internal error occurred: failed calling webhook "propagationpolicy.karmada.io": failed to call '
                   'webhook: Post "https://karmada-webhook.karmada-system.svc:443/mutate-propagationpolicy?timeout=3s":'
                   ' dial tcp 10.43.12.7:443: connect: connection refused')
WEBHOOK_RESOURCES = {"propagationpolicies", "clusterpropagationpolicies", "overridepolicies", "resourcebindings",
                     "works", "federatedresourcequotas"}


def certificate_pem(cn: str, days: float) -> str:
    """A self-signed certificate for `cn` that expires in `days` (what doctor reads of a PKI Secret)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=days)).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _time(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _cond(kind: str, status: str = "True", reason: str = "", message: str = "",
          since: str = "2026-11-30T00:00:00Z") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason or kind, "message": message,
            "lastTransitionTime": since}


class DoctorFleet:
    def __init__(self, tmp: Path, config: FleetConfig, members: list[Any], tenants: list[Any]) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        self.config = config
        self.members = {m.name: m for m in members}
        self.tenants = tenants
        self.expect: Expect = expect_from(config, members, tenants)
        self.tls = tls_material(tmp, clients=[ADMIN])
        self.webhook_down = False

        def api(client_ca: bool = False) -> FakeApiServer:
            return FakeApiServer(self.tls["server.crt"], self.tls["server.key"],
                                 client_ca=self.tls["ca"] if client_ca else None, tokens={TOKEN: User(ADMIN)},
                                 grants={ADMIN: ALLOW_ALL})

        self.host = api()
        self.karmada = api(client_ca=True)
        self.member_api = {name: api() for name in self.members}
        self.karmada.admission.append(self._webhook)
        self.healthy()

    # ------------------------------------------------------------------------------------- the healthy fleet

    def _webhook(self, verb: str, target: Target, body: Any, user: User) -> tuple[int, Any] | None:
        if self.webhook_down and target.resource in WEBHOOK_RESOURCES:
            return 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                         "reason": "InternalError", "message": WEBHOOK_REFUSAL}
        return None

    def _pod(self, name: str, app: str, node: str, ready: bool = True) -> dict[str, Any]:
        status: dict[str, Any] = {"phase": "Running", "conditions": [_cond("Ready", "True" if ready else "False",
                                                                           "" if ready else "ContainersNotReady")]}
        status["containerStatuses"] = [{"name": app, "ready": ready, "restartCount": 0 if ready else 7,
                                        "state": {"running": {}} if ready else
                                        {"waiting": {"reason": "CrashLoopBackOff"}}}]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/name": app}},
                "spec": {"nodeName": node}, "status": status}

    def healthy(self) -> None:
        h, k = self.host, self.karmada
        assert self.config.hub is not None
        servers = [f"{self.config.hub.name}-cp-{i}" for i in range(self.config.hub.servers)]
        for server in servers:
            h.put("", "nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": server},
                                "status": {"conditions": [_cond("Ready", reason="KubeletReady")]}})
        replicas = self.expect.etcd_replicas
        h.put("apps", "statefulsets", {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                       "metadata": {"name": "etcd", "namespace": NS},
                                       "spec": {"replicas": replicas}, "status": {"readyReplicas": replicas}})
        for i in range(replicas):
            h.put("", "pods", self._pod(f"etcd-{i}", "etcd", servers[i % len(servers)]))
        for name, count in self.expect.deployments.items():
            h.put("apps", "deployments", {"apiVersion": "apps/v1", "kind": "Deployment",
                                          "metadata": {"name": name, "namespace": NS},
                                          "spec": {"replicas": count},
                                          "status": {"replicas": count, "readyReplicas": count}})
            for i in range(count):
                h.put("", "pods", self._pod(f"{name}-5d9c7-{i}", name, servers[i % len(servers)]))
        self._certificates()
        self._dns()
        for name in ("v1.", "v1.apps", "v1.coordination.k8s.io"):
            k.put("apiregistration.k8s.io", "apiservices", {
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
                "spec": {"groupPriorityMinimum": 18000, "versionPriority": 1},
                "status": {"conditions": [_cond("Available", reason="Local")]}})
        for name in self.expect.apiservices:
            group, version = name.split(".", 1)[1], name.split(".", 1)[0]
            service = "karmada-search" if "search" in name else "karmada-aggregated-apiserver"
            k.put("apiregistration.k8s.io", "apiservices", {
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
                "spec": {"group": group, "version": version, "service": {"name": service, "namespace": NS}},
                "status": {"conditions": [_cond("Available", reason="Passed", message="all checks passed")]}})
        for m in self.members.values():
            k.put("cluster.karmada.io", "clusters", {
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": m.name},
                "spec": {"syncMode": m.sync_mode, "region": m.region, "taints": []},
                "status": {"kubernetesVersion": m.kubernetes_version,
                           "conditions": [_cond("Ready", reason="ClusterReady", message="cluster is healthy")]}})
            if m.sync_mode == "Pull":
                self.member_api[m.name].put("apps", "deployments", self._agent(m.name, self.config.karmada.version))
        for tenant in self.tenants:
            self._binding(tenant.namespace, f"{tenant.name}-web-deployment", sorted(self.members))
            if tenant.quota is not None:
                k.put("policy.karmada.io", "federatedresourcequotas", {
                    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "FederatedResourceQuota",
                    "metadata": {"name": tenant.name, "namespace": tenant.namespace},
                    "spec": {"overall": dict(tenant.quota.overall)},
                    "status": {"overall": dict(tenant.quota.overall),
                               "overallUsed": {r: "1" if r == "cpu" else "1Gi" for r in tenant.quota.overall}}})
        self.renew()

    def _agent(self, member: str, version: str, replicas: int = 2, ready: int = 2) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "karmada-agent", "namespace": "karmada-system"},
                "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                    {"name": "karmada-agent", "image": versions.karmada_image("karmada-agent", version)}]}}},
                "status": {"replicas": replicas, "readyReplicas": ready}}

    def _binding(self, namespace: str, name: str, clusters: list[str], evicting: str | None = None,
                 scheduled: dict[str, Any] | None = None) -> None:
        spec: dict[str, Any] = {"clusters": [{"name": c, "replicas": 1} for c in clusters]}
        if evicting:
            spec["gracefulEvictionTasks"] = [{"fromCluster": evicting, "reason": "TaintUntolerated",
                                              "producer": "taint-manager", "purgeMode": "Gracefully",
                                              "creationTimestamp": _time(dt.datetime.now(dt.UTC))}]
        conditions = [scheduled or _cond("Scheduled", reason="Success", message="Binding has been scheduled"),
                      _cond("FullyApplied", reason="FullyAppliedSuccess")]
        self.karmada.put("work.karmada.io", "resourcebindings", {
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec,
            "status": {"conditions": conditions,
                       "aggregatedStatus": [{"clusterName": c, "applied": True} for c in clusters]}})
        for c in clusters:
            self.karmada.put("work.karmada.io", "works", {
                "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": f"{name}-{c}"[:63], "namespace": f"karmada-es-{c}"},
                "status": {"conditions": [_cond("Applied", reason="AppliedSuccessful")]}})

    def _certificates(self, days: float = 365) -> None:
        data = {"ca.crt": certificate_pem("karmada", 3650)}
        for name in ("apiserver", "webhook", "aggregated-apiserver"):
            data[f"{name}.crt"] = certificate_pem(f"karmada-{name}", days)
        data["apiserver.key"] = "-----BEGIN PRIVATE KEY-----\nnot read by doctor\n-----END PRIVATE KEY-----\n"
        self.host.put("", "secrets", {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                      "metadata": {"name": "karmada-apiserver-pki", "namespace": NS},
                                      "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})

    def _dns(self) -> None:
        if self.config.dns is None:
            return
        host = f"shop.{self.config.dns.domain}"
        self.host.put("externaldns.k8s.io", "dnsendpoints", {
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": host, "namespace": failover_docs.NAMESPACE,
                         "annotations": {"karmada-hub.io/withdrawn": "{}"}},
            "spec": {"endpoints": [{"dnsName": host, "recordType": "A", "targets": ["192.0.2.1", "192.0.2.2"]}]}})
        obs = {f"{host} {r}": [0, 12, ""] for r in sorted(self.config.regions)}
        for i in range(self.config.hub.servers if self.config.hub else 3):
            self.host.put("coordination.k8s.io", "leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": f"traffic-failover-vantage-cp-{i}", "namespace": failover_docs.NAMESPACE,
                             "annotations": {"karmada-hub.io/observations": json.dumps({"obs": obs})}},
                "spec": {"holderIdentity": f"cp-{i}", "renewTime": _micro(dt.datetime.now(dt.UTC))}})

    def renew(self, stale: tuple[str, ...] = ()) -> None:
        """Stamp every leader lease and Pull cluster lease as renewed now, except those in `stale` (kept, or made,
        five minutes old)."""
        now = dt.datetime.now(dt.UTC)
        old = now - dt.timedelta(minutes=5)
        acquired = _micro(now - dt.timedelta(hours=3))
        pull = [m for m in self.members.values() if m.sync_mode == "Pull"]
        leases = [(NS, name, 15) for name in self.expect.leases]
        leases += [(NS, f"karmada-agent-{m.name}", 15) for m in pull]
        leases += [(flags.CLUSTER_NAMESPACE, m.name, self.expect.cluster_lease_seconds) for m in pull]
        for namespace, name, duration in leases:
            when = old if name in stale else now
            self.karmada.put("coordination.k8s.io", "leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"holderIdentity": f"{name}-7f6d9c-x2k4p_1b2c3d", "leaseDurationSeconds": duration,
                         "acquireTime": acquired, "renewTime": _micro(when)}})

    # --------------------------------------------------------------------------------------------- faults

    def inject(self, key: str, member: str | None = None, tenant: str | None = None) -> None:
        {"healthy": lambda: None,
         "webhook-stopped": self.stop_webhook,
         "etcd-member-down": self.etcd_member_down,
         "member-black-holed": lambda: self.black_hole(member or ""),
         "agent-stopped": lambda: self.stop_agent(member or ""),
         "tenant-over-quota": lambda: self.over_quota(tenant or ""),
         "skewed-agent": lambda: self.skew_agent(member or "", "v1.16.0")}[key]()

    def stop_webhook(self) -> None:
        """karmada-webhook scaled to 0: its pods are gone, the fail-closed webhooks cannot be called."""
        self.webhook_down = True
        dep = self.host.get("apps", "deployments", NS, "karmada-webhook")
        assert dep is not None
        dep["spec"]["replicas"], dep["status"] = 0, {"replicas": 0}
        self.host.put("apps", "deployments", dep)
        for pod in self.host.items("", "pods", NS):
            if pod["metadata"]["labels"]["app.kubernetes.io/name"] == "karmada-webhook":
                self.host.remove("", "pods", NS, pod["metadata"]["name"])

    def etcd_member_down(self, index: int = 1) -> None:
        pod = self.host.get("", "pods", NS, f"etcd-{index}")
        assert pod is not None
        self.host.put("", "pods", self._pod(pod["metadata"]["name"], "etcd", pod["spec"]["nodeName"], ready=False))
        sts = self.host.get("apps", "statefulsets", NS, "etcd")
        assert sts is not None
        sts["status"]["readyReplicas"] -= 1
        self.host.put("apps", "statefulsets", sts)

    def _not_ready(self, member: str, status: str, reason: str, message: str) -> None:
        cluster = self.karmada.get("cluster.karmada.io", "clusters", "", member)
        assert cluster is not None
        now = _time(dt.datetime.now(dt.UTC))
        cluster["status"]["conditions"] = [_cond("Ready", status, reason, message, since=now)]
        cluster["spec"]["taints"] = [
            {"key": "cluster.karmada.io/not-ready" if status == "False" else "cluster.karmada.io/unreachable",
             "effect": "NoSchedule", "timeAdded": now},
            {"key": "fleet.karmada-hub.io/not-ready", "effect": "NoExecute", "timeAdded": now}]
        self.karmada.put("cluster.karmada.io", "clusters", cluster)

    def _evict(self, member: str) -> None:
        others = sorted(n for n in self.members if n != member)
        for tenant in self.tenants:
            self._binding(tenant.namespace, f"{tenant.name}-web-deployment", others, evicting=member)

    def black_hole(self, member: str) -> None:
        """Every packet to the member dropped: its API is dark from everywhere, Karmada marks it not Ready and
        taints it, the taint evicts, the failover controller withdraws its region."""
        self.member_api[member].down = True
        self._not_ready(member, "False", "ClusterNotReachable", "cluster is not reachable")
        self._evict(member)
        region = self.members[member].region
        if self.config.dns is not None and self.expect.region_members(region) == [member]:
            host = f"shop.{self.config.dns.domain}"
            ep = self.host.get("externaldns.k8s.io", "dnsendpoints", failover_docs.NAMESPACE, host)
            assert ep is not None
            ep["metadata"]["annotations"]["karmada-hub.io/withdrawn"] = json.dumps(
                {region: _time(dt.datetime.now(dt.UTC))})
            self.host.put("externaldns.k8s.io", "dnsendpoints", ep)
            for lease in self.host.items("coordination.k8s.io", "leases", failover_docs.NAMESPACE):
                data = json.loads(lease["metadata"]["annotations"]["karmada-hub.io/observations"])
                data["obs"][f"{host} {region}"] = [9, 0, "timed out"]
                lease["metadata"]["annotations"]["karmada-hub.io/observations"] = json.dumps(data)
                self.host.put("coordination.k8s.io", "leases", lease)

    def stop_agent(self, member: str) -> None:
        """The Pull member's karmada-agent scaled to 0: its leases go stale, the controller-manager marks the
        Cluster Unknown and taints it; the member itself and its API are fine."""
        self.member_api[member].put("apps", "deployments", self._agent(member, self.config.karmada.version, 0, 0))
        self.renew(stale=(member, f"karmada-agent-{member}"))
        self._not_ready(member, "Unknown", "ClusterStatusUnknown", "Cluster status controller stopped posting "
                        "cluster status.")
        self._evict(member)

    def over_quota(self, tenant: str) -> None:
        t = next(t for t in self.tenants if t.name == tenant)
        assert t.quota is not None
        quota = self.karmada.get("policy.karmada.io", "federatedresourcequotas", t.namespace, tenant)
        assert quota is not None
        quota["status"]["overallUsed"] = dict(t.quota.overall)
        self.karmada.put("policy.karmada.io", "federatedresourcequotas", quota)
        self._binding(t.namespace, f"{tenant}-batch-deployment", [], scheduled=_cond(
            "Scheduled", "False", "QuotaExceeded", "0/2 clusters are available: exceeded FederatedResourceQuota "
            f"{tenant}: cpu requested 4, used 40, limited 40"))

    def skew_agent(self, member: str, version: str) -> None:
        self.member_api[member].put("apps", "deployments", self._agent(member, version))

    # ----------------------------------------------------------------------------------------- kubeconfigs

    def kubeconfigs(self, directory: Path, members: bool = True) -> Path:
        """karmada.kubeconfig (admin client certificate), hub.kubeconfig and <member>.kubeconfig (token)."""
        directory.mkdir(parents=True, exist_ok=True)
        ca = base64.b64encode(Path(self.tls["ca"]).read_bytes()).decode()

        def write(name: str, server: str, user: dict[str, Any]) -> None:
            doc = {"apiVersion": "v1", "kind": "Config", "current-context": name,
                   "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca}}],
                   "users": [{"name": name, "user": user}],
                   "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}
            (directory / f"{name}.kubeconfig").write_text(yaml.safe_dump(doc))

        write("karmada", self.karmada.url, {
            "client-certificate-data": base64.b64encode(Path(self.tls[f"{ADMIN}.crt"]).read_bytes()).decode(),
            "client-key-data": base64.b64encode(Path(self.tls[f"{ADMIN}.key"]).read_bytes()).decode()})
        write("hub", self.host.url, {"token": TOKEN})
        if members:
            for name, api in self.member_api.items():
                write(name, api.url, {"token": TOKEN})
        return directory

    def close(self) -> None:
        for api in (self.host, self.karmada, *self.member_api.values()):
            api.close()
