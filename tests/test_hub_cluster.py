"""HubCluster as the dev stack renders it: topology, firewall, LB, k3s bootstrap, token and kubeconfig.

Everything here reads what the real program registered under the recording mock monitor
(`rendered_dev`), unredacted, so secrets (the token, the admin key) can be checked for correctness.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from components.hetzner.cloud_init import CONFIG_PATH, TLS_DIR, TOKEN_PATH
from hubctl.mocks import unwrap
from tests.support.tools import require_tool

SERVER = "hcloud:index/server:Server"
WORLD = {"0.0.0.0/0", "::/0"}


HUB_COMPONENT = "karmada-hub:index:HubCluster"


def hub_children(plan: Any) -> list[Any]:
    """Records directly under the HubCluster component (other components add their own LBs, servers, …)."""
    hubs = [r for r in plan.records if r.type == HUB_COMPONENT]
    assert len(hubs) == 1, [r.urn for r in hubs]
    return [r for r in plan.records if r.parent == hubs[0].urn]


def records(plan: Any, typ: str) -> list[Any]:
    return [r for r in hub_children(plan) if r.type == typ]


def one(plan: Any, typ: str) -> Any:
    found = records(plan, typ)
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def inputs(record: Any) -> dict[str, Any]:
    return unwrap(record.inputs)


def servers(plan: Any) -> list[dict[str, Any]]:
    return sorted((inputs(r) for r in records(plan, SERVER)), key=lambda s: s["name"])


def user_data_files(server: dict[str, Any]) -> dict[str, str]:
    """path -> decoded content, exactly the bytes cloud-init would write."""
    text = server["userData"]
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)
    out = {}
    for entry in doc["write_files"]:
        content = entry["content"]
        if entry.get("encoding") in ("b64", "base64"):
            content = base64.b64decode(content).decode()
        out[entry["path"]] = content
    return out


def k3s_config(server: dict[str, Any]) -> dict[str, Any]:
    return yaml.safe_load(user_data_files(server)[CONFIG_PATH])


def lb_ipv4(plan: Any) -> str:
    return one(plan, "hcloud:index/loadBalancer:LoadBalancer").outputs["ipv4"]


def lb_private_ip(plan: Any) -> str:
    return inputs(one(plan, "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork"))["ip"]


def server_ips(plan: Any) -> list[str]:
    """The servers' Primary IPs, in server order (`hub-ipv4-<index>`)."""
    ips = sorted(records(plan, "hcloud:index/primaryIp:PrimaryIp"), key=lambda r: r.name)
    return [r.outputs["ipAddress"] for r in ips]


@pytest.fixture(scope="module")
def dev_config() -> Any:
    from hubctl.commands import load_config
    from tests.support.tools import REPO

    return load_config(REPO, "dev")[1]


# ------------------------------------------------------------------------------------------- topology


def test_servers_spread_over_locations(rendered_dev, dev_config) -> None:
    srv = servers(rendered_dev)
    assert len(srv) == dev_config.hub.servers >= 3
    assert len(srv) % 2 == 1
    locations = {s["location"] for s in srv}
    assert len(locations) >= 2
    assert locations <= set(dev_config.hub.locations)


def test_all_servers_in_the_one_spread_placement_group(rendered_dev) -> None:
    group = one(rendered_dev, "hcloud:index/placementGroup:PlacementGroup")
    assert inputs(group)["type"] == "spread"
    ids = {s.get("placementGroupId") for s in servers(rendered_dev)}
    assert len(ids) == 1 and None not in ids
    for r in records(rendered_dev, SERVER):
        assert group.urn in r.dependencies, r.name


