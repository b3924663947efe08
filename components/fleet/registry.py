"""MemberRegistry: what the hub stack owns for the fleet's members and tenants.

The hub owns every object whose content a region's identity could abuse, or that it could not create at all:

- the tenants' Namespaces (a region's Roles live in them);
- every member's `Cluster`: a Push member's `secretRef` names a credential Secret (the aggregated apiserver that
  stores Clusters runs no admission, so no policy could stop a region from pointing one at another region's
  Secret), and a Pull member's is created with the agent's own spec and the member's kube-system UID
  (`clusterId`), so the agent needs no right to create or change any Cluster;
- each Pull member's agent RBAC (creating a Role needs its permissions or `escalate`), the bootstrap RBAC a
  Pull join needs, the admission policy over bootstrap tokens and the agent CSR approver that ties a token to its
  member (csr_approver_docs.py);
- each estimator member's karmada-scheduler-estimator on the host, with a serving certificate from the
  Karmada CA (whose key never leaves the hub), and its member kubeconfig (server from the member's stack file, the
  CA and token as files): the estimator mounts only `token` and `ca.crt` of the `<name>-member-token` Secret its
  region stack writes (a read-only member token); until then its pods wait, so Pulumi does not await them.

Region stacks (MemberCluster, FleetPolicies, RegionalTraffic) write the rest, with an identity allowed exactly that
(components/trust/region_rbac.py). In an all-in-one stack both halves run in the one stack.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.config import FleetConfig, MemberConfig, TenantConfig
from components.fleet import csr_approver_docs as approver
from components.fleet import member_docs as docs
from components.fleet import policy_docs
from components.karmada import flags, manifests, pki_spec, workloads
from components.kube import agent_script, rollouts, tls
from components.kube.objects import apply, apply_rendered, with_secret_checksum

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
    """Pull member -> what its join needs before it starts: the bootstrap RBAC (without it the token may not even
    create its CSR), the hub's agent CSR approver with its RBAC (it approves the CSR), the agent's own RBAC and the
    member's hub-made Cluster (the agent may not create one). A region stack runs after its hub anyway; an
    all-in-one stack orders its join after these, or the Job may wait out its 600 s on a first up."""

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
        pull = [m.name for m in members if m.sync_mode == "Pull"]
        if pull:
            bootstrap = [apply("karmada", obj, on_hub)
                         for obj in [*docs.bootstrap_rbac(), *approver.karmada_rbac(pull)]]
            # Before any region writes a token: its content is the hub's rule from the first one on.
            self.ready += [apply("karmada", obj, on_hub) for obj in approver.token_policy()]
            bootstrap.append(self._approver(config, pull, karmada_ca, on_host))
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
                cluster: list[pulumi.Resource] = []
                if member.cluster_id is not None:
                    cluster = [apply(prefix, docs.cluster_object(member), pulumi.ResourceOptions.merge(on_hub, was))]
                else:
                    pulumi.log.warn(f"member {member.name}: no clusterId yet, so no Cluster and no agent: set it to "
                                    "the member's kube-system UID in its stack file (the region stack prints it as "
                                    "pullClusterIds)")
                self.join_ready[member.name] = [*bootstrap, *created.values(), *cluster]
            if member.scheduler_estimator:
                self._estimator(config, member, karmada_ca, pulumi.ResourceOptions.merge(on_host, was), was)
        self.register_outputs({"members": [m.name for m in members], "tenants": [t.namespace for t in tenants]})

    def _approver(self, config: FleetConfig, pull: list[str], karmada_ca: tls.KeyPair,
                  on_host: pulumi.ResourceOptions) -> pulumi.Resource:
        """Host `karmada-system`: the agent CSR approver, with its own client certificate (Karmada CA); returns its
        Deployment."""
        cert = tls.leaf(f"{approver.NAME}-client", karmada_ca, approver.USER, tls.USES["client"],
                        config.karmada.pki.leaf_validity_hours, pulumi.ResourceOptions(parent=self))
        self.certificates.append(cert)
        pki = [karmada_ca.cert_pem, cert.cert_pem, pulumi.Output.secret(cert.key_pem)]
        source = agent_script.source(approver.SCRIPT_KEY)
        deps = [apply_rendered("host", approver.cert_secret, pki, on_host),
                apply("host", approver.script_configmap(source), on_host)]
        secret = pulumi.Output.all(*pki).apply(lambda v: approver.cert_secret(*v))
        deployment = apply("host", with_secret_checksum(approver.deployment(pull, source),
                                                        [(approver.CERT_SECRET, secret)]),
                           pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=deps)))
        apply("host", approver.pod_disruption_budget(), on_host)
        return deployment

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
        # The member token is the region's (a reader token that changes only when rotated, then the runbook
        # restarts the estimator); the kubeconfig around it and the serving certificate are the hub's.
        template = deployment["spec"]["template"]
        template["metadata"]["annotations"] = {**(template["metadata"].get("annotations") or {}),
                                               rollouts.ELSEWHERE_ANNOTATION: workload.name +
                                               manifests.MEMBER_TOKEN_SUFFIX}
        apply("host", manifests.member_kubeconfig_configmap(member.name, member.api_endpoint.rstrip("/")), on_host)
        apply("host", with_secret_checksum(deployment, [pki_doc]),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[pki])))
        apply("host", manifests.pdb(workload.name), on_host)
        apply("host", manifests.service(workload.name, {"grpc": (flags.ESTIMATOR_PORT, flags.ESTIMATOR_PORT)}),
              on_host)
