"""Integration: what a Pull agent may do to Cluster objects, on the real karmada-aggregated-apiserver v1.18.2 (which
stores Clusters) with a real kube-apiserver v1.35.4 behind it for authentication (TokenReview) and authorization
(SubjectAccessReview), so the agent's rendered RBAC decides, as in the hub.

- The hub creates a Pull member's Cluster exactly as the plan renders it (`member_docs.cluster_object`); its agent
  may read it and update its status, and may not create a Cluster, update one, or delete one (security review 2,
  C2: the hub owns every Cluster).
- Another member's agent may not touch it.
- The residual in docs/security.md: at v1.18.2 the status subresource stores whatever spec the update carries, so
  the agent's one write reaches its own Cluster's spec. The test pins that behaviour: when an upgrade fixes it, this
  test fails and docs/security.md "Residual risks" must change with it.

The aggregated apiserver is dialled directly on loopback (its self-signed serving certificate is not verified: the
test only checks its answers), not through the kube-apiserver's aggregation layer, whose Service routing needs a
non-loopback endpoint.
"""

from __future__ import annotations

import copy
import json
import secrets
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.apiserver_harness import READY_SECONDS, ApiServer, _port, binaries
from tests.support.rendered import find
from tests.support.tools import require_tool

pytestmark = pytest.mark.integration

MEMBER = "dev-hel1-a"
"""dev's Pull member."""
AGENT = (f"system:karmada:agent:{MEMBER}", ("system:karmada:agents",))
OTHER_AGENT = ("system:karmada:agent:dev-other", ("system:karmada:agents",))
ADMIN = ("admin", ("system:masters",))
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


def aggregated_apiserver() -> str:
    try:
        from upstream.build import binary
        path = binary("karmada-aggregated-apiserver")
    except (ImportError, KeyError):  # pragma: no cover - the package is part of this checkout
        path = None
    return str(path) if path else require_tool("karmada-aggregated-apiserver",
                                               "the pinned upstream build: python -m upstream.build")


class Aggregated:
    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url, self.tokens = url, tokens

    def request(self, who: str, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # loopback, self-signed: the test reads answers, it trusts nothing
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.tokens[who]}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw or b"{}")
        except ValueError:
            return status, {"message": raw.decode(errors="replace")}


@pytest.fixture(scope="module")
def hub(rendered_dev: Any) -> Iterator[tuple[Aggregated, dict[str, Any]]]:
    binaries()
    program = aggregated_apiserver()
    identities = {ADMIN[0]: ADMIN, AGENT[0]: AGENT, OTHER_AGENT[0]: OTHER_AGENT}
    tokens = {user: secrets.token_hex(16) for user in identities}
    with ApiServer({tokens[u]: (u, list(g)) for u, (_, g) in identities.items()}) as kas:
        # the agent's rendered cluster-scoped RBAC (its Cluster rights), applied as the hub applies it
        for kind, path in (("ClusterRole", "clusterroles"), ("ClusterRoleBinding", "clusterrolebindings")):
            obj = find(rendered_dev, "karmada", kind, f"system:karmada:{MEMBER}:agent")
            status, out = kas.request(tokens[ADMIN[0]], "POST", f"/apis/rbac.authorization.k8s.io/v1/{path}", obj)
            assert status == 201, out
        admin_kubeconfig = kas.kubeconfig(tokens[ADMIN[0]])
        port = _port()
        proc = kas.spawn([program, f"--etcd-servers={kas.etcd_url}", "--bind-address=127.0.0.1",
                          f"--secure-port={port}", f"--cert-dir={kas.directory / 'aggregated-certs'}",
                          f"--kubeconfig={admin_kubeconfig}", f"--authentication-kubeconfig={admin_kubeconfig}",
                          f"--authorization-kubeconfig={admin_kubeconfig}"], "aggregated.log")
        agg = Aggregated(f"https://127.0.0.1:{port}", tokens)
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                if agg.request(ADMIN[0], "GET", CLUSTERS)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"karmada-aggregated-apiserver did not serve: {kas.log('aggregated.log')[-2000:]}")
            time.sleep(0.5)
        cluster = find(rendered_dev, "karmada", "Cluster", MEMBER)
        status, out = agg.request(ADMIN[0], "POST", CLUSTERS, cluster)
        assert status == 201, out
        yield agg, cluster