def test_network_and_subnet_in_one_zone(rendered_dev, dev_config) -> None:
    network = inputs(one(rendered_dev, "hcloud:index/network:Network"))
    subnet = inputs(one(rendered_dev, "hcloud:index/networkSubnet:NetworkSubnet"))
    assert subnet["networkZone"] == "eu-central"
    assert subnet["type"] == "cloud"
    assert ipaddress.ip_network(subnet["ipRange"]).subnet_of(ipaddress.ip_network(network["ipRange"]))
    for s in servers(rendered_dev):
        (net,) = s["networks"]
        assert ipaddress.ip_address(net["ip"]) in ipaddress.ip_network(subnet["ipRange"])
    ips = [s["networks"][0]["ip"] for s in servers(rendered_dev)]
    assert len(set(ips)) == len(ips)


def test_servers_depend_on_subnet(rendered_dev) -> None:
    subnet = one(rendered_dev, "hcloud:index/networkSubnet:NetworkSubnet")
    for r in records(rendered_dev, SERVER):
        assert subnet.urn in r.dependencies


# ------------------------------------------------------------------------------------------- firewall


def _ports(rule: dict[str, Any]) -> range:
    port = rule.get("port")
    if port in (None, "any"):
        return range(0, 65536)
    lo, _, hi = str(port).partition("-")
    return range(int(lo), int(hi or lo) + 1)


def test_firewall_never_opens_ssh_or_api_to_the_world(rendered_dev) -> None:
    fw = inputs(one(rendered_dev, "hcloud:index/firewall:Firewall"))
    rules = fw["rules"]
    assert rules, "a firewall without rules allows nothing in, but also says nothing: expected explicit rules"
    for rule in rules:
        if rule["direction"] != "in" or rule["protocol"] not in ("tcp", "udp"):
            continue
        ports = _ports(rule)
        if 22 in ports or 6443 in ports:
            assert not set(rule["sourceIps"]) & WORLD, rule
            for cidr in rule["sourceIps"]:
                assert ipaddress.ip_network(cidr).prefixlen > 0, rule
    opened = {p for r in rules if r["protocol"] == "tcp" for p in (22, 6443, 32443) if p in _ports(r)}
    assert opened == {22, 6443, 32443}, "SSH and both APIs must be reachable from the admin CIDRs"


def test_firewall_opens_dns_only_in_mode_self_hosted(rendered_dev, rendered_dev_hetzner) -> None:
    """dns.mode self-hosted: resolvers everywhere reach the hub servers' nameservers on UDP and TCP 53 (DNS over
    TCP is required, RFC 7766); mode hetzner opens nothing for DNS."""
    fw = inputs(one(rendered_dev, "hcloud:index/firewall:Firewall"))
    dns = [r for r in fw["rules"] if r.get("port") == "53"]
    assert sorted(r["protocol"] for r in dns) == ["tcp", "udp"]
    assert all(r["direction"] == "in" and set(r["sourceIps"]) == WORLD for r in dns)
    hetzner = inputs(one(rendered_dev_hetzner, "hcloud:index/firewall:Firewall"))
    assert not [r for r in hetzner["rules"] if r.get("port") == "53"]


def test_firewall_karmada_api_from_api_and_member_cidrs(rendered_dev, dev_config) -> None:
    from components.hetzner.hub_cluster import KARMADA_API_NODE_PORT, karmada_api_cidrs

    fw = inputs(one(rendered_dev, "hcloud:index/firewall:Firewall"))
    (rule,) = [r for r in fw["rules"] if r.get("port") == str(KARMADA_API_NODE_PORT)]
    assert rule["sourceIps"] == karmada_api_cidrs(dev_config.hub)
    assert set(rule["sourceIps"]) >= {str(c) for c in dev_config.hub.firewall.api_cidrs}
    extra = dev_config.hub.firewall.model_copy(update={"karmada_cidrs": [ipaddress.ip_network("192.0.2.0/28")]})
    assert karmada_api_cidrs(dev_config.hub.model_copy(update={"firewall": extra}))[-1] == "192.0.2.0/28"


