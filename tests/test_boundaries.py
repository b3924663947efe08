"""The boundary cases the real karmada-apiserver decides (tests/support/boundaries.py), checked offline where the
program's rendered RBAC decides: every "rbac" case gives its expected answer under RBAC semantics over the rendered
Roles and bindings (tests/support/rbac.py), and every "admission" case passes RBAC, so that its answer on a real
server comes from the admission policy under test. A mutated grant turns a refusal into an allowance here.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support import boundaries
from tests.support.rbac import NODE_BOOTSTRAPPER, Rbac, Request
from tests.support.rendered import objects


def _rbac(plan: Any, server: str, extra: list[dict[str, Any]] | None = None) -> Rbac:
    objs = [o for t, o in objects(plan) if t == server and o["kind"] in ("Role", "ClusterRole", "RoleBinding",
                                                                          "ClusterRoleBinding")]
    return Rbac([*objs, *(extra or [])], builtins=NODE_BOOTSTRAPPER)


def _allowed(rbac: Rbac, case: boundaries.Case) -> bool:
    who, req = case.identity, case.request
    if "system:masters" in who.groups:
        return True
    return rbac.allowed(Request(who.user, req.verb, req.group, req.rbac_resource, req.namespace, req.name,
                                (*who.groups, "system:authenticated")))


@pytest.fixture(scope="module")
def cases(rendered_prod: dict[str, Any]) -> list[boundaries.Case]:
    return boundaries.cases(rendered_prod)


def test_the_cases_cover_both_ways(cases: list[boundaries.Case]) -> None:
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids))
    for layer in ("rbac", "admission"):
        answers = {c.allowed for c in cases if c.decided_by == layer}
        assert answers == {True, False}, layer
    assert any(c.id.startswith("review C1") for c in cases) and any(c.id.startswith("review C2") for c in cases)
    assert any(c.id.startswith("review H4") for c in cases)


def test_rbac_cases_hold_on_the_rendered_rbac(rendered_prod: dict[str, Any], cases: list[boundaries.Case]) -> None:
    rbac = {s: _rbac(rendered_prod["prod-hub"], s) for s in ("karmada", "host")}
    wrong = [c.id for c in cases if c.decided_by == "rbac" and _allowed(rbac[c.server], c) != c.allowed]
    assert wrong == []


def test_admission_cases_get_past_rbac(rendered_prod: dict[str, Any], cases: list[boundaries.Case]) -> None:
    """Else a real server's refusal would say nothing about the admission policy. A server-side apply is authorized
    as `patch`, and as `create` with the object's name when it creates (a case without `setup`)."""
    import dataclasses

    rbac = _rbac(rendered_prod["prod-hub"], "karmada")
    admission = [c for c in cases if c.decided_by == "admission"]
    assert {c.request.verb for c in admission} == {"patch"}
    blocked = [c.id for c in admission for verb in ("patch", *(() if c.setup else ("create",)))
               if not _allowed(rbac, dataclasses.replace(c, request=dataclasses.replace(c.request, verb=verb)))]
    assert blocked == []
    assert all(c.request.body is not None for c in cases if c.decided_by == "admission")


def test_a_widened_grant_turns_a_refusal(rendered_prod: dict[str, Any], cases: list[boundaries.Case]) -> None:
    """The check can fail: give the agent `create` on Clusters and review C2's case flips."""
    hub = rendered_prod["prod-hub"]
    role = copy.deepcopy(next(o for t, o in objects(hub) if t == "karmada" and o["kind"] == "ClusterRole"
                              and o["metadata"]["name"] == "system:karmada:prod-fsn1-b:agent"))
    role["rules"].append({"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create"]})
    others = [o for t, o in objects(hub) if t == "karmada" and o["kind"] in ("Role", "ClusterRole", "RoleBinding",
                                                                              "ClusterRoleBinding")
              and (o["kind"], o["metadata"]["name"]) != ("ClusterRole", role["metadata"]["name"])]
    rbac = Rbac([*others, role], builtins=NODE_BOOTSTRAPPER)
    case = next(c for c in cases if c.id == "review C2: an agent creates a Cluster")
    assert not case.allowed and _allowed(rbac, case)
