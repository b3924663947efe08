"""The rendered plans of one fleet as the API servers will hold them, for the contract checks.

A fleet is every plan that writes to the same API servers: dev alone, or prod-hub with its region stacks (each
planned against prod-hub's outputs). Objects are grouped by API server (`host`, `karmada`, `member-<c>`), pods
are read from every workload's template, and each container knows its contract (`all_contracts()`) and how to
answer a contract's questions (`ContainerView`: flag values, env, the text of a mounted file, the fleet's
Clusters). `mutated()` returns a deep copy with one edit, which is how every check shows it can fail.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.karmada import contract as karmada_contract
from components.kube.contract import Contract
from components.operations.contract import all_contracts
from hubctl.mocks import _numeric_id, unwrap
from hubctl.plan import Plan, k8s_target

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job")


@dataclass
class Obj:
    stack: str
    api: str
    body: dict[str, Any]
    made_by: str = ""
    """Empty for a Pulumi resource; else who writes the object at apply or run time (`run_time_objects`)."""

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        ns = self.body["metadata"].get("namespace")
        return None if ns is None else str(ns)


@dataclass
class Pod:
    owner: Obj
    spec: dict[str, Any]
    labels: dict[str, str]

    @property
    def api(self) -> str:
        return self.owner.api

    @property
    def namespace(self) -> str:
        return self.owner.namespace or "default"

    def containers(self) -> list[tuple[dict[str, Any], bool]]:
        return [(c, True) for c in self.spec.get("initContainers") or []] + [
            (c, False) for c in self.spec.get("containers") or []]


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec") or {}
    if obj["kind"] == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]
    if obj["kind"] in WORKLOAD_KINDS:
        return spec["template"]
    return None


def split_args(args: Iterable[str]) -> tuple[dict[str, str], list[str]]:
    """`--name=value` flags (last wins, bare `--x` is "true") and the positional arguments."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    for arg in args:
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            flags[name] = value if "=" in arg else "true"
        else:
            positional.append(arg)
    return flags, positional


def secret_text(obj: Mapping[str, Any], key: str) -> str | None:
    """A Secret's or ConfigMap's value for `key`, decoded (stringData/data as plain text, Secret data base64)."""
    if key in (obj.get("stringData") or {}):
        return str(obj["stringData"][key])
    data = obj.get("data") or {}
    if key not in data:
        return None
    value = str(data[key])
    if obj["kind"] == "Secret":
        try:
            return base64.b64decode(value).decode()
        except (ValueError, UnicodeDecodeError):
            return value
    return value


def secret_keys(obj: Mapping[str, Any]) -> set[str]:
    return set(obj.get("stringData") or {}) | set(obj.get("data") or {})


