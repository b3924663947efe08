"""What a region's policies may say: a ValidatingAdmissionPolicy in the karmada-apiserver over every region identity.

RBAC names the objects a region writes (region_rbac.py) but not their content. Without more, a region's
OverridePolicy in the shared `ingress-nginx` namespace could target every member with an image or plaintext
overrider (its image as every member's ingress controller), and its tenant policies could place or rewrite its
tenants' workloads on other regions' members (security review 2, H4). This policy, bound to every user
`karmada-hub:region:*`, admits a region's PropagationPolicies, OverridePolicies and FederatedResourceQuotas only
when:

- every cluster they name is one of that region's members, by name (clusterNames; no label or field selector,
  never an empty target: an empty ClusterAffinity selects every cluster), read from a hub-owned ConfigMap
  (`karmada-system/karmada-hub-region-members`, from the regions' stack files, `members_configmap`);
- a PropagationPolicy has a placement that names its clusters (no placement propagates everywhere);
- an OverridePolicy uses only what the program renders: in `ingress-nginx`, one argsOverrider on the controller
  container adding `--publish-status-address=<IPv4>` to the ingress controller workload; in a tenant namespace,
  a registry-only imageOverrider and labelsOverrider. No deprecated top-level `targetCluster`/`overriders`.

The region's name is the third field of its user name (`karmada-hub:region:<region>:<key id>`, which the hub
signs). Checked on kube-apiserver v1.35.4 (tests/support/boundaries.py holds the cases).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.karmada import flags
from components.operations.region_intents import RegionIntent
from components.traffic import docs as traffic

POLICY = "karmada-hub-region-policies"
MEMBERS_CONFIGMAP = "karmada-hub-region-members"
MEMBERS_NAMESPACE = flags.NAMESPACE
USER_PREFIX = "karmada-hub:region:"
_LABELS = {"app.kubernetes.io/part-of": "karmada-hub"}


def members_configmap(intents: Sequence[RegionIntent]) -> dict[str, Any]:
    """karmada-apiserver: region -> its members, comma-separated (the policy's parameter; the hub's data)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": MEMBERS_CONFIGMAP, "namespace": MEMBERS_NAMESPACE, "labels": dict(_LABELS)},
            "data": {i.region: ",".join(sorted(m.name for m in i.members)) for i in intents}}


def _term(t: str) -> str:
    """A ClusterAffinity `t` that names only the region's members, by name, and at least one."""
    return (f"!has({t}.labelSelector) && !has({t}.fieldSelector) && has({t}.clusterNames) && "
            f"size({t}.clusterNames) > 0 && {t}.clusterNames.all(n, n in variables.members)")


def _none_of(obj: str, fields: Sequence[str]) -> str:
    return " && ".join(f"!has({obj}.{f})" for f in fields)


OVERRIDERS = ("plaintext", "imageOverrider", "commandOverrider", "argsOverrider", "labelsOverrider",
              "annotationsOverrider", "fieldOverrider")
IPV4 = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


