"""The status refresher (agents/status_refresher.py): its decisions, and the real program against a fake
karmada-apiserver that serves TLS with the certificates the dev plan renders.

The fake server uses the rendered karmada-apiserver serving cert and requires a client cert from the
rendered Karmada CA; the refresher uses the rendered client Secret. Every request it makes is checked
against the ClusterRole the plan grants its user, so a call the RBAC would refuse fails here.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents import status_refresher as sr
from components.karmada import flags, manifests
from components.traffic import refresher_docs as docs
from tests.support import agent_pod
from tests.support.rendered import find, secret_files
from tests.support.schemas import validate_any
from tests.support.tools import REPO

INGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"namespace": "shop", "name": "web"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "shop", "name": "api"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "shop", "name": "web"}}


def _cluster(name: str, ready: str | None) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


def _work(uid: str, *manifests_: dict[str, Any], terminating: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": f"work-{uid}"}
    if terminating:
        meta["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    return {"metadata": meta, "spec": {"workload": {"manifests": list(manifests_)}}}


# ----------------------------------------------------------------------------------------- decisions


def test_unready_means_anything_but_ready_true() -> None:
    clusters = {"items": [_cluster("a", "True"), _cluster("b", "False"), _cluster("c", "Unknown"),
                          _cluster("d", None)]}
    assert sr.unready_clusters(clusters) == ["b", "c", "d"]


def test_only_terminating_works_with_address_carrying_kinds_count() -> None:
    works = [
        _work("u1", INGRESS, DEPLOYMENT),
        _work("u2", SERVICE),
        _work("u3", INGRESS, terminating=False),
        _work("u4", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        _work("u5", {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "no-ns"}}),
    ]
    stuck = sr.stuck_works(works)
    assert stuck == {
        sr.TemplateRef("networking.k8s.io/v1", "Ingress", "shop", "web"): {"u1"},
        sr.TemplateRef("v1", "Service", "shop", "api"): {"u2"},
    }
    assert sr.TemplateRef("v1", "Service", "shop", "api").path == "/api/v1/namespaces/shop/services/api"


def test_token_names_the_set_of_works_not_their_order() -> None:
    assert sr.refresh_token(["a", "b"]) == sr.refresh_token(["b", "a", "a"])
    assert sr.refresh_token(["a"]) != sr.refresh_token(["a", "b"])
    assert len(sr.refresh_token(["a"])) == 16
    assert sr.annotation_patch("t") == {"metadata": {"annotations": {sr.ANNOTATION: "t"}}}


# ------------------------------------------------------------------------------ rendered documents


def test_rendered_refresher_objects_validate_and_fit_together(rendered_dev: Any) -> None:
    deploy = find(rendered_dev, "host", "Deployment", docs.NAME)
    configmap = find(rendered_dev, "host", "ConfigMap", docs.CONFIGMAP)
    secret = find(rendered_dev, "host", "Secret", docs.CERT_SECRET)
    find(rendered_dev, "host", "PodDisruptionBudget", docs.NAME)
    binding = find(rendered_dev, "karmada", "ClusterRoleBinding", "karmada-hub:status-refresher")
    for obj in (deploy, configmap, secret, binding):
        validate_any(obj)
    assert configmap["data"][docs.SCRIPT_KEY] == (REPO / "agents" / "status_refresher.py").read_text()
    pod = deploy["spec"]["template"]["spec"]
    assert deploy["spec"]["replicas"] == 2
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    args = dict(a.removeprefix("--").split("=", 1) for a in pod["containers"][0]["args"])
    assert args["period"] == "15"  # dns.refreshSeconds in the dev stack
    assert args["server"] == flags.apiserver_url()
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(secret_files(secret)["tls.crt"].encode())
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    assert cn == docs.USER == binding["subjects"][0]["name"]


def test_a_script_change_rolls_the_pods() -> None:
    a = docs.deployment(15, "print('a')")
    b = docs.deployment(15, "print('b')")
    key = "karmada-hub.io/script-sha256"
    checksums = [d["spec"]["template"]["metadata"]["annotations"][key] for d in (a, b)]
    assert checksums[0] != checksums[1]


# ------------------------------------------------------------------------------- fake karmada-apiserver


def _rbac_allows(rules: list[dict[str, Any]], method: str, path: str) -> bool:
    """The ClusterRole check for the URL shapes the refresher uses."""
    parts = path.split("?")[0].strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    if rest and rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource, named = rest[0], len(rest) > 1
    verb = {"GET": "get" if named else "list", "PATCH": "patch"}[method]
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


class FakeKarmada:
    """Clusters, Works and templates in memory; TLS with client certs required; RBAC enforced."""

    def __init__(self, tmp: Path, server_pki: dict[str, str], rules: list[dict[str, Any]]) -> None:
        self.clusters: list[dict[str, Any]] = []
        self.works: dict[str, list[dict[str, Any]]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, str]] = []
        self.denied: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorize(self) -> bool:
                peer = self.connection.getpeercert()
                user = dict(x[0] for x in peer["subject"])["commonName"]
                fake.requests.append((user, self.command, self.path))
                if user != docs.USER or not _rbac_allows(rules, self.command, self.path):
                    fake.denied.append(f"{user} {self.command} {self.path}")
                    self._reply(403, {"kind": "Status", "code": 403})
                    return False
                return True

            def do_GET(self) -> None:
                if not self._authorize():
                    return
                if self.path == sr.CLUSTERS_PATH:
                    return self._reply(200, {"items": fake.clusters})
                for ns, works in fake.works.items():
                    if self.path == sr.WORKS_PATH.format(namespace=ns):
                        return self._reply(200, {"items": works})
                if self.path in fake.templates:
                    return self._reply(200, fake.templates[self.path])
                if self.path.startswith("/apis/work.karmada.io/"):
                    return self._reply(200, {"items": []})
                self._reply(404, {"kind": "Status", "code": 404})

            def do_PATCH(self) -> None:
                if not self._authorize():
                    return
                assert self.headers["Content-Type"] == "application/merge-patch+json"
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                obj = fake.templates[self.path]
                obj.setdefault("metadata", {}).setdefault("annotations", {}).update(body["metadata"]["annotations"])
                self._reply(200, obj)

            def log_message(self, *args: Any) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(server_pki["crt"], server_pki["key"])
        context.load_verify_locations(server_pki["ca"])
        context.verify_mode = ssl.CERT_REQUIRED
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def patches(self) -> list[str]:
        return [p for _, m, p in self.requests if m == "PATCH"]


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.fixture
def pki(rendered_dev: Any, tmp_path: Path) -> dict[str, dict[str, str]]:
    """Server files from the rendered karmada-apiserver Secret, client files from the refresher's Secret."""
    api = secret_files(find(rendered_dev, "host", "Secret", "karmada-apiserver" + manifests.PKI_SECRET_SUFFIX))
    client = secret_files(find(rendered_dev, "host", "Secret", docs.CERT_SECRET))
    return {
        "server": {"crt": _write(tmp_path / "apiserver.crt", api["apiserver.crt"]),
                   "key": _write(tmp_path / "apiserver.key", api["apiserver.key"]),
                   "ca": _write(tmp_path / "server-ca.crt", api["ca.crt"])},
        "client": {"crt": _write(tmp_path / "tls.crt", client["tls.crt"]),
                   "key": _write(tmp_path / "tls.key", client["tls.key"]),
                   "ca": _write(tmp_path / "ca.crt", client["ca.crt"])},
    }