@dataclass
class Fleet:
    name: str
    objects: list[Obj]
    hcloud: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(stack, type, inputs) of every Hetzner resource (DNS records, load balancers, servers)."""
    joins: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(stack, inputs) of every PullJoin (components/fleet/pull_join.py): what it writes at apply time."""

    @classmethod
    def from_plans(cls, name: str, plans: Mapping[str, Plan]) -> Fleet:
        objects, hcloud = [], []
        joins: list[tuple[str, dict[str, Any]]] = []
        for stack, plan in plans.items():
            for record in plan.records:
                if record.type.startswith("kubernetes:") and record.custom and not record.options.get("read"):
                    body = {k: v for k, v in unwrap(record.inputs).items() if not k.startswith("__")}
                    objects.append(Obj(stack, k8s_target(record.provider) or "unknown", body))
                elif record.type.startswith("hcloud:") and record.custom:
                    state = unwrap(record.outputs) if isinstance(record.outputs, dict) else {}
                    # the offline plan's id of a resource (hubctl.mocks: stable per type and name)
                    ident = {"id": _numeric_id(f"{record.type}::{record.name}")}
                    hcloud.append((stack, record.type, {**ident, **state, **unwrap(record.inputs)}))
                elif record.type == "pulumi-python:dynamic:Resource" and record.custom:
                    inputs = unwrap(record.inputs)
                    if set(inputs) >= PULL_JOIN_INPUTS:
                        joins.append((stack, inputs))
        fleet = cls(name, objects, hcloud, joins)
        fleet.objects += run_time_objects(fleet, joins)
        return fleet

    def mutated(self, edit: Callable[[Fleet], None], rejoin: bool = True) -> Fleet:
        """A deep copy with one edit. With `rejoin` the edit is to the plan, and the objects written at run time
        are derived again from the edited plan (what PullJoin and the join would then write); without it, the
        edit may change those objects themselves."""
        twin = Fleet(self.name, copy.deepcopy(self.objects), copy.deepcopy(self.hcloud), copy.deepcopy(self.joins))
        if rejoin:
            twin.objects = [o for o in twin.objects if not o.made_by]
        edit(twin)
        if rejoin:
            twin.objects += run_time_objects(twin, twin.joins)
        return twin

    # ------------------------------------------------------------------------------ lookups

    def where(self, api: str | None = None, kind: str | None = None, name: str | None = None,
              namespace: str | None = None) -> list[Obj]:
        return [o for o in self.objects if (api is None or o.api == api) and (kind is None or o.kind == kind)
                and (name is None or o.name == name) and (namespace is None or o.namespace == namespace)]

    def one(self, api: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        found = self.where(api, kind, name, namespace)
        assert len(found) == 1, f"{api} {kind} {namespace}/{name}: {len(found)} objects"
        return found[0]

    def pods(self) -> list[Pod]:
        out = []
        for obj in self.objects:
            template = pod_template(obj.body)
            if template is not None:
                out.append(Pod(obj, template["spec"], dict((template.get("metadata") or {}).get("labels") or {})))
        return out

    def containers(self) -> list[Container]:
        return [Container(self, pod, c, init) for pod in self.pods() for c, init in pod.containers()]

    def clusters(self) -> list[tuple[str, str]]:
        """Every Cluster that will exist: the plan's (Push) and the ones Pull agents create at start."""
        made = [(o.name, str(o.body["spec"]["syncMode"])) for o in self.where("karmada", "Cluster")]
        pulled = [(c.flags["cluster-name"], "Pull") for c in self.containers()
                  if c.contract is not None and c.contract.key == karmada_contract.AGENT.key]
        return sorted(set(made) | set(pulled))

    def hcloud_of(self, typ: str) -> list[dict[str, Any]]:
        return [inputs for _, t, inputs in self.hcloud if t == typ]

    def addresses_of(self, host: str) -> list[str]:
        """`host` itself if it is an address, else the values of the plan's A records for it."""
        try:
            ipaddress.ip_address(host)
            return [host]
        except ValueError:
            at_hetzner = [str(r["value"]) for rr in self.hcloud_of("hcloud:index/zoneRrset:ZoneRrset")
                          if rr.get("type") == "A" and f"{rr['name']}.{rr['zone']}" == host
                          for r in rr.get("records") or []]
            return at_hetzner + self.self_hosted_addresses(host)

    def self_hosted_addresses(self, host: str) -> list[str]:
        """dns.mode self-hosted: the static A records of the fleet's own zone (the hub's nameservers serve them from
        the `knot` ConfigMap's zone.json, nameserver_docs.zone_config)."""
        import json

        from components.traffic import nameserver_docs

        out: list[str] = []
        for o in self.where("host", "ConfigMap"):
            if o.name != nameserver_docs.CONFIGMAP or o.body["metadata"].get("namespace") != nameserver_docs.NAMESPACE:
                continue
            zone = json.loads(o.body["data"]["zone.json"])
            out += [str(v) for s in zone.get("static") or [] if s["type"] == "A" and s["name"].rstrip(".") == host
                    for v in s["values"]]
        return out

    def node_port_service(self, host: str, port: int) -> tuple[Mapping[str, Any], int] | None:
        """The host Service whose NodePort `port` is what `host` reaches: every address of `host` is a hub server's
        Primary IP, whose Cloud Firewall lets `port` in from somewhere. Returns (Service, its service port)."""
        ips = self.addresses_of(host)
        primaries = {str(p["ipAddress"]): str(p["id"]) for p in self.hcloud_of("hcloud:index/primaryIp:PrimaryIp")}
        firewalls = {str(f["id"]): f for f in self.hcloud_of("hcloud:index/firewall:Firewall")}
        servers = self.hcloud_of("hcloud:index/server:Server")
        if not ips:
            return None
        for ip in ips:
            server = next((s for s in servers if ip in primaries and any(
                str(int(float(n.get("ipv4") or 0))) == primaries[ip] for n in s.get("publicNets") or [])), None)
            if server is None:
                return None
            rules = [r for fid in server.get("firewallIds") or [] for r in
                     (firewalls.get(str(int(float(fid)))) or {}).get("rules") or []]
            if not any(r.get("direction") == "in" and r.get("protocol") == "tcp" and str(r.get("port")) == str(port)
                       and r.get("sourceIps") for r in rules):
                return None
        for svc in self.where("host", "Service"):
            spec = svc.body["spec"]
            if spec.get("type") not in ("NodePort", "LoadBalancer"):
                continue
            for entry in spec.get("ports") or []:
                if entry.get("nodePort") is not None and int(entry["nodePort"]) == port:
                    return svc.body, int(entry["port"])
        return None

    def public_endpoint(self, host: str, port: int) -> bool:
        """Does a DNS record or load balancer address of the plan take `host:port`?"""
        lbs = self.hcloud_of("hcloud:index/loadBalancer:LoadBalancer")
        services = self.hcloud_of("hcloud:index/loadBalancerService:LoadBalancerService")
        addresses = {str(lb.get("ipv4")): str(lb.get("id", "")) for lb in lbs}
        ips = self.addresses_of(host)
        for ip in ips:
            if ip in addresses and any(int(s.get("listenPort", 0)) == port and
                                       str(s.get("loadBalancerId")) == addresses[ip] for s in services):
                return True
        return False


@dataclass
class Container:
    fleet: Fleet
    pod: Pod
    body: dict[str, Any]
    init: bool

    @property
    def name(self) -> str:
        return str(self.body["name"])

    @property
    def where(self) -> str:
        o = self.pod.owner
        return f"{o.stack}: {o.api} {o.kind} {o.namespace}/{o.name} container {self.name}"

    @property
    def args(self) -> list[str]:
        own = [str(a) for a in self.body.get("args") or []]
        return [*self._config_file_args(own), *own]

    def _config_file_args(self, own: list[str]) -> list[str]:
        """etcd started with only `--config-file` runs the settings its pod's prepare step writes into that file:
        the init container's flags after `--` (agents/etcd_member_prepare.py), so those are what it reads."""
        own_flags = split_args(own)[0]
        if self.init or set(own_flags) != {"config-file"}:
            return []
        for init in self.pod.spec.get("initContainers") or []:
            args = [str(a) for a in init.get("args") or []]
            if "--" in args and f"--config-file={own_flags['config-file']}" in args[: args.index("--")]:
                return args[args.index("--") + 1:]
        return []

    @property
    def flags(self) -> dict[str, str]:
        return split_args(self.args)[0]

    @property
    def positional(self) -> list[str]:
        return split_args(self.args)[1]

    @property
    def contract(self) -> Contract | None:
        found = [c for c in all_contracts() if c.match.matches(self.body)]
        return found[0] if len(found) == 1 else None

    def contracts(self) -> list[Contract]:
        return [c for c in all_contracts() if c.match.matches(self.body)]

    def env_names(self) -> set[str]:
        names = {str(e["name"]) for e in self.body.get("env") or []}
        for source in self.body.get("envFrom") or []:
            ref = source.get("secretRef") or source.get("configMapRef") or {}
            kind = "Secret" if "secretRef" in source else "ConfigMap"
            for obj in self.fleet.where(self.pod.api, kind, ref.get("name"), self.pod.namespace):
                names |= {source.get("prefix", "") + k for k in secret_keys(obj.body)}
        return names

    def view(self) -> ContainerView:
        return ContainerView(self)

    # ------------------------------------------------------------------------------ files

    def mount_for(self, path: str) -> tuple[dict[str, Any], dict[str, Any], str] | None:
        """(mount, volume, path inside the volume) of the mount that holds `path` (longest mountPath wins)."""
        best = None
        for mount in self.body.get("volumeMounts") or []:
            root = str(mount["mountPath"]).rstrip("/")
            inside = path == root or path.startswith(root + "/")
            if inside and (best is None or len(root) > len(str(best["mountPath"]).rstrip("/"))):
                best = mount
        if best is None:
            return None
        volume = next((v for v in self.pod.spec.get("volumes") or [] if v["name"] == best["name"]), None)
        claims = (self.pod.owner.body.get("spec") or {}).get("volumeClaimTemplates") or []
        if volume is None and any(t["metadata"]["name"] == best["name"] for t in claims):
            volume = {"name": best["name"], "persistentVolumeClaim": {"claimName": best["name"]}}
        if volume is None:
            return None
        inner = path[len(str(best["mountPath"]).rstrip("/")):].lstrip("/")
        if best.get("subPath"):
            inner = str(best["subPath"]) + ("/" + inner if inner else "")
        return best, volume, inner

    def volume_source(self, volume: Mapping[str, Any]) -> Obj | None:
        for kind, key, field_name in (("Secret", "secret", "secretName"), ("ConfigMap", "configMap", "name")):
            if key in volume:
                found = self.fleet.where(self.pod.api, kind, volume[key][field_name], self.pod.namespace)
                return found[0] if found else None
        return None

    def volume_key(self, volume: Mapping[str, Any], inner: str) -> str | None:
        """The Secret/ConfigMap key a file inside a projected volume comes from (None: no such file)."""
        source = volume.get("secret") or volume.get("configMap") or {}
        items = source.get("items")
        if items is not None:
            return next((str(i["key"]) for i in items if i["path"] == inner), None)
        return inner

    def file_text(self, path: str) -> str | None:
        found = self.mount_for(path)
        if found is None:
            return None
        _, volume, inner = found
        obj = self.volume_source(volume)
        key = self.volume_key(volume, inner)
        if obj is None or key is None:
            return None
        return secret_text(obj.body, key)


@dataclass
class ContainerView:
    """kube/contract.View over one rendered container."""

    container: Container

    def flag(self, name: str | None) -> str | None:
        return None if name is None else self.container.flags.get(name)

    def env(self, name: str | None) -> str | None:
        for e in self.container.body.get("env") or []:
            if e["name"] == name:
                return str(e.get("value", ""))
        return None

    def file(self, path: str) -> str | None:
        return self.container.file_text(path)

    def api_secret(self, name: str | None, key: str) -> str | None:
        c = self.container
        found = c.fleet.where(c.pod.api, "Secret", name, c.pod.namespace) if name else []
        return secret_text(found[0].body, key) if found else None

    def clusters(self) -> Sequence[tuple[str, str]]:
        return self.container.fleet.clusters()

    def objects(self, api: str, kind: str) -> Sequence[Mapping[str, object]]:
        return [o.body for o in self.container.fleet.where(api, kind)]


# ------------------------------------------------------------------------------- written at run time

PULL_JOIN_INPUTS = {"cluster", "tokenId", "hubUrl", "hubCaPem"}
TOKEN_STAND_IN = "0" * 16
"""The secret half PullJoin makes at apply time (the same stand-in on both sides, as the real one is)."""


def _stand_in_certificate(subject: Sequence[tuple[str, str]]) -> tuple[bytes, bytes]:
    """A certificate with the subject the CSR asks for (kube-controller-manager's signer copies it), self-signed
    here: the checks read its subject only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    oids = {"O": NameOID.ORGANIZATION_NAME, "CN": NameOID.COMMON_NAME}
    name = x509.Name([x509.NameAttribute(oids[k], v) for k, v in subject])
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=30))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _opaque(name: str, namespace: str, data: Mapping[str, str], kind_type: str = "Opaque") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": kind_type, "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def run_time_objects(fleet: Fleet, joins: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Obj]:
    """What the API servers will hold that no stack applies, derived from the plan:

    - per PullJoin (apply time): the hub's `kube-system/bootstrap-token-<id>` and the member's bootstrap Secret,
      rendered by the same member_docs functions PullJoin calls, in the API of the member whose join Job names it;
    - per join Job (run time), once its bootstrap Secret exists: the kubeconfig Secret it writes, rendered by the
      script's own `kubeconfig()` with the hub URL and CA it reads there and a certificate for the subject its CSR
      asks for (agents/pull_join.py `csr_subject`).
    """
    from agents import pull_join as script
    from components.fleet import member_docs as docs

    out: list[Obj] = []
    for stack, inputs in joins:
        cluster, token_id = str(inputs["cluster"]), str(inputs["tokenId"])
        hub = docs.bootstrap_token_secret(token_id, TOKEN_STAND_IN, "2099-01-01T00:00:00Z")
        out.append(Obj(stack, "karmada", hub, made_by="PullJoin"))
        jobs = [c for c in fleet.containers() if c.pod.owner.kind == "Job" and c.contract is not None
                and c.contract.key == "pull-join" and c.flags.get("cluster-name") == cluster]
        member = docs.agent_bootstrap_secret(f"{token_id}.{TOKEN_STAND_IN}", str(inputs["hubUrl"]),
                                             str(inputs["hubCaPem"]))
        out.append(Obj(stack, jobs[0].pod.api if jobs else f"member-{cluster}", member, made_by="PullJoin"))
    for c in fleet.containers():
        if c.contract is None or c.contract.key != "pull-join" or c.pod.owner.kind != "Job":
            continue
        api, ns = c.pod.api, c.pod.namespace
        read = [o for o in [*fleet.objects, *out] if o.api == api and o.kind == "Secret" and o.namespace == ns
                and o.name == c.flags.get("bootstrap-secret")]
        if not read:
            continue
        server, ca = secret_text(read[0].body, "server"), secret_text(read[0].body, "ca.crt")
        cluster = c.flags.get("cluster-name", "")
        cert, key = _stand_in_certificate(script.csr_subject(cluster))
        text = script.kubeconfig(cluster, str(server), str(ca).encode(), cert, key)
        out.append(Obj(c.pod.owner.stack, api, _opaque(c.flags.get("kubeconfig-secret", ""), ns,
                                                       {script.KUBECONFIG_KEY: text}), made_by="pull-join"))
    return out
