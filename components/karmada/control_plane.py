"""KarmadaPki and KarmadaControlPlane: the Karmada control plane in HA on the hub's host cluster.

`KarmadaPki` turns `pki_spec` into pulumi_tls resources (three CAs, per-component leaves, the
service-account key pair); the apiserver's serving cert also carries the servers' public addresses, the LB's
private address (and its public one when world-reachable) and the API DNS name.
`KarmadaControlPlane` applies etcd and every component (flags from `flags`, objects from
`manifests`), exposes the karmada-apiserver on a NodePort of every server (behind the Cloud Firewall; the
LB's 5443 targets it too), waits for its `/readyz` on the first server's public address and only then
creates the `k8s-karmada` provider the bootstrap and the members use.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.config import FleetConfig
from components.hetzner.hub_cluster import KARMADA_API_NODE_PORT, HubCluster
from components.hetzner.readiness import ApiReadiness
from components.karmada import flags, manifests, pki_spec, workloads
from components.karmada.bootstrap import descheduler_rbac
from components.karmada.workloads import APISERVER_AUTHN_CONFIGMAP
from components.kube import agent_script, tls
from components.kube.kubeconfig import kubeconfig
from components.kube.objects import apply, with_secret_checksum

COMPONENT_CLIENT_CERTS = {
    "karmada-controller-manager": "controller-manager",
    "karmada-scheduler": "scheduler",
    "karmada-webhook": "webhook-client",
    "karmada-aggregated-apiserver": "aggregated-apiserver-client",
    "kube-controller-manager": "kube-controller-manager",
    "karmada-descheduler": "descheduler",
}
"""Component -> the pki_spec client cert its kubeconfig authenticates with."""


class KarmadaPki(pulumi.ComponentResource):
    """Every certificate and key of the Karmada control plane, keyed by their path under flags.PKI_DIR."""

    files: dict[str, pulumi.Output[str]]
    clients: dict[str, tls.KeyPair]
    ca: tls.KeyPair

    def __init__(self, name: str, config: FleetConfig, api_ips: Sequence[pulumi.Input[str]],
                 dns_names: Sequence[str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:KarmadaPki", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pki = config.karmada.pki
        cas: dict[str, tls.KeyPair] = {}
        self.files = {}
        # hub.protect: a deleted or replaced CA key is a new trust root (every member and component re-trusts)
        protected = pulumi.ResourceOptions(parent=self, protect=config.hub is not None and config.hub.protect)
        for spec in pki_spec.ca_specs():
            pair = tls.ca(f"{name}-{spec.name}", spec.common_name, pki.ca_validity_hours, protected)
            cas[spec.name] = pair
            self.files[f"{spec.file}.crt"] = pair.cert_pem
            self.files[f"{spec.file}.key"] = pair.key_pem
        self.cas = cas
        self.ca = cas[pki_spec.KARMADA_CA.name]
        self.etcd_ca = cas[pki_spec.ETCD_CA.name]
        specs = pki_spec.cert_specs(lb_addresses=[], dns_names=list(dns_names),
                                    etcd_replicas=config.karmada.etcd.replicas)
        self.leaves: dict[str, tls.KeyPair] = {}
        for spec in specs:
            extra_ips: list[pulumi.Input[str]] = list(api_ips) if spec.name == "apiserver" else []
            pair = tls.leaf(
                f"{name}-{spec.name}", cas[spec.signer], spec.common_name, spec.usages, pki.leaf_validity_hours,
                child, organization=spec.organization[0] if spec.organization else None,
                dns_names=spec.dns_names, ip_addresses=[*spec.ip_addresses, *extra_ips],
            )
            self.leaves[spec.name] = pair
            if spec.file:
                self.files[f"{spec.file}.crt"] = pair.cert_pem
                self.files[f"{spec.file}.key"] = pair.key_pem
        sa = tls.private_key(f"{name}-{pki_spec.SA_KEY.name}", child)
        self.files[f"{pki_spec.SA_KEY.file}.key"] = pulumi.Output.secret(sa.private_key_pem)
        self.files[f"{pki_spec.SA_KEY.file}.pub"] = sa.public_key_pem
        self.admin = self.leaves["admin"]
        self.certificates = [*cas.values(), *self.leaves.values()]
        """Every CA and leaf certificate here (for the expiry alerts)."""
        self.register_outputs({"caCertPem": self.ca.cert_pem})


class KarmadaControlPlane(pulumi.ComponentResource):
    """etcd ×N and every Karmada component ×N on the host cluster, plus the `k8s-karmada` provider."""

    provider: k8s.Provider
    admin_kubeconfig: pulumi.Output[str]
    workloads: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, config: FleetConfig, hub: HubCluster,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:KarmadaControlPlane", name, None, opts)
        assert config.hub is not None
        dns_names = [config.hub.api_dns_name] if config.hub.api_dns_name else []
        host = pulumi.ResourceOptions(parent=self, provider=hub.provider, depends_on=[hub.readiness])
        self.pki = KarmadaPki(f"{name}-pki", config, hub.karmada_api_ips, dns_names,
                              opts=pulumi.ResourceOptions(parent=self))
        pki = self.pki

        # hub.protect: deleting the control-plane namespace deletes etcd's claims and every component
        ns = apply("host", manifests.namespace(), pulumi.ResourceOptions.merge(
            host, pulumi.ResourceOptions(protect=config.hub.protect)))
        self.namespace = ns
        host_ns = pulumi.ResourceOptions.merge(host, pulumi.ResourceOptions(depends_on=[hub.readiness, ns]))

        enc_key = random.RandomBytes(f"{name}-encryption-key", length=32, opts=pulumi.ResourceOptions(parent=self))
        box_key = random.RandomBytes(f"{name}-secretbox-key", length=32, opts=pulumi.ResourceOptions(parent=self))
        in_cluster = flags.apiserver_url()

        def component_kubeconfig(component: str) -> pulumi.Output[str]:
            client = pki.leaves[COMPONENT_CLIENT_CERTS[component]]
            return pulumi.Output.secret(pulumi.Output.all(pki.ca.cert_pem, client.cert_pem, client.key_pem).apply(
                lambda a: kubeconfig("karmada", in_cluster, a[0], a[1], a[2])))

        def secrets_for(component: str, args: Sequence[str], with_kubeconfig: bool) -> list[dict]:
            docs = []
            files = manifests.pki_files(args)
            missing = [f for f in files if f not in pki.files]
            if missing:
                raise ValueError(f"{component} flags name PKI files nobody issues: {missing}")
            if files:
                data = {manifests.secret_key(f): pki.files[f] for f in files}
                docs.append(manifests.secret(component + manifests.PKI_SECRET_SUFFIX, data, component=component))
            if with_kubeconfig:
                docs.append(manifests.secret(
                    component + manifests.CONFIG_SECRET_SUFFIX,
                    {flags.KUBECONFIG_PATH.rsplit("/", 1)[1]: component_kubeconfig(component)},
                    component=component))
            return docs

        def deploy(w: manifests.Workload, after: Sequence[pulumi.Resource] = (),
                   mounted: Sequence[dict] = ()) -> pulumi.CustomResource:
            """`mounted`: Secret documents the workload mounts besides its PKI and kubeconfig Secrets."""
            docs = secrets_for(w.name, w.args, w.kubeconfig)
            deps = [apply("host", doc, host_ns) for doc in docs]
            opts_ = pulumi.ResourceOptions.merge(host_ns, pulumi.ResourceOptions(depends_on=[*deps, *after]))
            workload = apply("host", with_secret_checksum(manifests.deployment(w), [*docs, *mounted]), opts_)
            apply("host", manifests.pdb(w.name), host_ns)
            return workload

        # --- etcd
        # The initial-cluster token only keeps two etcd clusters from joining each other; it is not a secret.
        etcd_doc = workloads.etcd(config, f"karmada-hub-{pulumi.get_stack()}-etcd")
        etcd_pki = next(v for v in etcd_doc["spec"]["template"]["spec"]["volumes"] if v["name"] == "pki")
        etcd_files = [item["path"] for item in etcd_pki["secret"]["items"]]  # what the pod mounts, no more
        etcd_secret_doc = manifests.secret(
            "etcd" + manifests.PKI_SECRET_SUFFIX, {manifests.secret_key(f): pki.files[f] for f in etcd_files},
            component="etcd")
        etcd_secret = apply("host", etcd_secret_doc, host_ns)
        prepare_source = agent_script.source(manifests.ETCD_PREPARE_SCRIPT)
        prepare_cm = apply("host", manifests.etcd_prepare_configmap(prepare_source), host_ns)
        apply("host", manifests.service(flags.ETCD_SERVICE, {"client": (2379, 2379), "peer": (2380, 2380)},
                                        headless=True), host_ns)
        apply("host", manifests.service(flags.ETCD_CLIENT_SERVICE, {"client": (2379, 2379)}, component="etcd"),
              host_ns)
        etcd = apply("host", with_secret_checksum(etcd_doc, [etcd_secret_doc]), pulumi.ResourceOptions.merge(
            host_ns, pulumi.ResourceOptions(depends_on=[etcd_secret, prepare_cm])))
        apply("host", manifests.pdb("etcd"), host_ns)
        self.etcd = etcd

        # --- karmada-apiserver, exposed on the hub LB through a NodePort
        audit_cm = apply("host", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "karmada-apiserver-audit-policy", "namespace": flags.NAMESPACE,
                         "labels": manifests.labels("karmada-apiserver")},
            "data": {"policy.yaml": manifests.audit_policy()}}, host_ns)
        authn_cm = apply("host", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": APISERVER_AUTHN_CONFIGMAP, "namespace": flags.NAMESPACE,
                         "labels": manifests.labels("karmada-apiserver")},
            "data": {flags.AUTHENTICATION_CONFIG_PATH.rsplit("/", 1)[1]: manifests.authentication_config()}}, host_ns)
        enc_doc = manifests.secret(
            "karmada-apiserver-encryption",
            {"encryption-config.yaml": pulumi.Output.all(box_key.base64, enc_key.base64).apply(
                lambda k: manifests.encryption_config(k[0], k[1]))},
            component="karmada-apiserver")
        enc = apply("host", enc_doc, host_ns)
        apiserver = deploy(workloads.apiserver(config), after=[etcd, audit_cm, enc, authn_cm], mounted=[enc_doc])
        apply("host", manifests.service(flags.APISERVER_SERVICE, {"https": (flags.APISERVER_PORT,
                                                                            flags.APISERVER_PORT)},
                                        node_ports={"https": KARMADA_API_NODE_PORT}), host_ns)

        external = hub.karmada_api_host.apply(lambda h: f"https://{h}:{KARMADA_API_NODE_PORT}")
        self.admin_kubeconfig = pulumi.Output.secret(pulumi.Output.all(
            external, pki.ca.cert_pem, pki.admin.cert_pem, pki.admin.key_pem,
        ).apply(lambda a: kubeconfig("karmada", a[0], a[1], a[2], a[3])))
        # The program's own provider and readiness gate dial the first server's address (behind the same firewall,
        # no dependency on DNS) and verify the certificate for the in-cluster name every serving cert lists, so
        # the server addresses need not be SANs and adding a server replaces no certificate.
        verify = pki_spec.APISERVER_IN_CLUSTER_NAME
        by_address = pulumi.Output.secret(pulumi.Output.all(
            hub.first_server_ipv4.apply(lambda ip: f"https://{ip}:{KARMADA_API_NODE_PORT}"), pki.ca.cert_pem,
            pki.admin.cert_pem,
            pki.admin.key_pem,
        ).apply(lambda a: kubeconfig("karmada", a[0], a[1], a[2], a[3], tls_server_name=verify)))
        self.readiness = ApiReadiness(
            f"{name}-apiserver-ready",
            url=hub.first_server_ipv4.apply(lambda ip: f"https://{ip}:{KARMADA_API_NODE_PORT}/readyz"),
            ca_pem=pki.ca.cert_pem, client_cert_pem=pki.admin.cert_pem, client_key_pem=pki.admin.key_pem,
            kubeconfig=by_address, timeout_seconds=900, server_name=verify,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[apiserver]),
        )
        self.provider_kubeconfig = self.readiness.kubeconfig
        self.provider = k8s.Provider(
            "k8s-karmada", kubeconfig=self.readiness.kubeconfig, enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.readiness]),
        )
        self.external_url = external

        # --- the rest of the components (controllers wait for the bootstrap; see KarmadaBootstrap)
        self.workloads: dict[str, pulumi.CustomResource] = {"karmada-apiserver": apiserver}
        self.aggregated = deploy(workloads.aggregated_apiserver(config), after=[self.readiness])
        apply("host", manifests.service("karmada-aggregated-apiserver",
                                        {"https": (443, flags.AGGREGATED_APISERVER_PORT)}), host_ns)
        self.webhook = deploy(workloads.webhook(config), after=[self.readiness])
        apply("host", manifests.service("karmada-webhook", {"https": (443, flags.WEBHOOK_PORT)}), host_ns)
        self.workloads.update({"karmada-aggregated-apiserver": self.aggregated, "karmada-webhook": self.webhook})
        self._deploy = deploy
        self._config = config
        self.register_outputs({"externalUrl": external, "adminKubeconfig": self.admin_kubeconfig})

    def start_controllers(self, bootstrap: Sequence[pulumi.Resource]) -> None:
        """kube-controller-manager, scheduler and controller-manager, after CRDs and APIServices exist
        (they crash-loop without them, and Pulumi would time out waiting for readiness)."""
        rbac: list[pulumi.Resource] = []
        if self._config.karmada.descheduler_enabled:
            on_karmada = pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=list(bootstrap))
            rbac = [apply("karmada", obj, on_karmada) for obj in descheduler_rbac(pki_spec.DESCHEDULER_USER)]
        for workload in workloads.controllers(self._config):
            after = [*bootstrap, *rbac] if workload.name == manifests.DESCHEDULER else bootstrap
            self.workloads[workload.name] = self._deploy(workload, after=after)


def ca_bundle(ca_pem: pulumi.Input[str]) -> pulumi.Output[str]:
    return pulumi.Output.from_input(ca_pem).apply(lambda pem: base64.b64encode(pem.encode()).decode())

