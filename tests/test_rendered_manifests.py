"""Every object the dev plan would apply, to every API server, against the upstream schemas.

Kubernetes objects: the OpenAPI schemas of the hub's minor (kubernetes-validate, strict). Karmada
objects: the CRDs of the pinned release. `Cluster`: the schema written from the upstream Go type.
The objects are the program's real inputs (secrets unwrapped), i.e. exactly what would be applied.
"""

from __future__ import annotations

from typing import Any

import pytest

from components import versions
from tests.support.rendered import objects as _objects
from tests.support.schemas import validate_any

MINOR = versions.kubernetes_minor(versions.K3S_VERSION)


def test_every_target_has_objects(rendered_dev: Any) -> None:
    targets = {t for t, _ in _objects(rendered_dev)}
    assert {"host", "karmada", "member-dev-fsn1-a", "member-dev-hel1-a"} <= targets


def test_every_object_validates(rendered_dev: Any) -> None:
    failures = []
    for target, obj in _objects(rendered_dev):
        try:
            validate_any(obj, MINOR)
        except AssertionError as exc:  # SchemaError is an AssertionError
            failures.append(f"{target} {obj['kind']}/{obj['metadata'].get('name')}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", ["StatefulSet", "Deployment"])
def test_control_plane_workloads_are_ha(rendered_dev: Any, kind: str) -> None:
    objs = [o for t, o in _objects(rendered_dev) if t == "host" and o["kind"] == kind
            and o["metadata"].get("namespace") == "karmada-system"]
    assert objs
    pdbs = {o["metadata"]["name"] for t, o in _objects(rendered_dev) if o["kind"] == "PodDisruptionBudget"}
    for obj in objs:
        spec = obj["spec"]["template"]["spec"]
        assert obj["spec"]["replicas"] >= 2
        required = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert required[0]["topologyKey"] == "kubernetes.io/hostname"
        assert obj["metadata"]["name"] in pdbs
        ctx = spec["containers"][0]["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False and ctx["runAsNonRoot"] is True


def test_apiserver_allows_anonymous_on_exactly_the_health_paths() -> None:
    """kube-apiserver v1.35 (k8s.io/apiserver v0.35.3 pkg/apis/apiserver/v1 AuthenticationConfiguration; the
    anonymous authenticator admits a request only if its path is one of the conditions, exact match)."""
    import yaml

    from components.karmada import flags, manifests

    doc = yaml.safe_load(manifests.authentication_config())
    assert doc == {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
                   "anonymous": {"enabled": True, "conditions": [{"path": p} for p in flags.HEALTH_PATHS]}}
    for bad in ((), ("/readyz*",), ("healthz",)):
        with pytest.raises(ValueError):
            manifests.authentication_config(bad)