def test_servers_have_their_own_primary_ips(rendered_dev) -> None:
    ips = sorted(records(rendered_dev, "hcloud:index/primaryIp:PrimaryIp"), key=lambda r: r.name)
    assert len(ips) == len(servers(rendered_dev)) == 3
    for ip, srv in zip(ips, sorted(records(rendered_dev, SERVER), key=lambda r: r.name), strict=True):
        spec = inputs(ip)
        assert spec["type"] == "ipv4" and spec["assigneeType"] == "server" and spec["autoDelete"] is False
        assert spec["location"] == inputs(srv)["location"]
        assert ip.urn in srv.dependencies
        (net,) = inputs(srv)["publicNets"]
        assert net["ipv4Enabled"] is True and "ipv4" in net


def test_firewall_opens_no_cluster_port_on_the_public_interface(rendered_dev) -> None:
    """A Hetzner Cloud Firewall filters the public interface only: servers talk over the private network, so a rule
    for the cluster's own ports could only ever open them to the internet (or, sourced from the private network,
    match nothing). dev runs dns.mode self-hosted: its nameservers answer the world on the servers' port 53."""
    fw = inputs(one(rendered_dev, "hcloud:index/firewall:Firewall"))
    assert {(r["protocol"], r.get("port")) for r in fw["rules"]} == {
        ("tcp", "22"), ("tcp", "6443"), ("tcp", "32443"), ("icmp", None), ("udp", "53"), ("tcp", "53")}
    cluster_ports = {2379, 2380, 10250, 5001, 8472, 30000}
    assert not any(cluster_ports & set(_ports(r)) for r in fw["rules"] if r.get("port"))


def test_servers_use_the_firewall(rendered_dev) -> None:
    fw = one(rendered_dev, "hcloud:index/firewall:Firewall")
    for r in records(rendered_dev, SERVER):
        assert fw.urn in r.dependencies
        assert len(inputs(r)["firewallIds"]) == 1


# ------------------------------------------------------------------------------------------ load balancer


def test_api_load_balancer_is_private_by_default(rendered_dev) -> None:
    """No public interface: a Hetzner LB has no firewall, so apiCidrs would not apply to it."""
    from components.hetzner.hub_cluster import WORLD_REACHABLE_LABEL

    net = inputs(one(rendered_dev, "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork"))
    assert net["enablePublicInterface"] is False
    assert WORLD_REACHABLE_LABEL not in inputs(one(rendered_dev, "hcloud:index/loadBalancer:LoadBalancer"))["labels"]


def test_api_load_balancer(rendered_dev) -> None:
    lb = inputs(one(rendered_dev, "hcloud:index/loadBalancer:LoadBalancer"))
    assert lb["loadBalancerType"] == "lb11"
    services = {int(s["listenPort"]): s for s in map(inputs, records(rendered_dev,
                                                                       "hcloud:index/loadBalancerService:"
                                                                       "LoadBalancerService"))}
    assert set(services) == {6443, 5443}
    k3s = services[6443]
    assert k3s["protocol"] == "tcp" and int(k3s["destinationPort"]) == 6443
    hc = k3s["healthCheck"]
    assert hc["protocol"] == "tcp" and int(hc["port"]) == 6443
    assert hc["interval"] >= 3 and 1 <= hc["timeout"] <= hc["interval"]
    karmada = services[5443]
    assert karmada["protocol"] == "tcp" and karmada.get("healthCheck")
    assert int(karmada["healthCheck"]["port"]) == int(karmada["destinationPort"])


def test_lb_targets_select_exactly_the_servers(rendered_dev) -> None:
    target = inputs(one(rendered_dev, "hcloud:index/loadBalancerTarget:LoadBalancerTarget"))
    assert target["type"] == "label_selector"
    assert target["usePrivateIp"] is True
    selector = dict(term.split("=", 1) for term in target["labelSelector"].split(","))
    for s in servers(rendered_dev):
        assert selector.items() <= s["labels"].items(), (selector, s["labels"])
    others = [inputs(r) for r in rendered_dev.records if r.type.startswith("hcloud:") and r.type != SERVER]
    others += [inputs(r) for r in rendered_dev.records if r.type == SERVER and r not in records(rendered_dev, SERVER)]
    for other in others:
        labels = other.get("labels") or {}
        assert not selector.items() <= labels.items(), f"the selector also matches {other.get('name')}"