def _current(agg: Aggregated) -> dict[str, Any]:
    status, out = agg.request(ADMIN[0], "GET", f"{CLUSTERS}/{MEMBER}")
    assert status == 200, out
    return out


def test_the_hub_made_pull_cluster_has_the_spec_the_agent_derives(hub: tuple[Aggregated, dict[str, Any]]) -> None:
    """Stored as rendered: what the agent's CreateOrUpdateClusterObject compares with (only the fields its mutate
    function sets; the server adds nothing there but defaults the agent does not touch)."""
    agg, cluster = hub
    spec = _current(agg)["spec"]
    for key in ("syncMode", "apiEndpoint", "id", "provider", "region", "zones"):
        assert spec.get(key) == cluster["spec"].get(key), key
    assert spec["syncMode"] == "Pull" and "secretRef" not in spec and "impersonatorSecretRef" not in spec
    assert not spec.get("proxyURL") and not spec.get("insecureSkipTLSVerification")


def test_the_agent_reads_its_cluster_and_writes_its_status(hub: tuple[Aggregated, dict[str, Any]]) -> None:
    agg, _ = hub
    status, out = agg.request(AGENT[0], "GET", f"{CLUSTERS}/{MEMBER}")
    assert status == 200, out
    assert agg.request(AGENT[0], "GET", CLUSTERS)[0] == 200  # list (its informer)
    current = _current(agg)
    current["status"] = {"kubernetesVersion": "v1.34.1", "conditions": [
        {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy and ready",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    status, out = agg.request(AGENT[0], "PUT", f"{CLUSTERS}/{MEMBER}/status", current)
    assert status == 200, out
    assert _current(agg)["status"]["kubernetesVersion"] == "v1.34.1"


@pytest.mark.parametrize("method,path,name", [
    ("POST", CLUSTERS, "evil"),                       # a Cluster of its own choosing
    ("PUT", f"{CLUSTERS}/{MEMBER}", MEMBER),          # its own Cluster's spec, the main resource
    ("DELETE", f"{CLUSTERS}/{MEMBER}", MEMBER),
])
def test_the_agent_may_not_create_update_or_delete_clusters(hub: tuple[Aggregated, dict[str, Any]], method: str,
                                                            path: str, name: str) -> None:
    agg, cluster = hub
    body = None
    if method != "DELETE":
        body = copy.deepcopy(cluster if method == "POST" else _current(agg))
        body["metadata"]["name"] = name
        body["spec"]["apiEndpoint"] = "https://198.51.100.7:6443"
        if method == "POST":
            body["spec"]["id"] = "00000000-0000-4000-8000-000000000000"
    status, out = agg.request(AGENT[0], method, path, body)
    assert status == 403, (status, out)
    assert _current(agg)["spec"]["apiEndpoint"] == cluster["spec"]["apiEndpoint"]


def test_another_agent_may_not_write_this_clusters_status(hub: tuple[Aggregated, dict[str, Any]]) -> None:
    agg, _ = hub
    status, out = agg.request(OTHER_AGENT[0], "PUT", f"{CLUSTERS}/{MEMBER}/status", _current(agg))
    assert status == 403, (status, out)


def test_residual_a_status_update_rewrites_the_spec_at_v1_18_2(hub: tuple[Aggregated, dict[str, Any]]) -> None:
    """docs/security.md "Residual risks": `StatusStrategy.PrepareForUpdate` is empty (pkg/registry/cluster/
    strategy.go), so the agent's status right reaches its own Cluster's spec: Push mode, an endpoint of its own and
    another member's Secret. When this fails, upstream closed it: update the docs and drop the residual."""
    agg, cluster = hub
    forged = _current(agg)
    forged["spec"].update({"syncMode": "Push", "apiEndpoint": "http://198.51.100.7:80",
                           "insecureSkipTLSVerification": True,
                           "secretRef": {"namespace": "karmada-cluster", "name": "dev-fsn1-a"}})
    status, out = agg.request(AGENT[0], "PUT", f"{CLUSTERS}/{MEMBER}/status", forged)
    assert status == 200, out
    stored = _current(agg)["spec"]
    try:
        assert stored["syncMode"] == "Push" and stored["secretRef"]["name"] == "dev-fsn1-a"
    finally:  # put the hub's spec back for the other tests
        restore = _current(agg)
        restore["spec"] = copy.deepcopy(cluster["spec"])
        assert agg.request(ADMIN[0], "PUT", f"{CLUSTERS}/{MEMBER}", restore)[0] == 200
