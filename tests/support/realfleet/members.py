"""Member clusters for real: kwokctl's binary runtime in a network namespace of the member's own.

Each member is what kwok's authors built kwokctl for (and Karmada's own performance setup uses): the pinned etcd,
kube-apiserver (RBAC and admission on), kube-controller-manager and kube-scheduler as processes, and the kwok
controller playing the nodes' kubelets (Node heartbeats and leases, pods Running and Ready with an address), so a
Deployment really reaches its ready replicas. The API server listens on 6443 in the member's namespace, its
certificate carries the member's API name (`apiEndpoint` of the stack), which every other namespace's /etc/hosts
maps to the member's address. kwokctl makes its own PKI; the admin kubeconfig it writes is what the stand-in CAPI
cluster hands the hub, as CAPI's `<cluster>-kubeconfig` Secret would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from tests.support.kubelet.api import Api, wait_for
from tests.support.kubelet.network import Netns, Network
from upstream.build import binary


class MemberError(RuntimeError):
    pass


def _bin(name: str) -> Path:
    path = binary(name)
    if path is None:
        raise MemberError(f"{name} is not built: run `make upstream`")
    return path


def fake_node(name: str, zone: str, region: str, cpu: str = "32", memory: str = "256Gi") -> dict[str, Any]:
    """A node kwok plays (hack/performance/kwok-node.yaml of karmada v1.18.2, with topology labels)."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                   "type": "kwok", "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": region}},
        "spec": {"taints": []},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake"}}}


@dataclass
class KwokMember:
    name: str
    api_endpoint: str
    """The member's `apiEndpoint` in the stack, e.g. https://dev-fsn1-a.k8s.dev.example.com:6443."""
    region: str
    zones: tuple[str, ...]
    network: Network
    workdir: Path
    nodes: int = 2
    netns: Netns | None = None
    api: Api | None = None
    pods_netns: list[str] = field(default_factory=list)
    """Namespaces of the member's pods (Pull agents): black-holed with the member."""

    def __post_init__(self) -> None:
        self.dir = self.workdir / "members" / self.name
        self.host = urlsplit(self.api_endpoint).hostname or ""
        self.port = urlsplit(self.api_endpoint).port or 6443

    def _kwokctl(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        assert self.netns is not None
        kube_bin = _bin("kubectl").parent
        env = {"PATH": f"{kube_bin}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(self.dir),
               "KWOK_WORKDIR": str(self.dir / "kwok")}
        return subprocess.run(self.network.exec_argv(self.netns.name, [str(_bin("kwokctl")), "--name", self.name,
                                                                        *args]),
                              capture_output=True, text=True, timeout=timeout, env=env)

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.netns = self.network.add_namespace(f"member {self.name}")
        config = self.dir / "kwokctl.yaml"
        config.write_text(yaml.safe_dump({
            "kind": "KwokctlConfiguration", "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "options": {"kubeApiserverCertSANs": [self.host, self.netns.ip]}}))
        kube = _bin("kube-apiserver").parent
        res = self._kwokctl(
            "--config", str(config), "create", "cluster", "--runtime", "binary",
            "--kube-apiserver-port", str(self.port), "--kube-authorization", "--kube-admission",
            "--kube-apiserver-binary", str(kube / "kube-apiserver"),
            "--kube-controller-manager-binary", str(kube / "kube-controller-manager"),
            "--kube-scheduler-binary", str(kube / "kube-scheduler"), "--kwok-controller-binary", str(_bin("kwok")),
            "--etcd-binary", str(_bin("etcd")), "--wait", "3m", timeout=420)
        for pid in self.pids():
            self.network.ledger.add("pgids", str(pid))
        if res.returncode != 0:
            raise MemberError(f"kwokctl create cluster {self.name} failed: {res.stderr[-2000:]}")
        self.kubeconfig = self._admin_kubeconfig()
        self.api = Api.from_kubeconfig(self.kubeconfig, pins={self.host: self.netns.ip})
        wait_for(f"member {self.name} /readyz", lambda: self.api.healthz(), 180, 1)  # type: ignore[union-attr]
        for i in range(self.nodes):
            zone = self.zones[i % len(self.zones)]
            self.api.apply(fake_node(f"{self.name}-node-{i}", zone, self.region))
        wait_for(f"member {self.name} nodes Ready", self._nodes_ready, 120, 1)

    def _nodes_ready(self) -> bool:
        assert self.api is not None
        nodes = self.api.list("v1", "Node")
        return len(nodes) == self.nodes and all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions", []))
            for n in nodes)

    def _admin_kubeconfig(self) -> str:
        """kwokctl's admin kubeconfig, pointed at the member's API name instead of 127.0.0.1."""
        doc = yaml.safe_load((self.dir / "kwok" / "clusters" / self.name / "kubeconfig.yaml").read_text())
        pki = self.dir / "kwok" / "clusters" / self.name / "pki"
        import base64

        def data(path: str) -> str:
            text = Path(path) if Path(path).is_absolute() else pki / path
            return base64.b64encode(text.read_bytes()).decode()

        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        for key in ("certificate-authority", "client-certificate", "client-key"):
            holder = cluster if key == "certificate-authority" else user
            if key in holder:
                holder[f"{key}-data"] = data(holder.pop(key))
        cluster["server"] = f"https://{self.host}:{self.port}"
        cluster.pop("insecure-skip-tls-verify", None)
        for name, ctx in ((c["name"], c) for c in doc["contexts"]):
            ctx["name"] = name
        return yaml.safe_dump(doc)

    def pids(self) -> list[int]:
        out = []
        for pid_file in (self.dir / "kwok" / "clusters" / self.name / "pids").glob("*.pid"):
            with contextlib.suppress(ValueError, OSError):
                out.append(int(pid_file.read_text().strip()))
        return out

    def kill(self) -> None:
        """Every process of the member's control plane and its nodes killed at once (a dead member)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def restart(self) -> None:
        res = self._kwokctl("start", "cluster", "--timeout", "3m", timeout=240)
        if res.returncode != 0:
            raise MemberError(f"kwokctl start cluster {self.name} failed: {res.stderr[-2000:]}")
        for pid in self.pids():
            self.network.ledger.add("pgids", str(pid))
        wait_for(f"member {self.name} /readyz", lambda: self.api.healthz(), 180, 1)  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.netns is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._kwokctl("delete", "cluster", timeout=60)
        self.kill()
        time.sleep(0.2)
