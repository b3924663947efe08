"""The one fake API server the tests use (tests/support/fake_apiserver.py): it must refuse what kube-apiserver
refuses, or every "the rendered RBAC allows this" test built on it proves nothing.

Real TLS on loopback (a throwaway CA from `tests.support.loopback.tls_material`), real clients
(`components.kube.api_client.KubeApi`).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.kube.api_client import KubeApi
from tests.support.fake_apiserver import FakeApiServer, User, merge_patch, parse_path
from tests.support.loopback import tls_material
from tests.support.rbac import ALLOW_ALL, Grant, Rbac

CM = "/api/v1/namespaces/{ns}/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/shop/deployments"


@pytest.fixture
def tls(tmp_path: Path) -> dict[str, Path]:
    return tls_material(tmp_path, clients=["alice"])


@pytest.fixture
def server(tls: dict[str, Path]) -> Iterator[FakeApiServer]:
    fake = FakeApiServer(tls["server.crt"], tls["server.key"], client_ca=tls["ca"],
                         tokens={"admin": User("admin"), "reader": User("reader")},
                         grants={"admin": ALLOW_ALL,
                                 "reader": Grant([{"apiGroups": [""], "resources": ["configmaps"],
                                                   "verbs": ["get", "list"], "resourceNames": []},
                                                  {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                                                   "resourceNames": ["mine"]}], namespace="a")})
    yield fake
    fake.close()


def _api(fake: FakeApiServer, tls: dict[str, Path], token: str | None = None, cert: str | None = None) -> KubeApi:
    pem = {"cert_pem": tls[f"{cert}.crt"].read_text(), "key_pem": tls[f"{cert}.key"].read_text()} if cert else {}
    return KubeApi(server=fake.url, ca_pem=tls["ca"].read_text(), token=token, timeout=5, **pem)


def _cm(name: str, ns: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns,
                                                                 "labels": labels or {}}, "data": data}


# ------------------------------------------------------------------------------------------ who may


def test_an_unknown_caller_is_401_and_recorded(server: FakeApiServer, tls: dict[str, Path]) -> None:
    assert _api(server, tls, token="nobody").request("GET", CM.format(ns="a"))[0] == 401
    assert _api(server, tls).request("GET", CM.format(ns="a"))[0] == 401
    assert server.denied == [f"unauthenticated GET {CM.format(ns='a')}"] * 2
    assert [c.status for c in server.requests] == [401, 401] and server.requests[0].user == "-"


def test_a_grant_holds_in_its_namespace_and_for_its_verbs_only(server: FakeApiServer, tls: dict[str, Path]) -> None:
    reader = _api(server, tls, token="reader")
    assert reader.request("GET", CM.format(ns="a"))[0] == 200
    assert reader.request("GET", CM.format(ns="b"))[0] == 403  # a RoleBinding's namespace only
    assert reader.request("POST", CM.format(ns="a"), _cm("x", "a"))[0] == 403  # no create
    assert reader.request("GET", "/api/v1/namespaces/a/secrets/mine")[0] == 404  # allowed, absent
    assert reader.request("GET", "/api/v1/namespaces/a/secrets/other")[0] == 403  # resourceNames
    assert reader.request("GET", "/api/v1/namespaces/a/secrets")[0] == 403  # a list names nothing
    assert reader.request("GET", CM.format(ns="a") + "?watch=true")[0] == 403  # watch is its own verb
    assert server.denied == [
        "reader list /configmaps ns=b", "reader create /configmaps ns=a", "reader get /secrets ns=a other",
        "reader list /secrets ns=a", "reader watch /configmaps ns=a"]
    status, body = reader.request("GET", CM.format(ns="b"))
    assert (status, body["reason"]) == (403, "Forbidden") and "reader may not list" in body["message"]


def test_rbac_objects_bind_users_groups_and_service_accounts(tls: dict[str, Path]) -> None:
    role = {"kind": "ClusterRole", "metadata": {"name": "r"},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments", "deployments/status"], "verbs": ["*"]}]}
    bindings = [{"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "shop"},
                 "roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "Group", "name": "devs"}]}]
    fake = FakeApiServer(tls["server.crt"], tls["server.key"], rbac=Rbac([role, *bindings]),
                         tokens={"dev": User("dev", ("devs",)), "other": User("other"),
                                 "root": User("root", ("system:masters",))})
    try:
        assert _api(fake, tls, token="dev").request("GET", DEPLOY)[0] == 200
        assert _api(fake, tls, token="dev").request("GET", "/apis/apps/v1/namespaces/kube-system/deployments")[0] == 403
        assert _api(fake, tls, token="other").request("GET", DEPLOY)[0] == 403
        assert _api(fake, tls, token="root").request("GET", "/api/v1/secrets")[0] == 200  # system:masters
    finally:
        fake.close()


def test_a_client_certificate_is_its_cn_and_can_be_required(server: FakeApiServer, tls: dict[str, Path]) -> None:
    assert _api(server, tls, cert="alice").request("GET", CM.format(ns="a"))[0] == 403
    assert server.denied == ["alice list /configmaps ns=a"]
    server.grants["alice"] = Grant([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])
    assert _api(server, tls, cert="alice").request("GET", CM.format(ns="a"))[0] == 200
    strict = FakeApiServer(tls["server.crt"], tls["server.key"], client_ca=tls["ca"], require_client_cert=True,
                           tokens={"admin": User("admin")}, grants={"admin": ALLOW_ALL, "alice": ALLOW_ALL})
    try:
        assert _api(strict, tls, cert="alice").request("GET", CM.format(ns="a"))[0] == 200
        with pytest.raises(OSError):
            _api(strict, tls, token="admin").request("GET", CM.format(ns="a"))
        assert [c.user for c in strict.requests] == ["alice"]
    finally:
        strict.close()


def _bootstrap_secret(tid: str, secret: str, expires: dt.datetime) -> dict[str, Any]:
    data = {"token-id": tid, "token-secret": secret, "usage-bootstrap-authentication": "true",
            "expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"), "auth-extra-groups": "system:bootstrappers:x"}
    return {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{tid}", "namespace": "kube-system"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


@pytest.mark.parametrize("enabled", [True, False])
def test_bootstrap_tokens_only_when_enabled_and_unexpired(tls: dict[str, Path], enabled: bool) -> None:
    fake = FakeApiServer(tls["server.crt"], tls["server.key"], bootstrap_tokens=enabled,
                         grants={"system:bootstrap:abcdef": ALLOW_ALL})
    fake.put("", "secrets", _bootstrap_secret("abcdef", "0123456789abcdef",
                                              dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)))
    try:
        user = fake.authenticate(None, "Bearer abcdef.0123456789abcdef")
        if not enabled:
            assert user is None
            return
        assert user == User("system:bootstrap:abcdef",
                            ("system:bootstrappers", "system:bootstrappers:x", "system:authenticated"))
        assert fake.authenticate(None, "Bearer abcdef.0123456789abcdeX") is None
        assert _api(fake, tls, token="abcdef.0123456789abcdef").request("GET", CM.format(ns="a"))[0] == 200
        fake.now = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
        assert _api(fake, tls, token="abcdef.0123456789abcdef").request("GET", CM.format(ns="a"))[0] == 401
    finally:
        fake.close()


# --------------------------------------------------------------------------------------- what it keeps


def test_create_list_and_delete(server: FakeApiServer, tls: dict[str, Path]) -> None:
    admin = _api(server, tls, token="admin")
    status, made = admin.request("POST", CM.format(ns="a"), {"metadata": {"generateName": "gen-"}})
    assert status == 201 and made["metadata"]["name"].startswith("gen-") and made["metadata"]["namespace"] == "a"
    assert {"uid", "resourceVersion", "creationTimestamp"} <= set(made["metadata"])
    assert admin.request("POST", CM.format(ns="a"), {"metadata": {}})[0] == 422
    assert admin.request("POST", CM.format(ns="a"), _cm("x", "a", {"app": "web", "tier": "front"}))[0] == 201
    assert admin.request("POST", CM.format(ns="a"), _cm("x", "a"))[0] == 409
    assert admin.request("POST", CM.format(ns="a") + "/x", _cm("x", "a"))[0] == 405
    assert admin.request("POST", CM.format(ns="b"), _cm("y", "b", {"app": "api"}))[0] == 201

    def names(path: str) -> list[str]:
        status, body = admin.request("GET", path)
        assert status == 200, body
        return sorted(o["metadata"]["name"] for o in body["items"])

    assert names(CM.format(ns="a")) == [made["metadata"]["name"], "x"]
    assert names("/api/v1/configmaps") == [made["metadata"]["name"], "x", "y"]
    assert names("/api/v1/configmaps?labelSelector=app") == ["x", "y"]
    assert names("/api/v1/configmaps?labelSelector=app%3Dweb,tier") == ["x"]
    assert names("/api/v1/configmaps?labelSelector=app=api") == ["y"]
    assert admin.request("DELETE", CM.format(ns="a") + "/x")[0] == 200
    assert admin.request("DELETE", CM.format(ns="a") + "/x")[0] == 404
    assert admin.request("GET", CM.format(ns="a") + "/x")[0] == 404
    assert admin.request("GET", "/apis/apps/v1")[1]["kind"] == "APIResourceList"
    assert admin.request("GET", "/metrics")[0] == 404


def test_update_conflicts_generation_and_the_status_subresource(server: FakeApiServer, tls: dict[str, Path]) -> None:
    admin = _api(server, tls, token="admin")
    server.put("apps", "deployments", {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 1},
                                       "status": {"readyReplicas": 1}})
    current = admin.get(f"{DEPLOY}/web")
    assert current is not None and current["metadata"]["generation"] == 1
    stale = {**current, "metadata": {**current["metadata"], "resourceVersion": "1" + current["metadata"]
                                     ["resourceVersion"]}}
    assert admin.request("PUT", f"{DEPLOY}/web", stale)[0] == 409
    status, updated = admin.request("PUT", f"{DEPLOY}/web", {**current, "spec": {"replicas": 2}, "status": {}})
    assert status == 200 and updated["metadata"]["generation"] == 2
    assert updated["status"] == {"readyReplicas": 1}, "the main resource does not write status"
    assert updated["metadata"]["uid"] == current["metadata"]["uid"]
    assert int(updated["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])
    status, after = admin.request("PUT", f"{DEPLOY}/web/status", {"spec": {"replicas": 9},
                                                                  "status": {"readyReplicas": 2}})
    assert status == 200 and after["spec"] == {"replicas": 2} and after["status"] == {"readyReplicas": 2}
    assert after["metadata"]["generation"] == 2, "a status write is no new generation"
    assert admin.request("PUT", f"{DEPLOY}/absent", {"metadata": {"name": "absent"}})[0] == 404


def test_patches_merge_apply_and_nothing_else(server: FakeApiServer, tls: dict[str, Path]) -> None:
    admin = _api(server, tls, token="admin")
    server.put("apps", "deployments", {"metadata": {"name": "web", "namespace": "shop", "annotations": {"a": "1"}},
                                       "spec": {"replicas": 1, "paused": True}})
    status, patched = admin.request("PATCH", f"{DEPLOY}/web", {"metadata": {"annotations": {"b": "2"}},
                                                                "spec": {"paused": None}},
                                    content_type="application/merge-patch+json")
    assert status == 200 and patched["metadata"]["annotations"] == {"a": "1", "b": "2"}
    assert patched["spec"] == {"replicas": 1} and patched["metadata"]["generation"] == 2
    for kind in ("application/json-patch+json", "application/strategic-merge-patch+json"):
        assert admin.request("PATCH", f"{DEPLOY}/web", [], content_type=kind)[0] == 415
    assert admin.request("PATCH", f"{DEPLOY}/absent", {}, content_type="application/merge-patch+json")[0] == 404
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}, "spec": {"replicas": 3}}
    assert admin.request("PATCH", f"{DEPLOY}/api?fieldManager=t", obj, content_type="application/apply-patch+yaml"
                         )[0] == 201
    status, applied = admin.request("PATCH", f"{DEPLOY}/api?fieldManager=t", {**obj, "spec": {"replicas": 4}},
                                    content_type="application/apply-patch+yaml")
    assert status == 200 and applied["spec"] == {"replicas": 4} and applied["metadata"]["namespace"] == "shop"
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": [1]}}) == {"a": {"c": 2, "d": [1]}}


def test_server_side_apply_that_creates_needs_create(server: FakeApiServer, tls: dict[str, Path]) -> None:
    server.grants["patcher"] = Grant([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}])
    server.tokens["patcher"] = User("patcher")
    patcher = _api(server, tls, token="patcher")
    assert patcher.request("PATCH", CM.format(ns="a") + "/x", _cm("x", "a"),
                           content_type="application/apply-patch+yaml")[0] == 403
    server.put("", "configmaps", _cm("x", "a"))
    assert patcher.request("PATCH", CM.format(ns="a") + "/x", _cm("x", "a", k="v"),
                           content_type="application/apply-patch+yaml")[0] == 200
    assert server.denied == ["patcher create /configmaps ns=a x"]


def test_hooks_see_api_writes_and_down_drops_connections(server: FakeApiServer, tls: dict[str, Path]) -> None:
    seen: list[tuple[str, str, str]] = []
    server.hooks.append(lambda verb, key, obj, user: seen.append((verb, obj["metadata"]["name"], user.name)))
    admin = _api(server, tls, token="admin")
    server.put("", "configmaps", _cm("seeded", "a"))  # direct: no hook
    admin.request("POST", CM.format(ns="a"), _cm("x", "a"))
    admin.request("PATCH", CM.format(ns="a") + "/x", {"data": {"k": "v"}}, content_type="application/merge-patch+json")
    admin.request("DELETE", CM.format(ns="a") + "/x")
    assert seen == [("create", "x", "admin"), ("patch", "x", "admin"), ("delete", "x", "admin")]
    server.down = True
    with pytest.raises(OSError):
        admin.request("GET", CM.format(ns="a"))
    server.down = False
    assert admin.request("GET", CM.format(ns="a"))[0] == 200


def test_a_csr_records_its_requester(server: FakeApiServer) -> None:
    status, csr = server.serve(User("system:bootstrap:abc", ("system:bootstrappers",)), "POST",
                               "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                               {"metadata": {"name": "c"}, "spec": {"username": "forged", "request": "x"}})
    assert status == 403  # no grant for the bootstrap user here
    server.grants["system:bootstrap:abc"] = ALLOW_ALL
    status, csr = server.serve(User("system:bootstrap:abc", ("system:bootstrappers",)), "POST",
                               "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                               {"metadata": {"name": "c"}, "spec": {"username": "forged", "request": "x"}})
    assert status == 201 and csr["spec"]["username"] == "system:bootstrap:abc"
    assert csr["spec"]["groups"] == ["system:bootstrappers"]


def test_paths() -> None:
    t = parse_path("/apis/cluster.karmada.io/v1alpha1/clusters/a/status?x=1")
    assert (t.group, t.version, t.namespace, t.resource, t.name, t.subresource, t.rbac_resource) == (
        "cluster.karmada.io", "v1alpha1", "", "clusters", "a", "status", "clusters/status")
    assert t.query == {"x": "1"}
    ns = parse_path("/api/v1/namespaces/shop")
    assert (ns.namespace, ns.resource, ns.name) == ("", "namespaces", "shop")
    secret = parse_path("/api/v1/namespaces/shop/secrets/a%3Ab")
    assert (secret.group, secret.namespace, secret.resource, secret.name) == ("", "shop", "secrets", "a:b")
    assert parse_path("/apis/apps/v1").resource is None
    for bad in ("/healthz", "/apis", "/apis/apps"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_health_paths_admission_and_dry_run(server: FakeApiServer, tls: dict[str, Path]) -> None:
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cafile=str(tls["ca"]))

    def health(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(server.url + path, context=context, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    assert health("/readyz?verbose") == (200, "ok")  # anonymous, any query
    server.health["/readyz"] = (500, "[-]etcd failed: reason withheld")
    assert health("/readyz?verbose") == (500, "[-]etcd failed: reason withheld")
    admin = _api(server, tls, token="admin")
    refusals: list[str] = []

    def webhook(verb: str, target: Any, body: Any, user: User) -> tuple[int, Any] | None:
        refusals.append(f"{verb} {target.rbac_resource} {user.name}")
        return (500, {"kind": "Status", "code": 500, "message": "failed calling webhook"}) if target.namespace == "b" \
            else None

    server.admission.append(webhook)
    created = admin.request("POST", CM.format(ns="a") + "?dryRun=All", _cm("dry", "a"))
    assert created[0] == 201 and server.get("", "configmaps", "a", "dry") is None  # admitted, nothing stored
    assert admin.request("POST", CM.format(ns="b"), _cm("no", "b"))[0] == 500
    assert server.get("", "configmaps", "b", "no") is None
    assert refusals == ["create configmaps admin", "create configmaps admin"]
