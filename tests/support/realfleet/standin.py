"""Real control planes standing in for what the tests cannot run: the hub's k3s API and CAPI's management cluster.

Each is the pinned etcd and kube-apiserver (and, where the role needs controllers, kube-controller-manager with
exactly those controllers) in a network namespace of its own, with a PKI made for the test. The host stand-in runs
what k3s runs for the objects the program applies: RBAC and Node authorization, the default admission plugins
(Pod Security among them, so a namespace's `pod-security.kubernetes.io/*` labels are enforced), k3s's service
CIDR (10.43.0.0/16), service-account tokens; its kube-controller-manager runs only the controllers that do not
make pods (namespaces, garbage collection, service accounts and their tokens, the root-CA ConfigMap, ClusterRole
aggregation): pods are the process kubelet's, made from the workload objects it reads, and the status mirror
(kubelet/mirror.py) is the only writer of their Pods and of the workloads' status.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.kubelet.api import Api, wait_for
from tests.support.kubelet.network import Netns, Network
from tests.support.testpki import Pair, make_ca, make_leaf
from upstream.build import binary

HOST_CONTROLLERS = ("namespace-controller", "garbage-collector-controller", "serviceaccount-controller",
                    "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
                    "clusterrole-aggregation-controller")


class StandinError(RuntimeError):
    pass


@dataclass
class Proc:
    """A process in a namespace, its own process group, output in a log file."""

    argv: list[str]
    netns: str
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, network: Network) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(network.exec_argv(self.netns, self.argv), stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        network.ledger.add("pgids", str(self.proc.pid))

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, network: Network, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        network.ledger.remove("pgids", str(self.proc.pid))
        self.proc = None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


def kubeconfig_text(name: str, server: str, ca_pem: str, cert: Pair | None = None, token: str | None = None) -> str:
    user: dict[str, str] = {"token": token} if token else {
        "client-certificate-data": base64.b64encode(cert.cert_pem.encode()).decode() if cert else "",
        "client-key-data": base64.b64encode(cert.key_pem.encode()).decode() if cert else ""}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data":
                                                base64.b64encode(ca_pem.encode()).decode()}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": user}],
    })


@dataclass
class StandinCluster:
    """etcd + kube-apiserver (+ kube-controller-manager) in one namespace, on https://<netns ip>:6443."""

    name: str
    network: Network
    workdir: Path
    service_cidr: str = "10.43.0.0/16"
    controllers: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    ca: Pair | None = None
    """The CA that signs the serving certificate (default: one made here). The host stand-in serves with the
    program's own k3s server CA, as k3s does from the CA files cloud-init gives it."""
    client_ca: Pair | None = None
    """The CA client certificates are checked against (default: `ca`): the program's k3s client CA."""
    serving_ips: tuple[str, ...] = ()
    """More addresses the serving certificate names (the hub servers' public addresses)."""
    netns: Netns | None = None
    procs: dict[str, Proc] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dir = self.workdir / self.name
        self.pki = self.dir / "pki"

    @property
    def kubernetes_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the first address of the service CIDR."""
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    def start(self) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        self.netns = self.network.add_namespace(f"standin {self.name}")
        ip = self.netns.ip
        self.ca = self.ca or make_ca(f"{self.name}-ca")
        self.client_ca = self.client_ca or self.ca
        names = (*self.dns_names, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local")
        serving = make_leaf(self.ca, "kube-apiserver", True, names,
                            (ip, self.kubernetes_ip, "127.0.0.1", *self.serving_ips))
        self.admin = make_leaf(self.client_ca, "admin", False, orgs=("system:masters",))
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        files = {
            "ca.crt": self.ca.cert_pem, "client-ca.crt": self.client_ca.cert_pem,
            "apiserver.crt": serving.cert_pem, "apiserver.key": serving.key_pem,
            "sa.key": sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()).decode(),
            "sa.pub": sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo).decode(),
        }
        for file, pem in files.items():
            path = self.pki / file
            path.write_text(pem)
            path.chmod(0o600)
        self.server = f"https://{ip}:6443"
        (self.dir / "admin.kubeconfig").write_text(kubeconfig_text(self.name, self.server, self.ca.cert_pem,
                                                                   self.admin))
        etcd = Proc([str(_bin("etcd")), f"--data-dir={self.dir / 'etcd'}", "--listen-client-urls=http://127.0.0.1:2379",
                     "--advertise-client-urls=http://127.0.0.1:2379", "--listen-peer-urls=http://127.0.0.1:2380",
                     "--unsafe-no-fsync=true", "--log-level=warn"], self.netns.name, self.dir / "etcd.log")
        etcd.start(self.network)
        self.procs["etcd"] = etcd
        pki = self.pki
        apiserver = Proc([
            str(_bin("kube-apiserver")), "--etcd-servers=http://127.0.0.1:2379", "--bind-address=0.0.0.0",
            f"--advertise-address={ip}", "--secure-port=6443", f"--service-cluster-ip-range={self.service_cidr}",
            "--authorization-mode=Node,RBAC", f"--client-ca-file={pki / 'client-ca.crt'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--enable-admission-plugins=NodeRestriction", "--allow-privileged=true", "--anonymous-auth=false",
            "--enable-bootstrap-token-auth=true", "--profiling=false",
        ], self.netns.name, self.dir / "kube-apiserver.log")
        apiserver.start(self.network)
        self.procs["kube-apiserver"] = apiserver
        self.api = Api(self.server, self.ca.cert_pem, self.admin.cert_pem, self.admin.key_pem)
        try:
            wait_for(f"{self.name} kube-apiserver /readyz", lambda: self.api.healthz(), 180, 0.5)
        except TimeoutError:
            raise StandinError(f"{self.name} kube-apiserver not ready:\n{apiserver.tail()}") from None
        if self.controllers:
            kcm = Proc([
                str(_bin("kube-controller-manager")), f"--kubeconfig={self.dir / 'admin.kubeconfig'}",
                f"--controllers={','.join(self.controllers)}", f"--root-ca-file={pki / 'ca.crt'}",
                f"--service-account-private-key-file={pki / 'sa.key'}", "--use-service-account-credentials=false",
                "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10257",
            ], self.netns.name, self.dir / "kube-controller-manager.log")
            kcm.start(self.network)
            self.procs["kube-controller-manager"] = kcm

    def admin_kubeconfig(self, server: str | None = None) -> str:
        return kubeconfig_text(self.name, server or self.server, self.ca.cert_pem, self.admin)

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.stop(self.network)


def _bin(name: str) -> Path:
    path = binary(name)
    if path is None:
        raise StandinError(f"{name} is not built: run `make upstream`")
    return path


def wait_gone(proc: Proc, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while proc.running() and time.monotonic() < deadline:
        time.sleep(0.1)
