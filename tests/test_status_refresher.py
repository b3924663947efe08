"""The status refresher (agents/status_refresher.py): its decisions, and the real program against a fake
karmada-apiserver that serves TLS with the certificates the dev plan renders.

The fake server uses the rendered karmada-apiserver serving cert and requires a client cert from the
rendered Karmada CA; the refresher uses the rendered client Secret. Every request it makes is checked
against the ClusterRole the plan grants its user, so a call the RBAC would refuse fails here.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import status_refresher as sr
from components.karmada import flags, manifests
from components.traffic import refresher_docs as docs
from tests.support import agent_pod
from tests.support.fake_apiserver import FakeApiServer
from tests.support.rbac import Rbac
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


def _patches(fake: FakeApiServer) -> list[str]:
    return [call.path for call in fake.requests if call.method == "PATCH"]


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


def _serve(rendered_dev: Any, pki: dict[str, dict[str, str]], rules: list[dict[str, Any]] | None = None
           ) -> FakeApiServer:
    """The fake karmada-apiserver: rendered serving cert, client certs of the rendered Karmada CA required, the
    rendered ClusterRole (or `rules` in its place) and ClusterRoleBinding enforced; the fleet below in it."""
    role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:status-refresher")
    binding = find(rendered_dev, "karmada", "ClusterRoleBinding", "karmada-hub:status-refresher")
    role = {**role, "rules": role["rules"] if rules is None else rules}
    server = pki["server"]
    fake = FakeApiServer(server["crt"], server["key"], client_ca=server["ca"], require_client_cert=True,
                         rbac=Rbac([role, binding]))
    for cluster in (_cluster("dev-fsn1-a", "False"), _cluster("dev-hel1-a", "True")):
        fake.put("cluster.karmada.io", "clusters", cluster)
    for namespace, works in {
        "karmada-es-dev-fsn1-a": [_work("dead-1", INGRESS), _work("live-1", SERVICE, terminating=False)],
        "karmada-es-dev-hel1-a": [_work("hel-1", INGRESS)],  # terminating on a Ready cluster: left to Karmada
    }.items():
        for work in works:
            _put_work(fake, namespace, work)
    fake.put("networking.k8s.io", "ingresses",
             {**INGRESS, "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.43"}]}}})
    return fake


def _put_work(fake: FakeApiServer, namespace: str, work: dict[str, Any]) -> None:
    fake.put("work.karmada.io", "works", {**work, "metadata": {**work["metadata"], "namespace": namespace}})


def _ingress(fake: FakeApiServer) -> dict[str, Any]:
    obj = fake.get("networking.k8s.io", "ingresses", "shop", "web")
    assert obj is not None
    return obj


@pytest.fixture
def fake(rendered_dev: Any, pki: dict[str, dict[str, str]]) -> Iterator[FakeApiServer]:
    server = _serve(rendered_dev, pki)
    yield server
    server.close()


def test_reconcile_refreshes_once_per_set_of_stuck_works(fake: FakeApiServer, pki: dict[str, dict[str, str]]
                                                         ) -> None:
    client = pki["client"]
    api = sr.Client(fake.url, client["ca"], cert_file=client["crt"], key_file=client["key"])
    patched = sr.reconcile(api)
    ingress = sr.TemplateRef("networking.k8s.io/v1", "Ingress", "shop", "web")
    assert patched == [(ingress, sr.refresh_token(["dead-1"]))]
    assert _ingress(fake)["metadata"]["annotations"][sr.ANNOTATION] == sr.refresh_token(["dead-1"])
    assert sr.reconcile(api) == []  # same stuck set: nothing to do
    _put_work(fake, "karmada-es-dev-fsn1-a", _work("dead-2", INGRESS))
    assert sr.reconcile(api) == [(ingress, sr.refresh_token(["dead-1", "dead-2"]))]
    assert len(_patches(fake)) == 2
    assert not fake.denied, fake.denied
    assert {call.user for call in fake.requests} == {docs.USER}
    # the Ready cluster's namespace is never listed
    assert not [c.path for c in fake.requests if "karmada-es-dev-hel1-a" in c.path]
    # the merge patch set the annotation and nothing else
    assert _ingress(fake)["status"] == {"loadBalancer": {"ingress": [{"ip": "203.0.113.43"}]}}


def test_a_missing_template_is_skipped(fake: FakeApiServer, pki: dict[str, dict[str, str]]) -> None:
    fake.remove("networking.k8s.io", "ingresses", "shop", "web")
    client = pki["client"]
    assert sr.reconcile(sr.Client(fake.url, client["ca"], cert_file=client["crt"], key_file=client["key"])) == []


def test_the_program_runs_with_its_rendered_command_line(fake: FakeApiServer, pki: dict[str, dict[str, str]],
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
        while time.monotonic() < deadline and not (healthy and _patches(fake)):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                    healthy = resp.status == 200
            except OSError:
                pass
            time.sleep(0.2)
        assert healthy and _patches(fake), "no healthy pass with a patch within 20 s"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert "refreshed Ingress shop/web for unready cluster dev-fsn1-a" in out
    assert not fake.denied, fake.denied


def test_the_fake_refuses_what_the_rendered_rbac_does_not_grant(rendered_dev: Any, pki: dict[str, dict[str, str]],
                                                                tmp_path: Path) -> None:
    """The checks above can fail: without the rendered `patch` the refresh is a 403 the fake records, and a
    client without a certificate of the Karmada CA gets no TLS session at all."""
    role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:status-refresher")
    no_patch = [{**r, "verbs": [v for v in r["verbs"] if v != "patch"]} for r in role["rules"]]
    assert no_patch != role["rules"], "the rendered role grants patch"
    fake = _serve(rendered_dev, pki, rules=no_patch)
    try:
        client = pki["client"]
        with pytest.raises(sr.ApiError) as err:
            sr.reconcile(sr.Client(fake.url, client["ca"], cert_file=client["crt"], key_file=client["key"]))
        assert err.value.status == 403
        assert fake.denied == [f"{docs.USER} patch networking.k8s.io/ingresses ns=shop web"]
        assert sr.ANNOTATION not in (_ingress(fake)["metadata"].get("annotations") or {})
        context = ssl.create_default_context(cafile=client["ca"])
        with pytest.raises(OSError, match=r"EOF occurred|certificate required"):  # refused in the handshake
            urllib.request.urlopen(fake.url + sr.CLUSTERS_PATH, context=context, timeout=5).close()
        assert {c.user for c in fake.requests} == {docs.USER}
    finally:
        fake.close()
