"""MemberCluster: the region's half of joining one workload cluster (no `karmadactl join`/`register`).

Credentials come from the CAPI management cluster (`<cluster>-kubeconfig` Secret, key `value`) or from a stack
secret. The hub's half (the Cluster objects of Push members, the Pull agents' RBAC, the estimator workloads) is
MemberRegistry's, in the hub stack.

- Push: the member gets the service accounts and RBAC a push join creates; their tokens are read back and
  stored in the karmada-apiserver as `karmada-cluster/<member>` and `<member>-impersonator`, which the hub's
  Cluster object names.
- Pull: the member gets karmada-agent and a join Job. PullJoin mints a one-hour bootstrap token at apply time
  (never in state); the Job makes the agent's key in the member, has the hub sign its CSR and writes the agent's
  kubeconfig Secret; the agent finds the Cluster the hub made for it and renews its own certificate. The hub can
  make that Cluster only with the member's kube-system UID (`clusterId` in the stack file): this reads it, and
  until the file carries it, installs no agent (the stack prints it as `pullClusterIds`); a committed one that is
  not the member's is a warning naming both.
- `schedulerEstimator: true`: a read-only account in the member (`member_docs.estimator_reader_rules`) whose
  token and the member's CA become the `<estimator>-member-token` Secret on the hub's host cluster (data only; the
  hub renders the kubeconfig around them).

Removing a member from the stack deletes everything installed for it here.
"""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config import CapiCredentials, FleetConfig, MemberConfig
from components.fleet import member_docs as docs
from components.fleet.pull_join import PullJoin
from components.karmada import flags, manifests
from components.kube import agent_script
from components.kube.objects import apply, apply_rendered


def _b64decode(value: str) -> str:
    return base64.b64decode(value).decode()


