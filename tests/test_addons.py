"""The opt-in addons (karmada.addons): off renders nothing of theirs; on, dev renders them in the control plane's HA
shape with their own certificates, least-privilege identities, no way in but the firewall-filtered admin path, and
karmada-search's cache (and memory) scoped to what the stack names."""

from __future__ import annotations

from typing import Any

import pytest

from components import versions
from components.config import ConfigError
from components.karmada import addons_docs, pki_spec
from components.operations import capacity, preflight
from hubctl.plan import run_program
from tests.support.rendered import certs, find, objects
from tests.support.tools import REPO, edited_stack, load_stack

ADDON_NAMES = ("karmada-search", "karmada-dashboard", "search.karmada.io", "karmada-hub:karmada-search")


def _key(target: str, obj: dict[str, Any]) -> tuple[str, str, str, str]:
    return target, obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


@pytest.fixture(scope="module")
def rendered_off() -> Any:
    return run_program(REPO, edited_stack("dev", {"karmada": lambda k: k.pop("addons")}))


def test_off_renders_nothing_of_theirs(rendered_dev: Any, rendered_off: Any) -> None:
    on = {_key(t, o): o for t, o in objects(rendered_dev)}
    off = {_key(t, o): o for t, o in objects(rendered_off)}
    assert not set(off) - set(on)
    added = set(on) - set(off)
    assert added and all(any(n in k[3] for n in ADDON_NAMES) or k[1] == "ResourceRegistry" or k[3] == "karmada-hub"
                         for k in added), sorted(added)
    assert not [k for k in off if any(n in k[3] for n in ADDON_NAMES) or k[1] == "ResourceRegistry"]
    # what else changes: the NetworkPolicies that admit them, and the certificate-expiry alerts that watch theirs
    changed = {k for k in set(on) & set(off) if on[k] != off[k]}
    assert changed == {("host", "NetworkPolicy", "karmada-system", "etcd-ingress"),
                       ("host", "NetworkPolicy", "karmada-system", "karmada-apiserver-ingress"),
                       ("host", "PrometheusRule", "karmada-system", "karmada-hub")}
    assert not [n for n in certs(rendered_off) if n.startswith("addons-")]
    assert not [r for r in rendered_off.records if r.type == "karmada-hub:index:KarmadaAddons"]


def test_the_default_stacks_render_no_addon(rendered_prod_hub: Any) -> None:
    assert not load_stack("prod-hub").karmada.addons.any_enabled
    assert not [k for k in (_key(t, o) for t, o in objects(rendered_prod_hub))
                if any(n in k[3] for n in ADDON_NAMES) or k[1] == "ResourceRegistry"]


@pytest.mark.parametrize("name", ["karmada-search", "karmada-dashboard-api", "karmada-dashboard-web"])
def test_each_runs_ha_under_pod_security(rendered_dev: Any, name: str) -> None:
    dep = find(rendered_dev, "host", "Deployment", name)
    spec = dep["spec"]["template"]["spec"]
    assert dep["spec"]["replicas"] == 2
    terms = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == [{"labelSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
                      "topologyKey": "kubernetes.io/hostname"}]
    assert find(rendered_dev, "host", "PodDisruptionBudget", name)["spec"]["maxUnavailable"] == 1
    (container,) = spec["containers"]
    ctx = container["securityContext"]
    assert ctx["runAsNonRoot"] and not ctx["allowPrivilegeEscalation"] and ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["readOnlyRootFilesystem"] and ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "priorityClassName" not in spec  # no addon preempts the control plane
    assert spec["automountServiceAccountToken"] is (name == "karmada-dashboard-api")


