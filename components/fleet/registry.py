"""MemberRegistry: what the hub stack owns for the fleet's members and tenants.

The hub owns every object whose content a region's identity could abuse, or that it could not create at all:

- the tenants' Namespaces (a region's Roles live in them);
- each Push member's `Cluster` (its `secretRef` names a credential Secret; the aggregated apiserver that stores
  Clusters runs no admission, so no policy could stop a region from pointing one at another region's Secret);
- each Pull member's agent RBAC (creating a Role needs its permissions or `escalate`) and the bootstrap RBAC a
  Pull join needs; a Pull member's `Cluster` is the agent's own (it sets `spec.id`);
- each estimator member's karmada-scheduler-estimator on the host, with a serving certificate from the
  Karmada CA (whose key never leaves the hub). The estimator mounts the `<name>-member-kubeconfig` Secret its
  region stack writes (a read-only member token); until then its pods wait, so Pulumi does not await them.

Region stacks (MemberCluster, FleetPolicies, RegionalTraffic) write the rest, with an identity allowed exactly that
(components/trust/region_rbac.py). In an all-in-one stack both halves run in the one stack.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.config import FleetConfig, MemberConfig, TenantConfig
from components.fleet import member_docs as docs
from components.fleet import policy_docs
from components.karmada import flags, manifests, pki_spec, workloads
from components.kube import rollouts, tls
from components.kube.objects import apply, with_secret_checksum

SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}


def moved_from(component_type: str, component_name: str) -> pulumi.ResourceOptions:
    """An alias to where an object lived before the hub owned it (an all-in-one stack's MemberCluster or
    FleetPolicies), so an existing stack adopts it instead of creating it anew and then deleting the old one,
    which, for the same object name, would delete the object itself (a Cluster: the member's workloads). In a hub
    stack the old home was another (region) stack: docs/runbooks/members.md says how to hand objects over."""
    urn = f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{component_type}::{component_name}"
    return pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=urn)])


MEMBER_CLUSTER = "karmada-hub:index:MemberCluster"


class MemberRegistry(pulumi.ComponentResource):
    ready: list[pulumi.Resource]
    """What region-side objects wait for in an all-in-one stack (the tenant namespaces)."""
    join_ready: dict[str, list[pulumi.Resource]]
    """Pull member -> what its join needs in karmada-apiserver before it starts: the bootstrap RBAC (without it
    agentcsrapproving's SubjectAccessReview is denied, and the approver never looks at that CSR again: karmada
    v1.18.2 pkg/controllers/certificate/approver/agent_csr_approving.go `handleCertificateSigningRequest`) and the
    agent's own RBAC. A region stack runs after its hub anyway; an all-in-one stack orders its join after these."""

    def __init__(self, name: str, config: FleetConfig, members: Sequence[MemberConfig], tenants: Sequence[TenantConfig],
                 karmada_provider: pulumi.ProviderResource, host_provider: pulumi.ProviderResource,
                 karmada_ca: tls.KeyPair, after: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:MemberRegistry", name, None, opts)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=list(after))
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        from_policies = moved_from("karmada-hub:index:FleetPolicies", "policies")
        self.certificates: list[tls.KeyPair] = []
        """Every certificate it issues (each estimator's serving certificate), for the expiry records."""
        self.ready = [apply("karmada", policy_docs.tenant_namespace(t), pulumi.ResourceOptions.merge(
            on_hub, from_policies)) for t in tenants]
        bootstrap: list[pulumi.Resource] = []
        if any(m.sync_mode == "Pull" for m in members):
            bootstrap = [apply("karmada", obj, on_hub) for obj in docs.bootstrap_rbac()]
        self.join_ready = {}
        for member in members:
            prefix = "karmada"
            was = moved_from(MEMBER_CLUSTER, f"member-{member.name}")
            if member.sync_mode == "Push":
                apply(prefix, docs.cluster_object(member), pulumi.ResourceOptions.merge(on_hub, was))
            else:
                created = {}
                for obj in docs.pull_hub_objects(member.name):
                    deps = [created[o] for o in created if o[0] == "Namespace"] if obj["kind"] != "Namespace" else []
                    created[(obj["kind"], obj["metadata"]["name"])] = apply(
                        prefix, obj, pulumi.ResourceOptions.merge(on_hub, pulumi.ResourceOptions(
                            depends_on=[*after, *deps], aliases=was.aliases)))
                self.join_ready[member.name] = [*bootstrap, *created.values()]
            if member.scheduler_estimator:
                self._estimator(config, member, karmada_ca, pulumi.ResourceOptions.merge(on_host, was), was)
        self.register_outputs({"members": [m.name for m in members], "tenants": [t.namespace for t in tenants]})

    def _estimator(self, config: FleetConfig, member: MemberConfig, karmada_ca: tls.KeyPair,
                   on_host: pulumi.ResourceOptions, was: pulumi.ResourceOptions) -> None:
        """Host: the serving cert (Karmada CA; the scheduler dials it with its own client cert) and the
        Deployment, PDB and Service the scheduler finds by name (`karmada-scheduler-estimator-<member>`)."""
        spec = pki_spec.estimator_cert_spec(member.name)
        cert = tls.leaf(spec.name, karmada_ca, spec.common_name, spec.usages,
                        config.karmada.pki.leaf_validity_hours,
                        pulumi.ResourceOptions.merge(pulumi.ResourceOptions(parent=self), was),
                        dns_names=spec.dns_names)
        self.certificates.append(cert)
        workload = workloads.estimator(config, member.name)
        files = {"ca.crt": karmada_ca.cert_pem, f"{spec.file}.crt": cert.cert_pem,
                 f"{spec.file}.key": pulumi.Output.secret(cert.key_pem)}
        needed = manifests.pki_files(workload.args)
        assert set(needed) == set(files), f"estimator flags name {needed}, issued {sorted(files)}"
        pki_doc = manifests.secret(workload.name + manifests.PKI_SECRET_SUFFIX,
                                   {manifests.secret_key(f): v for f, v in files.items()}, component=workload.name)
        pki = apply("host", pki_doc, on_host)
        deployment = manifests.deployment(workload)
        # Its pods start once the region stack wrote the member kubeconfig: do not make the hub's `up` wait.
        deployment["metadata"]["annotations"] = dict(SKIP_AWAIT)
        # The member kubeconfig is the region's (a reader token that changes only when rotated, then the runbook
        # restarts the estimator); the serving certificate is the hub's and rolls the pods when renewed.
        template = deployment["spec"]["template"]
        template["metadata"]["annotations"] = {**(template["metadata"].get("annotations") or {}),
                                               rollouts.ELSEWHERE_ANNOTATION: workload.name +
                                               manifests.MEMBER_KUBECONFIG_SUFFIX}
        apply("host", with_secret_checksum(deployment, [pki_doc]),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[pki])))
        apply("host", manifests.pdb(workload.name), on_host)
        apply("host", manifests.service(workload.name, {"grpc": (flags.ESTIMATOR_PORT, flags.ESTIMATOR_PORT)}),
              on_host)
