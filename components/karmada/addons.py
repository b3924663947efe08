"""KarmadaAddons: the opt-in addons (karmada.addons) wired into the hub — karmada-search and the Karmada dashboard.

The documents are `addons_docs.py`; this shell issues each addon's certificates from the hub PKI (its own leaves,
signed by the Karmada and etcd CAs of `KarmadaPki`), puts them and the kubeconfigs into Secrets the pods mount
(the pod templates carry their checksum, so a renewal rolls them), applies the Deployments, PDBs and Services on the
host, and the APIService, RBAC and ResourceRegistry inside the karmada-apiserver. Only in stacks that own the hub;
with every addon off it is never created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from components.config import FleetConfig
from components.karmada import addons_docs as docs
from components.karmada import flags, manifests, pki_spec
from components.karmada.control_plane import KarmadaPki
from components.kube import tls
from components.kube.kubeconfig import kubeconfig
from components.kube.objects import apply, with_secret_checksum


class KarmadaAddons(pulumi.ComponentResource):
    certificates: list[tls.KeyPair]

    def __init__(self, name: str, config: FleetConfig, search_members: Sequence[str],
                 host_provider: pulumi.ProviderResource, karmada_provider: pulumi.ProviderResource, pki: KarmadaPki,
                 ca_bundle: pulumi.Input[str], host_after: Sequence[pulumi.Resource],
                 karmada_after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:KarmadaAddons", name, None, opts)
        addons = config.karmada.addons
        child = pulumi.ResourceOptions(parent=self)
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=list(host_after))
        on_karmada = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=list(karmada_after))
        hours = config.karmada.pki.leaf_validity_hours
        self.certificates = []

        def issue(spec: pki_spec.CertSpec) -> tls.KeyPair:
            pair = tls.leaf(f"{name}-{spec.name}", pki.cas[spec.signer], spec.common_name, spec.usages, hours, child,
                            organization=spec.organization[0] if spec.organization else None,
                            dns_names=spec.dns_names, ip_addresses=spec.ip_addresses)
            self.certificates.append(pair)
            return pair

        def client_kubeconfig(pair: tls.KeyPair) -> pulumi.Output[str]:
            return pulumi.Output.secret(pulumi.Output.all(pki.ca.cert_pem, pair.cert_pem, pair.key_pem).apply(
                lambda a: kubeconfig("karmada", flags.apiserver_url(), a[0], a[1], a[2])))

        def deploy(workload: manifests.Workload, document: dict[str, Any], files: dict[str, Any],
                   client: tls.KeyPair | None, after: Sequence[pulumi.Resource] = ()) -> pulumi.Resource:
            """The workload's Secrets (PKI files its flags name, its kubeconfig), then the Deployment with their
            checksum, its PDB."""
            secrets = []
            wanted = manifests.pki_files(workload.args)
            if wanted:
                missing = [f for f in wanted if f not in files]
                if missing:
                    raise ValueError(f"{workload.name} flags name PKI files nobody issues: {missing}")
                secrets.append(manifests.secret(workload.name + manifests.PKI_SECRET_SUFFIX,
                                                {manifests.secret_key(f): files[f] for f in wanted},
                                                component=workload.name))
            if client is not None:
                secrets.append(manifests.secret(workload.name + manifests.CONFIG_SECRET_SUFFIX,
                                                {flags.KUBECONFIG_PATH.rsplit("/", 1)[1]: client_kubeconfig(client)},
                                                component=workload.name))
            deps = [apply("host", doc, on_host) for doc in secrets]
            made = apply("host", with_secret_checksum(document, secrets), pulumi.ResourceOptions.merge(
                on_host, pulumi.ResourceOptions(depends_on=[*host_after, *deps, *after])))
            apply("host", manifests.pdb(workload.name), on_host)
            return made

        ready: list[pulumi.Resource] = []
        if addons.search.enabled:
            serving, etcd_client, client = (issue(s) for s in pki_spec.search_cert_specs())
            files = {"etcd/ca.crt": pki.etcd_ca.cert_pem,
                     "search.crt": serving.cert_pem, "search.key": pulumi.Output.secret(serving.key_pem),
                     "search-etcd-client.crt": etcd_client.cert_pem,
                     "search-etcd-client.key": pulumi.Output.secret(etcd_client.key_pem)}
            rbac = [apply("karmada", o, on_karmada) for o in docs.search_rbac()]
            # after its RBAC in the karmada-apiserver: without the authentication reader it exits at start
            deploy(docs.search_workload(config, search_members),
                   docs.search_deployment(config, search_members), files, client, after=rbac)
            apply("host", docs.search_service(), on_host)
            service, apiservice_doc = docs.search_api(ca_bundle)
            svc = apply("karmada", service, on_karmada)
            # not after the Deployment: pulumi-kubernetes awaits its rollout, and karmada-search is Ready only once
            # this APIService serves its own API (search_service)
            apiservice = apply("karmada", apiservice_doc, pulumi.ResourceOptions.merge(
                on_karmada, pulumi.ResourceOptions(depends_on=[*karmada_after, svc, *rbac])))
            registry = apply("karmada", docs.resource_registry(addons.search, search_members),
                             pulumi.ResourceOptions.merge(on_karmada, pulumi.ResourceOptions(
                                 depends_on=[*karmada_after, apiservice])))
            ready += [apiservice, registry]
        if addons.dashboard.enabled:
            (client,) = (issue(s) for s in pki_spec.dashboard_cert_specs())
            for o in docs.dashboard_rbac(addons.dashboard.access):
                apply("karmada", o, on_karmada)
            host_objects = [apply("host", o, on_host) for o in docs.dashboard_host_objects()]
            deploy(docs.dashboard_api_workload(config), docs.dashboard_api_deployment(config), {}, client,
                   after=host_objects)
            deploy(docs.dashboard_web_workload(config), docs.dashboard_web_deployment(config), {}, None,
                   after=host_objects)
        self.ready = ready
        self.register_outputs({"search": addons.search.enabled, "dashboard": addons.dashboard.enabled})
