"""The trust boundaries the real karmada-apiserver decides, as data: who asks what, and what the answer must be.

Every case is derived from the rendered plans (prod-hub and its region stacks: `cases(plans)`), so names, users
and bodies are exactly what the program renders. A case is an identity (user and groups, as the API server would
authenticate them: a client certificate's CN and Os, a bootstrap token's `system:bootstrap:<id>` and groups), a
request (verb, group/version/resource[/subresource], namespace, name, and for admission cases the body) and the
expected answer: allowed, or refused with `reason` (a substring of the API server's message; for RBAC refusals
"forbidden").

How to run them against a real karmada-apiserver (kube-apiserver v1.35.4 with the rendered flags and the rendered
RBAC, admission policies and CRDs applied): authenticate each identity (client certificates from the rendered
Karmada CA, or a token table); ask RBAC cases as SubjectAccessReviews; send admission cases the way the program
writes, as a server-side apply (PATCH, `application/apply-patch+yaml`, to the named object: authorized as `patch`,
and as `create` with the name when it creates, k8s.io/apiserver v0.35 endpoints/handlers/patch.go), with
`?dryRun=All` so that they stay independent (admission, ValidatingAdmissionPolicy included, runs on dry-run
requests; nothing is stored). `setup` lists objects a case needs to exist first (applied by an admin).
tests/integration/test_admission_policies.py does exactly that on a plain kube-apiserver v1.35.4.

`decided_by` says which layer must give the answer: "rbac" cases are evaluated offline too
(tests/test_boundaries.py, with tests/support/rbac.py over the rendered Roles and bindings); "admission" cases pass
RBAC (checked offline as well) and are refused, or admitted, by a ValidatingAdmissionPolicy, which only the real
server evaluates. The review's two attacks are among them: a region identity writing another member's bootstrap
token (rbac), and everything a region could put into a policy or token (admission); the CSR half of the token
attack is the hub approver's decision (tests/test_agent_csr_approver.py, tests/test_pull_join.py).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from components.fleet import csr_approver_docs as approver
from components.fleet import member_docs
from components.traffic import refresher_docs
from components.trust import hub_admission
from tests.support.rendered import objects

Server = Literal["karmada", "host"]


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()
    how: str = "client certificate"
    """How the real server authenticates it: "client certificate" (CN user, O groups) or "bootstrap token"."""


@dataclass(frozen=True)
class Req:
    verb: str
    group: str
    version: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    body: Mapping[str, Any] | None = None

    @property
    def rbac_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Case:
    id: str
    server: Server
    identity: Identity
    request: Req
    allowed: bool
    reason: str
    """Allowed: why it must be; refused: a substring of the server's message."""
    decided_by: Literal["rbac", "admission"]
    setup: tuple[Mapping[str, Any], ...] = field(default=())


FORBIDDEN = "forbidden"
ADMIN = Identity("karmada-hub-admin", ("system:masters",))


def _plural(kind: str) -> str:
    return {"PropagationPolicy": "propagationpolicies", "OverridePolicy": "overridepolicies",
            "FederatedResourceQuota": "federatedresourcequotas", "Secret": "secrets", "ConfigMap": "configmaps",
            "Cluster": "clusters", "Service": "services"}[kind]


def _req(verb: str, obj: Mapping[str, Any], body: bool = True) -> Req:
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj["metadata"]
    return Req(verb, group, version, _plural(obj["kind"]), meta.get("namespace", ""), meta["name"],
               body=copy.deepcopy(dict(obj)) if body else None)


def _region_users(hub: Any) -> dict[str, str]:
    return {region: ids["user"] for region, ids in hub.raw_outputs["regionIdentities"].items()}


def _token(member: str, expires: str = "2099-01-01T00:00:00Z", **data: str | None) -> dict[str, Any]:
    """A member's bootstrap token Secret as PullJoin writes it, then each `data` key set (None: removed)."""
    doc = member_docs.bootstrap_token_secret(member_docs.token_id(member), "0123456789abcdef", expires)
    for key, value in data.items():
        if value is None:
            doc["data"].pop(key, None)
        else:
            doc["data"][key] = base64.b64encode(value.encode()).decode()
    return doc


