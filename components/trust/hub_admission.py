"""What the hub's own narrow identities may change: ValidatingAdmissionPolicies in the karmada-apiserver.

The status refresher (agents/status_refresher.py) needs `patch` on every tenant's Services and Ingresses, which
RBAC cannot narrow to one field; it only ever sets one annotation (`karmada-hub.io/status-refresh`, which makes
Karmada re-aggregate a template's status). This policy holds it to that: an update by its user may change that
annotation and nothing else of the object (spec, labels, other annotations, owners, finalizers), so a compromise of
its pod cannot rewrite any tenant's Service or Ingress (security review 2, M2).
"""

from __future__ import annotations

from typing import Any

from components.traffic import refresher_docs

REFRESHER_POLICY = "karmada-hub-status-refresher"
REFRESH_ANNOTATION = "karmada-hub.io/status-refresh"
_LABELS = {"app.kubernetes.io/part-of": "karmada-hub"}


def _same(field: str) -> str:
    """`metadata.<field>` (a map or list) unchanged, present or absent alike."""
    new, old = f"object.metadata.{field}", f"oldObject.metadata.{field}"
    return f"(has({new}) == has({old}) && (!has({new}) || {new} == {old}))"


def refresher_policy() -> list[dict[str, Any]]:
    key = REFRESH_ANNOTATION
    new, old = "object.metadata.annotations", "oldObject.metadata.annotations"
    annotations = (f"(!has({new}) || {new}.all(k, k == '{key}' || (has({old}) && k in {old} && {old}[k] == {new}[k])))"
                   f" && (!has({old}) || {old}.all(k, k == '{key}' || (has({new}) && k in {new})))")
    spec = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["services"]},
            {"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"],
             "resources": ["ingresses"]}]},
        "matchConditions": [{"name": "status-refresher",
                             "expression": f"request.userInfo.username == '{refresher_docs.USER}'"}],
        "validations": [{"expression": f"object.spec == oldObject.spec && {_same('labels')} && "
                                       f"{_same('ownerReferences')} && {_same('finalizers')} && {annotations}",
                         "message": f"the status refresher may change only the annotation {key}",
                         "reason": "Forbidden"}],
    }
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": REFRESHER_POLICY, "labels": dict(_LABELS)}, "spec": spec},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": REFRESHER_POLICY, "labels": dict(_LABELS)},
         "spec": {"policyName": REFRESHER_POLICY, "validationActions": ["Deny"]}},
    ]
