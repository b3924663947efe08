"""Tests for components/traffic/docs.py: LB specs, external-dns on the hub, the ingress status override.

Objects are checked against the real schemas (kubernetes-validate strict for built-ins, the upstream Karmada CRD
for the OverridePolicy) and against the properties the failover chain depends on: sync policy, owner id, one TTL,
the token only by reference, health checks within Hetzner's limits, and the dev stack's two EU regions.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.config import DnsConfig, FleetConfig, HealthCheckConfig, IngressConfig, MemberConfig, RegionConfig
from components.traffic import docs as traffic
from components.versions import EXTERNAL_DNS_IMAGE, HETZNER_WEBHOOK_IMAGE
from hubctl.stackfile import placeholder
from tests.support.schemas import crds_dir, validate_karmada
from tests.support.tools import load_stack

ROOT = Path(__file__).resolve().parents[1]
DEV_STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
K8S_MINOR = "1.34"
TOKEN = "hcloud-token-0123456789abcdefSECRET"






@pytest.fixture(scope="module")
def fleet() -> FleetConfig:
    return load_stack()


@pytest.fixture(scope="module")
def dns(fleet: FleetConfig) -> DnsConfig:
    """The external-dns documents exist in dns.mode hetzner only: the dev stack's names there, with an owner id
    (dev itself runs mode self-hosted)."""
    assert fleet.dns is not None
    return DnsConfig(mode="hetzner", domain=fleet.dns.domain, txt_owner_id="karmada-hub-dev",
                     token_config_key=fleet.dns.token_config_key)


def overridepolicy_schema() -> dict[str, Any]:
    crd = yaml.safe_load((crds_dir() / "policy" / "policy.karmada.io_overridepolicies.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


def k8s_valid(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_MINOR, strict=True)


# ------------------------------------------------------------------------------------- load balancers


def test_lb_services_forward_80_443_to_nodeports_with_tcp_health_checks() -> None:
    region = RegionConfig(location="fsn1", health_check=HealthCheckConfig(interval=5, timeout=3, retries=2),
                          proxy_protocol=True)
    services = traffic.regional_lb_services(region, IngressConfig(http_node_port=30080, https_node_port=30443))
    assert [(s["listen_port"], s["destination_port"]) for s in services] == [(80, 30080), (443, 30443)]
    for s in services:
        assert s["protocol"] == "tcp"
        assert s["proxyprotocol"] is True
        hc = s["health_check"]
        assert hc == {"protocol": "tcp", "port": s["destination_port"], "interval": 5, "timeout": 3, "retries": 2}
        lo, hi = traffic.HEALTH_CHECK_LIMITS["interval"]
        assert lo <= hc["interval"] <= hi
        assert 1 <= hc["timeout"] <= hc["interval"]
        assert 0 <= hc["retries"] <= 5


def test_lb_service_arg_names_are_pulumi_hcloud_names() -> None:
    (svc, _) = traffic.regional_lb_services(RegionConfig(location="hel1"), IngressConfig())
    assert set(svc) == {"protocol", "listen_port", "destination_port", "proxyprotocol", "health_check"}
    assert set(svc["health_check"]) == {"protocol", "port", "interval", "timeout", "retries"}
    assert svc["proxyprotocol"] is False


def _member(name: str, region: str, cluster: str | None = None, byo: bool = False, **ingress: int) -> MemberConfig:
    creds: dict[str, Any] = ({"source": "secret", "configKey": "kc"} if byo
                             else {"source": "capi", "cluster": cluster or name})
    return MemberConfig.model_validate({
        "name": name, "region": region, "kubernetesVersion": "v1.33.4",
        "apiEndpoint": f"https://{name}.example.com:6443", "credentials": creds, "ingress": ingress,
    })


def test_target_selectors_one_per_member_by_caph_labels() -> None:
    targets = traffic.regional_lb_target_selector([_member("b-2", "eu"), _member("a-1", "eu", cluster="capi-a")])
    assert targets == [
        {"type": "label_selector", "label_selector": "caph-cluster-capi-a=owned,machine_type=worker",
         "use_private_ip": True},
        {"type": "label_selector", "label_selector": "caph-cluster-b-2=owned,machine_type=worker",
         "use_private_ip": True},
    ]


def test_targets_use_public_ips_without_a_network() -> None:
    (target,) = traffic.regional_lb_target_selector([_member("a-1", "eu")], private=False)
    assert target["use_private_ip"] is False


def test_external_dns_needs_an_owner() -> None:
    with pytest.raises(ValueError, match="txtOwnerId"):
        traffic.external_dns_args(DnsConfig(domain="dev.example.com"))


def test_non_capi_member_uses_operator_label() -> None:
    (target,) = traffic.regional_lb_target_selector([_member("byo", "eu", byo=True)])
    assert target["label_selector"] == "karmada-hub/member=byo"


def test_region_ingress_rejects_mismatched_nodeports() -> None:
    same = [_member("a", "eu"), _member("b", "eu")]
    assert traffic.region_ingress(same).http_node_port == 30080
    with pytest.raises(ValueError, match="different ingress NodePorts"):
        traffic.region_ingress([_member("a", "eu"), _member("b", "eu", http_node_port=31080)])
    with pytest.raises(ValueError):
        traffic.region_ingress([])
    with pytest.raises(ValueError):
        traffic.regional_lb_target_selector([])


def test_region_record_name_is_the_controllers() -> None:
    """The drill name the hub's failover controller publishes (agents/traffic_failover.py); no stack writes it."""
    from agents import traffic_failover as tf

    assert traffic.region_record_name("eu-fsn", "dev.example.com") == "eu-fsn.lb.dev.example.com"
    assert tf.region_record_name("eu-fsn", "dev.example.com") == traffic.region_record_name("eu-fsn", "dev.example.com")
    assert tf.REGION_RECORD_SUBDOMAIN == traffic.REGION_RECORD_LABEL
    assert not hasattr(traffic, "region_record"), "a region's record is no stack's ZoneRrset (review 2, H5)"