def _validations() -> list[dict[str, Any]]:
    pp, op, frq = ("request.kind.kind == 'PropagationPolicy'", "request.kind.kind == 'OverridePolicy'",
                   "request.kind.kind == 'FederatedResourceQuota'")
    placement = "object.spec.placement"
    weights = f"{placement}.replicaScheduling.weightPreference"
    ingress = f"object.metadata.namespace == '{traffic.INGRESS_NAMESPACE}'"
    publish = (f"^{traffic.INGRESS_NGINX_PUBLISH_FLAG}={IPV4}\\\\.{IPV4}\\\\.{IPV4}\\\\.{IPV4}$")
    ingress_rule = (
        f"{_none_of('r.overriders', [o for o in OVERRIDERS if o != 'argsOverrider'])} && "
        "has(r.overriders.argsOverrider) && r.overriders.argsOverrider.all(a, "
        f"a.containerName == '{traffic.INGRESS_NGINX_CONTAINER}' && a.operator == 'add' && size(a.value) == 1 && "
        f"a.value[0].matches('{publish}'))")
    forbidden = ["plaintext", "commandOverrider", "argsOverrider", "annotationsOverrider", "fieldOverrider"]
    tenant_rule = (
        f"{_none_of('r.overriders', forbidden)} && (!has(r.overriders.imageOverrider) || "
        "r.overriders.imageOverrider.all(i, i.component == 'Registry' && !has(i.predicate)))")
    return [
        {"expression": "variables.members.size() > 0",
         "messageExpression": "'region ' + variables.region + ' has no members at this hub'", "reason": "Forbidden"},
        {"expression": f"!({pp}) || (has(object.spec.placement) && (has({placement}.clusterAffinity) || "
                       f"has({placement}.clusterAffinities)))",
         "message": "a region's PropagationPolicy names its clusters (clusterAffinity or clusterAffinities)",
         "reason": "Forbidden"},
        {"expression": f"!({pp}) || !has(object.spec.placement) || !has({placement}.clusterAffinity) || "
                       f"({_term(placement + '.clusterAffinity')})",
         "messageExpression": "'clusterAffinity may name only region ' + variables.region + \"'s members by name\"",
         "reason": "Forbidden"},
        {"expression": f"!({pp}) || !has(object.spec.placement) || !has({placement}.clusterAffinities) || "
                       f"{placement}.clusterAffinities.all(t, ({_term('t')}) && (!has(t.overflowAffinities) || "
                       f"t.overflowAffinities.all(o, {_term('o')})))",
         "messageExpression": "'every cluster affinity group may name only region ' + variables.region + "
                              "\"'s members by name\"", "reason": "Forbidden"},
        {"expression": f"!({pp}) || !has(object.spec.placement) || !has({placement}.replicaScheduling) || "
                       f"!has({placement}.replicaScheduling.weightPreference) || !has({weights}.staticWeightList) || "
                       f"{weights}.staticWeightList.all(w, {_term('w.targetCluster')})",
         "messageExpression": "'static weights may name only region ' + variables.region + \"'s members\"",
         "reason": "Forbidden"},
        {"expression": f"!({op}) || ({_none_of('object.spec', ['targetCluster', 'overriders'])} && "
                       "has(object.spec.overrideRules) && object.spec.overrideRules.all(r, has(r.targetCluster) && "
                       f"{_term('r.targetCluster')}))",
         "messageExpression": "'every override rule targets only region ' + variables.region + \"'s members by "
                              "name (no top-level targetCluster or overriders)\"", "reason": "Forbidden"},
        {"expression": f"!({op}) || !({ingress}) || (object.spec.resourceSelectors.all(s, s.apiVersion == "
                       f"'apps/v1' && s.kind in ['Deployment', 'DaemonSet'] && has(s.name) && "
                       f"s.name == '{traffic.INGRESS_CONTROLLER}') && "
                       f"object.spec.overrideRules.all(r, {ingress_rule}))",
         "message": f"in {traffic.INGRESS_NAMESPACE} a region may only add {traffic.INGRESS_NGINX_PUBLISH_FLAG}="
                    f"<IPv4> to the {traffic.INGRESS_NGINX_CONTAINER} container of {traffic.INGRESS_CONTROLLER}",
         "reason": "Forbidden"},
        {"expression": f"!({op}) || {ingress} || object.spec.overrideRules.all(r, {tenant_rule})",
         "message": "a tenant's OverridePolicy may use only a registry imageOverrider and labelsOverrider",
         "reason": "Forbidden"},
        {"expression": f"!({frq}) || !has(object.spec.staticAssignments) || "
                       "object.spec.staticAssignments.all(a, a.clusterName in variables.members)",
         "messageExpression": "'quota may be assigned only to region ' + variables.region + \"'s members\"",
         "reason": "Forbidden"},
    ]


def region_policy() -> list[dict[str, Any]]:
    """karmada-apiserver: the ValidatingAdmissionPolicy and its binding (parameter: `members_configmap`)."""
    resources = ["propagationpolicies", "overridepolicies", "federatedresourcequotas"]
    spec = {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": ["policy.karmada.io"], "apiVersions": ["*"],
                                                "operations": ["CREATE", "UPDATE"], "resources": resources}]},
        "matchConditions": [{"name": "region-identity",
                             "expression": f"request.userInfo.username.startsWith('{USER_PREFIX}')"}],
        "variables": [
            {"name": "region", "expression": "request.userInfo.username.split(':')[2]"},
            {"name": "members", "expression": "has(params.data) && variables.region in params.data ? "
                                              "params.data[variables.region].split(',') : []"},
        ],
        "validations": _validations(),
    }
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": POLICY, "labels": dict(_LABELS)}, "spec": spec},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POLICY, "labels": dict(_LABELS)},
         "spec": {"policyName": POLICY, "validationActions": ["Deny"],
                  "paramRef": {"name": MEMBERS_CONFIGMAP, "namespace": MEMBERS_NAMESPACE,
                               "parameterNotFoundAction": "Deny"}}},
    ]
