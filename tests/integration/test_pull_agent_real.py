"""Integration: the real karmada-agent v1.18.2 accepts the Cluster the hub made for it, with only its rendered hub
RBAC (no Cluster create or update), and reports its member Ready through the status subresource (security review 2,
C2: the hub owns every Cluster, Pull too).

Two real kube-apiservers v1.35.4 on loopback: the hub (karmada-apiserver's role: static tokens, RBAC, the aggregation
layer with a front-proxy client certificate) with the real karmada-aggregated-apiserver v1.18.2 registered behind it
(an APIService whose Service is ExternalName `localhost`: the aggregator routes to its name, k8s.io/apiserver
pkg/util/proxy `ResolveCluster`), and the member. On the hub: dev's rendered Pull-member objects for `dev-hel1-a`
(the Cluster, with `spec.id` the member's real kube-system UID as the region's `clusterId` would carry, and the
agent's RBAC), nothing else of the agent's. The agent runs with its rendered flags except what a pod supplies
(kubeconfigs: a token identity `system:karmada:agent:dev-hel1-a` in `system:karmada:agents`, listen addresses) and
`--controllers=clusterStatus` (the controller that writes the Cluster: the others need the member's and the hub's
full CRD sets, which are not what this test is about).

karmada-controller-manager is not run: its cluster controller's finalizer, which the agent's status controller waits
for, is put on the Cluster as the hub's controller-manager would. Checked: the agent starts, finds the Cluster
"already exist and newest" (cmd/agent/app/agent.go `generateClusterInControllerPlane`, pkg/util/cluster.go
`CreateOrUpdateClusterObject`) and writes no spec; the Cluster becomes Ready from the agent's status updates; no
request of the agent is forbidden.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.karmada import crds
from tests.integration.apiserver_harness import ApiServer, _port, binaries
from tests.integration.test_cluster_boundary import MEMBER, aggregated_apiserver
from tests.support.rendered import find, objects
from tests.support.testpki import make_ca, make_leaf
from tests.support.tools import require_tool

pytestmark = pytest.mark.integration

AGENT_USER, AGENT_GROUP = f"system:karmada:agent:{MEMBER}", "system:karmada:agents"
CLUSTER_PATH = f"/apis/cluster.karmada.io/v1alpha1/clusters/{MEMBER}"
WAIT_READY_SECONDS = 120
HUB_CRDS = ("config/config.karmada.io_resourceinterpretercustomizations.yaml",
            "config/config.karmada.io_resourceinterpreterwebhookconfigurations.yaml",
            "work/work.karmada.io_works.yaml")
"""What the agent's informers list on the hub before its controllers start (the interpreter's configurations) and
the Works of its execution space."""


def karmada_agent() -> str:
    try:
        from upstream.build import binary
        path = binary("karmada-agent")
    except (ImportError, KeyError):  # pragma: no cover - the package is part of this checkout
        path = None
    return str(path) if path else require_tool("karmada-agent", "the pinned upstream build: python -m upstream.build")


_COLLECTIONS = {"Namespace": "/api/v1/namespaces", "Service": "/api/v1/namespaces/{ns}/services",
                "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
                "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                "APIService": "/apis/apiregistration.k8s.io/v1/apiservices",
                "Cluster": "/apis/cluster.karmada.io/v1alpha1/clusters"}


def _create(server: ApiServer, token: str, obj: dict[str, Any]) -> None:
    path = _COLLECTIONS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
    status, out = server.request(token, "POST", path, obj)
    assert status in (201, 409), (obj["kind"], obj["metadata"]["name"], status, out)


@pytest.fixture(scope="module")
def fleet(rendered_dev: Any) -> Iterator[dict[str, Any]]:
    binaries()
    aggregated, agent = aggregated_apiserver(), karmada_agent()
    source = crds.crds_source_dir()
    if source is None:
        pytest.skip(f"the pinned Karmada CRDs are not here: {crds.layout_hint(crds.WORKSPACE_VERSION)}")
    admin, agent_token = "admin-" + MEMBER, "agent-" + MEMBER
    front_proxy = make_ca("front-proxy-ca")
    proxy_client = make_leaf(front_proxy, "front-proxy-client", False)
    hub_args = ["--requestheader-client-ca-file={dir}/front-proxy-ca.crt",
                "--requestheader-allowed-names=front-proxy-client", "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--proxy-client-cert-file={dir}/front-proxy-client.crt",
                "--proxy-client-key-file={dir}/front-proxy-client.key"]
    files = {"front-proxy-ca.crt": front_proxy.cert_pem, "front-proxy-client.crt": proxy_client.cert_pem,
             "front-proxy-client.key": proxy_client.key_pem}
    with ApiServer({admin: ("admin", ["system:masters"])}) as member, \
            ApiServer({admin: ("admin", ["system:masters"]), agent_token: (AGENT_USER, [AGENT_GROUP])},
                      extra_args=hub_args, files=files) as hub:
        for rel in HUB_CRDS:
            status, out = hub.request(admin, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      yaml.safe_load((source / rel).read_text()))
            assert status == 201, out
        hub_admin = hub.kubeconfig(admin)
        agg_port = _port()
        hub.spawn([aggregated, f"--etcd-servers={hub.etcd_url}", "--bind-address=127.0.0.1",
                   f"--secure-port={agg_port}", f"--cert-dir={hub.directory / 'aggregated-certs'}",
                   f"--kubeconfig={hub_admin}", f"--authentication-kubeconfig={hub_admin}",
                   f"--authorization-kubeconfig={hub_admin}"], "aggregated.log")
        for obj in ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-system"}},
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-cluster"}},
                    {"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": "karmada-aggregated-apiserver", "namespace": "karmada-system"},
                     "spec": {"type": "ExternalName", "externalName": "localhost"}},
                    {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                     "metadata": {"name": "v1alpha1.cluster.karmada.io"},
                     "spec": {"group": "cluster.karmada.io", "version": "v1alpha1", "groupPriorityMinimum": 2000,
                              "versionPriority": 10, "insecureSkipTLSVerify": True,  # loopback test server
                              "service": {"namespace": "karmada-system", "name": "karmada-aggregated-apiserver",
                                          "port": agg_port}}}):
            _create(hub, admin, obj)
        deadline = time.monotonic() + 90
        while hub.request(admin, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters")[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the aggregated API did not serve: {hub.log('aggregated.log')[-2000:]}")
            time.sleep(0.5)
        # dev's rendered hub-side objects for the member: its Cluster and its agent's RBAC, in render order
        uid = member.request(admin, "GET", "/api/v1/namespaces/kube-system")[1]["metadata"]["uid"]
        rendered = [o for t, o in objects(rendered_dev) if t == "karmada" and (
            (o["kind"] == "Cluster" and o["metadata"]["name"] == MEMBER)
            or o["metadata"]["name"] in (f"karmada-es-{MEMBER}",)
            or o["metadata"]["name"].startswith(f"system:karmada:{MEMBER}:agent"))]
        cluster = copy.deepcopy(find(rendered_dev, "karmada", "Cluster", MEMBER))
        cluster["spec"]["id"] = uid  # what the region's file carries as clusterId
        # karmada-controller-manager's cluster controller adds its finalizer; the agent's status controller waits
        # for it (pkg/controllers/status/cluster_status_controller.go). The controller-manager is not run here.
        cluster["metadata"]["finalizers"] = ["karmada.io/cluster-controller"]
        for obj in rendered:
            _create(hub, admin, cluster if obj["kind"] == "Cluster" else obj)
        created = hub.request(admin, "GET", CLUSTER_PATH)[1]
        deployment = next(o for t, o in objects(rendered_dev) if t == f"member-{MEMBER}"
                          and o["kind"] == "Deployment" and o["metadata"]["name"] == "karmada-agent")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        agent_kubeconfig = hub.kubeconfig(agent_token)
        argv = [agent]
        for arg in args:
            if arg.startswith("--karmada-kubeconfig="):
                arg = f"--karmada-kubeconfig={agent_kubeconfig}"
            elif arg.startswith("--controllers="):
                arg = "--controllers=clusterStatus"
            elif "$(POD_IP)" in arg:
                arg = f"{arg.split('=', 1)[0]}=127.0.0.1:{_port()}"
            argv.append(arg)
        argv += [f"--kubeconfig={member.kubeconfig(admin)}", "--v=4"]
        proc = hub.spawn(argv, "agent.log")
        deadline = time.monotonic() + WAIT_READY_SECONDS
        ready = None
        while ready is None:
            current = hub.request(admin, "GET", CLUSTER_PATH)[1]
            conditions = (current.get("status") or {}).get("conditions") or []
            ready = next((c for c in conditions if c.get("type") == "Ready" and c.get("status") == "True"), None)
            if ready is None and (time.monotonic() > deadline or proc.poll() is not None):
                raise AssertionError(f"the agent did not report Ready: {hub.log('agent.log')[-4000:]}")
            if ready is None:
                time.sleep(1)
        yield {"created": created, "current": current, "log": hub.log("agent.log"), "running": proc.poll() is None,
               "audit": hub.log("kube-apiserver.log")}


def test_the_agent_accepts_the_hub_made_cluster_and_writes_no_spec(fleet: dict[str, Any]) -> None:
    log = fleet["log"]
    assert "already exist and newest" in log, log[-3000:]
    assert "Failed to update cluster" not in log and "Failed to create cluster" not in log
    assert fleet["current"]["spec"] == fleet["created"]["spec"]
    assert fleet["current"]["metadata"]["generation"] == fleet["created"]["metadata"]["generation"]


def test_the_agent_reports_ready_with_only_its_rendered_rbac(fleet: dict[str, Any]) -> None:
    assert fleet["running"], fleet["log"][-3000:]
    forbidden = [line for line in fleet["log"].splitlines() if "forbidden" in line.lower()]
    assert not forbidden, forbidden[:5]