# ---------------------------------------------------------------------------------------- external-dns


def test_external_dns_objects_validate_strict(dns: DnsConfig) -> None:
    objs = traffic.external_dns_objects(dns, "token-secret")
    objs += [traffic.external_dns_token_secret(TOKEN)]
    assert [o["kind"] for o in objs] == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "Deployment", "Secret"]
    for obj in objs:
        assert obj["metadata"]["name"]
        k8s_valid(obj)


def test_strict_validation_can_fail(dns: DnsConfig) -> None:
    deployment = _deployment(dns)
    deployment["spec"]["template"]["spec"]["containers"][0]["argz"] = ["--policy=sync"]
    with pytest.raises(Exception):  # noqa: B017 - kubernetes_validate raises its own error hierarchy
        k8s_valid(deployment)


def _deployment(dns: DnsConfig) -> dict[str, Any]:
    (deployment,) = [o for o in traffic.external_dns_objects(dns, "token-secret") if o["kind"] == "Deployment"]
    return deployment


def test_external_dns_reads_only_the_failover_controllers_dnsendpoints(dns: DnsConfig) -> None:
    pod = _deployment(dns)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == EXTERNAL_DNS_IMAGE
    args = container["args"]
    for expected in (
        "--provider=webhook", "--source=crd", "--namespace=external-dns", "--policy=sync", "--registry=txt",
        "--label-filter=app.kubernetes.io/managed-by=karmada-hub-traffic-failover",
        "--txt-owner-id=karmada-hub-dev", "--domain-filter=dev.example.com", "--interval=60s", "--events",
        "--min-event-sync-interval=5s",
    ):
        assert expected in args, expected
    # the regions' drill records <region>.lb.<domain> are the controller's DNSEndpoints too (no stack writes them)
    assert not [a for a in args if a.startswith("--exclude-domains")]
    # one source only: a second source publishing the same name would keep winning (plan/conflict.go PerResource)
    assert [a for a in args if a.startswith("--source=")] == ["--source=crd"]
    assert not [a for a in args if a.startswith(("--kubeconfig", "--service-type-filter", "--annotation-prefix"))]
    assert [a for a in args if a.startswith("--min-ttl=")] == [f"--min-ttl={dns.ttl}s"]
    assert any(a.startswith("--txt-prefix=") for a in args)
    assert {a.split("=", 1)[1] for a in args if a.startswith("--managed-record-types=")} == {"A", "AAAA", "CNAME"}
    assert not any(a.startswith("--ttl") for a in args), "v0.22 has no --ttl flag"
    # in-cluster config reads the token where client-go's rest.InClusterConfig looks for it, in this container only
    (mount,) = container["volumeMounts"]
    assert mount["mountPath"] == traffic.SA_TOKEN_DIR and mount["readOnly"] is True
    (volume,) = pod["volumes"]
    paths = {item.get("path") for src in volume["projected"]["sources"] for item in
             ([src["serviceAccountToken"]] if "serviceAccountToken" in src else
              src.get("configMap", src.get("downwardAPI", {})).get("items", []))}
    assert paths == {"token", "ca.crt", "namespace"}
    assert not pod["initContainers"][0].get("volumeMounts"), "the webhook gets no Kubernetes credentials"


