"""Integration: the boundary cases (tests/support/boundaries.py) on a real kube-apiserver v1.35.4, with prod-hub's
rendered karmada RBAC, admission policies and their parameter applied, and the rendered encryption at rest.

- every RBAC case on the karmada-apiserver, asked as a SubjectAccessReview (the real RBAC authorizer decides);
- every admission case sent as its identity, as a server-side apply with `dryRun=All` (admission, the
  ValidatingAdmissionPolicies included, runs; nothing is stored), its answer and reason checked;
- the rendered EncryptionConfiguration: a Secret and a Work are stored in etcd as secretbox ciphertext and read back.
The harness is a plain API server (tests/integration/apiserver_harness.py), not the rendered karmada-apiserver
command line; identities are static tokens with the case's user and groups.
"""

from __future__ import annotations

import copy
import secrets
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.karmada import crds
from components.karmada.manifests import ENCRYPTED_RESOURCES
from tests.integration.apiserver_harness import ApiServer, binaries
from tests.support import boundaries
from tests.support.rendered import find, objects, secret_files

pytestmark = pytest.mark.integration

_PATHS = {"Namespace": "/api/v1/namespaces", "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
          "Secret": "/api/v1/namespaces/{ns}/secrets", "Service": "/api/v1/namespaces/{ns}/services",
          "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
          "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
          "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
          "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
          "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
          "ValidatingAdmissionPolicyBinding":
              "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"}
_CRDS = ("policy/policy.karmada.io_propagationpolicies.yaml", "policy/policy.karmada.io_overridepolicies.yaml",
         "policy/policy.karmada.io_federatedresourcequotas.yaml", "work/work.karmada.io_works.yaml")


def _collection(obj: dict[str, Any]) -> str:
    return _PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))


def _path(req: boundaries.Req) -> str:
    base = f"/api/{req.version}" if not req.group else f"/apis/{req.group}/{req.version}"
    ns = f"/namespaces/{req.namespace}" if req.namespace else ""
    return f"{base}{ns}/{req.resource}" + (f"/{req.name}" if req.name and req.verb != "create" else "")


