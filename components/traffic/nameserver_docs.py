"""The fleet's own authoritative nameservers (dns.mode self-hosted): documents, no Pulumi.

Hetzner DNS takes no TTL below 60 s (config.HETZNER_DNS_MIN_TTL), so in self-hosted mode the fleet's names live
in a zone (`dns.domain`) that Hetzner only delegates: the parent zone (`dns.selfHosted.parentZone`, at Hetzner)
holds NS records naming the hub servers, and each hub server answers for the zone itself:

- namespace `karmada-dns`, Pod Security `privileged` (the one exception, with its reason on the namespace):
  Knot DNS (`versions.KNOT_IMAGE`) as a DaemonSet on the host network, listening on the server's public Primary
  IP and its private IP, UDP and TCP 53 (Hetzner load balancers carry no UDP, so nothing but the host's own
  addresses can serve it). knotd starts as root only to bind port 53 and drops to its `knot` user at once
  (`server.user`); the container keeps NET_BIND_SERVICE, SETUID and SETGID and nothing else, read-only root;
- every hub server is a primary of the zone. The failover controller writes the same RFC 2136 UPDATE, signed
  with TSIG, to each of them, with the SOA serial it chooses, so all hold the same (serial, content);
  operator-run secondaries (`dns.selfHosted.secondaries`) follow by NOTIFY and IXFR/AXFR from any of them;
- a nameserver serves from its own state (its zone file and journal on the server's disk, a hostPath): nothing on
  the query path reads a Kubernetes API. A new or rebuilt one never answers before it holds the zone: its init
  container (agents/dns_zone_seed.py) writes the zone file from the newest of its own file, the controller's
  snapshot ConfigMap and a transfer from the other servers, and only then does knotd start (which loads zones
  before it answers);
- UPDATE and transfers need the TSIG key *and* a hub address (the hub network or the pods' network); everything
  else is refused. Response rate limiting (mod-rrl) keeps an open UDP service from becoming a reflector.

What the controller needs to write the zone is `zone_config()` (JSON, also read by the seed) and
`controller_args()`. The delegation records are `delegation_records()`; the parent zone is written with the DNS
project's token (hetzner/dns_provider.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from components.config import DnsConfig, HubConfig
from components.kube import agent_script
from components.kube.pod_security import container_security_context
from components.traffic.docs import REGION_RECORD_LABEL
from components.versions import KNOT_IMAGE

NAMESPACE = "karmada-dns"
NAME = "knot"
SEED = "knot-seed"
SEED_SCRIPT = "dns_zone_seed.py"
CONFIGMAP = NAME
"""`knot.conf.in` (the configuration, `@LISTEN@` filled in per server), `zone.json`, `nodes.json`."""
SNAPSHOT_CONFIGMAP = "dns-zone-snapshot"
"""Written by the failover controller's leader after every change (key `zone`: the zone file); read by the seed."""
SNAPSHOT_KEY = "zone"
TSIG_SECRET = "knot-tsig"
"""In karmada-dns: `tsig.conf` (both keys, Knot's syntax) and the writer key as `name` and `secret`."""
CONTROLLER_TSIG_SECRET = "traffic-failover-tsig"
"""In external-dns: the writer key as `name` and `secret` (the controller's only DNS credential)."""
CONTROLLER_ZONE_CONFIGMAP = "traffic-failover-zone"
WRITER_KEY = "karmada-hub-writer."
"""TSIG key of the failover controller (UPDATE and AXFR from hub addresses) and of the seed (AXFR)."""
TRANSFER_KEY = "karmada-hub-transfer."
"""TSIG key the operator's secondaries transfer with (and are notified with): it cannot UPDATE."""
KNOT_UID = 53
"""The `knot` user of CZ.NIC's image (Dockerfile: `adduser --system --uid=53 knot`); Debian's package uses
another uid, so the seed takes it as a flag."""
STATE_HOST_PATH = "/var/lib/karmada-hub/knot"
"""On each hub server: the zone file, Knot's journal and timers; survives a pod, a node reboot, a k3s upgrade."""
STORAGE = "/storage"
RUN_DIR = "/run/knot"
CONFIG_DIR = "/etc/karmada-hub/knot"
TSIG_DIR = "/etc/karmada-hub/tsig"
SNAPSHOT_DIR = "/etc/karmada-hub/snapshot"
ZONE_DIR = "/etc/karmada-hub/zone"
SOA_REFRESH, SOA_RETRY, SOA_EXPIRE = 300, 60, 14 * 86400
"""Secondaries are driven by NOTIFY; refresh/retry are the fallback, and EXPIRE (14 days) lets a secondary that
can reach no primary keep serving the last zone (fail static)."""
PRIORITY_CLASS = "system-node-critical"
EXCEPTION_ANNOTATION = "karmada-hub.io/pod-security-exception"
DELEGATION_LABEL = "karmada-hub.io/dns-role"
"""On the parent zone's records this stack writes: `delegation` (policy dns-short-ttl lets these keep a long TTL)."""

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str, namespace: str | None = NAMESPACE, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**_LABELS, **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