def test_no_way_in_but_the_admin_path(rendered_dev: Any) -> None:
    """ClusterIP Services only (the way in is port-forward through the firewall-filtered host API); the dashboard
    API admits only the web pods, karmada-search only the karmada-apiserver."""
    for name in ("karmada-search", "karmada-dashboard-api", "karmada-dashboard-web"):
        assert find(rendered_dev, "host", "Service", name)["spec"]["type"] == "ClusterIP"
    api = find(rendered_dev, "host", "NetworkPolicy", "karmada-dashboard-api-ingress")["spec"]["ingress"]
    assert api == [{"ports": [{"port": 8000, "protocol": "TCP"}],
                    "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "karmada-dashboard-web"}}}]}]
    search = find(rendered_dev, "host", "NetworkPolicy", "karmada-search-ingress")["spec"]["ingress"]
    assert search == [{"ports": [{"port": 443, "protocol": "TCP"}],
                       "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "karmada-apiserver"}}}]}]
    names = [o["metadata"]["name"] for t, o in objects(rendered_dev) if o["kind"] == "NetworkPolicy"]
    assert "karmada-dashboard-web-ingress" not in names  # nothing in the cluster dials the UI


def test_own_certificates_from_the_hub_pki(rendered_dev: Any) -> None:
    issued = certs(rendered_dev)
    serving, _ = issued["addons-search"]
    assert serving.issuer.rfc4514_string() == "CN=karmada"
    assert "karmada-search.karmada-system.svc" in [
        n.value for n in serving.extensions.get_extension_for_class(__import__("cryptography").x509
                                                                    .SubjectAlternativeName).value]
    assert issued["addons-search-etcd-client"][0].issuer.rfc4514_string() == "CN=karmada-etcd-ca"
    for name, user in (("addons-search-client", pki_spec.SEARCH_USER),
                       ("addons-dashboard-client", pki_spec.DASHBOARD_USER)):
        subject = issued[name][0].subject.rfc4514_string()
        assert subject == f"CN={user}", subject  # no system:masters


def test_identities_are_least_privilege() -> None:
    writes = {"create", "update", "patch", "delete", "deletecollection", "*", "impersonate", "escalate", "bind"}
    search_role = addons_docs.search_rbac()[0]
    for rule in search_role["rules"]:
        if set(rule["verbs"]) & writes:
            assert rule["resources"] in (["tokenreviews"], ["subjectaccessreviews"]) and rule["verbs"] == ["create"]
    view = addons_docs.dashboard_rbac("view")
    own, login = (o for o in view if o["kind"] == "ClusterRole")
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in own["rules"] + login["rules"])
    assert not any("proxying" in r["resources"] or "secrets" in r["resources"] for r in own["rules"] + login["rules"])
    bound = {b["roleRef"]["name"] for b in view if b["kind"] == "ClusterRoleBinding"}
    assert "view" in bound and "edit" not in bound and "cluster-admin" not in bound
    edit = {b["roleRef"]["name"] for b in addons_docs.dashboard_rbac("edit") if b["kind"] == "ClusterRoleBinding"}
    assert "edit" in edit and "view" not in edit


def test_search_caches_exactly_what_the_stack_names(rendered_dev: Any) -> None:
    registry = find(rendered_dev, "karmada", "ResourceRegistry", "karmada-hub")
    assert registry["spec"] == {"targetCluster": {"clusterNames": ["dev-fsn1-a"]},  # the Push member only
                                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"},
                                                      {"apiVersion": "v1", "kind": "Pod"}]}
    apiservice = find(rendered_dev, "karmada", "APIService", "v1alpha1.search.karmada.io")["spec"]
    assert apiservice["service"] == {"name": "karmada-search", "namespace": "karmada-system", "port": 443}
    assert find(rendered_dev, "karmada", "Service", "karmada-search")["spec"]["type"] == "ExternalName"


def _with_search(**search: Any) -> Any:
    config = load_stack("dev")
    base = config.karmada.addons.search.model_dump(by_alias=True, mode="json")
    karmada = config.karmada.model_dump(by_alias=True, mode="json", exclude_none=True)
    karmada["addons"]["search"] = {**base, **search}
    return load_stack("dev", karmada=karmada)


def test_search_refuses_what_the_hub_cannot_or_must_not_cache() -> None:
    for search, message in (
            ({"members": ["dev-hel1-a"]}, r"karmada.addons.search.members\[0\]: 'dev-hel1-a' is a Pull member"),
            ({"members": ["nope"]}, r"members\[0\]: 'nope' is not a member of this fleet"),
            ({"resources": [{"apiVersion": "v1", "kind": "Secret"}]}, r"resources\[0\]: Secrets are never cached")):
        with pytest.raises(ConfigError, match=message) as err:
            preflight.check(_with_search(**search), "stacks/Pulumi.dev.yaml")
        assert "\n" not in str(err.value) and str(err.value).startswith("stacks/Pulumi.dev.yaml: karmada-hub:")


def test_search_memory_is_in_the_sizing_model() -> None:
    def search_pods(config: Any) -> Any:
        return next(p for p in capacity.hub_fit(config).pods if p.name == "Deployment/karmada-system/karmada-search")

    small, big = search_pods(_with_search(objectsPerMember=2000)), search_pods(_with_search(objectsPerMember=20000))
    assert small.replicas == 2
    assert small.memory_bytes == addons_docs.SEARCH_BASE_BYTES + 2000 * addons_docs.SEARCH_BYTES_PER_OBJECT
    assert big.memory_bytes - small.memory_bytes == 18000 * addons_docs.SEARCH_BYTES_PER_OBJECT
    with pytest.raises(ConfigError, match="cannot hold what the hub runs"):
        capacity.check(_with_search(objectsPerMember=200000), "stacks/Pulumi.dev.yaml")


def test_the_dashboard_runs_the_release_of_the_pinned_karmada(rendered_dev: Any) -> None:
    release = versions.release(versions.KARMADA_VERSION)
    assert release.dashboard == "v0.4.0"
    for name in versions.DASHBOARD_COMPONENTS:
        image = find(rendered_dev, "host", "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == f"docker.io/karmada/{name}:{release.dashboard}"
        versions.check_dashboard(versions.KARMADA_VERSION, image.rsplit(":", 1)[1])
    with pytest.raises(ValueError, match="not the release built for Karmada"):
        versions.check_dashboard(versions.KARMADA_VERSION, "v0.3.0")
    image = find(rendered_dev, "host", "Deployment", "karmada-search")["spec"]["template"]["spec"]["containers"][0]
    assert image["image"] == f"docker.io/karmada/karmada-search:{versions.KARMADA_VERSION}"


def test_a_region_stack_may_not_enable_them() -> None:
    raw = load_stack("prod-fsn1").karmada.model_dump(by_alias=True, mode="json", exclude_none=True)
    raw["addons"] = {"dashboard": {"enabled": True}}
    with pytest.raises(ConfigError, match=r"karmada\.addons: addons run on the hub"):
        load_stack("prod-fsn1", karmada=raw)


def _aggregated(role: str, rbac: list[dict[str, Any]]) -> dict[str, Any]:
    """Kubernetes' `view`/`edit` as the clusterrole-aggregation controller fills them in the karmada-apiserver: the
    rules of every ClusterRole labelled `aggregate-to-<role>` (KarmadaBootstrap's karmada-view/karmada-edit), plus
    a core read standing for the built-in rules (secrets are never in view)."""
    label = f"rbac.authorization.k8s.io/aggregate-to-{role}"
    rules = [r for o in rbac if o["kind"] == "ClusterRole" and (o["metadata"].get("labels") or {}).get(label)
             for r in o["rules"]]
    rules.append({"apiGroups": ["", "apps"], "resources": ["configmaps", "deployments", "namespaces"],
                  "verbs": ["get", "list", "watch"]})
    if role == "edit":  # Kubernetes' edit reads and writes Secrets (bootstrappolicy policy.go)
        rules.append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create"]})
    return {"kind": "ClusterRole", "metadata": {"name": role}, "rules": rules}


@pytest.mark.parametrize("access", ["view", "edit"])
def test_the_login_identity_reads_and_writes_only_as_granted(access: str) -> None:
    """What the dashboard's login token may do in the karmada-apiserver, evaluated like the authorizer over the
    rendered RBAC: the clusters list and policies read; with `view` every write refused; never Secrets or the
    proxying subresource (which karmada-search serves with its own identity)."""
    from components.karmada.bootstrap import rbac as bootstrap_rbac
    from tests.contract.checks import allowed

    rbac = [*bootstrap_rbac(), *addons_docs.dashboard_rbac(access)]
    rbac += [_aggregated("view", rbac), _aggregated("edit", rbac)]
    user = f"system:serviceaccount:karmada-system:{addons_docs.login_identity(access)}"
    groups = ["system:serviceaccounts", "system:serviceaccounts:karmada-system", "system:authenticated"]

    def may(verb: str, group: str, resource: str, ns: str | None = None) -> bool:
        return allowed(rbac, user, groups, verb, group, resource, ns, None)

    assert may("list", "cluster.karmada.io", "clusters") and may("get", "cluster.karmada.io", "clusters")
    assert may("list", "policy.karmada.io", "propagationpolicies", "shop")
    assert may("get", "search.karmada.io", "search")
    assert may("create", "policy.karmada.io", "propagationpolicies", "shop") is (access == "edit")
    assert may("get", "", "secrets", "shop") is (access == "edit")  # view never shows a Secret
    for verb, group, resource in (("delete", "cluster.karmada.io", "clusters"), ("update", "cluster.karmada.io",
                                  "clusters"), ("get", "search.karmada.io", "proxying"),
                                  ("create", "cluster.karmada.io", "clusters/proxy")):
        assert not may(verb, group, resource, "shop"), (verb, resource)
    own = [*addons_docs.dashboard_rbac(access)]
    for verb in ("create", "update", "delete", "patch"):
        assert not allowed(own, pki_spec.DASHBOARD_USER, ["system:authenticated"], verb, "cluster.karmada.io",
                           "clusters", None, None)


def test_karmada_search_is_reachable_before_it_is_ready(rendered_dev: Any) -> None:
    """karmada-search turns Ready only after listing its own API through the aggregator (found on the real
    binaries: tests/test_real_fleet.py): its Service publishes not-ready pods, and its APIService is not created
    after the Deployment's rollout, which pulumi-kubernetes awaits."""
    from hubctl.mocks import unwrap

    by_urn = {r.urn: r for r in rendered_dev.records}
    objects = {(unwrap(r.inputs).get("kind"), unwrap(r.inputs)["metadata"]["name"], r.provider.rsplit("::", 1)[-1]): r
               for r in rendered_dev.records if r.type.startswith("kubernetes:") and r.custom
               and not r.options.get("read")}
    service = unwrap(objects[("Service", "karmada-search", "k8s-host")].inputs)
    assert service["spec"]["publishNotReadyAddresses"] is True
    deployment = objects[("Deployment", "karmada-search", "k8s-host")].urn
    seen, todo = set(), list(objects[("APIService", "v1alpha1.search.karmada.io", "k8s-karmada")].dependencies)
    while todo:
        urn = todo.pop()
        if urn not in seen and urn in by_urn:
            seen.add(urn)
            todo += by_urn[urn].dependencies
    assert deployment not in seen
    # and it starts after its RBAC: without the extension-apiserver-authentication reader it exits at start
    seen, todo = set(), list(objects[("Deployment", "karmada-search", "k8s-host")].dependencies)
    while todo:
        urn = todo.pop()
        if urn not in seen and urn in by_urn:
            seen.add(urn)
            todo += by_urn[urn].dependencies
    readers = [r.urn for (kind, name, provider), r in objects.items()
               if kind == "RoleBinding" and provider == "k8s-karmada" and "karmada-search" in name]
    assert readers and set(readers) <= seen