@pytest.fixture
def fake(rendered_dev: Any, pki: dict[str, dict[str, str]], tmp_path: Path) -> Iterator[FakeKarmada]:
    role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:status-refresher")
    server = FakeKarmada(tmp_path, pki["server"], role["rules"])
    ingress_path = sr.TemplateRef("networking.k8s.io/v1", "Ingress", "shop", "web").path
    server.clusters = [_cluster("dev-fsn1-a", "False"), _cluster("dev-hel1-a", "True")]
    server.works = {
        "karmada-es-dev-fsn1-a": [_work("dead-1", INGRESS), _work("live-1", SERVICE, terminating=False)],
        "karmada-es-dev-hel1-a": [_work("hel-1", INGRESS)],  # terminating on a Ready cluster: left to Karmada
    }
    server.templates = {ingress_path: {**INGRESS, "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.43"}]}}}}
    yield server
    server.httpd.shutdown()


def test_reconcile_refreshes_once_per_set_of_stuck_works(fake: FakeKarmada, pki: dict[str, dict[str, str]]) -> None:
    client = pki["client"]
    api = sr.Client(fake.url, client["ca"], cert_file=client["crt"], key_file=client["key"])
    patched = sr.reconcile(api)
    ingress = sr.TemplateRef("networking.k8s.io/v1", "Ingress", "shop", "web")
    assert patched == [(ingress, sr.refresh_token(["dead-1"]))]
    assert fake.templates[ingress.path]["metadata"]["annotations"][sr.ANNOTATION] == sr.refresh_token(["dead-1"])
    assert sr.reconcile(api) == []  # same stuck set: nothing to do
    fake.works["karmada-es-dev-fsn1-a"].append(_work("dead-2", INGRESS))
    assert sr.reconcile(api) == [(ingress, sr.refresh_token(["dead-1", "dead-2"]))]
    assert len(fake.patches()) == 2
    assert not fake.denied, fake.denied
    assert {user for user, _, _ in fake.requests} == {docs.USER}
    # the Ready cluster's namespace is never listed
    assert not [p for _, _, p in fake.requests if "karmada-es-dev-hel1-a" in p]


def test_a_missing_template_is_skipped(fake: FakeKarmada, pki: dict[str, dict[str, str]]) -> None:
    fake.templates.clear()
    client = pki["client"]
    assert sr.reconcile(sr.Client(fake.url, client["ca"], cert_file=client["crt"], key_file=client["key"])) == []


def test_the_program_runs_with_its_rendered_command_line(fake: FakeKarmada, pki: dict[str, dict[str, str]],
                                                         rendered_dev: Any, tmp_path: Path) -> None:
    """The script as the pod runs it: the rendered command (`python3 -u <script>`) from the rendered ConfigMap
    mounted as the kubelet does (so its helper must be in it), the rendered args with the server and file
    paths pointed at the fake and the temporary files; healthz turns 200 after a good pass."""
    deploy = find(rendered_dev, "host", "Deployment", docs.NAME)
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    command, env = agent_pod.prepare(rendered_dev, "host", pod, tmp_path / "script")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    replace = {"--server": fake.url, "--ca-file": pki["client"]["ca"], "--cert-file": pki["client"]["crt"],
               "--key-file": pki["client"]["key"], "--period": "1", "--health-port": str(port)}
    args = [f"{a.split('=', 1)[0]}={replace[a.split('=', 1)[0]]}" for a in container["args"]]
    assert container["command"][:2] == ["python3", "-u"]
    proc = subprocess.Popen([*command, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        healthy = False
        while time.monotonic() < deadline and not (healthy and fake.patches()):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                    healthy = resp.status == 200
            except OSError:
                pass
            time.sleep(0.2)
        assert healthy and fake.patches(), "no healthy pass with a patch within 20 s"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert "refreshed Ingress shop/web for unready cluster dev-fsn1-a" in out
    assert not fake.denied, fake.denied