class MemberCluster(pulumi.ComponentResource):
    """One member: its provider (`k8s-member-<name>`) and the region's join objects on the member and the hub.
    The Cluster is never here: the hub applies every member's (MemberRegistry)."""

    pull_cluster_id: pulumi.Output[str] | None = None
    """A Pull member's kube-system UID, as read from the member."""

    def __init__(
        self,
        name: str,
        config: FleetConfig,
        member: MemberConfig,
        karmada_provider: pulumi.ProviderResource,
        karmada_url: pulumi.Input[str],
        karmada_ca_pem: pulumi.Input[str],
        writer_kubeconfig: pulumi.Input[str],
        after: list[pulumi.Resource],
        capi_provider: k8s.Provider | None,
        host_provider: pulumi.ProviderResource | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`writer_kubeconfig`: the karmada-apiserver credential PullJoin writes the bootstrap token with (the
        region's own identity; the hub's admin in an all-in-one stack)."""
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
            created = _apply_in_order(prefix, docs.push_member_objects(member.name), on_member)
            sa_token = created[("Secret", docs.cluster_sa_name(member.name))]
            imp_token = created[("Secret", docs.IMPERSONATOR_SA)]
            token = pulumi.Output.secret(sa_token.output("data").apply(lambda d: _b64decode(d["token"])))
            ca = sa_token.output("data").apply(lambda d: _b64decode(d["ca.crt"]))
            imp = pulumi.Output.secret(imp_token.output("data").apply(lambda d: _b64decode(d["token"])))
            declared = docs.declared_cluster(member)
            apply_rendered("karmada", lambda t, c: docs.cluster_secret(member.name, t, c, declared), [token, ca],
                           on_hub)
            apply_rendered("karmada", lambda t: docs.impersonator_secret(member.name, t), [imp], on_hub)
        else:
            ns = k8s.core.v1.Namespace.get(f"{prefix}-kube-system", "kube-system", opts=pulumi.ResourceOptions(
                parent=self, provider=self.provider))
            self.pull_cluster_id = ns.metadata.apply(lambda m: str(m.uid))
            if member.cluster_id is None:
                pulumi.log.warn(f"member {member.name}: set clusterId to its kube-system UID (output pullClusterIds), "
                                "up the hub stack, then up this stack: the agent is installed after that")
            else:
                where = (f"stacks/Pulumi.{pulumi.get_stack()}.yaml: karmada-hub:members"
                         f"[{config.members.index(member)}].clusterId")
                self.pull_cluster_id = self.pull_cluster_id.apply(lambda uid: _same_id(where, member, uid))
                self._pull(prefix, config, member, karmada_url, karmada_ca_pem, writer_kubeconfig, member_kubeconfig,
                           on_member, on_hub)
        if member.scheduler_estimator:
            assert host_provider is not None, "a scheduler-estimator's member kubeconfig goes to the hub's host"
            gates = flags.gates_for("karmada-scheduler-estimator", config.karmada.feature_gates)
            self._estimator_reader(prefix, member, "ResourceQuotaEstimate" in gates, on_member,
                                   pulumi.ResourceOptions(parent=self, provider=host_provider))
        self.register_outputs({"cluster": member.name, "syncMode": member.sync_mode})

    def _pull(self, prefix: str, config: FleetConfig, member: MemberConfig, karmada_url: pulumi.Input[str],
              karmada_ca_pem: pulumi.Input[str], writer_kubeconfig: pulumi.Input[str],
              member_kubeconfig: pulumi.Output[str], on_member: pulumi.ResourceOptions,
              on_hub: pulumi.ResourceOptions) -> None:
        failover = flags.FailoverSettings.from_config(config.failover)
        args = flags.agent_args(member.name, member.api_endpoint.rstrip("/"), region=member.region,
                                zones=member.zones, failover=failover)
        source = agent_script.source(docs.JOIN_SCRIPT)
        trust = pulumi.Output.all(karmada_url, karmada_ca_pem).apply(lambda v: docs.hub_trust(v[0], v[1]))
        objects = docs.pull_member_objects(member.name, config.karmada.version, args, source,
                                           member.join_generation, trust, failover.client_env())
        ns = apply(prefix, objects[0], on_member)
        join = PullJoin(f"{prefix}-join", member.name, docs.token_id(member.name), member.join_generation, karmada_url,
                        karmada_ca_pem, writer_kubeconfig, member_kubeconfig, opts=pulumi.ResourceOptions(
                            parent=self, depends_on=[ns, *(on_hub.depends_on or [])]))
        done: list[pulumi.Resource] = [ns]
        restart: list[pulumi.Resource] = [ns]
        for obj in objects[1:]:
            kind = obj["kind"]
            chain = restart if obj["metadata"]["name"] == docs.RESTART_NAME else done
            deps = list(chain)
            if kind == "Job":
                deps.append(join)  # the token and the member's bootstrap Secret exist before the Job runs
            resource = apply(prefix, obj, pulumi.ResourceOptions.merge(on_member, pulumi.ResourceOptions(
                depends_on=deps)))
            if kind in ("Job", "Deployment") or kind.endswith("Role") or kind.endswith("Binding") or kind in (
                    "ServiceAccount", "ConfigMap"):
                # in order: accounts, the join, then the agent that mounts its Secret; the restart CronJob needs
                # only its own account and the script
                chain.append(resource)
                if kind == "ConfigMap":
                    restart.append(resource)

    def _estimator_reader(self, prefix: str, member: MemberConfig, resource_quota_estimate: bool,
                          on_member: pulumi.ResourceOptions, on_host: pulumi.ResourceOptions) -> None:
        """`resource_quota_estimate`: the fleet's gates make the estimator read ResourceQuotas too (the region's
        gates equal the hub's: preflight checks the fleetContract)."""
        objects = docs.estimator_reader_objects(resource_quota_estimate)
        if member.sync_mode == "Pull":  # a Push join creates karmada-cluster in the member itself
            objects = [docs.namespace(docs.CLUSTER_NAMESPACE), *objects]
        created = _apply_in_order(f"{prefix}-estimator", objects, on_member)
        token_secret = created[("Secret", docs.ESTIMATOR_READER)]
        token = pulumi.Output.secret(token_secret.output("data").apply(lambda d: _b64decode(d["token"])))
        ca = token_secret.output("data").apply(lambda d: _b64decode(d["ca.crt"]))
        # Data only (the token and the member's CA): the hub renders the kubeconfig around them, so nothing this
        # stack writes is ever code in a hub pod.
        apply_rendered("host", lambda t, c: manifests.member_token_secret(member.name, t, c), [token, ca], on_host)


def _same_id(where: str, member: MemberConfig, uid: str) -> str:
    """The committed clusterId should be the member's: the hub's Cluster with another id stops the agent at start
    (`the cluster ID ... or the cluster name ... has been registered`). Said loudly, not fatal: the region's other
    members and policies still roll out."""
    if uid != member.cluster_id:
        pulumi.log.warn(f"{where}: {member.name}'s kube-system UID is {uid}, not {member.cluster_id}: its agent "
                        "will not start; set it there, up the hub stack, then this stack")
    return uid


def _apply_in_order(prefix: str, objects: list[dict[str, Any]], opts: pulumi.ResourceOptions,
                    ) -> dict[tuple[str, str], pulumi.Resource]:
    """Each object after every one before it. A service-account-token Secret must not exist before its
    ServiceAccount: the member's token controller deletes a token Secret whose account it cannot find
    (kubernetes v1.35.4 pkg/controller/serviceaccount/tokens_controller.go, syncSecret), and pulumi-kubernetes
    then waits for a token that never comes. Resources without a dependency are created concurrently."""
    created: dict[tuple[str, str], pulumi.Resource] = {}
    for obj in objects:
        created[(obj["kind"], obj["metadata"]["name"])] = apply(prefix, obj, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=list(created.values()))))
    return created


def capi_provider(config: FleetConfig) -> k8s.Provider | None:
    """The CAPI management cluster's provider, if any member's credentials come from CAPI."""
    if not any(isinstance(m.credentials, CapiCredentials) for m in config.members):
        return None
    key = config.capi.kubeconfig_config_key
    return k8s.Provider("k8s-capi", kubeconfig=pulumi.Output.secret(config.secrets[key]),
                        enable_server_side_apply=True)