# ------------------------------------------------------------------------------------------------ RBAC


def rbac_cases(plans: Mapping[str, Any]) -> list[Case]:
    hub = plans["prod-hub"]
    users = _region_users(hub)
    fsn, hel = Identity(users["eu-fsn"]), Identity(users["eu-hel"])
    out: list[Case] = []

    def case(id_: str, who: Identity, req: Req, allowed: bool, reason: str, server: Server = "karmada") -> None:
        out.append(Case(id_, server, who, req, allowed, reason if allowed else FORBIDDEN, "rbac"))

    # A region writes exactly its own objects (every object its plan applies), and no other region's.
    for stack, region, other in (("prod-fsn1", "eu-fsn", hel), ("prod-hel1", "eu-hel", fsn)):
        me = Identity(users[region])
        for target, obj in objects(plans[stack]):
            if target not in ("karmada", "host"):
                continue
            req = _req("create", obj, body=False)
            case(f"{region} writes its {obj['kind']} {req.namespace}/{req.name}", me, req, True,
                 f"{stack} applies it", target)  # type: ignore[arg-type]
            if other.user != me.user:
                case(f"another region writes {region}'s {obj['kind']} {req.namespace}/{req.name}", other, req,
                     False, "", target)  # type: ignore[arg-type]
    # ... nothing else: no Clusters, no RBAC, no listing Secrets, no CSRs, no namespaces.
    secrets = Req("list", "", "v1", "secrets", "kube-system")
    for id_, req in (
        ("a region creates a Cluster", Req("create", "cluster.karmada.io", "v1alpha1", "clusters", name="prod-fsn1-a")),
        ("a region changes a Cluster", Req("patch", "cluster.karmada.io", "v1alpha1", "clusters", name="prod-fsn1-a")),
        ("a region creates a Role", Req("create", "rbac.authorization.k8s.io", "v1", "roles", "shop", "x")),
        ("a region lists kube-system Secrets", secrets),
        ("a region reads a Push member's token", Req("get", "", "v1", "secrets", "karmada-cluster", "prod-hel1-a")),
        ("a region creates a CSR", Req("create", "certificates.k8s.io", "v1", "certificatesigningrequests")),
        ("a region creates a namespace", Req("create", "", "v1", "namespaces", name="evil")),
        ("review C1: a region writes another member's bootstrap token",
         _req("create", _token("prod-hel1-b"), body=False)),
        ("a region writes a token no member has", Req("create", "", "v1", "secrets", "kube-system",
                                                      "bootstrap-token-abcdef")),
    ):
        case(id_, fsn, req, False, "")
    case("a region writes its own Pull member's bootstrap token", fsn, _req("create", _token("prod-fsn1-b"),
                                                                            body=False), True, "PullJoin")
    # An old key's certificate (the region's name without the current key id) is bound to nothing.
    stale = Identity("karmada-hub:region:eu-fsn:000000000000")
    case("a region certificate of a replaced key", stale, _req("create", _token("prod-fsn1-b"), body=False), False,
         "")

    # A Pull agent: its own Cluster (read, status), nothing else of any Cluster.
    agent = Identity(member_docs.agent_user("prod-fsn1-b"), ("system:karmada:agents",))
    cl = ("cluster.karmada.io", "v1alpha1", "clusters")
    case("an agent reads its Cluster", agent, Req("get", *cl, name="prod-fsn1-b"), True, "registration")
    case("an agent lists Clusters", agent, Req("list", *cl), True, "ClusterRegisterOption.Validate")
    case("an agent reports its status", agent, Req("update", *cl, name="prod-fsn1-b", subresource="status"), True,
         "cluster status controller")
    for id_, req in (
        ("review C2: an agent creates a Cluster", Req("create", *cl, name="rogue")),
        ("review C2: an agent changes its Cluster's spec", Req("update", *cl, name="prod-fsn1-b")),
        ("an agent patches its Cluster", Req("patch", *cl, name="prod-fsn1-b")),
        ("an agent deletes its Cluster", Req("delete", *cl, name="prod-fsn1-b")),
        ("an agent reports another member's status", Req("update", *cl, name="prod-fsn1-a", subresource="status")),
        ("an agent reads Secrets", Req("get", "", "v1", "secrets", "karmada-cluster", "prod-fsn1-a")),
        ("an agent writes another member's Works", Req("create", "work.karmada.io", "v1alpha1", "works",
                                                       "karmada-es-prod-hel1-b")),
        ("an agent approves CSRs", Req("update", "certificates.k8s.io", "v1", "certificatesigningrequests",
                                       name="x", subresource="approval")),
    ):
        case(id_, agent, req, False, "")
    case("an agent renews through the CSR API", agent, Req("create", "certificates.k8s.io", "v1",
                                                            "certificatesigningrequests"), True, "certRotation")

    # A bootstrap token: create and read CSRs, and no more (no upstream approval subresources).
    token = Identity(f"system:bootstrap:{member_docs.token_id('prod-fsn1-b')}",
                     ("system:bootstrappers", member_docs.BOOTSTRAP_GROUP), "bootstrap token")
    csrs = ("certificates.k8s.io", "v1", "certificatesigningrequests")
    case("a bootstrap token creates a CSR", token, Req("create", *csrs), True, "system:node-bootstrapper")
    case("a bootstrap token reads its CSR", token, Req("get", *csrs, name="x"), True, "system:node-bootstrapper")
    for sub in ("clusteragent", "selfclusteragent"):
        case(f"a bootstrap token may not create certificatesigningrequests/{sub}", token,
             Req("create", *csrs, subresource=sub), False, "")
    case("a bootstrap token reads a Cluster", token, Req("get", *cl, name="prod-fsn1-a"), False, "")

    # The hub's approver: approve for the client signer, clean its members' tokens, nothing else.
    app = Identity(approver.USER)
    case("the approver approves client certificates", app, Req("approve", "certificates.k8s.io", "v1", "signers",
                                                                name=approver.SIGNER), True, "its one signer")
    case("the approver writes approvals", app, Req("update", *csrs, name="x", subresource="approval"), True, "")
    case("the approver deletes a member's token", app, Req("delete", "", "v1", "secrets", "kube-system",
                                                           f"bootstrap-token-{member_docs.token_id('prod-ash-a')}"),
         True, "the hour's cleanup")
    for id_, req in (
        ("the approver approves kubelet serving", Req("approve", "certificates.k8s.io", "v1", "signers",
                                                      name="kubernetes.io/kubelet-serving")),
        ("the approver signs", Req("sign", "certificates.k8s.io", "v1", "signers", name=approver.SIGNER)),
        ("the approver reads other Secrets", Req("get", "", "v1", "secrets", "karmada-cluster", "prod-fsn1-a")),
        ("the approver lists kube-system Secrets", secrets),
        ("the approver creates CSRs", Req("create", *csrs)),
    ):
        case(id_, app, req, False, "")
    return out


