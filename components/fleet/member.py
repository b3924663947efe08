"""MemberCluster: join one workload cluster to the hub, declaratively (no `karmadactl join`).

Credentials come from the CAPI management cluster (`<cluster>-kubeconfig` Secret, key `value`) or from
a stack secret. Push: the member gets the service accounts and RBAC a push join creates, their tokens
are read back and stored in the karmada-apiserver with the `Cluster` object. Pull: the hub gets the
agent's RBAC, the member gets karmada-agent with a client certificate the hub's CA signed, and the agent
creates and owns its `Cluster` (and its credential Secrets) itself. With `schedulerEstimator: true` the hub's
host cluster also runs that member's scheduler-estimator (×2, mTLS with a serving cert for exactly its
Service). Removing a member from the stack deletes what the program made for it: for Push its Cluster and
Secrets, for Pull the agent and its hub RBAC — the agent-made Cluster is deleted by the operator first
(docs/runbooks/members.md "Remove a member").
"""

from __future__ import annotations

import base64

import pulumi
import pulumi_kubernetes as k8s

from components.config import CapiCredentials, FleetConfig, MemberConfig
from components.fleet import member_docs as docs
from components.karmada import flags, manifests, pki_spec, workloads
from components.kube import tls
from components.kube.kubeconfig import kubeconfig
from components.kube.objects import apply, apply_rendered, with_secret_checksum


def _b64decode(value: str) -> str:
    return base64.b64decode(value).decode()


