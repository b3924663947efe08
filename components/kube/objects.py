"""Turn a Kubernetes object (a plain dict from a pure document function) into its Pulumi resource.

Documents are built and tested as plain data; this is the one place that registers them, so every component
applies objects the same way: as a `KubeObject`, registered under the pulumi-kubernetes type token of its
`apiVersion`/`kind` (`kubernetes:core/v1:Secret`, `kubernetes:apps/v1:Deployment`, a Karmada CR's
`kubernetes:policy.karmada.io/v1alpha1:PropagationPolicy`) with the camelCase fields the provider takes.

That is the request pulumi-kubernetes' generated classes send (same token, inputs, provider, plugin version
and, for a Secret, the same secret outputs) less two things the program never uses:

- their type aliases (`Role` also answers to `rbac.authorization.k8s.io/v1beta1:Role`, `Deployment` to
  `extensions/v1beta1`, ...): they let a stack adopt state written under an older API version; these stacks
  have only ever registered the versions they register now. Each alias costs the SDK an Output and a URN
  computation per resource, and with the typed classes' argument handling that was a quarter of a 100-member
  plan (bench/fleet.py);
- their Python-side argument checking: every rendered object is validated against the upstream OpenAPI schema
  and CRDs instead (tests/test_rendered_manifests.py), which is stricter. tests/test_kube_objects.py compares
  the requests of both, kind by kind.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_kubernetes import _utilities as k8s_utilities

_SECRET_FIELDS = ("data", "stringData")

PLUGIN_VERSION = k8s_utilities.get_version()
"""The pulumi-kubernetes plugin version the generated classes ask for (names the package's default provider)."""

def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' type token: the core group is `core/v1`, every other group as in `apiVersion`."""
    return f"kubernetes:{'core/v1' if api_version == 'v1' else api_version}:{kind}"


class KubeObject(pulumi.CustomResource):
    """A Kubernetes object as pulumi-kubernetes registers it; each top-level field is an output property."""

    def __init__(self, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        api_version, kind = obj["apiVersion"], obj["kind"]
        props: dict[str, Any] = dict(obj)
        defaults = pulumi.ResourceOptions(version=PLUGIN_VERSION)
        if (api_version, kind) == ("v1", "Secret"):
            # Both payload fields are outputs even when not inputs: a service-account-token Secret's `data` is
            # filled by the cluster, and the program reads it.
            props = {**props, **{k: pulumi.Output.secret(props[k]) if props.get(k) is not None else None
                                 for k in _SECRET_FIELDS}}
            defaults = pulumi.ResourceOptions(version=PLUGIN_VERSION, additional_secret_outputs=list(_SECRET_FIELDS))
        super().__init__(type_token(api_version, kind), name, props, pulumi.ResourceOptions.merge(defaults, opts))

    def output(self, field: str) -> pulumi.Output[Any]:
        """The object's `field` (camelCase) as the provider returns it."""
        value: pulumi.Output[Any] = getattr(self, field)
        return value


def logical_name(prefix: str, obj: dict[str, Any]) -> str:
    """`<prefix>-<kind>-<namespace>-<name>`: unique per API server, stable across runs."""
    meta = obj["metadata"]
    parts = [prefix, obj["kind"].lower(), meta.get("namespace", ""), meta["name"]]
    return "-".join(p for p in parts if p).replace(":", "-").replace(".", "-")


def apply(prefix: str, obj: Any, opts: pulumi.ResourceOptions) -> KubeObject:
    """Create the resource for `obj` (whose values may be Outputs). Secret payloads are always secret."""
    return KubeObject(logical_name(prefix, obj), obj, opts)


def apply_rendered(prefix: str, render: Any, args: list[Any], opts: pulumi.ResourceOptions,
                   placeholder: str = "placeholder") -> KubeObject:
    """Apply `render(*args)` where args are Outputs (tokens, kubeconfigs): the object's kind and name come
    from rendering placeholders, every other field from the real values once they are known."""
    skeleton = render(*[placeholder] * len(args))
    rendered = pulumi.Output.all(*args).apply(lambda values: render(*values))
    obj = {k: (skeleton[k] if k in ("apiVersion", "kind", "metadata") else rendered.apply(lambda o, k=k: o[k]))
           for k in skeleton}
    return apply(prefix, obj, opts)


def with_secret_checksum(obj: dict[str, Any], secrets: list[Any]) -> dict[str, Any]:
    """The workload with the checksum of exactly the Secrets its pods mount (`kube.rollouts`).

    `secrets` are the Secret documents as applied (values may be Outputs, or each document an Output, as for
    `apply_rendered`). The digest is unsecret: it is a sha256 over material that always includes a key or a
    random token, and a readable value keeps previews showing *that* a pod template changes."""
    from components.kube import rollouts

    def name(doc: Any) -> str:
        if isinstance(doc, pulumi.Output):
            raise TypeError("pass (name, Output[document]) for rendered Secrets")
        return doc[0] if isinstance(doc, tuple) else doc["metadata"]["name"]

    names = rollouts.require_exact(obj, [name(d) for d in secrets])
    if not names:
        return obj
    docs = [d[1] if isinstance(d, tuple) else d for d in secrets]
    digest = pulumi.Output.unsecret(pulumi.Output.from_input(docs).apply(rollouts.checksum_of))
    return rollouts.annotated(obj, names, digest)