def test_lb_private_ip_in_subnet(rendered_dev) -> None:
    subnet = inputs(one(rendered_dev, "hcloud:index/networkSubnet:NetworkSubnet"))
    assert ipaddress.ip_address(lb_private_ip(rendered_dev)) in ipaddress.ip_network(subnet["ipRange"])
    server_ips = {s["networks"][0]["ip"] for s in servers(rendered_dev)}
    assert lb_private_ip(rendered_dev) not in server_ips


# ------------------------------------------------------------------------------------ ordering, options


def test_servers_ignore_user_data_changes(rendered_dev) -> None:
    for r in records(rendered_dev, SERVER):
        assert "userData" in r.options.get("ignoreChanges", []), r.name


def test_host_provider_waits_for_readiness_and_readiness_for_every_server(rendered_dev) -> None:
    provider = [r for r in hub_children(rendered_dev)
                if r.type == "pulumi:providers:kubernetes" and r.name == "k8s-host"]
    assert len(provider) == 1
    gates = [r for r in hub_children(rendered_dev) if r.type == "pulumi-python:dynamic:Resource" and r.urn in
             provider[0].dependencies]
    assert len(gates) == 1, provider[0].dependencies
    gate = gates[0]
    server_urns = {r.urn for r in records(rendered_dev, SERVER)}
    assert server_urns and server_urns <= set(gate.dependencies)
    gate_inputs = inputs(gate)
    assert gate_inputs["url"] == f"https://{server_ips(rendered_dev)[0]}:6443/readyz"
    # the provider's kubeconfig is the gate's output, not the raw one: nothing reaches the API before /readyz
    assert unwrap(provider[0].inputs["kubeconfig"]) == gate_inputs["kubeconfig"]


# ------------------------------------------------------------------------------------------ k3s bootstrap


def test_only_first_server_inits_and_gets_the_ca(rendered_dev) -> None:
    srv = servers(rendered_dev)
    first, joiners = srv[0], srv[1:]
    assert first["name"].endswith("-0")
    cfg0 = k3s_config(first)
    # neither key in config.yaml: the boot-time check writes exactly one of them (test_hub_join_mode.py)
    assert "cluster-init" not in cfg0 and "server" not in cfg0
    files0 = user_data_files(first)
    assert "/usr/local/sbin/k3s-join-mode" in files0
    for ca in ("server-ca", "client-ca", "request-header-ca", "etcd/peer-ca", "etcd/server-ca"):
        assert f"{TLS_DIR}/{ca}.crt" in files0 and f"{TLS_DIR}/{ca}.key" in files0
    assert f"{TLS_DIR}/service.key" in files0
    for s in joiners:
        cfg = k3s_config(s)
        assert "cluster-init" not in cfg
        assert cfg["server"] == f"https://{lb_private_ip(rendered_dev)}:6443"
        assert not [p for p in user_data_files(s) if p.startswith(TLS_DIR)], s["name"]


def test_tls_san_has_server_addresses_and_dns_name(rendered_dev, dev_config) -> None:
    want = {*server_ips(rendered_dev), lb_private_ip(rendered_dev), dev_config.hub.api_dns_name}
    for s in servers(rendered_dev):
        sans = set(k3s_config(s)["tls-san"])
        assert want <= sans, s["name"]
        assert lb_ipv4(rendered_dev) not in sans  # the LB's public address serves nothing by default