class Hub:
    def __init__(self, server: ApiServer, tokens: dict[str, str]) -> None:
        self.server, self.tokens = server, tokens

    def admin(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        status, out = self.server.request(self.tokens[boundaries.ADMIN.user], method, path, body, content_type)
        assert status < 300 or status == 409, (method, path, status, out)
        return out

    def identity_token(self, who: boundaries.Identity) -> str:
        return self.tokens[who.user]


@pytest.fixture(scope="module")
def hub(rendered_prod: dict[str, Any]) -> Iterator[Hub]:
    binaries()
    source = crds.crds_source_dir()
    if source is None:
        pytest.skip(f"the pinned Karmada CRDs are not here: {crds.layout_hint(crds.WORKSPACE_VERSION)}")
    cases = boundaries.cases(rendered_prod)
    identities = {c.identity for c in cases if c.server == "karmada"} | {boundaries.ADMIN}
    tokens = {who.user: secrets.token_hex(16) for who in identities}
    table = {tokens[who.user]: (who.user, who.groups) for who in identities}
    encryption = secret_files(find(rendered_prod["prod-hub"], "host", "Secret", "karmada-apiserver-encryption"))
    with ApiServer(table, extra_args=["--encryption-provider-config={dir}/encryption-config.yaml"],
                   files=encryption) as server:
        h = Hub(server, tokens)
        for rel in _CRDS:
            crd = yaml.safe_load((source / rel).read_text())
            h.admin("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        rendered = [o for t, o in objects(rendered_prod["prod-hub"]) if t == "karmada" and o["kind"] in _PATHS
                    and o["kind"] not in ("Secret", "Service")]
        for obj in sorted(rendered, key=lambda o: list(_PATHS).index(o["kind"])):
            h.admin("POST", _collection(obj), obj)
        _wait_for_crds_and_policies(h, boundaries.region_identity(rendered_prod, "eu-fsn"))
        yield h


def _wait_for_crds_and_policies(h: Hub, region: str) -> None:
    """CRDs serve and policies enforce a few seconds after they are stored (the policy informers sync): poll,
    bounded, until both policies refuse a probe that passes RBAC (a region's own object, the admin's token)."""
    import time

    query = "?" + urllib.parse.urlencode({"dryRun": "All", "fieldManager": "probe", "force": "true"})
    policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
              "metadata": {"name": "shop", "namespace": "shop"},
              "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}], "placement": {}}}
    token = {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
             "metadata": {"name": "bootstrap-token-probe0", "namespace": "kube-system"}, "data": {}}
    probes = [(h.tokens[region], "/apis/policy.karmada.io/v1alpha1/namespaces/shop/propagationpolicies/shop", policy,
               "names its clusters"),
              (h.tokens[boundaries.ADMIN.user], "/api/v1/namespaces/kube-system/secrets/bootstrap-token-probe0",
               token, "data.expiration")]
    deadline = time.monotonic() + 90
    while probes:
        token_, path, body, reason = probes[0]
        status, out = h.server.request(token_, "PATCH", path + query, body, "application/apply-patch+yaml")
        if status >= 400 and reason in str(out.get("message", "")):
            probes.pop(0)
            continue
        if time.monotonic() > deadline:
            raise AssertionError(f"the admission policies never started to refuse: {status} {out}")
        time.sleep(0.5)


def _sar(h: Hub, case: boundaries.Case) -> bool:
    req = case.request
    attrs = {"verb": req.verb, "group": req.group, "version": req.version, "resource": req.resource,
             "subresource": req.subresource, "namespace": req.namespace, "name": req.name}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": case.identity.user, "groups": [*case.identity.groups, "system:authenticated"],
                       "resourceAttributes": {k: v for k, v in attrs.items() if v}}}
    return bool(h.admin("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)["status"]
                .get("allowed"))


def test_rbac_cases_on_the_real_authorizer(hub: Hub, rendered_prod: dict[str, Any]) -> None:
    wrong = [c.id for c in boundaries.rbac_cases(rendered_prod) if c.server == "karmada" and _sar(hub, c) != c.allowed]
    assert wrong == []


def test_admission_cases_on_the_real_admission_chain(hub: Hub, rendered_prod: dict[str, Any]) -> None:
    wrong = []
    for case in boundaries.admission_cases(rendered_prod):
        for obj in case.setup:
            hub.admin("POST", _collection(dict(obj)), copy.deepcopy(dict(obj)))
        req = case.request
        assert req.verb == "patch", case.id  # the way the program writes: server-side apply
        query = urllib.parse.urlencode({"dryRun": "All", "fieldManager": "boundaries", "force": "true"})
        status, out = hub.server.request(hub.identity_token(case.identity), "PATCH", _path(req) + "?" + query,
                                         req.body, "application/apply-patch+yaml")
        message = str(out.get("message", ""))
        ok = status < 300 if case.allowed else (status >= 400 and case.reason in message)
        if not ok:
            wrong.append(f"{case.id}: {status} {message[:200]}")
    assert wrong == []


def test_works_and_secrets_are_secretbox_ciphertext_in_etcd(hub: Hub) -> None:
    assert ENCRYPTED_RESOURCES == ("secrets", "works.work.karmada.io")
    hub.admin("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "karmada-es-probe"}})
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tenant", "namespace": "shop"},
              "data": {"password": "c2VjcmV0LXZhbHVl"}}
    work = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "karmada-es-probe"},
            "spec": {"workload": {"manifests": [secret]}}}
    hub.admin("POST", "/api/v1/namespaces/shop/secrets", secret)
    hub.admin("POST", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-probe/works", work)
    for key in ("/registry/secrets/shop/tenant", "/registry/work.karmada.io/works/karmada-es-probe/w"):
        raw = hub.server.etcd_value(key)
        assert raw.startswith(b"k8s:enc:secretbox:v1:key2:"), (key, raw[:40])
        assert b"c2VjcmV0LXZhbHVl" not in raw and b"secret-value" not in raw
    back = hub.admin("GET", "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-probe/works/w")
    assert back["spec"]["workload"]["manifests"][0]["data"] == {"password": "c2VjcmV0LXZhbHVl"}