def test_external_dns_host_role_is_what_the_crd_source_calls(dns: DnsConfig) -> None:
    role, binding = traffic.external_dns_host_rbac()
    assert role["metadata"]["namespace"] == "external-dns" and role["kind"] == "Role"
    assert role["rules"] == [
        {"apiGroups": ["externaldns.k8s.io"], "resources": ["dnsendpoints"], "verbs": ["list", "watch"]},
        {"apiGroups": ["externaldns.k8s.io"], "resources": ["dnsendpoints/status"], "verbs": ["update"]},
    ]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "external-dns", "namespace": "external-dns"}]
    assert _deployment(dns)["spec"]["template"]["spec"]["serviceAccountName"] == "external-dns"


def test_min_event_sync_and_ttl_follow_the_budget() -> None:
    from components.operations import budget

    dns = DnsConfig(domain="example.org", txt_owner_id="x", ttl=60, interval_seconds=30)
    args = traffic.external_dns_args(dns)
    assert "--min-ttl=60s" in args and "--interval=30s" in args
    assert f"--min-event-sync-interval={budget.EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS}s" in args
    assert traffic.MIN_EVENT_SYNC_SECONDS == budget.EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS


def test_webhook_sidecar_and_token_only_by_reference(dns: DnsConfig) -> None:
    pod = _deployment(dns)["spec"]["template"]["spec"]
    (webhook,) = pod["initContainers"]
    assert webhook["image"] == HETZNER_WEBHOOK_IMAGE
    assert webhook["restartPolicy"] == "Always", "native sidecar: starts before external-dns, lives with it"
    env = {e["name"]: e for e in webhook["env"]}
    assert env["HETZNER_TOKEN"] == {"name": "HETZNER_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": "token-secret", "key": "token"}}}
    assert env["INCLUDE_DOMAIN_FILTER"]["value"] == dns.domain
    for container in pod["initContainers"] + pod["containers"]:
        for e in container.get("env", []):
            assert "value" in e or set(e["valueFrom"]) == {"secretKeyRef"}
    rendered = json.dumps(traffic.external_dns_objects(dns, "token-secret"))
    assert TOKEN not in rendered
    secret = traffic.external_dns_token_secret(TOKEN)
    assert base64.b64decode(secret["data"]["token"]).decode() == TOKEN
    assert TOKEN not in json.dumps(secret), "the secret stores the token base64-encoded only"
    with pytest.raises(ValueError):
        traffic.external_dns_token_secret("")


def test_pod_is_locked_down(dns: DnsConfig) -> None:
    deployment = _deployment(dns)
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False  # the token is projected into one container only
    for c in pod["initContainers"] + pod["containers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] and sc["runAsNonRoot"] and not sc["allowPrivilegeEscalation"]
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert c["resources"]["requests"]
        assert "livenessProbe" in c
    assert "readinessProbe" in pod["containers"][0]


# --------------------------------------------------------------------------------- ingress status override


def test_override_policy_validates_against_upstream_crd() -> None:
    policy = traffic.ingress_status_overrides("ingress-nginx", "ingress-nginx-controller",
                                              {"dev-hel1-a": "198.51.100.20", "dev-fsn1-a": "203.0.113.10"})
    jsonschema.validate(policy, overridepolicy_schema())
    rules = policy["spec"]["overrideRules"]
    assert [r["targetCluster"]["clusterNames"] for r in rules] == [["dev-fsn1-a"], ["dev-hel1-a"]]
    assert rules[0]["overriders"]["argsOverrider"] == [
        {"containerName": "controller", "operator": "add", "value": ["--publish-status-address=203.0.113.10"]}]
    assert policy["spec"]["resourceSelectors"] == [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                   "namespace": "ingress-nginx", "name": "ingress-nginx-controller"}]
    assert policy["metadata"]["name"] and policy["metadata"]["namespace"] == "ingress-nginx"