def test_critical_k3s_settings_identical_on_every_server(rendered_dev) -> None:
    critical = ("cluster-cidr", "service-cidr", "cluster-dns", "flannel-backend", "disable", "secrets-encryption",
                "token-file", "tls-san")
    values = [tuple(repr(k3s_config(s).get(k)) for k in critical) for s in servers(rendered_dev)]
    assert len(set(values)) == 1


def test_node_ip_is_the_private_address(rendered_dev) -> None:
    for s in servers(rendered_dev):
        cfg = k3s_config(s)
        assert cfg["node-ip"] == cfg["advertise-address"] == s["networks"][0]["ip"]
        assert cfg["node-name"] == s["name"]


def test_join_token_embeds_hash_of_server_ca_file(rendered_dev) -> None:
    srv = servers(rendered_dev)
    ca_bytes = user_data_files(srv[0])[f"{TLS_DIR}/server-ca.crt"].encode()
    # the same bytes cloud-init writes (b64-decoded), as k3s hashes them
    raw_entry = next(e for e in yaml.safe_load(srv[0]["userData"])["write_files"]
                     if e["path"] == f"{TLS_DIR}/server-ca.crt")
    assert raw_entry.get("encoding") == "b64"
    assert base64.b64decode(raw_entry["content"]) == ca_bytes
    prefix = "K10" + hashlib.sha256(ca_bytes).hexdigest() + "::server:"
    tokens = {user_data_files(s)[TOKEN_PATH].strip() for s in srv}
    assert len(tokens) == 1
    token = tokens.pop()
    assert token.startswith(prefix)
    assert len(token) > len(prefix) + 16
    assert re.fullmatch(r"[A-Za-z0-9]+", token[len(prefix):])


def test_server_ca_file_is_the_ca_the_program_generated(rendered_dev) -> None:
    ca = next(r for r in hub_children(rendered_dev) if r.type == "tls:index/selfSignedCert:SelfSignedCert"
              and r.name.endswith("k3s-server-ca"))
    assert user_data_files(servers(rendered_dev)[0])[f"{TLS_DIR}/server-ca.crt"] == ca.outputs["certPem"]


# ------------------------------------------------------------------------------------------- kubeconfig


@pytest.fixture(scope="module")
def hub_kubeconfig(rendered_dev) -> dict[str, Any]:
    """The program's own admin kubeconfig for the host cluster (the readiness gate's, which the host provider
    uses); it is in the hub's state only, never an output (`hubctl kubeconfig` reads it from there)."""
    gate = next(r for r in rendered_dev.records if r.name == "hub-api-ready")
    return yaml.safe_load(unwrap(gate.outputs)["kubeconfig"])


def _ca_cert(plan: Any, suffix: str) -> x509.Certificate:
    rec = next(r for r in hub_children(plan) if r.type == "tls:index/selfSignedCert:SelfSignedCert" and
               r.name.endswith(suffix))
    return x509.load_pem_x509_certificate(rec.outputs["certPem"].encode())


def test_kubeconfig_server_and_ca(rendered_dev, dev_config, hub_kubeconfig) -> None:
    (cluster,) = hub_kubeconfig["clusters"]
    server = cluster["cluster"]["server"]
    assert server in (f"https://{dev_config.hub.api_dns_name}:6443", f"https://{server_ips(rendered_dev)[0]}:6443")
    assert server == f"https://{server_ips(rendered_dev)[0]}:6443"
    assert "hubKubeconfig" not in rendered_dev.outputs and "karmadaKubeconfig" not in rendered_dev.outputs
    host = server.removeprefix("https://").rsplit(":", 1)[0]
    assert host in k3s_config(servers(rendered_dev)[0])["tls-san"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(cluster["cluster"]["certificate-authority-data"]))
    assert ca == _ca_cert(rendered_dev, "k3s-server-ca")


def _admin(hub_kubeconfig: dict[str, Any]) -> tuple[bytes, bytes]:
    (user,) = hub_kubeconfig["users"]
    return (base64.b64decode(user["user"]["client-certificate-data"]),
            base64.b64decode(user["user"]["client-key-data"]))