# ------------------------------------------------------------------------------------------- names


def _relative(dns: DnsConfig) -> str:
    assert dns.self_hosted is not None
    return dns.domain[: -len(dns.self_hosted.parent_zone) - 1]


def nameserver_name(dns: DnsConfig, label: str) -> str:
    """`<label>-<zone label>.<parent>`, e.g. `ns0-dev.example.com` for dev.example.com under example.com.

    Out of the delegated zone on purpose: its address record is an ordinary record of the parent zone, not glue
    below the delegation (whether Hetzner Cloud DNS serves glue there was not verifiable)."""
    assert dns.self_hosted is not None
    return f"{label}-{_relative(dns).replace('.', '-')}.{dns.self_hosted.parent_zone}"


def hub_nameservers(dns: DnsConfig, hub: HubConfig) -> list[tuple[str, str]]:
    """(NS name, k3s node name) of every hub server's nameserver, in server order."""
    from components.hetzner.changes import server_name

    return [(nameserver_name(dns, f"ns{i}"), server_name(hub, i)) for i in range(hub.servers)]


def secondary_nameservers(dns: DnsConfig) -> list[tuple[str, str]]:
    """(NS name, IPv4) of every operator-run secondary."""
    assert dns.self_hosted is not None
    return [(nameserver_name(dns, f"ns-{s.name}"), s.ipv4) for s in dns.self_hosted.secondaries]


def ns_names(dns: DnsConfig, hub: HubConfig) -> list[str]:
    return [n for n, _ in hub_nameservers(dns, hub)] + [n for n, _ in secondary_nameservers(dns)]


def hostmaster(dns: DnsConfig) -> str:
    assert dns.self_hosted is not None
    return dns.self_hosted.hostmaster or f"hostmaster.{dns.self_hosted.parent_zone}"


