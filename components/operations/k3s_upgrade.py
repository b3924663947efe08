"""K3sUpgrade: system-upgrade-controller and the `k3s-server` Plan on the hub's host cluster.

Wires `k3s_upgrade_docs.py` into resources: the verified Plan CRD (protected with `hub.protect`), the
controller, its RBAC, and the Plan whose `version` is `hub.k3sVersion`. A version change is therefore one
changed field of one object, and the controller rolls it over the servers one at a time.
Runbook: docs/runbooks/upgrade-k3s.md.
"""

from __future__ import annotations

import pulumi

from components.config import FleetConfig
from components.kube.objects import apply
from components.operations import k3s_upgrade_docs as docs


class K3sUpgrade(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:K3sUpgrade", name, None, opts)
        hub = config.hub
        assert hub is not None, "only hub stacks upgrade hub servers"
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=after)
        crd = apply("host", docs.plan_crd(), pulumi.ResourceOptions.merge(
            on_host, pulumi.ResourceOptions(protect=hub.protect)))
        ns = apply("host", docs.namespace(), on_host)
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[*after, ns]))
        identity = [apply("host", obj, in_ns) for obj in docs.service_accounts() + docs.rbac()]
        controller = apply("host", docs.deployment(), pulumi.ResourceOptions.merge(
            in_ns, pulumi.ResourceOptions(depends_on=[*after, ns, crd, *identity])))
        self.plan = apply("host", docs.server_plan(hub), pulumi.ResourceOptions.merge(
            in_ns, pulumi.ResourceOptions(depends_on=[*after, ns, crd, controller])))
        self.register_outputs({"version": hub.k3s_version})