class MemberCluster(pulumi.ComponentResource):
    """One member: its provider (`k8s-member-<name>`), its join objects on both sides, its Cluster (Push)."""

    cluster: pulumi.CustomResource | None
    """The Push member's Cluster; None for Pull (its agent creates it)."""

    def __init__(
        self,
        name: str,
        config: FleetConfig,
        member: MemberConfig,
        karmada_provider: pulumi.ProviderResource,
        karmada_url: pulumi.Input[str],
        karmada_ca: tls.KeyPair,
        after: list[pulumi.Resource],
        capi_provider: k8s.Provider | None,
        host_provider: pulumi.ProviderResource | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("karmada-hub:index:MemberCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if isinstance(member.credentials, CapiCredentials):
            assert capi_provider is not None, "a CAPI member needs the CAPI management provider"
            creds = member.credentials
            capi_secret = k8s.core.v1.Secret.get(
                f"{name}-capi-kubeconfig", f"{creds.namespace}/{creds.cluster}-kubeconfig",
                opts=pulumi.ResourceOptions(parent=self, provider=capi_provider))
            member_kubeconfig = pulumi.Output.secret(capi_secret.data.apply(lambda d: _b64decode(d["value"])))
        else:
            member_kubeconfig = pulumi.Output.secret(config.secrets[member.credentials.config_key])
        self.provider = k8s.Provider(f"k8s-member-{member.name}", kubeconfig=member_kubeconfig,
                                     enable_server_side_apply=True, opts=child)
        on_member = pulumi.ResourceOptions(parent=self, provider=self.provider)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        prefix = f"member-{member.name}"

        if member.sync_mode == "Push":
            # The token Secrets' own outputs carry the token: pulumi-kubernetes waits on create until the
            # member's token controller has filled a service-account-token Secret (its await logic for
            # core/v1 Secret), so there is no separate read that could run before the token exists or, in
            # a preview, before the Secret does.
            created = {(o["kind"], o["metadata"]["name"]): apply(prefix, o, on_member)
                       for o in docs.push_member_objects(member.name)}
            sa_token = created[("Secret", docs.cluster_sa_name(member.name))]
            imp_token = created[("Secret", docs.IMPERSONATOR_SA)]
            assert isinstance(sa_token, k8s.core.v1.Secret) and isinstance(imp_token, k8s.core.v1.Secret)
            token = pulumi.Output.secret(sa_token.data.apply(lambda d: _b64decode(d["token"])))
            ca = sa_token.data.apply(lambda d: _b64decode(d["ca.crt"]))
            imp = pulumi.Output.secret(imp_token.data.apply(lambda d: _b64decode(d["token"])))
            secrets = [
                apply_rendered("karmada", lambda t, c: docs.cluster_secret(member.name, t, c), [token, ca], on_hub),
                apply_rendered("karmada", lambda t: docs.impersonator_secret(member.name, t), [imp], on_hub),
            ]
            self.cluster = apply("karmada", docs.cluster_object(member), pulumi.ResourceOptions.merge(
                on_hub, pulumi.ResourceOptions(depends_on=[*after, *secrets])))
        else:
            hub_rbac = [apply("karmada", obj, on_hub) for obj in docs.pull_hub_objects(member.name)]
            cert = _agent_cert(member.name, karmada_ca, config.karmada.pki.leaf_validity_hours, self)
            agent_kubeconfig = pulumi.Output.secret(pulumi.Output.all(
                karmada_url, karmada_ca.cert_pem, cert.cert_pem, cert.key_pem,
            ).apply(lambda a: kubeconfig("karmada", a[0], a[1], a[2], a[3])))
            args = flags.agent_args(member.name, member.api_endpoint.rstrip("/"), region=member.region,
                                    zones=member.zones, failover=flags.FailoverSettings.from_config(config.failover))
            # No Cluster here: the agent creates (and on restart updates) its own, with spec.id = the member's
            # kube-system UID; a pre-created one without that id makes it exit (docs.pull_hub_objects). The
            # agent only needs its hub RBAC to exist before it starts.
            self.cluster = None
            after_rbac = pulumi.ResourceOptions.merge(on_member, pulumi.ResourceOptions(depends_on=hub_rbac))
            skeleton = docs.pull_member_objects(member.name, config.karmada.version, args, "placeholder")
            rendered: list[tuple[str, pulumi.Output]] = []
            for index, obj in enumerate(skeleton):
                if obj["kind"] == "Secret":
                    def render(k: str, i: int = index) -> dict:
                        return docs.pull_member_objects(member.name, config.karmada.version, args, k)[i]
                    apply_rendered(prefix, render, [agent_kubeconfig], after_rbac)
                    rendered.append((obj["metadata"]["name"], agent_kubeconfig.apply(render)))
                elif obj["kind"] == "Deployment":
                    apply(prefix, with_secret_checksum(obj, list(rendered)), after_rbac)
                else:
                    apply(prefix, obj, after_rbac)
        if member.scheduler_estimator:
            assert host_provider is not None, "a scheduler-estimator runs on the hub's host cluster"
            self._scheduler_estimator(name, config, member, karmada_ca, member_kubeconfig, host_provider)
        self.register_outputs({"cluster": member.name, "syncMode": member.sync_mode})

    def _scheduler_estimator(self, name: str, config: FleetConfig, member: MemberConfig, karmada_ca: tls.KeyPair,
                             member_kubeconfig: pulumi.Output[str], host_provider: pulumi.ProviderResource) -> None:
        """Host: Secrets (serving cert + Karmada CA as client CA; member kubeconfig), Deployment, PDB, Service.
        The scheduler dials `karmada-scheduler-estimator-<member>` with its own client cert (flags.scheduler_args)."""
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        spec = pki_spec.estimator_cert_spec(member.name)
        cert = tls.leaf(spec.name, karmada_ca, spec.common_name, spec.usages,
                        config.karmada.pki.leaf_validity_hours, pulumi.ResourceOptions(parent=self),
                        dns_names=spec.dns_names)
        workload = workloads.estimator(config, member.name)
        files = {"ca.crt": karmada_ca.cert_pem, f"{spec.file}.crt": cert.cert_pem,
                 f"{spec.file}.key": pulumi.Output.secret(cert.key_pem)}
        needed = manifests.pki_files(workload.args)
        assert set(needed) == set(files), f"estimator flags name {needed}, issued {sorted(files)}"
        kube_file = flags.MEMBER_KUBECONFIG_PATH.rsplit("/", 1)[1]
        docs = [
            manifests.secret(workload.name + manifests.PKI_SECRET_SUFFIX,
                             {manifests.secret_key(f): v for f, v in files.items()}, component=workload.name),
            manifests.secret(workload.name + manifests.MEMBER_KUBECONFIG_SUFFIX, {kube_file: member_kubeconfig},
                             component=workload.name),
        ]
        secrets = [apply("host", doc, on_host) for doc in docs]
        apply("host", with_secret_checksum(manifests.deployment(workload), docs),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=secrets)))
        apply("host", manifests.pdb(workload.name), on_host)
        apply("host", manifests.service(workload.name, {"grpc": (flags.ESTIMATOR_PORT, flags.ESTIMATOR_PORT)}),
              on_host)


def _agent_cert(cluster: str, ca: tls.KeyPair, hours: int, parent: pulumi.Resource) -> tls.KeyPair:
    """A Pull agent's client cert, signed by the Karmada CA (pki_spec.agent_cert_spec)."""
    spec = pki_spec.agent_cert_spec(cluster)
    return tls.leaf(f"agent-{cluster}", ca, spec.common_name, spec.usages, hours,
                    pulumi.ResourceOptions(parent=parent), organization=spec.organization[0])


def capi_provider(config: FleetConfig) -> k8s.Provider | None:
    """The CAPI management cluster's provider, if any member's credentials come from CAPI."""
    if not any(isinstance(m.credentials, CapiCredentials) for m in config.members):
        return None
    key = config.capi.kubeconfig_config_key
    return k8s.Provider("k8s-capi", kubeconfig=pulumi.Output.secret(config.secrets[key]),
                        enable_server_side_apply=True)