def test_admin_cert_is_system_masters_client_cert(rendered_dev, hub_kubeconfig) -> None:
    cert_pem, key_pem = _admin(hub_kubeconfig)
    cert = x509.load_pem_x509_certificate(cert_pem)
    client_ca = _ca_cert(rendered_dev, "k3s-client-ca")
    cert.verify_directly_issued_by(client_ca)
    with pytest.raises((ValueError, InvalidSignature)):
        cert.verify_directly_issued_by(_ca_cert(rendered_dev, "k3s-server-ca"))
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["system:admin"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in eku
    assert ExtendedKeyUsageOID.SERVER_AUTH not in eku
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()


def test_admin_cert_verifies_with_openssl(rendered_dev, hub_kubeconfig, tmp_path: Path) -> None:
    openssl = require_tool("openssl")
    from cryptography.hazmat.primitives import serialization

    cert_pem, _ = _admin(hub_kubeconfig)
    (tmp_path / "admin.crt").write_bytes(cert_pem)
    for name, suffix in (("client-ca.crt", "k3s-client-ca"), ("server-ca.crt", "k3s-server-ca")):
        (tmp_path / name).write_bytes(_ca_cert(rendered_dev, suffix).public_bytes(serialization.Encoding.PEM))
    good = subprocess.run([openssl, "verify", "-purpose", "sslclient", "-CAfile", str(tmp_path / "client-ca.crt"),
                           str(tmp_path / "admin.crt")], capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout.strip().endswith("admin.crt: OK"), good.stdout + good.stderr
    wrong = subprocess.run([openssl, "verify", "-CAfile", str(tmp_path / "server-ca.crt"),
                            str(tmp_path / "admin.crt")], capture_output=True, text=True)
    assert wrong.returncode != 0


def test_api_record_name_only_inside_the_managed_zone() -> None:
    from components.hetzner.hub_cluster import api_record_name

    assert api_record_name("api.hub.dev.example.com", "dev.example.com") == "api.hub"
    assert api_record_name("api.hub.example.org", "dev.example.com") is None
    assert api_record_name("xdev.example.com", "dev.example.com") is None
    assert api_record_name(None, "dev.example.com") is None


def test_program_providers_dial_the_first_server_not_dns(rendered_dev) -> None:
    """The first `up` must not depend on the API record having propagated: the readiness gates (and the
    providers behind them) use the first server's Primary IP, behind the same firewall as everyone; the
    endpoints people and region stacks use are the DNS name (every server's address)."""
    first = server_ips(rendered_dev)[0]
    gates = [unwrap(r.inputs) for r in rendered_dev.records if r.name in ("hub-api-ready", "karmada-apiserver-ready")]
    assert len(gates) == 2
    for gate in gates:
        server = yaml.safe_load(gate["kubeconfig"])["clusters"][0]["cluster"]["server"]
        assert server in (f"https://{first}:6443", f"https://{first}:32443"), server
    assert rendered_dev.raw_outputs["karmadaApiEndpoint"] == "https://api.hub.dev.example.com:32443"


def test_server_addresses_are_no_karmada_sans_when_there_is_an_api_name(rendered_dev) -> None:
    """The program's karmada clients dial the first server's address but verify the in-cluster name, so the
    serving certificate lists the API name and in-cluster names, not server addresses: adding a server replaces
    no certificate."""
    from components.karmada.pki_spec import APISERVER_IN_CLUSTER_NAME

    gate = next(unwrap(r.inputs) for r in rendered_dev.records if r.name == "karmada-apiserver-ready")
    assert gate["serverName"] == APISERVER_IN_CLUSTER_NAME
    cluster = yaml.safe_load(gate["kubeconfig"])["clusters"][0]["cluster"]
    assert cluster["tls-server-name"] == APISERVER_IN_CLUSTER_NAME
    csr = next(unwrap(r.inputs) for r in rendered_dev.records if r.name == "karmada-pki-apiserver-csr")
    assert APISERVER_IN_CLUSTER_NAME in csr["dnsNames"] and "api.hub.dev.example.com" in csr["dnsNames"]
    assert not set(server_ips(rendered_dev)) & set(csr["ipAddresses"])


def test_api_record_lists_every_server(rendered_dev) -> None:
    """dev runs dns.mode self-hosted and its API name lies in the delegated zone: the fleet's nameservers serve it
    (a static record of the zone), and nothing at Hetzner (a record below the delegation would be hidden)."""
    import json

    from components.traffic import nameserver_docs
    from tests.support.rendered import find

    assert not [inputs(r) for r in rendered_dev.records if r.type == "hcloud:index/zoneRrset:ZoneRrset"
                and inputs(r)["name"] == "api.hub"]
    zone = json.loads(find(rendered_dev, "host", "ConfigMap", nameserver_docs.CONFIGMAP)["data"]["zone.json"])
    (record,) = zone["static"]
    assert record["name"] == "api.hub.dev.example.com." and record["type"] == "A"
    assert record["values"] == sorted(server_ips(rendered_dev))


def test_where_the_api_record_lives_in_each_dns_mode() -> None:
    from components.config import DnsConfig

    hetzner = DnsConfig(domain="dev.example.com", txt_owner_id="x")
    assert hetzner.hetzner_record("api.hub.dev.example.com") == ("dev.example.com", "api.hub")
    assert hetzner.hetzner_record("api.example.org") is None
    own = DnsConfig(mode="self-hosted", domain="dev.example.com", self_hosted={"parent_zone": "example.com"})
    assert own.hetzner_record("api.hub.dev.example.com") is None, "below the delegation: the zone serves it"
    assert own.hetzner_record("api-hub.example.com") == ("example.com", "api-hub")


def test_world_reachable_is_an_opt_in_by_name(dev_config) -> None:
    """Only `hub.loadBalancer.worldReachable: true` turns the LB's public interface on; then the LB is labelled,
    its public address is in the certificates, the summary and the policy pack name it, and the policy passes."""
    from components.hetzner.hub_cluster import WORLD_REACHABLE_LABEL
    from hubctl.plan import plan_document, run_program
    from hubctl.policy_check import check_plan, format_violations
    from hubctl.report import admin_paths_section
    from tests.support.tools import REPO, edited_stack

    stack = edited_stack("dev", {"hub": lambda h: h["loadBalancer"].update(worldReachable=True)})
    plan = run_program(REPO, stack)
    net = inputs(one(plan, "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork"))
    assert net["enablePublicInterface"] is True
    assert inputs(one(plan, "hcloud:index/loadBalancer:LoadBalancer"))["labels"][WORLD_REACHABLE_LABEL] == "true"
    assert lb_ipv4(plan) in k3s_config(servers(plan)[0])["tls-san"]
    found = check_plan(plan_document(plan))
    assert [v.policy for v in found] == ["api-lb-world-reachable"] and found[0].advisory
    assert "WORLD-REACHABLE: tcp 5443, 6443" in format_violations(found, "dev")
    assert format_violations(found, "dev").endswith("policy: ok in dev (14 rules, 0 violations)")
    opted = dev_config.hub.model_copy(update={"load_balancer": dev_config.hub.load_balancer.model_copy(
        update={"world_reachable": True})})
    section = admin_paths_section(plan, dev_config.model_copy(update={"hub": opted}))
    assert section is not None and "WORLD-REACHABLE" in (section.text or "")
    assert section.metrics["world-reachable ports"].value == 2
    closed = admin_paths_section(plan, dev_config)
    assert closed is not None and "WORLD-REACHABLE" not in (closed.text or "")
    assert closed.metrics["world-reachable ports"].value == 0