def test_override_policy_closed_schema_rejects_unknown_fields() -> None:
    """The shared closed-schema validator also rejects fields the API server would prune."""
    policy = traffic.ingress_status_overrides("ns", "ctl", {"m": "203.0.113.1"})
    validate_karmada(policy)
    policy["spec"]["overrideRules"][0]["overriders"]["argsOverrider"][0]["args"] = ["x"]
    with pytest.raises(AssertionError):
        validate_karmada(policy)


def test_override_policy_schema_check_can_fail() -> None:
    policy = traffic.ingress_status_overrides("ns", "ctl", {"m": "203.0.113.1"})
    policy["spec"]["overrideRules"][0]["overriders"]["argsOverrider"][0]["operator"] = "replace"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(policy, overridepolicy_schema())


def test_override_policy_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        traffic.ingress_status_overrides("ns", "ctl", {})
    with pytest.raises(ValueError):
        traffic.ingress_status_overrides("ns", "ctl", {"m": "lb.example.com"})
    with pytest.raises(ValueError):
        traffic.ingress_status_overrides("ns", "ctl", {"m": "203.0.113.1"}, kind="StatefulSet")


def test_override_policy_other_controller() -> None:
    policy = traffic.ingress_status_overrides("traefik", "traefik", {"m": "2001:db8::1"}, kind="DaemonSet",
                                              container_name="traefik",
                                              flag="--providers.kubernetesingress.ingressendpoint.ip")
    jsonschema.validate(policy, overridepolicy_schema())
    (rule,) = policy["spec"]["overrideRules"]
    assert rule["overriders"]["argsOverrider"][0]["value"] == [
        "--providers.kubernetesingress.ingressendpoint.ip=2001:db8::1"]


# ------------------------------------------------------------------------------------------ dev stack


def test_dev_stack_renders_two_eu_regions(fleet: FleetConfig, dns: DnsConfig) -> None:
    assert sorted(fleet.regions) == ["eu-fsn", "eu-hel"]
    lb_ips = {"eu-fsn": "203.0.113.10", "eu-hel": "198.51.100.20"}
    member_to_ip: dict[str, str] = {}
    for name, region in sorted(fleet.regions.items()):
        assert region.network_zone == "eu-central"
        members = traffic.region_members(fleet.members, name)
        assert len(members) == 1
        services = traffic.regional_lb_services(region, traffic.region_ingress(members))
        assert {s["listen_port"] for s in services} == {80, 443}
        assert all(s["health_check"]["interval"] == region.health_check.interval for s in services)
        (target,) = traffic.regional_lb_target_selector(members)
        assert target["label_selector"] == f"caph-cluster-{members[0].credentials.cluster}=owned,machine_type=worker"
        assert traffic.region_record_name(name, dns.domain) == f"{name}.lb.dev.example.com"
        member_to_ip.update({m.name: lb_ips[name] for m in members})
    policy = traffic.ingress_status_overrides("ingress-nginx", "ingress-nginx-controller", member_to_ip)
    jsonschema.validate(policy, overridepolicy_schema())
    assert len(policy["spec"]["overrideRules"]) == 2
    for obj in traffic.external_dns_objects(dns, traffic.TOKEN_SECRET_NAME):
        k8s_valid(obj)
    assert fleet.secrets[dns.token_config_key] == placeholder(dns.token_config_key)
    rendered = json.dumps(traffic.external_dns_objects(dns, "t"))
    assert placeholder(dns.token_config_key) not in rendered