# ------------------------------------------------------------------------------------------- admission


def _mutated(obj: Mapping[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    change(out["spec"])
    return out


def admission_cases(plans: Mapping[str, Any], now: dt.datetime | None = None) -> list[Case]:
    """Each passes RBAC (the region's own object names, an admin's token writes) and is decided by a
    ValidatingAdmissionPolicy; sent with dryRun=All."""
    hub, fsn_plan = plans["prod-hub"], plans["prod-fsn1"]
    fsn = Identity(_region_users(hub)["eu-fsn"])
    out: list[Case] = []

    def case(id_: str, who: Identity, req: Req, allowed: bool, reason: str,
             setup: Sequence[Mapping[str, Any]] = ()) -> None:
        out.append(Case(id_, "karmada", who, req, allowed, reason, "admission", tuple(setup)))

    rendered = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
                for t, o in objects(fsn_plan) if t == "karmada" and o["apiVersion"].startswith("policy.karmada.io")}
    for (kind, ns, name), obj in sorted(rendered.items()):
        case(f"eu-fsn applies its rendered {kind} {ns}/{name}", fsn, _req("patch", obj), True, "what it renders")
    pp = rendered[("PropagationPolicy", "shop", "shop")]
    op = rendered[("OverridePolicy", "shop", "shop-regional")]
    ing = next(o for (k, ns, _), o in rendered.items() if k == "OverridePolicy" and ns == "ingress-nginx")
    frq = rendered[("FederatedResourceQuota", "shop", "shop")]
    last = lambda s: s["placement"]["clusterAffinities"][-1]  # noqa: E731
    region_refusals = [
        ("review H4: a tenant placed on another region's member", pp,
         lambda s: last(s)["clusterNames"].append("prod-hel1-a"), "may name only region eu-fsn's members"),
        ("a placement by label", pp, lambda s: s["placement"]["clusterAffinities"].__setitem__(
            -1, {"affinityName": "x", "labelSelector": {"matchLabels": {"tier": "standard"}}}),
         "may name only region eu-fsn's members"),
        ("a placement by region field", pp, lambda s: s["placement"]["clusterAffinities"].__setitem__(
            -1, {"affinityName": "x", "fieldSelector": {"matchExpressions": [
                {"key": "region", "operator": "In", "values": ["eu-fsn"]}]}}), "may name only region eu-fsn's"),
        ("an empty affinity (every cluster)", pp, lambda s: s["placement"]["clusterAffinities"].__setitem__(
            -1, {"affinityName": "x"}), "may name only region eu-fsn's members"),
        ("no affinity at all (every cluster)", pp, lambda s: s["placement"].pop("clusterAffinities"),
         "names its clusters"),
        ("static weights on another region's member", pp, lambda s: s["placement"].__setitem__(
            "replicaScheduling", {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                  "weightPreference": {"staticWeightList": [
                                      {"targetCluster": {"clusterNames": ["prod-hel1-a"]}, "weight": 1}]}}),
         "static weights may name only"),
        ("an override on another region's member", op, lambda s: s["overrideRules"][0].__setitem__(
            "targetCluster", {"clusterNames": ["prod-hel1-a"]}), "every override rule targets only"),
        ("an override with an empty target", op, lambda s: s["overrideRules"][0].__setitem__("targetCluster", {}),
         "every override rule targets only"),
        ("a plaintext override", op, lambda s: s["overrideRules"][0]["overriders"].__setitem__(
            "plaintext", [{"path": "/spec/replicas", "operator": "replace", "value": 5}]),
         "registry imageOverrider and labelsOverrider"),
        ("an image repository override", op, lambda s: s["overrideRules"][0]["overriders"].__setitem__(
            "imageOverrider", [{"component": "Repository", "operator": "replace", "value": "evil/img"}]),
         "registry imageOverrider and labelsOverrider"),
        ("a command override", op, lambda s: s["overrideRules"][0]["overriders"].__setitem__(
            "commandOverrider", [{"containerName": "c", "operator": "add", "value": ["sh"]}]),
         "registry imageOverrider and labelsOverrider"),
        ("a top-level targetCluster", op, lambda s: s.__setitem__("targetCluster", {"clusterNames": ["prod-fsn1-a"]}),
         "no top-level targetCluster"),
        ("review H4: the shared ingress controller's image on every member", ing,
         lambda s: s["overrideRules"][0]["overriders"].__setitem__(
             "imageOverrider", [{"component": "Registry", "operator": "replace", "value": "evil.example"}]),
         "may only add --publish-status-address"),
        ("another ingress-nginx flag", ing, lambda s: s["overrideRules"][0]["overriders"]["argsOverrider"][0]
         .__setitem__("value", ["--enable-ssl-passthrough"]), "may only add --publish-status-address"),
        ("a flag smuggled after the address", ing, lambda s: s["overrideRules"][0]["overriders"]["argsOverrider"][0]
         .__setitem__("value", ["--publish-status-address=192.0.2.1 --enable-ssl-passthrough"]),
         "may only add --publish-status-address"),
        ("another resource in ingress-nginx", ing, lambda s: s.__setitem__(
            "resourceSelectors", [{"apiVersion": "v1", "kind": "Secret", "name": "tls"}]),
         "may only add --publish-status-address"),
        ("the ingress override on another region's member", ing, lambda s: s["overrideRules"][0].__setitem__(
            "targetCluster", {"clusterNames": ["prod-hel1-a"]}), "every override rule targets only"),
        ("quota on another region's member", frq, lambda s: s["staticAssignments"][0].__setitem__(
            "clusterName", "prod-hel1-a"), "quota may be assigned only"),
    ]
    for id_, obj, change, reason in region_refusals:
        case(id_, fsn, _req("patch", _mutated(obj, change)), False, reason)
    case("the hub's admin is not a region (the policy matches region users only)", ADMIN,
         _req("patch", _mutated(op, lambda s: s["overrideRules"][0]["overriders"].__setitem__(
             "plaintext", [{"path": "/spec/replicas", "operator": "replace", "value": 5}]))), True,
         "matchConditions: region users")

    # Bootstrap tokens: content is the hub's rule, whoever writes them (the region writes its member's by name).
    now = now or dt.datetime.now(dt.UTC)
    soon = (now + dt.timedelta(minutes=50)).strftime("%Y-%m-%dT%H:%M:%SZ")
    good = _token("prod-fsn1-b", soon)
    case("a region writes its member's bootstrap token", fsn, _req("patch", good), True, "PullJoin's token")
    for id_, token, reason in (
        ("review C1: a token without expiration", _token("prod-fsn1-b", soon, expiration=None), "data.expiration"),
        ("review C1: a token that signs", _token("prod-fsn1-b", soon, **{"usage-bootstrap-signing": "true"}),
         "authenticates and does nothing else"),
        ("review C1: a token with more groups", _token("prod-fsn1-b", soon, **{
            "auth-extra-groups": f"{member_docs.BOOTSTRAP_GROUP},system:bootstrappers:kubeadm:default-node-token"}),
         "only extra group"),
        ("a token without the authentication usage", _token("prod-fsn1-b", soon,
                                                             **{"usage-bootstrap-authentication": None}),
         "authenticates and does nothing else"),
    ):
        case(id_, fsn, _req("patch", token), False, reason)
        case(f"{id_} (by the hub's admin)", ADMIN, _req("patch", token), False, reason)
    # The status refresher: its patch right on every tenant's Service reaches one annotation only.
    refresher = Identity(refresher_docs.USER)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop",
                                                                   "annotations": {"team": "shop"}},
               "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "web"}}}
    mark = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "web", "namespace": "shop", "annotations": {hub_admission.REFRESH_ANNOTATION: "0123456789abcdef"}}}
    case("the status refresher sets its annotation", refresher, _req("patch", mark), True, "what it does",
         setup=(service,))
    for id_, change in (
        ("review M2: the status refresher rewrites a tenant's Service", lambda o: o.__setitem__(
            "spec", {"type": "ExternalName", "externalName": "attacker.example"})),
        ("the status refresher relabels a tenant's Service", lambda o: o["metadata"].__setitem__(
            "labels", {"app": "other"})),
        ("the status refresher rewrites another annotation", lambda o: o["metadata"]["annotations"].__setitem__(
            "team", "other")),
    ):
        body = copy.deepcopy(mark)
        change(body)
        case(id_, refresher, _req("patch", body), False, "may change only the annotation", setup=(service,))

    longer = copy.deepcopy(good)
    longer["data"]["expiration"] = base64.b64encode(b"2099-01-01T00:00:00Z").decode()
    case("a token's expiration pushed out after creation (server-side apply)", fsn, Req(
        "patch", "", "v1", "secrets", "kube-system", good["metadata"]["name"], body=longer), False,
        "content is fixed once created", setup=(good,))
    return out


def cases(plans: Mapping[str, Any]) -> list[Case]:
    return [*rbac_cases(plans), *admission_cases(plans)]


def region_identity(plans: Mapping[str, Any], region: str) -> str:
    """The user name the rendered hub binds for a region (its certificate's CN)."""
    return _region_users(plans["prod-hub"])[region]