def zone_config(dns: DnsConfig, hub: HubConfig, static: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What every writer and seed of the zone agrees on (JSON in the ConfigMaps): the SOA fields but the serial,
    the apex NS set, static records (the hub API name when it lies in the zone), TTLs, and where the per-region
    drill records live (`<region>.<regionLabel>.<zone>`, from the region ConfigMaps)."""
    sh = dns.self_hosted
    assert sh is not None
    names = ns_names(dns, hub)
    return {
        "zone": dns.domain + ".",
        "soa": {"mname": names[0] + ".", "rname": hostmaster(dns) + ".", "refresh": SOA_REFRESH,
                "retry": SOA_RETRY, "expire": SOA_EXPIRE, "minimum": sh.negative_ttl, "ttl": sh.negative_ttl},
        "ns": [n + "." for n in names],
        "nsTtl": sh.delegation_ttl,
        "recordTtl": dns.record_ttl,
        "regionLabel": REGION_RECORD_LABEL,
        "static": [dict(s) for s in static],
    }


def static_api_record(dns: DnsConfig, api_dns_name: str | None, addresses: Sequence[str]) -> list[dict[str, Any]]:
    """The hub API name as a static record of the zone when it lies in it (Hetzner would hide a record below the
    delegation); HubCluster writes it at Hetzner otherwise."""
    if not api_dns_name or not (api_dns_name == dns.domain or api_dns_name.endswith("." + dns.domain)):
        return []
    return [{"name": api_dns_name + ".", "type": "A", "ttl": max(60, dns.record_ttl),
             "values": sorted(addresses)}]


# ------------------------------------------------------------------------------------------ Knot


def tsig_conf(writer_secret: str, transfer_secret: str) -> str:
    """Knot's `key` section for both keys (base64 secrets), included by the configuration."""
    return ("key:\n"
            f"  - id: {WRITER_KEY}\n    algorithm: hmac-sha256\n    secret: {writer_secret}\n"
            f"  - id: {TRANSFER_KEY}\n    algorithm: hmac-sha256\n    secret: {transfer_secret}\n")


def knot_conf(dns: DnsConfig, writer_networks: Sequence[str], *, listen: str = "@LISTEN@",
              storage: str = STORAGE, run_dir: str = RUN_DIR, key_file: str = f"{TSIG_DIR}/tsig.conf",
              user: str | None = "knot:knot", secondary_port: int = 53) -> str:
    """A hub server's knot.conf. `listen` is filled in per server by the seed (`@LISTEN@`); the other keyword
    arguments exist for the tests, which run this very text with Debian's knotd on other paths and ports.

    - every hub server is a primary, written by UPDATE (zone file synced at once, journal of changes for IXFR);
      `serial-policy: increment` never fires because every UPDATE sets the SOA serial itself (knot.conf(5):
      "If the serial is changed by the dynamic update, no change is made");
    - ACL `hub-writer`: UPDATE and AXFR with the writer key from `writer_networks` (the hub network and the pods'
      network) only; ACL `secondaries`: AXFR with the transfer key from the operator's secondaries only;
    - NOTIFY to every secondary after each change;
    - mod-rrl: `rate-limit` responses/s per client netblock, every second limited answer slips (TC set, so a real
      client retries over TCP), the rest are dropped."""
    sh = dns.self_hosted
    assert sh is not None
    secondaries = [s.ipv4 for s in sh.secondaries]
    lines = [
        "# knot.conf of a hub nameserver, rendered by karmada-hub (components/traffic/nameserver_docs.py).",
        "server:",
        f'    rundir: "{run_dir}"',
        *([f"    user: {user}"] if user else []),
        f"    listen: [ {listen} ]",
        '    identity: ""',
        '    version: ""',
        "database:",
        f'    storage: "{storage}"',
        "    journal-db-max-size: 256M",
        "log:",
        "  - target: stdout",
        "    any: info",
        f'include: "{key_file}"',
    ]
    if secondaries:
        lines.append("remote:")
        for ip in secondaries:
            lines += [f"  - id: secondary-{ip}", f"    address: {ip}@{secondary_port}", f"    key: {TRANSFER_KEY}"]
    lines += ["acl:", "  - id: hub-writer", f"    address: [ {', '.join(writer_networks)} ]",
              f"    key: {WRITER_KEY}", "    action: [ update, transfer ]"]
    if secondaries:
        lines += ["  - id: secondaries", f"    address: [ {', '.join(secondaries)} ]", f"    key: {TRANSFER_KEY}",
                  "    action: transfer"]
    lines += [
        "mod-rrl:",
        "  - id: default",
        f"    rate-limit: {sh.rate_limit}",
        "    slip: 2",
        "template:",
        "  - id: default",
        "    global-module: mod-rrl/default",
        "zone:",
        f"  - domain: {dns.domain}",
        f'    storage: "{storage}/zones"',
        f'    file: "{dns.domain}.zone"',
        "    zonefile-sync: 0",
        "    zonefile-load: whole",
        "    journal-content: changes",
        "    serial-policy: increment",
        "    semantic-checks: on",
        f"    acl: [ {', '.join(['hub-writer', *(['secondaries'] if secondaries else [])])} ]",
    ]
    if secondaries:
        lines.append(f"    notify: [ {', '.join(f'secondary-{ip}' for ip in secondaries)} ]")
    return "\n".join(lines) + "\n"


def secondary_knot_conf(dns: DnsConfig, primaries: Sequence[str], listen: Sequence[str], *, storage: str,
                        run_dir: str, key_file: str, user: str | None = "knot:knot") -> str:
    """knot.conf of an operator-run secondary (docs/runbooks/self-hosted-dns.md renders it from the stack): it
    transfers the zone from every hub server (`primaries`: `address@port`), accepts NOTIFY from them, keeps
    serving its last copy for SOA EXPIRE (14 days) when it can reach none, and refuses every UPDATE."""
    sh = dns.self_hosted
    assert sh is not None
    hosts = [p.split("@")[0] for p in primaries]
    lines = [
        "# knot.conf of a secondary of the fleet's zone, rendered by karmada-hub (nameserver_docs.py).",
        "server:",
        f'    rundir: "{run_dir}"',
        *([f"    user: {user}"] if user else []),
        f"    listen: [ {', '.join(listen)} ]",
        '    identity: ""',
        '    version: ""',
        "database:",
        f'    storage: "{storage}"',
        "log:",
        "  - target: stdout",
        "    any: info",
        f'include: "{key_file}"',
        "remote:",
        *[line for i, p in enumerate(primaries) for line in (f"  - id: hub{i}", f"    address: {p}",
                                                             f"    key: {TRANSFER_KEY}")],
        "acl:",
        "  - id: hub-notify",
        f"    address: [ {', '.join(hosts)} ]",
        f"    key: {TRANSFER_KEY}",
        "    action: notify",
        "mod-rrl:",
        "  - id: default",
        f"    rate-limit: {sh.rate_limit}",
        "    slip: 2",
        "template:",
        "  - id: default",
        "    global-module: mod-rrl/default",
        "zone:",
        f"  - domain: {dns.domain}",
        f'    storage: "{storage}/zones"',
        f'    file: "{dns.domain}.zone"',
        f"    master: [ {', '.join(f'hub{i}' for i in range(len(primaries)))} ]",
        "    acl: [ hub-notify ]",
        "    zonefile-sync: 0",
        "    journal-content: changes",
    ]
    return "\n".join(lines) + "\n"


def config_map(dns: DnsConfig, hub_network: str, pod_network: str, zone: Mapping[str, Any],
               nodes: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """karmada-dns: the configuration every hub nameserver starts from. `nodes`: k3s node name -> its listen
    addresses (public Primary IP, private IP)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(CONFIGMAP),
            "data": {"knot.conf.in": knot_conf(dns, [hub_network, pod_network]),
                     "zone.json": json.dumps(zone, sort_keys=True, indent=1),
                     "nodes.json": json.dumps({k: list(v) for k, v in sorted(nodes.items())}, sort_keys=True,
                                              indent=1)}}


def tsig_secret(writer_secret: str, transfer_secret: str) -> dict[str, Any]:
    import base64

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    if not writer_secret or not transfer_secret:
        raise ValueError("knot-tsig: empty TSIG secret")
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": _meta(TSIG_SECRET),
            "data": {"tsig.conf": b64(tsig_conf(writer_secret, transfer_secret)), "name": b64(WRITER_KEY),
                     "secret": b64(writer_secret)}}


def controller_tsig_secret(namespace: str, writer_secret: str) -> dict[str, Any]:
    """The failover controller's copy of the writer key, in its own namespace."""
    import base64

    if not writer_secret:
        raise ValueError("traffic-failover-tsig: empty TSIG secret")
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(CONTROLLER_TSIG_SECRET, namespace),
            "data": {"name": base64.b64encode(WRITER_KEY.encode()).decode(),
                     "secret": base64.b64encode(writer_secret.encode()).decode()}}


def controller_zone_configmap(namespace: str, zone_json: str) -> dict[str, Any]:
    """The failover controller's copy of `zone_config()` (as the JSON text the nameservers' ConfigMap holds)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(CONTROLLER_ZONE_CONFIGMAP, namespace),
            "data": {"zone.json": zone_json}}


def namespace() -> dict[str, Any]:
    """Pod Security `privileged`, with the reason: the nameservers answer on the servers' own addresses (UDP 53,
    which no Hetzner load balancer carries), so they need the host network, which baseline and restricted
    forbid. Nothing else runs here."""
    meta = _meta(NAMESPACE, namespace=None)
    meta["labels"].update({"pod-security.kubernetes.io/enforce": "privileged",
                           "pod-security.kubernetes.io/warn": "baseline"})
    meta["annotations"] = {EXCEPTION_ANNOTATION: (
        "Knot answers DNS on each hub server's public and private address (UDP+TCP 53; Hetzner load balancers "
        "carry no UDP): hostNetwork. knotd drops to its own user after binding; the containers keep "
        "NET_BIND_SERVICE/SETUID/SETGID (knot) and CHOWN/DAC_OVERRIDE (seed) only, read-only root.")}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def seed_args(dns: DnsConfig, uid: int = KNOT_UID) -> list[str]:
    return [
        f"--template={CONFIG_DIR}/knot.conf.in",
        f"--zone-config={CONFIG_DIR}/zone.json",
        f"--nodes={CONFIG_DIR}/nodes.json",
        "--node=$(NODE_NAME)",
        f"--snapshot={SNAPSHOT_DIR}/{SNAPSHOT_KEY}",
        f"--storage={STORAGE}",
        f"--out={RUN_DIR}/knot.conf",
        f"--tsig-name-file={TSIG_DIR}/name",
        f"--tsig-secret-file={TSIG_DIR}/secret",
        f"--uid={uid}",
        f"--gid={uid}",
    ]


def seed_configmap(source: str) -> dict[str, Any]:
    return agent_script.configmap(_meta(SEED), SEED_SCRIPT, source)


def daemonset(dns: DnsConfig, seed_source: str, config_text: str) -> dict[str, Any]:
    """karmada-dns: one Knot per hub server. `config_text`: the ConfigMap's content, so a new configuration
    rolls the pods (one server at a time: the other two keep answering)."""
    import hashlib

    zone = dns.domain
    seed = agent_script.container(
        "seed", SEED_SCRIPT, seed_args(dns), {"requests": {"cpu": "10m", "memory": "32Mi"},
                                              "limits": {"memory": "128Mi"}},
        env=[{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        mounts=[{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                {"name": "tsig", "mountPath": TSIG_DIR, "readOnly": True},
                {"name": "snapshot", "mountPath": SNAPSHOT_DIR, "readOnly": True},
                {"name": "state", "mountPath": STORAGE},
                {"name": "run", "mountPath": RUN_DIR}])
    # root, to write the server's state directory and hand it to knotd's user; nothing else
    seed["securityContext"] = {**container_security_context(), "runAsNonRoot": False, "runAsUser": 0,
                               "runAsGroup": 0, "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE"]}}
    probe_cmd = (f"kdig @$POD_IP -p 53 +tcp +norecurse +time=2 +retry=0 {zone} SOA | "
                 "grep -q 'status: NOERROR' && kdig @$POD_IP -p 53 +tcp +norecurse +time=2 +retry=0 "
                 f"{zone} SOA | grep -qi 'flags: qr aa'")
    knot = {
        "name": NAME,
        "image": KNOT_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["knotd"],
        "args": [f"--config={RUN_DIR}/knot.conf"],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                  {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}],
        # ready = it answers SOA for the zone authoritatively (it loads the zone before it answers at all)
        "readinessProbe": {"exec": {"command": ["sh", "-c", probe_cmd]}, "periodSeconds": 10, "timeoutSeconds": 5,
                           "failureThreshold": 2},
        "livenessProbe": {"tcpSocket": {"port": 53}, "initialDelaySeconds": 30, "periodSeconds": 20,
                          "timeoutSeconds": 5, "failureThreshold": 3},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        # root only until it has bound port 53 (server.user: knot:knot)
        "securityContext": {**container_security_context(), "runAsNonRoot": False, "runAsUser": 0, "runAsGroup": 0,
                            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SETUID", "SETGID"]}},
        "volumeMounts": [{"name": "tsig", "mountPath": TSIG_DIR, "readOnly": True},
                         {"name": "state", "mountPath": STORAGE},
                         {"name": "run", "mountPath": RUN_DIR}],
    }
    template = agent_script.pod_template(
        _LABELS, seed_source, [knot],
        [agent_script.volume(SEED),
         {"name": "config", "configMap": {"name": CONFIGMAP}},
         {"name": "tsig", "secret": {"secretName": TSIG_SECRET, "defaultMode": 0o400}},
         {"name": "snapshot", "configMap": {"name": SNAPSHOT_CONFIGMAP, "optional": True}},
         {"name": "state", "hostPath": {"path": STATE_HOST_PATH, "type": "DirectoryOrCreate"}},
         {"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}],
        init_containers=[seed])
    spec = template["spec"]
    spec["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    spec.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet", priorityClassName=PRIORITY_CLASS,
                tolerations=[{"operator": "Exists"}], terminationGracePeriodSeconds=10)
    template["metadata"]["annotations"]["karmada-hub.io/config-sha256"] = hashlib.sha256(
        config_text.encode()).hexdigest()
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(NAME),
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                 "revisionHistoryLimit": 3, "template": template},
    }


def snapshot_rbac(controller_namespace: str, controller_sa: str) -> list[dict[str, Any]]:
    """karmada-dns: the failover controller may read and write the snapshot ConfigMap and nothing else here
    (create cannot be limited by name; the namespace holds no other ConfigMap anyone may edit)."""
    name = "traffic-failover-snapshot"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(name),
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [SNAPSHOT_CONFIGMAP],
                    "verbs": ["get", "update"]},
                   {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(name),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": controller_sa, "namespace": controller_namespace}]},
    ]


# --------------------------------------------------------------------------------------- controller


def controller_args(dns: DnsConfig, primaries: Sequence[str]) -> list[str]:
    """The failover controller's flags for mode self-hosted: where to write (every hub server's private
    address), whom to watch (and the secondaries), its key, the zone, and where the snapshot goes."""
    out = ["--dns-mode=self-hosted", f"--zone-config={ZONE_DIR}/zone.json",
           f"--tsig-name-file={ZONE_DIR}/tsig/name", f"--tsig-secret-file={ZONE_DIR}/tsig/secret",
           f"--snapshot-namespace={NAMESPACE}", f"--snapshot-configmap={SNAPSHOT_CONFIGMAP}"]
    out += [f"--nameserver={p}:53" for p in primaries]
    out += [f"--secondary={ip}:53" for _, ip in secondary_nameservers(dns)]
    return out


# ---------------------------------------------------------------------------------- parent zone


def delegation_records(dns: DnsConfig, hub: HubConfig, hub_ips: Sequence[Any]) -> list[dict[str, Any]]:
    """pulumi_hcloud `ZoneRrset` args in the parent zone: the NS set of dns.domain, and an A record for every
    nameserver name (`hub_ips`: the hub servers' Primary IPs, in server order, Outputs in the program)."""
    sh = dns.self_hosted
    assert sh is not None
    parent = sh.parent_zone
    labels = {DELEGATION_LABEL: "delegation"}

    def rel(name: str) -> str:
        return name[: -len(parent) - 1]

    records = [{"zone": parent, "name": _relative(dns), "type": "NS", "ttl": sh.delegation_ttl, "labels": labels,
                "records": [n + "." for n in ns_names(dns, hub)]}]
    for (name, _node), ip in zip(hub_nameservers(dns, hub), hub_ips, strict=True):
        records.append({"zone": parent, "name": rel(name), "type": "A", "ttl": sh.delegation_ttl, "labels": labels,
                        "records": [ip]})
    for name, ip in secondary_nameservers(dns):
        records.append({"zone": parent, "name": rel(name), "type": "A", "ttl": sh.delegation_ttl, "labels": labels,
                        "records": [ip]})
    return records
