"""The stack's configuration as frozen, validated models: the only place config is read.

`FleetConfig.load()` reads every `karmada-hub:*` key once, rejects unknown keys, validates all of it
and returns typed, immutable models. Any user mistake becomes one `ConfigError` whose message is a
single line naming the stack file, the key path and what is allowed, for example::

    stacks/Pulumi.dev.yaml: karmada-hub:hub.servers: must be an odd number >= 3 for etcd quorum (got 2)
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pulumi
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from components import versions

PROJECT = "karmada-hub"

NETWORK_ZONES: dict[str, str] = {
    "fsn1": "eu-central",
    "nbg1": "eu-central",
    "hel1": "eu-central",
    "ash": "us-east",
    "hil": "us-west",
    "sin": "ap-southeast",
}
"""Hetzner location -> network zone. A private network cannot span zones."""

DEPRECATED_SERVER_TYPES = frozenset(
    {"cx11", "cx21", "cx31", "cx41", "cx51", "cx22", "cx32", "cx42", "cx52",
     "cpx11", "cpx21", "cpx31", "cpx41", "cpx51"}
)
"""Hetzner removed these (CX Gen 2, CPX Gen 1) from the API at the end of 2025."""

LOAD_BALANCER_TYPES = ("lb11", "lb21", "lb31")
MAX_SPREAD_GROUP_SERVERS = 9
"""For the schema only: odd and in one spread placement group (Hetzner holds 10); operations/capacity.py refuses
more (components/hetzner/limits.py SPREAD_PLACEMENT_GROUP_MAX_SERVERS)."""
RESERVED_NAMESPACE = re.compile(r"^(karmada-system|karmada-cluster|karmada-es-.*|kube-.*)$")
"""Karmada ignores objects there: names.IsReservedNamespace (karmada-system, karmada-cluster, karmada-es-*) and the
controller-manager's default --skipped-propagating-namespaces=kube-.* (karmada v1.18.2 pkg/util/names/names.go,
pkg/detector/detector.go EventFilter, cmd/controller-manager/app/options/options.go)."""
WORLD = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
ClusterName = Annotated[str, Field(pattern=DNS_LABEL, max_length=48)]
Seconds = Annotated[float, Field(gt=0)]


class ConfigError(Exception):
    """A user mistake in stack configuration; `str()` is the one line to print."""


OFFLINE_PLACEHOLDER = "offline-placeholder-for-"
"""What the offline planner (hubctl/stackfile.py) puts where a stack file has a `secure:` value: it never has
the passphrase, so checks of a secret's content skip values that start with it."""
IDENTITY_KEY = "identityKey"
"""The region stack secret with its identity's private key (PEM), made by `hubctl region-key`."""


def _fail(kind: str, message: str, /, **ctx: Any) -> PydanticCustomError:
    """A one-line refusal of type `kind`; `ctx` fills `{names}` in `message` (any name, `kind` too) and `loc`/`loc_key`
    name the key when a model validator refuses a field."""
    return PydanticCustomError(kind, message, ctx)


def _network(value: Any, family: int | None = None) -> Any:
    """A CIDR, with a message that names the family the user wrote (an IPv6 typo is not "not IPv4")."""
    if isinstance(value, ipaddress.IPv4Network | ipaddress.IPv6Network):
        return value
    if not isinstance(value, str):
        shown = f"the number {value}" if isinstance(value, int | float) and not isinstance(value, bool) else (
            f"a {_yaml_kind(value)}")
        raise _fail("cidr", "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got {what})",
                    what=shown[:60])
    text = value.strip()
    written = 6 if ":" in text else 4
    if family == 4 and written == 6:
        raise _fail("cidr", "'{v}' is IPv6; Hetzner private networks are IPv4 (like 10.0.0.0/16)", v=text[:60])
    cls = ipaddress.IPv6Network if written == 6 else ipaddress.IPv4Network
    example = "2001:db8::/48" if written == 6 else "198.51.100.0/24"
    try:
        return cls(text, strict=True)
    except ValueError as exc:
        try:
            net = cls(text, strict=False)
        except ValueError:
            raise _fail("cidr", "'{v}' is not a valid IPv{f} network like {example} ({why})", v=text[:60], f=written,
                        example=example, why=str(exc)[:100]) from None
        raise _fail("cidr", "'{v}' has host bits set; did you mean {net}?", v=text[:60], net=str(net)) from None


def _yaml_kind(value: Any) -> str:
    """What YAML made of a value, in the words of a stack file (not Python's type names)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return "string" if isinstance(value, str) else type(value).__name__


Cidr = Annotated[ipaddress.IPv4Network | ipaddress.IPv6Network, BeforeValidator(_network)]
"""An IPv4 or IPv6 network."""
Cidr4 = Annotated[ipaddress.IPv4Network, BeforeValidator(lambda v: _network(v, 4))]
"""An IPv4 network (Hetzner private networks)."""

_NOT_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4", "2001:db8::/32"))
"""IANA special-purpose blocks (RFC 6890): private, shared, loopback, link-local, documentation, multicast, reserved."""
GLOBAL_V6 = ipaddress.ip_network("2000::/3")
"""IPv6 global unicast: everything the internet routes today."""
ADMIN_MAX_PUBLIC = {4: 2**24, 6: 2**96}
"""Most public addresses an admin CIDR list may admit without allowWorld: a /8 of IPv4, a /32 of IPv6."""


def public_addresses(nets: list[Any], version: int) -> int:
    """How many publicly routable addresses `nets` admit together (overlaps counted once)."""
    same = [n for n in nets if n.version == version]
    total = 0
    for net in ipaddress.collapse_addresses(same):
        if version == 6:
            if not (net.subnet_of(GLOBAL_V6) or GLOBAL_V6.subnet_of(net)):
                continue
            net = net if net.subnet_of(GLOBAL_V6) else GLOBAL_V6
        count = net.num_addresses
        for block in _NOT_PUBLIC:
            if block.version != version:
                continue
            if block.subnet_of(net):
                count -= block.num_addresses
            elif net.subnet_of(block):
                count = 0
                break
        total += count
    return total


def _alias(name: str) -> str:
    """snake_case -> camelCase, keeping `k3s` as people write it (`k3sVersion`, not `k3SVersion`)."""
    return to_camel(name).replace("k3S", "k3s")


class Model(BaseModel):
    """Base for every config model: camelCase keys in YAML, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=_alias, populate_by_name=True, str_strip_whitespace=True,
        use_attribute_docstrings=True,
    )


# ---------------------------------------------------------------------------------------------- hub


class FirewallConfig(Model):
    ssh_cidrs: list[Cidr] = Field(min_length=1)
    """Who may reach the servers' SSH port."""
    api_cidrs: list[Cidr] = Field(min_length=1)
    """Who may reach 6443 (k3s) and 32443 (karmada-apiserver's NodePort) on the servers' public
    addresses: admins, CI, region stacks, and the machine that runs `pulumi up` (its readiness gates dial them)."""
    karmada_cidrs: list[Cidr] = []
    """Who else may reach the karmada-apiserver (only it, not k3s or SSH) on the servers' public addresses:
    the egress addresses of Pull members' nodes (their agents dial the hub)."""
    allow_world: bool = False
    """Must be true for 0.0.0.0/0 or ::/0 to be accepted in any list."""

    @model_validator(mode="after")
    def _no_world_unless_explicit(self) -> FirewallConfig:
        if self.allow_world:
            return self
        for field in ("ssh_cidrs", "api_cidrs", "karmada_cidrs"):
            for net in getattr(self, field):
                if net in WORLD:
                    raise _fail(
                        "world_open",
                        "{net} opens the port to the whole internet; list {who} or set hub.firewall.allowWorld: true",
                        net=str(net), loc_key=_alias(field),
                        who="the Pull members' egress addresses" if field == "karmada_cidrs" else "your admin CIDRs",
                    )
        for field in ("ssh_cidrs", "api_cidrs", "karmada_cidrs"):
            nets = getattr(self, field)
            for version, world in ((4, "IPv4"), (6, "IPv6")):
                admitted = public_addresses(nets, version)
                if admitted > ADMIN_MAX_PUBLIC[version]:
                    listed = ", ".join(str(n) for n in nets if n.version == version)
                    share = admitted / public_addresses([WORLD[0 if version == 4 else 1]], version)
                    raise _fail(
                        "world_cover",
                        "{field} {listed} admit {share} of the public {world} internet; an admin list may admit at "
                        "most a {limit}: list your admin networks or set hub.firewall.allowWorld: true",
                        field=_alias(field), listed=listed[:120], share=f"{share:.0%}" if share >= 0.01 else
                        f"{share:.2%}", world=world, limit="/8" if version == 4 else "/32",
                    )
        return self


class LoadBalancerConfig(Model):
    type: Literal["lb11", "lb21", "lb31"] = "lb11"
    """Hetzner load balancer type of the hub's API load balancer."""
    location: str | None = None
    """Defaults to the first hub location."""
    world_reachable: bool = False
    """Give the API load balancer its public interface, serving 6443 (k3s) and 5443 (karmada-apiserver) to the
    whole internet: a Hetzner load balancer has no firewall, so `firewall.apiCidrs` does not apply to it.
    Off (default): the load balancer is private (server joins, in-network clients) and the APIs are reached on
    the servers' public addresses behind the Cloud Firewall."""


class NetworkConfig(Model):
    cidr: Cidr4 = ipaddress.IPv4Network("10.0.0.0/16")
    """The hub's private Hetzner network (an RFC 1918 range)."""
    subnet: Cidr4 = ipaddress.IPv4Network("10.0.1.0/24")
    """The subnet the hub's servers and its load balancer get their private addresses from; inside `cidr`."""

    @model_validator(mode="after")
    def _subnet_inside(self) -> NetworkConfig:
        if not self.subnet.subnet_of(self.cidr):
            raise _fail("subnet", "subnet {subnet} is not inside the network {cidr}", subnet=str(self.subnet),
                        cidr=str(self.cidr))
        if not self.cidr.is_private:
            raise _fail("private", "network {cidr} must be a private (RFC 1918) range", cidr=str(self.cidr))
        for what, net in K3S_CLUSTER_NETWORKS.items():
            if self.cidr.overlaps(net):
                raise _fail("k3s_cidr", "{cidr} overlaps k3s's {what} network {net}: a node address there is "
                            "routed into the cluster, not to the node; use another private range like 10.0.0.0/16",
                            cidr=str(self.cidr), what=what, net=str(net), loc_key="cidr")
        return self


K3S_CLUSTER_NETWORKS = {"pod": ipaddress.IPv4Network("10.42.0.0/16"),
                        "service": ipaddress.IPv4Network("10.43.0.0/16")}
"""k3s's `cluster-cidr` and `service-cidr` as components/hetzner/cloud_init.py renders them (POD_CIDR,
SERVICE_CIDR; a test keeps the two in step)."""


class SshKeyConfig(Model):
    name: DnsLabel
    """Name of the key in Hetzner (prefixed with the hub name)."""
    public_key: str = Field(pattern=r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$")
    """The OpenSSH public key line (`ssh-ed25519 AAAA… comment`), never a private key."""

    @field_validator("public_key")
    @classmethod
    def _whole_key(cls, v: str) -> str:
        """The base64 blob is the key itself: SSH strings (a length, then bytes) that start with the key's type and
        end exactly at its end. A truncated or mangled paste fails here, not at the first `pulumi up`."""
        import base64
        import binascii

        kind, blob = v.split()[:2]
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        parts = []
        while len(raw) >= 4:
            size = int.from_bytes(raw[:4], "big")
            if size > len(raw) - 4:
                break
            parts.append(raw[4:4 + size])
            raw = raw[4 + size:]
        whole = bool(parts) and not raw and parts[0] == kind.encode()
        if whole and kind == "ssh-ed25519":  # the type, then the 32-byte key (RFC 8709)
            whole = len(parts) == 2 and len(parts[1]) == 32
        elif whole and kind == "ssh-rsa":  # the type, e, n (RFC 4253 6.6)
            whole = len(parts) == 3 and all(parts[1:])
        elif whole:  # ecdsa-sha2-<curve>: the type, the curve's name, the point (RFC 5656 3.1)
            whole = len(parts) == 3 and parts[1] == kind.encode().rsplit(b"-", 1)[1] and bool(parts[2])
        if not whole:
            raise _fail("ssh_key", "the {kind} key is cut short or mangled (its base64 does not hold a whole {kind} "
                        "key); paste the whole line `ssh-keygen -y -f <keyfile>` prints", kind=kind)
        return v

    @field_validator("public_key", mode="before")
    @classmethod
    def _not_a_private_key(cls, v: Any) -> Any:
        if isinstance(v, str) and ("PRIVATE KEY" in v or v.lstrip().startswith("-----BEGIN")):
            raise _fail("private_key", "this is a private key (not shown); paste the public key instead, e.g. the "
                        "output of `ssh-keygen -y -f <keyfile>`, and treat the key as leaked if it was committed")
        return v


class HubConfig(Model):
    name: DnsLabel = "karmada-hub"
    """Prefix of every Hetzner resource of the hub (servers are `<name>-cp-<n>`)."""
    locations: list[str] = Field(default=["fsn1", "nbg1", "hel1"], min_length=1)
    """Hetzner locations the servers go to round-robin; all in one network zone."""
    server_type: str = "cx33"
    """The smallest current type that holds the control plane with k3s (cx23: 4 GB cannot; docs/fleet-scale.md)."""
    servers: int = Field(default=3, json_schema_extra={"minimum": 3, "maximum": MAX_SPREAD_GROUP_SERVERS,
                                                        "not": {"multipleOf": 2}})
    """Number of k3s servers (embedded etcd): odd for quorum, at most 9 (one spread placement group holds 10)."""
    image: str = Field(default="ubuntu-24.04", pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")
    """Hetzner image the servers boot (cloud-init then installs the pinned k3s)."""
    k3s_version: str = versions.K3S_VERSION
    """k3s release tag installed on the servers; must be inside Karmada's supported host range."""
    k3s_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """Optional pin of the k3s binary's sha256; the release's own sha256sum file is checked either way."""
    api_dns_name: str | None = Field(default=None, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$")
    """DNS name of the hub API: used in kubeconfigs, a SAN of the k3s and karmada-apiserver certificates, and an A
    record listing every server's public address when it is under `dns.domain`. Unset: kubeconfigs and members
    use the first server's address, and every server address becomes a certificate SAN (adding a server then
    replaces the karmada-apiserver certificate)."""
    ssh_keys: list[SshKeyConfig] = Field(min_length=1)
    """SSH keys put on every server."""
    firewall: FirewallConfig
    """Who may reach the servers' public ports."""
    load_balancer: LoadBalancerConfig = LoadBalancerConfig()
    """The hub's API load balancer."""
    network: NetworkConfig = NetworkConfig()
    """The hub's private network."""
    protect: bool = False
    """Protect servers and volumes from `pulumi destroy` (set in production)."""

    @field_validator("servers")
    @classmethod
    def _odd_quorum(cls, v: int) -> int:
        if v < 3 or v % 2 == 0:
            raise _fail("quorum", "must be an odd number >= 3 for etcd quorum (got {v})", v=v)
        return v

    @field_validator("locations")
    @classmethod
    def _known_locations(cls, v: list[str]) -> list[str]:
        for loc in v:
            if loc not in NETWORK_ZONES:
                raise _fail("location", "unknown Hetzner location '{location}' (one of: {known})", location=loc,
                            known=", ".join(NETWORK_ZONES))
        zones = {NETWORK_ZONES[loc] for loc in v}
        if len(zones) > 1:
            raise _fail("zones", "locations {locs} span network zones {zones}; one private network cannot span zones",
                        locs=", ".join(v), zones=", ".join(sorted(zones)))
        return v

    @field_validator("server_type")
    @classmethod
    def _current_server_type(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z]{2,4}[0-9]{2,3}", v):
            hint = f"; write {v.lower()}" if re.fullmatch(r"[a-z]{2,4}[0-9]{2,3}", v.lower()) else ""
            raise _fail("server_type", "'{v}' is not a Hetzner server type name like cx23, cpx22, cax11 or ccx13{h}",
                        v=v[:40], h=hint)
        if v in DEPRECATED_SERVER_TYPES:
            raise _fail("deprecated", "server type '{v}' is deprecated by Hetzner; use a current type such as cx23, "
                        "cx33 or cpx22", v=v)
        return v

    @field_validator("k3s_version")
    @classmethod
    def _k3s_version(cls, v: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+\+k3s\d+$", v):
            raise _fail("k3s", "must be a k3s release tag like v1.34.1+k3s1 (got '{v}')", v=v)
        return v

    @model_validator(mode="after")
    def _survives_a_location(self) -> HubConfig:
        """Servers go round-robin over the locations: the largest share in one location must leave a quorum
        behind when that location fails, wherever the network zone has locations enough to spread over."""
        counts: dict[str, int] = {}
        width = len(self.locations)
        for j, loc in enumerate(self.locations):  # server i goes to locations[i % width]
            counts[loc] = counts.get(loc, 0) + self.servers // width + (1 if j < self.servers % width else 0)
        zone_locations = [loc for loc, zone in NETWORK_ZONES.items() if zone == self.network_zone]
        worst = max(counts, key=lambda loc: counts[loc])
        left = self.servers - counts[worst]
        if left > self.servers // 2 or len(zone_locations) < 3:
            return self
        raise _fail("spread_quorum", "{n} servers over {locs} put {k} in {worst}: losing {worst} leaves {left} of "
                    "{n}, no etcd quorum; spread them over three locations (locations: [{three}])", n=self.servers,
                    locs=", ".join(dict.fromkeys(self.locations)), k=counts[worst], worst=worst, left=left,
                    three=", ".join(zone_locations[:3]), loc_key="locations")

    @model_validator(mode="after")
    def _lb_location(self) -> HubConfig:
        loc = self.load_balancer.location
        if loc is not None and NETWORK_ZONES.get(loc) != self.network_zone:
            raise _fail("lb_location", "loadBalancer.location '{location}' is not in the hub's network zone {zone}",
                        location=loc, zone=self.network_zone)
        return self

    @property
    def network_zone(self) -> str:
        return NETWORK_ZONES[self.locations[0]]

    @property
    def lb_location(self) -> str:
        return self.load_balancer.location or self.locations[0]

    def server_location(self, index: int) -> str:
        """Servers go round-robin over the locations, so 3 servers land in 3 locations."""
        return self.locations[index % len(self.locations)]

    @property
    def kubernetes_minor(self) -> str:
        return versions.kubernetes_minor(self.k3s_version)


# ------------------------------------------------------------------------------------------ karmada


_HA = {"minimum": 2}


class ReplicaConfig(Model):
    apiserver: int | None = Field(default=None, json_schema_extra=_HA)
    """karmada-apiserver replicas: unset means one per hub server, and a set value must equal `hub.servers` (each
    server's public address serves its local replica: the NodePort keeps the client address, externalTrafficPolicy
    Local). Stacks without a hub run none (2 is assumed)."""
    aggregated_apiserver: int = Field(default=2, json_schema_extra=_HA)
    """karmada-aggregated-apiserver replicas (>= 2, at most hub.servers)."""
    kube_controller_manager: int = Field(default=2, json_schema_extra=_HA)
    """kube-controller-manager replicas for the Karmada API (>= 2, at most hub.servers)."""
    scheduler: int = Field(default=2, json_schema_extra=_HA)
    """karmada-scheduler replicas (>= 2, leader-elected, at most hub.servers)."""
    controller_manager: int = Field(default=2, json_schema_extra=_HA)
    """karmada-controller-manager replicas (>= 2, leader-elected, at most hub.servers)."""
    webhook: int = Field(default=2, json_schema_extra=_HA)
    """karmada-webhook replicas (>= 2, at most hub.servers)."""
    descheduler: int = Field(default=2, json_schema_extra=_HA)
    """karmada-descheduler replicas (>= 2, leader-elected, at most hub.servers)."""

    @field_validator("*")
    @classmethod
    def _ha(cls, v: int | None) -> int | None:
        if v is not None and v < 2:
            raise _fail("ha", "must be >= 2 so one replica can fail or roll (got {v})", v=v)
        return v


class EtcdBackupConfig(Model):
    """Scheduled snapshots of Karmada's etcd to S3-compatible object storage (e.g. Hetzner Object Storage)."""

    schedule: str = "17 */6 * * *"
    """Cron schedule (UTC) of the snapshot job."""
    endpoint: str = Field(pattern=r"^https://[a-z0-9.-]+(:\d+)?$")
    """Object storage endpoint, e.g. https://fsn1.your-objectstorage.com (path-style requests)."""
    region: str = Field(pattern=r"^[a-z0-9-]+$")
    """SigV4 signing region; for Hetzner the location, e.g. fsn1."""
    bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    """Bucket the snapshots are uploaded to (S3 bucket naming rules)."""
    prefix: str = Field(default="karmada-etcd", pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
    """Object key prefix of the snapshots inside the bucket."""
    retain: int | None = Field(default=None, ge=1, le=1000)
    """Unset (recommended): the hub only writes; the bucket's lifecycle rule expires old snapshots and incomplete
    uploads, and the hub's key may not delete (docs/runbooks/restore-etcd.md). Set: the uploader keeps this many
    snapshots per stack and deletes older ones, so its key must be allowed to delete."""
    access_key_config_key: str = Field(default="etcdBackupAccessKey", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret holding the object-storage access key."""
    secret_key_config_key: str = Field(default="etcdBackupSecretKey", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret holding the object-storage secret key."""
    encryption_key_config_key: str = Field(default="etcdBackupEncryptionKey", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret every snapshot is encrypted with before it leaves the cluster (AES-256-GCM, format KHB1 in
    agents/etcd_backup_upload.py). Keep it outside the hub: no snapshot opens without it."""

    @field_validator("schedule")
    @classmethod
    def _cron(cls, v: str) -> str:
        return _five_field_cron(v)


def _five_field_cron(v: str) -> str:
    fields = v.split()
    if len(fields) != 5 or not all(re.fullmatch(r"[0-9*/,-]+", f) for f in fields):
        raise _fail("cron", "must be a 5-field cron expression like '17 */6 * * *'")
    return v


ETCD_MAX_QUOTA = 8 * 2**30
"""etcd's suggested maximum backend size (`MaxQuotaBytes`, etcd v3.6.6 server/storage/quota.go)."""


class EtcdConfig(Model):
    replicas: int = Field(default=3, json_schema_extra={"minimum": 3, "not": {"multipleOf": 2}})
    """Karmada etcd members: odd for quorum, at most hub.servers (required anti-affinity)."""
    storage_class: str = "local-path"
    """StorageClass of the etcd PersistentVolumeClaims on the hub (k3s ships local-path)."""
    storage_size: str = Field(default="8Gi", pattern=r"^[1-9][0-9]*(Mi|Gi|Ti)$")
    """Size of each etcd member's volume."""
    backup: EtcdBackupConfig | None = None
    """Scheduled snapshots to S3-compatible object storage; unset: no backups."""
    quota_backend_size: str = Field(default="2Gi", pattern=r"^[1-9][0-9]*(Mi|Gi)$")
    """etcd `--quota-backend-bytes`: above it etcd raises the NOSPACE alarm and refuses writes. Rendered
    explicitly (etcd's default is 2 GiB); the monitoring alerts and the backup volume are sized from it."""
    defrag_schedule: str = "37 3 * * 0"
    """Cron schedule (UTC) of the defragmentation job (one member at a time, only when fragmented)."""

    @field_validator("replicas")
    @classmethod
    def _odd(cls, v: int) -> int:
        if v < 3 or v % 2 == 0:
            raise _fail("quorum", "must be an odd number >= 3 for etcd quorum (got {v})", v=v)
        return v

    @field_validator("defrag_schedule")
    @classmethod
    def _defrag_cron(cls, v: str) -> str:
        return _five_field_cron(v)

    @model_validator(mode="after")
    def _quota_fits(self) -> EtcdConfig:
        from components.kube.quantity import parse_quantity

        quota = parse_quantity(self.quota_backend_size)
        if quota > ETCD_MAX_QUOTA:
            raise _fail("etcd_quota", "quotaBackendSize {q} is above etcd's suggested maximum of 8Gi",
                        q=self.quota_backend_size, loc=("karmada", "etcd", "quotaBackendSize"))
        if parse_quantity(self.storage_size) < 2 * quota:
            raise _fail("etcd_quota", "storageSize {s} must hold twice quotaBackendSize {q} (defragmentation "
                        "rewrites the database file); raise storageSize or lower quotaBackendSize",
                        s=self.storage_size, q=self.quota_backend_size, loc=("karmada", "etcd", "storageSize"))
        return self

    @property
    def quota_backend_bytes(self) -> int:
        from components.kube.quantity import parse_quantity

        return int(parse_quantity(self.quota_backend_size))


class PkiConfig(Model):
    ca_validity_hours: int = Field(default=87600, ge=8760, le=175200)
    """Validity of the Karmada CAs, in hours."""
    leaf_validity_hours: int = Field(default=8760, ge=720, le=43800)
    """Validity of every Karmada leaf certificate, in hours; shorter than the CAs'."""

    @model_validator(mode="after")
    def _leaf_inside_ca(self) -> PkiConfig:
        if self.leaf_validity_hours >= self.ca_validity_hours:
            raise _fail("validity", "leafValidityHours ({leaf}) must be shorter than caValidityHours ({ca})",
                        leaf=self.leaf_validity_hours, ca=self.ca_validity_hours)
        return self


class EstimatorConfig(Model):
    """The pods of each member's scheduler-estimator on the hub (members with `schedulerEstimator: true`): at
    fleet scale they are most of what the hub runs (docs/fleet-scale.md)."""

    replicas: int = Field(default=2, ge=1, le=3)
    """Two keep estimates through a hub server loss. One halves the footprint; while it is rescheduled the
    scheduler falls back to its general estimate (Karmada pkg/scheduler/core/util.go calAvailableReplicas
    skips an estimator that errs)."""
    cpu: str = Field(default="100m", pattern=r"^([1-9][0-9]*m|[0-9]+(\.[0-9]+)?)$")
    """CPU request (and the basis of the hub capacity check) of each estimator pod."""
    memory: str = Field(default="128Mi", pattern=r"^[1-9][0-9]*(Mi|Gi)$")
    """Memory request of each estimator pod."""


TenantGate = Literal["WorkloadAffinity", "SchedulingOvercommitProtection", "ResourceQuotaEstimate",
                     "PriorityBasedScheduling", "PropagationPolicyPreemption", "StatefulFailoverInjection",
                     "FederatedQuotaEnforcement"]
"""The alpha gates a fleet switches on for its tenants (karmada.featureGates); flags.TENANT_GATES, same order."""


class PriorityClassConfig(Model):
    """One row of the fleet priority table: a `scheduling.k8s.io/v1` PriorityClass created in karmada-apiserver,
    where the controller-manager looks it up for `schedulePriority` (a missing class stops propagation)."""

    name: DnsSubdomain
    """PriorityClass name (the system- prefix is Kubernetes' own)."""
    value: int = Field(ge=-2147483648, le=1000000000)
    """Higher is scheduled first. 1000000000 is the largest value a user-defined PriorityClass may have."""
    description: str = ""
    """Shown in the PriorityClass's description."""

    @field_validator("name")
    @classmethod
    def _not_system(cls, v: str) -> str:
        if v.startswith("system-"):
            raise _fail("priority", "the system- prefix is reserved for Kubernetes' own priority classes")
        return v


class DeschedulerConfig(Model):
    """karmada-descheduler (runs whenever scheduler-estimators do, unless enabled: false).

    It shrinks a Divided (dynamic/aggregated) Deployment's share on a member where replicas stayed unschedulable
    longer than the threshold, so the scheduler places them elsewhere. It does not move replicas back after a
    member recovers."""

    enabled: bool = True
    """Run karmada-descheduler (it only ever runs beside scheduler-estimators)."""
    interval_seconds: int = Field(default=120, ge=10, le=3600)
    """`--descheduling-interval` (upstream default 2m)."""
    unschedulable_threshold_seconds: int = Field(default=300, ge=30, le=86400)
    """`--unschedulable-threshold` (upstream default 5m): how long a pod must be Unschedulable to count."""


class SearchResourceConfig(Model):
    """One resource type karmada-search caches (a ResourceRegistry `resourceSelectors` entry)."""

    api_version: str = Field(pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+"
                                     r"((alpha|beta)[0-9]+)?$")
    """`apps/v1`, `v1`, ... as in a manifest."""
    kind: str = Field(pattern=r"^[A-Z][A-Za-z0-9]{0,62}$")
    """The kind (`Deployment`, `Pod`, ...)."""
    namespace: DnsLabel | None = None
    """Only this namespace (default: every namespace). Upstream caches by namespace only in the proxy's cache."""


class SearchAddonConfig(Model):
    """karmada-search (`search.karmada.io`, one query across members) on the hub, opt-in. It caches the named resource
    types of the named members in memory (the hub's sizing counts it: docs/fleet-scale.md) and reads members with
    their Push credentials, so it can cache Push members only: the hub never dials a Pull member
    (docs/addons.md)."""

    enabled: bool = False
    """Run karmada-search ×`replicas` and register `v1alpha1.search.karmada.io` in the karmada-apiserver."""
    replicas: int = Field(default=2, ge=2, le=3, json_schema_extra=_HA)
    """Pods (required anti-affinity, PDB); every replica caches everything, so memory scales with it too."""
    resources: list[SearchResourceConfig] = []
    """What the cache holds (ResourceRegistry `resourceSelectors`); required when enabled."""
    members: list[ClusterName] = []
    """Which members it caches (ResourceRegistry `targetCluster.clusterNames`); empty: every Push member."""
    objects_per_member: int = Field(default=2000, ge=1, le=1_000_000)
    """Expected cached objects per member, for the memory request (docs/fleet-scale.md)."""
    cpu: str = Field(default="200m", pattern=r"^([1-9][0-9]*m|[0-9]+(\.[0-9]+)?)$")
    """CPU request of each pod."""

    @model_validator(mode="after")
    def _named(self) -> SearchAddonConfig:
        if self.enabled and not self.resources:
            raise _fail("search", "name at least one resource type to cache (e.g. apiVersion: apps/v1, kind: "
                        "Deployment) when search is enabled: an empty registry caches nothing", loc=("resources",))
        keys = [(r.api_version, r.kind, r.namespace) for r in self.resources]
        if len(set(keys)) != len(keys):
            raise _fail("search", "lists a resource twice", loc=("resources",))
        if len(set(self.members)) != len(self.members):
            raise _fail("search", "lists a member twice", loc=("members",))
        return self


class DashboardAddonConfig(Model):
    """The Karmada dashboard (karmada-io/dashboard, the release the compatibility matrix pins) on the hub, opt-in:
    its web UI and API ×`replicas`, reached only through the hub's firewall-filtered API with `kubectl
    port-forward` (docs/addons.md). Users log in with a token of the `karmada-dashboard-<access>` identity."""

    enabled: bool = False
    """Run karmada-dashboard-web and karmada-dashboard-api and create the login identity."""
    replicas: int = Field(default=2, ge=2, le=3, json_schema_extra=_HA)
    """Pods of each of the two Deployments (required anti-affinity, PDB)."""
    access: Literal["view", "edit"] = "view"
    """What the login identity may do in the karmada-apiserver: `view` reads (no Secrets), `edit` also writes
    policies and resource templates, and reads and writes Secrets (Kubernetes' edit role with Karmada's
    aggregation)."""


class AddonsConfig(Model):
    """Opt-in Karmada addons on the hub; off by default, and then nothing of theirs is rendered."""

    dashboard: DashboardAddonConfig = DashboardAddonConfig()
    """The Karmada dashboard."""
    search: SearchAddonConfig = SearchAddonConfig()
    """karmada-search."""

    @property
    def any_enabled(self) -> bool:
        return self.dashboard.enabled or self.search.enabled


class KarmadaConfig(Model):
    version: str = versions.KARMADA_VERSION
    """Karmada release of the control plane (and the agents); must be in the compatibility matrix."""
    replicas: ReplicaConfig = ReplicaConfig()
    """Replicas of each control-plane component."""
    etcd: EtcdConfig = EtcdConfig()
    """Karmada's own etcd."""
    pki: PkiConfig = PkiConfig()
    """Certificate lifetimes of the Karmada PKI."""
    scheduler_estimators: bool = False
    """The scheduler asks per-member scheduler-estimators for available replicas: then every Push member of the
    fleet needs `schedulerEstimator: true` (the scheduler dials one per Push Cluster; Pull members are skipped).
    The hub's stack turns the scheduler side on, so prod-hub sets this."""
    estimator: EstimatorConfig = EstimatorConfig()
    """Size of each member's scheduler-estimator on the hub."""
    feature_gates: list[TenantGate] = []
    """The alpha gates the fleet's tenants need, switched on exactly in the binaries that read them. all-in-one:
    exactly what the tenants use; hub: what its region stacks' tenants use; region: the hub's list."""
    priority_classes: list[PriorityClassConfig] = []
    """The fleet priority table (hub and all-in-one stacks; tenants name a row in priorityClass)."""
    descheduler: DeschedulerConfig = DeschedulerConfig()
    """karmada-descheduler settings."""
    addons: AddonsConfig = AddonsConfig()
    """Opt-in addons: the Karmada dashboard and karmada-search (docs/addons.md)."""

    @field_validator("feature_gates")
    @classmethod
    def _unique_gates(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise _fail("gates", "lists a gate twice")
        return v

    @field_validator("priority_classes")
    @classmethod
    def _unique_classes(cls, v: list[PriorityClassConfig]) -> list[PriorityClassConfig]:
        names = [c.name for c in v]
        if len(set(names)) != len(names):
            raise _fail("priority", "priority class names must be unique")
        return v

    @property
    def descheduler_enabled(self) -> bool:
        return self.scheduler_estimators and self.descheduler.enabled

    @field_validator("version")
    @classmethod
    def _in_matrix(cls, v: str) -> str:
        if v not in versions.RELEASES:
            hint = f"; write v{v}" if f"v{v}" in versions.RELEASES else ""
            raise _fail("version", "Karmada {v} is not in the compatibility matrix (supported: {known}){h}", v=v,
                        known=", ".join(sorted(versions.RELEASES)), h=hint)
        return v

    @property
    def release(self) -> versions.KarmadaRelease:
        return versions.RELEASES[self.version]


# ------------------------------------------------------------------------------------------ members


class CapiCredentials(Model):
    """Read the `<cluster>-kubeconfig` Secret (key `value`) from the CAPI management cluster."""

    source: Literal["capi"] = "capi"
    """`capi`: read the member's kubeconfig from the CAPI management cluster."""
    cluster: ClusterName
    """Name of the CAPI `Cluster` (its `<cluster>-kubeconfig` Secret is read)."""
    namespace: DnsLabel = "default"
    """Namespace of that Cluster in the management cluster."""


class SecretCredentials(Model):
    """A kubeconfig stored as a stack secret under `karmada-hub:<configKey>` (clusters not made by CAPI)."""

    source: Literal["secret"] = "secret"
    """`secret`: the member's kubeconfig is a stack secret."""
    config_key: str = Field(pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """The stack secret (`karmada-hub:<configKey>`) that holds the kubeconfig."""


class IngressConfig(Model):
    """Where the member's ingress controller listens, for the regional load balancer."""

    node_selector: str = "node-role.kubernetes.io/ingress=true"
    """Kubernetes label of the member's ingress nodes, for people reading the stack; the regional LB selects
    servers by their Hetzner labels instead (docs/traffic-failover.md)."""
    servers: int = Field(default=3, ge=1, le=1000)
    """Hetzner servers the member's LB label selector matches (for CAPH members: every worker of the cluster).
    Hetzner counts each as one target of the region's load balancer, whose type caps them."""
    http_node_port: int = Field(default=30080, ge=30000, le=32767)
    """NodePort of the ingress controller's HTTP listener (the regional LB forwards 80 to it)."""
    https_node_port: int = Field(default=30443, ge=30000, le=32767)
    """NodePort of the ingress controller's HTTPS listener (the regional LB forwards 443 to it)."""

    @model_validator(mode="after")
    def _two_ports(self) -> IngressConfig:
        if self.http_node_port == self.https_node_port:
            raise _fail("ingress", "httpNodePort and httpsNodePort are both {p}: the regional LB would send HTTP and "
                        "HTTPS to one listener; give HTTPS its own NodePort (default 30443)", p=self.http_node_port,
                        loc_key="httpsNodePort")
        return self


class MemberConfig(Model):
    name: ClusterName
    """Karmada Cluster name of the member (at most 48 characters: Karmada keeps 15 for `karmada-es-`)."""
    region: DnsLabel
    """Key of `regions` the member belongs to (its regional LB and DNS name)."""
    zones: list[str] = []
    """Failure zones of the member (set on the Karmada Cluster for spread constraints)."""
    sync_mode: Literal["Push", "Pull"] = "Push"
    """`Push`: the hub's controller-manager reaches the member; `Pull`: a karmada-agent on the member reaches the
    hub."""
    kubernetes_version: str
    """The member's Kubernetes version, checked against Karmada's supported member range."""
    api_endpoint: str = Field(pattern=r"^https://[^/?#@]+(:\d+)?/?$")
    """The member's API server URL (https)."""
    credentials: CapiCredentials | SecretCredentials = Field(discriminator="source")
    """Where the member's kubeconfig comes from."""
    labels: dict[str, str] = {}
    """Extra labels of the Karmada Cluster (Kubernetes label syntax), for placement."""
    scheduler_estimator: bool = False
    """Run a scheduler-estimator for this member on the hub (needs karmada.schedulerEstimators)."""
    ingress: IngressConfig = IngressConfig()
    """The member's ingress NodePorts, for its regional load balancer."""
    join_generation: int = Field(default=1, ge=1)
    """Pull members: bump it to mint a fresh bootstrap token and run the join again (a rebuilt member, or
    one whose `karmada-kubeconfig` Secret is gone). The token lives an hour and is in no stack's state."""
    cluster_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                                         r"[0-9a-f]{12}$")
    """Pull members: the UID of the member's `kube-system` namespace (`kubectl get namespace kube-system -o
    jsonpath='{.metadata.uid}'`; a region stack's `up` prints it as `pullClusterIds` while it is missing). The hub
    creates the member's Cluster with it as `spec.id`, exactly as the agent would, so the agent needs no right to
    create or change Clusters; until it is set, the region installs no agent."""

    @field_validator("kubernetes_version")
    @classmethod
    def _version_shape(cls, v: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+$", v):
            raise _fail("k8s_version", "must be a Kubernetes version like v1.33.4 (got '{v}')", v=v)
        return v


# ------------------------------------------------------------------------------------------ regions


class HealthCheckConfig(Model):
    interval: int = Field(default=5, json_schema_extra={"minimum": 3, "maximum": 60})
    """Seconds between health checks of a target (Hetzner allows 3..60)."""
    timeout: int = Field(default=3, json_schema_extra={"minimum": 1, "maximum": 60})
    """Seconds a health check may take (1..interval)."""
    retries: int = Field(default=2, ge=0, le=5)
    """Failed checks before a target is taken out (0..5); a target that was out needs as many successful checks to
    come back (Hetzner API, LoadBalancerServiceHealthCheck `retries`). The 3..60, 1..interval and 0..5 bounds have
    no source the project could read: the API document states none."""

    @model_validator(mode="after")
    def _hetzner_limits(self) -> HealthCheckConfig:
        if self.interval < 3 or self.interval > 60:
            raise _fail("interval", "interval must be 3..60 seconds (Hetzner's limits) (got {v})", v=self.interval)
        if self.timeout < 1 or self.timeout > self.interval:
            raise _fail("timeout", "timeout must be >= 1 and <= interval ({i}) (got {v})", i=self.interval,
                        v=self.timeout)
        return self


class RegionConfig(Model):
    location: str
    """Hetzner location of the region's load balancer."""
    load_balancer_type: Literal["lb11", "lb21", "lb31"] = "lb11"
    """Hetzner load balancer type of the region's LB."""
    health_check: HealthCheckConfig = HealthCheckConfig()
    """How the region's LB checks the members' ingress nodes."""
    proxy_protocol: bool = False
    """Send the PROXY protocol header to the ingress controller (it must expect it)."""
    registry_mirror: str | None = Field(default=None, pattern=r"^[a-z0-9.-]+(:\d+)?(/[a-z0-9._/-]+)?$")
    """Registry host (and path) that replaces image registries for workloads in this region (an OverridePolicy)."""
    network_cidr: Cidr4 | None = None
    """The private network the region's members live on (their ingress nodes' private IPs)."""
    network_id: int | None = Field(default=None, ge=1)
    """Hetzner id of that network. Set: the region's LB joins it and reaches the ingress nodes over
    private IPs. Unset: the LB targets the nodes' public IPs (the network belongs to CAPI, not here)."""

    @field_validator("location")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in NETWORK_ZONES:
            raise _fail("location", "unknown Hetzner location '{location}' (one of: {known})", location=v,
                        known=", ".join(NETWORK_ZONES))
        return v

    @property
    def network_zone(self) -> str:
        return NETWORK_ZONES[self.location]


# ------------------------------------------------------------------------------------------ tenants

def _quantity_text(value: Any) -> Any:
    """A number where a Kubernetes quantity goes (`cpu: 40`, `memory: 0`) is what Kubernetes manifests accept too:
    read it as the quantity it writes."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    text = str(value) if isinstance(value, int) else f"{value:f}".rstrip("0").rstrip(".")
    return text


Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"),
                     BeforeValidator(_quantity_text), WithJsonSchema({
                         "type": ["string", "number"], "minimum": 0,
                         "pattern": r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"})]
"""A Kubernetes quantity (`"40"`, `500m`, `80Gi`); a number is read as the quantity it writes, as in a manifest."""


class StaticAssignment(Model):
    cluster: ClusterName
    """Member the assignment applies to."""
    hard: dict[str, Quantity]
    """Resource name -> quantity this member gets of the tenant's quota."""


class QuotaConfig(Model):
    overall: dict[str, Quantity] = Field(min_length=1)
    """Resource name -> quantity (Kubernetes quantity syntax) the tenant may use across the fleet."""
    static_assignments: list[StaticAssignment] = []
    """Per-member shares of `overall` (their sum must fit in it)."""
    enforce: bool = True
    """Enforced by the hub's controller-manager and webhook: needs FederatedQuotaEnforcement in
    karmada.featureGates (the whole fleet's list, decided by the hub stack)."""

    @model_validator(mode="after")
    def _not_zero_under_enforce(self) -> QuotaConfig:
        from components.kube.quantity import parse_quantity

        if not self.enforce:
            return self
        for res in ZERO_STOPS_EVERYTHING:
            if res in self.overall and parse_quantity(self.overall[res]) == 0:
                raise _fail("quota_zero", "a {r} quota of {q} under enforce: true lets the tenant run nothing; give "
                            "it a size (like {example}) or set enforce: false", r=res, q=self.overall[res],
                            example=QUOTA_EXAMPLES.get(res.rsplit(".", 1)[-1], "10"), loc_key=("overall", res))
        return self


ZERO_STOPS_EVERYTHING = ("cpu", "memory", "pods", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
"""Quota resources every workload uses: zero under enforcement admits no pod (a zero for an extended resource, like a
GPU, is a deliberate "none of these")."""
QUOTA_EXAMPLES = {"cpu": '"40"', "memory": "80Gi", "pods": '"100"'}


LABEL_KEY = (r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?"
             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
"""A Kubernetes label key / qualified name: optional DNS-subdomain prefix and `/`, then 1-63 characters that
start and end alphanumeric (`content.IsLabelKey`, `ValidateLabelName` upstream)."""
LabelKey = Annotated[str, Field(pattern=LABEL_KEY, max_length=316)]
LabelValue = Annotated[str, Field(pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", max_length=63)]
GroupName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=32)]
"""An affinity group name: a label key without prefix, at most 32 characters (CRD `affinityName` maxLength)."""
DnsSubdomain = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                                    max_length=253)]


class OverflowGroup(Model):
    """One group replicas spill into when the groups before it are full (`overflowAffinities[]`, v1.18)."""

    name: GroupName
    """Name of the group (its affinity name)."""
    regions: list[DnsLabel] = []
    """Regions whose members form the group (exactly one of regions and clusters)."""
    clusters: list[ClusterName] = []
    """Members that form the group (exactly one of regions and clusters)."""

    @model_validator(mode="after")
    def _one_selector(self) -> OverflowGroup:
        if bool(self.regions) == bool(self.clusters):
            raise _fail("overflow", "overflow group '{n}' needs exactly one of regions or clusters", n=self.name)
        return self


class WorkloadAffinityConfig(Model):
    """Workload affinity / anti-affinity between a tenant's own workloads (v1.17, gate WorkloadAffinity).

    Upstream groups the resource templates (Deployments, StatefulSets, ...) by the value of a label on the
    template itself, per namespace and per cluster. The groups are declared here too, with their member counts,
    so the plan can check that every group fits the fleet and survives a loss (the what-if table)."""

    affinity_label: LabelKey | None = None
    """Templates with the same value of this label are placed on the same clusters."""
    affinity_groups: dict[LabelValue, Annotated[int, Field(ge=2, le=50)]] = {}
    """label value -> number of workloads carrying it."""
    anti_affinity_label: LabelKey | None = None
    """Templates with the same value of this label never share a cluster."""
    anti_affinity_groups: dict[LabelValue, Annotated[int, Field(ge=2, le=50)]] = {}
    """label value -> number of workloads carrying it."""

    @model_validator(mode="after")
    def _coherent(self) -> WorkloadAffinityConfig:
        if self.affinity_label is None and self.anti_affinity_label is None:
            raise _fail("workload_affinity", "set affinityLabel, antiAffinityLabel or both")
        if self.affinity_label is not None and self.affinity_label == self.anti_affinity_label:
            raise _fail("workload_affinity", "affinityLabel and antiAffinityLabel must differ (upstream "
                        "ValidateWorkloadAffinity)")
        for label, groups, key in ((self.affinity_label, self.affinity_groups, "affinityGroups"),
                                   (self.anti_affinity_label, self.anti_affinity_groups, "antiAffinityGroups")):
            if label is None and groups:
                raise _fail("workload_affinity", "{k} needs its label ({l})", k=key,
                            l=key.replace("Groups", "Label"))
            if label is not None and not groups:
                raise _fail("workload_affinity", "declare {k}: each label value and how many workloads carry it, "
                            "so the plan can check the group fits the fleet", k=key)
        return self


class PlacementConfig(Model):
    replica_scheduling: Literal["Duplicated", "Divided"] = "Duplicated"
    """`Duplicated`: every selected member runs all replicas; `Divided`: replicas are split."""
    weighting: Literal["static", "dynamic", "aggregated"] = "static"
    """Divided only: static weights per cluster, dynamic by available replicas, or aggregated (fewest clusters)."""
    weights: dict[str, Annotated[int, Field(ge=1)]] = {}
    """Divided + static: cluster name -> weight (clusters not listed get none)."""
    preferred_regions: list[str] = []
    """First affinity group; the fleet-wide fallback group always follows it."""
    overflow: list[OverflowGroup] = []
    """Groups the preferred group spills into, in order, when it is full (Divided dynamic/aggregated only). Unlike
    the fallback group, replicas can be pulled back into the preferred group (WorkloadRebalancer, scale events)."""
    fallback_group: GroupName = "fleet-fallback"
    """Name of the last, fleet-wide group. A binding never leaves it by itself once it failed over to it (groups
    are one-way at v1.18.2); renaming the group makes every binding start from the preferred group again: the
    fail-back step of docs/runbooks/tenant-placement.md."""
    spread_by_region: bool = True
    """Spread the workload over regions (a spread constraint by region)."""
    min_regions: int = Field(default=1, ge=1)
    """Minimum regions the workload runs in; must stay satisfiable with one region lost."""
    max_clusters: int | None = Field(default=None, ge=1)
    """At most this many clusters per workload (the cluster spread constraint's maxGroups)."""
    workload_affinity: WorkloadAffinityConfig | None = None
    """Affinity and anti-affinity between the tenant's own workloads; unset: none."""
    overcommit_protection: bool = False
    """The scheduler deducts in-flight placements from estimated capacity (gate SchedulingOvercommitProtection on
    the scheduler and every scheduler-estimator)."""
    toleration_seconds: int | None = Field(default=None, ge=0, le=3600)
    """Tolerate the failover taint this long before eviction (None: evict at once)."""

    @model_validator(mode="after")
    def _coherent(self) -> PlacementConfig:
        divided = self.replica_scheduling == "Divided"
        static = divided and self.weighting == "static"
        if self.weights and not static:
            raise _fail("placement", "weights are only used with replicaScheduling: Divided and weighting: static")
        if self.overflow:
            if not divided or static:
                raise _fail("placement", "overflow needs replicaScheduling: Divided with weighting: dynamic or "
                            "aggregated (upstream IsOverflowSchedulingAllowed)", loc_key="overflow")
            if not self.preferred_regions:
                raise _fail("placement", "overflow needs preferredRegions: the primary group it spills from",
                            loc_key="overflow")
            names = [g.name for g in self.overflow]
            if len(set(names)) != len(names) or "preferred" in names or self.fallback_group in names:
                raise _fail("placement", "overflow group names must be unique and differ from 'preferred' and "
                            "'{f}'", f=self.fallback_group, loc_key="overflow")
        if self.min_regions > 1 and not self.spread_by_region:
            raise _fail("placement", "minRegions {n} does nothing without spreadByRegion: true (no region spread "
                        "constraint is rendered); set spreadByRegion: true or remove minRegions", n=self.min_regions,
                        loc_key="minRegions")
        if self.fallback_group == "preferred":
            raise _fail("placement", "fallbackGroup must differ from 'preferred'", loc_key="fallbackGroup")
        if self.max_clusters is not None:
            if static:
                raise _fail("placement", "maxClusters does nothing with Divided static weights (upstream "
                            "shouldIgnoreSpreadConstraint ignores spread constraints there)", loc_key="maxClusters")
            if self.spread_by_region and self.max_clusters < self.min_regions:
                raise _fail("placement", "maxClusters ({m}) must be >= minRegions ({r})", m=self.max_clusters,
                            r=self.min_regions, loc_key="maxClusters")
        anti = self.workload_affinity is not None and self.workload_affinity.anti_affinity_label is not None
        if anti and (static or self.max_clusters is None):
            raise _fail("placement", "workloadAffinity.antiAffinityLabel needs maxClusters (and not Divided static "
                        "weights): otherwise the first workload of a group takes every cluster and the others can "
                        "never be placed", loc_key="workloadAffinity")
        if self.overcommit_protection and (not divided or static):
            raise _fail("placement", "overcommitProtection only changes Divided dynamic/aggregated placements (it "
                        "corrects estimated capacity, which Duplicated and static weights do not use)",
                        loc_key="overcommitProtection")
        return self


class StateRule(Model):
    """One `statePreservation` rule: a value read from the workload's status on the failed cluster, injected as a
    label into the workload on the new cluster."""

    label: LabelKey
    """The label the new cluster's copy gets (`aliasLabelName`)."""
    json_path: str = Field(pattern=r"^\{\..+\}$")
    """JSONPath evaluated against the workload's `.status` (write `{.observedGeneration}`, not `{.status....}`)."""

    @field_validator("json_path")
    @classmethod
    def _relative_to_status(cls, v: str) -> str:
        if v.startswith("{.status.") or v == "{.status}":
            raise _fail("state", "jsonPath is evaluated against the workload's .status already: write '{fixed}' "
                        "(a missing key blocks the eviction)", fixed="{." + v[len("{.status."):])
        return v


class RestoreSource(Model):
    """Where a stateful tenant's data comes back from on the new cluster. Karmada moves bindings, not bytes:
    volumes stay on the failed member, so the application restores from here (the program does not run it)."""

    kind: Literal["VeleroBackup", "VeleroSchedule", "VolumeSnapshotClass"]
    """What the application restores from: a Velero backup or schedule, or volume snapshots."""
    name: DnsSubdomain
    """Name of that backup, schedule or VolumeSnapshotClass."""


class StateConfig(Model):
    preserve: list[StateRule] = Field(min_length=1)
    """The statePreservation rules: values carried from the failed cluster to the new one."""
    restore_from: RestoreSource
    """Where the data itself comes back from."""


class ApplicationFailoverConfig(Model):
    """`spec.failover.application`: move a workload off a cluster where it stays unhealthy."""

    toleration_seconds: int = Field(default=300, ge=0, le=86400)
    """How long the workload must be continuously Unhealthy on a cluster before it is moved (decision toleration)."""
    purge_mode: Literal["Directly", "Gracefully", "Never"] = "Gracefully"
    """What happens to the old copy: deleted at once, after the new one is healthy (or gracePeriodSeconds), or
    kept until someone deletes it."""
    grace_period_seconds: int | None = Field(default=None, ge=1, le=86400)
    """Gracefully only (default 600, upstream's)."""

    @model_validator(mode="after")
    def _grace_only_when_graceful(self) -> ApplicationFailoverConfig:
        if self.grace_period_seconds is not None and self.purge_mode != "Gracefully":
            raise _fail("app_failover", "gracePeriodSeconds only applies to purgeMode: Gracefully (upstream "
                        "ValidateApplicationFailover)")
        return self


class WorkloadRef(Model):
    kind: Literal["Deployment", "StatefulSet"]
    """Kind of the workload."""
    name: DnsSubdomain
    """Name of the workload in the tenant's namespace."""


class CriticalConfig(Model):
    """Named workloads of the tenant that get a higher schedule priority. They are claimed by a second policy that
    preempts the tenant-wide one (gate PropagationPolicyPreemption): upstream only lets a policy with
    `preemption: Always` take over templates another policy already claimed, and only by name."""

    workloads: list[WorkloadRef] = Field(min_length=1)
    """The workloads that get the higher priority."""
    priority_class: DnsSubdomain
    """Their PriorityClass (from karmada.priorityClasses), not the tenant's own."""


class TenantConfig(Model):
    name: DnsLabel
    """Tenant name (names its policies)."""
    namespace: DnsLabel
    """The tenant's namespace, propagated to the members; Karmada's reserved and `kube-*` namespaces are refused."""
    placement: PlacementConfig = PlacementConfig()
    """Where the tenant's workloads run."""
    quota: QuotaConfig | None = None
    """A FederatedResourceQuota for the tenant; unset: no quota."""
    stateful: bool = False
    """The tenant keeps data in volumes. Karmada moves bindings, not bytes: a stateful tenant fails over only with
    a state story (`state`), or not automatically at all (`failover: manual`)."""
    failover: Literal["automatic", "manual"] = "automatic"
    """manual: the tenant tolerates the failover taint forever; a cluster loss leaves it waiting for the cluster."""
    state: StateConfig | None = None
    """How a stateful tenant's state follows a failover; only with stateful: true."""
    application_failover: ApplicationFailoverConfig | None = None
    """Move a workload off a member where it stays unhealthy; unset: only cluster failover."""
    priority_class: DnsSubdomain | None = None
    """Schedule priority of the tenant's workloads: a name from karmada.priorityClasses (gate
    PriorityBasedScheduling). Orders the scheduler's queue only; it never evicts or moves anything."""
    critical: CriticalConfig | None = None
    """Named workloads with a higher schedule priority than the rest; unset: none."""

    @model_validator(mode="after")
    def _stateful_boundary(self) -> TenantConfig:
        if self.stateful and self.failover == "automatic" and self.state is None:
            raise _fail("stateful", "a stateful tenant fails over only with a state story, because bindings move and "
                        "volumes do not: add state.preserve and state.restoreFrom, or set failover: manual")
        if self.state is not None and not self.stateful:
            raise _fail("stateful", "state is only for stateful: true tenants", loc_key="state")
        if self.state is not None and self.failover == "manual":
            raise _fail("stateful", "state is used only when the tenant fails over; with failover: manual it does "
                        "nothing (remove it or set failover: automatic)", loc_key="state")
        if self.failover == "manual" and self.placement.toleration_seconds is not None:
            raise _fail("stateful", "failover: manual tolerates the failover taint forever; remove "
                        "placement.tolerationSeconds", loc_key="failover")
        if self.state is not None and self.placement.max_clusters != 1:
            raise _fail("stateful", "state labels are injected only when the workload lands on exactly one cluster "
                        "(upstream binding/common.go): set placement.maxClusters: 1", loc_key="state")
        app = self.application_failover
        if app is not None and self.stateful and self.state is None:
            raise _fail("stateful", "applicationFailover would move a stateful workload without its data; add a state "
                        "story or remove applicationFailover", loc_key="applicationFailover")
        if app is not None and self.state is not None and app.purge_mode != "Directly":
            raise _fail("stateful", "state labels are injected only with purgeMode: Directly (upstream "
                        "binding/common.go); set applicationFailover.purgeMode: Directly",
                        loc_key="applicationFailover")
        if self.critical is not None and self.critical.priority_class == self.priority_class:
            raise _fail("stateful", "critical.priorityClass must differ from the tenant's priorityClass (else the "
                        "preempting policy changes nothing)", loc_key="critical")
        return self

    @property
    def fails_over(self) -> bool:
        """Whether a cluster loss evicts (moves) this tenant's workloads automatically."""
        return self.failover == "automatic"

    def feature_gates(self) -> set[str]:
        """The tenant gates (karmada.featureGates) this tenant's features need to do anything at all."""
        gates: set[str] = set()
        p = self.placement
        if self.quota is not None and self.quota.enforce:
            gates.add("FederatedQuotaEnforcement")
        if p.workload_affinity is not None:
            gates.add("WorkloadAffinity")
        if p.overcommit_protection:
            gates.add("SchedulingOvercommitProtection")
            if self.quota is not None and self.quota.static_assignments:
                gates.add("ResourceQuotaEstimate")
        if self.priority_class is not None or self.critical is not None:
            gates.add("PriorityBasedScheduling")
        if self.critical is not None:
            gates.add("PropagationPolicyPreemption")
        if self.state is not None:
            gates.add("StatefulFailoverInjection")
        return gates

    @field_validator("namespace")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if RESERVED_NAMESPACE.match(v):
            raise _fail("reserved_ns", "'{v}' is a namespace Karmada never propagates from (reserved, or matched by "
                        "--skipped-propagating-namespaces=kube-.*); give the tenant its own namespace", v=v)
        return v


# --------------------------------------------------------------------------------------- dns/traffic


HETZNER_DNS_MIN_TTL = 60
"""Hetzner Cloud DNS (the zones/rrsets API the webhook and `hcloud.ZoneRrset` use) documents an RRSet's TTL and a
zone's default TTL as "Must be in between 60s and 2147483647s" (docs.hetzner.cloud, Create an RRSet)."""
DNS_MAX_TTL = 60
"""Clients may keep a dead region's address this long: the traffic clock counts it in full (the policy pack's
`dns-short-ttl` rule holds every TTL to the same bound). With Hetzner's minimum that leaves exactly 60."""
SELF_HOSTED_MIN_TTL = 5
"""The fleet's own nameservers take any TTL; below 5 s resolvers' query rate grows for little gain (a lookup
through a resolver that meets a dead nameserver takes up to 1.6 s: shared/reference/self-hosted-dns.md §3.1)."""
DNS_TTL_DEFAULTS = {"hetzner": HETZNER_DNS_MIN_TTL, "self-hosted": 15}
"""15 s in self-hosted mode: the traffic clock's largest term then leaves room for detection within 30 s
(docs/traffic-failover.md §4.3)."""
DnsMode = Literal["hetzner", "self-hosted"]
DOMAIN_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$"


class DnsFailoverConfig(Model):
    """The health-checked DNS failover controller (agents/traffic_failover.py): one prober per hub server.

    A region leaves a name's record when a majority of the vantage points saw `failureThreshold` failed rounds
    in a row, and comes back after `successThreshold` good rounds and `holdDownSeconds` since it left."""

    probe_period_seconds: int = Field(default=3, ge=2, le=60)
    """One probe round per vantage point every this many seconds (every name and region at once, so a round
    lasts about one probeTimeoutSeconds whatever the fleet's size)."""
    probe_timeout_seconds: int = Field(default=2, ge=1, le=10)
    """Connect + TLS + first response line of one attempt (Route 53 allows 4 + 2)."""
    probe_attempts: int = Field(default=2, ge=1, le=4)
    """New connections per round, in parallel; the round fails only if every one fails, so a region whose LB
    still sends a share of connections to a dead member (until its own health check drops it) is not withdrawn."""
    failure_threshold: int = Field(default=3, ge=2, le=10)
    """Failed rounds in a row (per vantage point) before it votes a region down; 1 would withdraw on one lost
    packet."""
    success_threshold: int = Field(default=6, ge=2, le=30)
    """Good rounds in a row before it votes a withdrawn region back: at least failureThreshold (hysteresis)."""
    hold_down_seconds: int = Field(default=60, ge=0, le=3600)
    """No region comes back sooner than this after it was withdrawn; at least dns.ttl, so a flapping region is
    never re-added within one client cache lifetime."""

    @model_validator(mode="after")
    def _hysteresis(self) -> DnsFailoverConfig:
        if self.probe_timeout_seconds >= self.probe_period_seconds:
            raise _fail("timeout", "probeTimeoutSeconds ({t}) must be below probePeriodSeconds ({p}): a round must "
                        "end before the next starts", t=self.probe_timeout_seconds, p=self.probe_period_seconds,
                        loc=("dns", "failover", "probeTimeoutSeconds"))
        if self.success_threshold < self.failure_threshold:
            raise _fail("threshold", "successThreshold ({s}) must be >= failureThreshold ({f}): restoring must be "
                        "slower than withdrawing, or a flapping region flaps in DNS too", s=self.success_threshold,
                        f=self.failure_threshold, loc=("dns", "failover", "successThreshold"))
        return self


class DnsSecondaryConfig(Model):
    """A nameserver the operator runs for the zone outside the hub (one per member region, say): a Knot secondary
    that transfers the zone from the hub's nameservers (docs/runbooks/self-hosted-dns.md renders its config)."""

    name: DnsLabel
    """Its part of the NS name: `ns-<name>-<label>.<parentZone>`."""
    ipv4: str
    """Its public IPv4 address: the delegation names it, the hub's nameservers notify it and let it transfer."""

    @field_validator("ipv4")
    @classmethod
    def _public(cls, v: str) -> str:
        try:
            ip = ipaddress.IPv4Address(v)
        except ValueError:
            raise _fail("secondary", "'{v}' is not an IPv4 address", v=v[:60]) from None
        if any(ip in net for net in _NOT_PUBLIC if net.version == 4) and not ip.is_global:
            raise _fail("secondary", "{v} is not a public address; resolvers on the internet must reach it", v=v)
        return v


class SelfHostedDnsConfig(Model):
    """The fleet's own authoritative nameservers for `dns.domain` (Knot, on the hub servers), delegated from a
    zone at Hetzner: docs/traffic-failover.md §5."""

    parent_zone: str = Field(pattern=DOMAIN_PATTERN)
    """The Hetzner DNS zone that delegates dns.domain: this stack owns the NS records and the nameservers' address
    records there (with dns.tokenConfigKey)."""
    delegation_ttl: int = Field(default=3600, ge=60, le=86400)
    """TTL of the delegation (NS) and of the nameservers' address records in the parent zone: long, so a Hetzner
    DNS outage does not stop resolvers that already know the delegation. Lower it a day before moving the
    nameservers or the mode (docs/runbooks/self-hosted-dns.md)."""
    negative_ttl: int = Field(default=15, ge=5, le=300)
    """How long resolvers cache "no such name" for the zone (the SOA MINIMUM and SOA TTL, RFC 2308): a name
    published just after someone asked for it is seen this much later."""
    rate_limit: int = Field(default=200, ge=10, le=100000)
    """Responses per second to one client network before Knot's response rate limiting (mod-rrl) slips or drops
    answers: the nameservers run on the control-plane servers and must not become a reflector."""
    hostmaster: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    """The SOA RNAME (a mailbox, first dot = @); default `hostmaster.<parentZone>`."""
    secondaries: list[DnsSecondaryConfig] = []
    """Nameservers outside the hub that serve the zone from transfers: they answer when every hub server is lost
    (empty: the three hub servers answer alone)."""


class DnsConfig(Model):
    mode: DnsMode = "hetzner"
    """Who answers for the fleet's names: `hetzner` (external-dns writes them into Hetzner DNS; TTL at least 60)
    or `self-hosted` (the hub servers' own nameservers answer for a zone delegated from Hetzner; TTL from 5)."""
    domain: str = Field(pattern=DOMAIN_PATTERN)
    """The zone the fleet's names live in: the Hetzner zone external-dns manages (mode hetzner), or the zone the
    fleet's nameservers serve, delegated from selfHosted.parentZone (mode self-hosted)."""
    ttl: int | None = Field(default=None, json_schema_extra={"minimum": SELF_HOSTED_MIN_TTL, "maximum": DNS_MAX_TTL})
    """TTL of the failover records, in seconds: 60 in mode hetzner (Hetzner accepts nothing shorter), 5 to 60 in
    mode self-hosted (default 15)."""
    txt_owner_id: str | None = Field(default=None, pattern=r"^[a-z0-9][-a-z0-9]*$")
    """external-dns ownership id, unique to the fleet (mode hetzner). Only the stack that runs external-dns (role
    all-in-one or hub) sets it: two owners of one name would fight over it."""
    token_config_key: str = Field(default="hetznerDnsToken", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret holding the Hetzner Cloud API token of the DNS zone's project (the webhook's in mode hetzner,
    the delegation records' in mode self-hosted)."""
    interval_seconds: int = Field(default=60, ge=10, le=600)
    """external-dns reconcile interval (it also reacts to events; mode hetzner)."""
    refresh_seconds: int = Field(default=15, ge=5, le=120)
    """Status refresher period: how often the hub looks for a dead member's address still in an Ingress or
    Service status (agents/status_refresher.py, docs/traffic-failover.md §2.1)."""
    failover: DnsFailoverConfig = DnsFailoverConfig()
    """The health-checked DNS failover controller."""
    self_hosted: SelfHostedDnsConfig | None = None
    """The fleet's own nameservers (mode self-hosted only)."""

    @model_validator(mode="after")
    def _per_mode(self) -> DnsConfig:
        if self.ttl is None:
            object.__setattr__(self, "ttl", DNS_TTL_DEFAULTS[self.mode])
        ttl = int(self.ttl or 0)
        if self.mode == "hetzner":
            if ttl < HETZNER_DNS_MIN_TTL:
                raise _fail("ttl", "must be >= {min} seconds in mode hetzner: Hetzner Cloud DNS rejects a shorter TTL "
                            "(got {v}; mode self-hosted takes from {low})", min=HETZNER_DNS_MIN_TTL, v=ttl,
                            low=SELF_HOSTED_MIN_TTL, loc=("dns", "ttl"))
            if self.self_hosted is not None:
                raise _fail("mode", "selfHosted is read in mode self-hosted only; set dns.mode: self-hosted or remove "
                            "it", loc=("dns", "selfHosted"))
        else:
            if ttl < SELF_HOSTED_MIN_TTL:
                raise _fail("ttl", "must be >= {min} seconds (got {v})", min=SELF_HOSTED_MIN_TTL, v=ttl,
                            loc=("dns", "ttl"))
            if self.self_hosted is None:
                raise _fail("mode", "mode self-hosted needs selfHosted.parentZone: the Hetzner zone that delegates "
                            "{d}", d=self.domain, loc=("dns", "selfHosted"))
            parent = self.self_hosted.parent_zone
            if not self.domain.endswith("." + parent):
                raise _fail("mode", "{d} is not below selfHosted.parentZone {p}: the parent zone delegates a zone "
                            "under it (e.g. fleet.{p})", d=self.domain, p=parent, loc=("dns", "domain"))
            names = [s.name for s in self.self_hosted.secondaries]
            for i, name in enumerate(names):
                if names.index(name) != i:
                    raise _fail("secondary", "secondary name '{n}' is used twice", n=name,
                                loc=("dns", "selfHosted", "secondaries", i, "name"))
            if self.txt_owner_id is not None:
                raise _fail("owner", "txtOwnerId is external-dns' owner id; mode self-hosted runs no external-dns: "
                            "remove it", loc=("dns", "txtOwnerId"))
        if ttl > DNS_MAX_TTL:
            raise _fail("ttl", "must be <= {max} seconds so clients follow failover quickly (got {v})",
                        max=DNS_MAX_TTL, v=ttl, loc=("dns", "ttl"))
        if self.failover.hold_down_seconds < ttl:
            raise _fail("hold_down", "holdDownSeconds ({h}) must be >= dns.ttl ({t}): a region withdrawn and re-added "
                        "within one TTL flaps in clients' caches", h=self.failover.hold_down_seconds, t=ttl,
                        loc=("dns", "failover", "holdDownSeconds"))
        return self

    @property
    def record_ttl(self) -> int:
        """dns.ttl, filled in from the mode's default."""
        assert self.ttl is not None
        return int(self.ttl)

    @property
    def self_hosted_mode(self) -> bool:
        return self.mode == "self-hosted"

    @property
    def hetzner_zone(self) -> str:
        """The zone at Hetzner this stack writes records into: dns.domain, or the parent in mode self-hosted."""
        return self.self_hosted.parent_zone if self.self_hosted is not None else self.domain

    def hetzner_record(self, name: str | None) -> tuple[str, str] | None:
        """(Hetzner zone, relative name) for a name this stack publishes at Hetzner, or None: not under the
        Hetzner zone, or (mode self-hosted) under dns.domain, which the fleet's own nameservers answer for."""
        if not name:
            return None
        zone = self.hetzner_zone
        if self.self_hosted is not None and (name == self.domain or name.endswith("." + self.domain)):
            return None
        if not name.endswith("." + zone):
            return None
        return zone, name[: -len(zone) - 1]


class MonitoringConfig(Model):
    """Monitoring that ships with the hub, for a Prometheus Operator the user already runs on the hub's host
    cluster (its PodMonitor and PrometheusRule CRDs, and kube-state-metrics for the workload and backup alerts).
    components/operations/monitoring.py; the alerts' runbook is docs/runbooks/monitoring.md."""

    enabled: bool = False
    """Render the PodMonitors, the PrometheusRule and the member-readiness exporter (stacks that own the hub)."""
    runbook_base_url: str | None = Field(default=None, pattern=r"^https://[^\s?#]+[^/\s?#]$")
    """Where this repository's docs/runbooks are served (alerts link `<this>/monitoring.md#<alert>`), e.g.
    https://github.com/<org>/karmada-hub/blob/main/docs/runbooks."""
    labels: dict[str, str] = {}
    """Added to every PodMonitor and PrometheusRule, so the Prometheus's selectors pick them up (e.g.
    `release: kube-prometheus-stack`)."""
    prometheus_namespace: DnsLabel = "monitoring"
    """Namespace Prometheus runs in: the source of the scrape flows a NetworkPolicy must allow (docs/monitoring.md)."""
    prometheus_pod_labels: dict[str, str] = {"app.kubernetes.io/name": "prometheus"}
    """Labels of the Prometheus pods, for the same flows."""
    scrape_interval_seconds: int = Field(default=30, ge=10, le=300)
    """How often each target is scraped (the PodMonitors' interval)."""

    @model_validator(mode="after")
    def _runbooks(self) -> MonitoringConfig:
        if self.enabled and self.runbook_base_url is None:
            raise _fail("monitoring", "required when monitoring is enabled: where docs/runbooks of this repository is "
                        "served, e.g. https://github.com/<org>/karmada-hub/blob/main/docs/runbooks",
                        loc=("monitoring", "runbookBaseUrl"))
        return self


class FailoverConfig(Model):
    """Karmada's cluster-failover knobs, each in a range that avoids flapping and false failovers."""

    cluster_status_update_frequency: int = Field(default=10, ge=5, le=60)
    """Seconds between member status reports (--cluster-status-update-frequency)."""
    cluster_failure_threshold: int = Field(default=30, ge=10, le=300)
    """Seconds a member must look unhealthy before it is marked not ready (--cluster-failure-threshold)."""
    cluster_success_threshold: int = Field(default=30, ge=10, le=300)
    """Seconds a member must look healthy before it is ready again (--cluster-success-threshold)."""
    cluster_monitor_period: int = Field(default=5, ge=1, le=60)
    """Seconds between the controller-manager's checks of member leases (--cluster-monitor-period)."""
    cluster_monitor_grace_period: int = Field(default=60, ge=10, le=600)
    """Seconds without a status update before a member is unknown (--cluster-monitor-grace-period). 60, not
    upstream's 40: a Pull agent's lease renewal can stall up to 50 s when a hub server dies without a reset (its
    apiserver's etcd stream to the dead member, `hubctl budget`), and on the real binaries a healthy Pull member
    went Unknown and lost its tenants at 40 (tests/test_real_drill.py)."""
    cluster_lease_duration: int = Field(default=40, ge=10, le=600)
    """Lease duration of Pull members' agents, in seconds (--cluster-lease-duration)."""
    client_read_idle_seconds: int | None = Field(default=10, ge=5, le=60)
    """Seconds a karmada-agent's or karmada-controller-manager's connection to karmada-apiserver may stay silent
    before client-go pings it (env HTTP2_READ_IDLE_TIMEOUT_SECONDS; null: client-go's 30, not rendered). With
    clientPingTimeoutSeconds it bounds how long a lease renewal hangs on a connection to a hub server that died
    without a reset: `hubctl budget` compares that stall with clusterMonitorGracePeriod. 10 (with a 5 s ping)
    keeps that path at 35 s; client-go's 30 + 15 would make it 65 s."""
    client_ping_timeout_seconds: int | None = Field(default=5, ge=1, le=60)
    """Seconds client-go waits for the answer to that ping before it closes the connection (env
    HTTP2_PING_TIMEOUT_SECONDS; null: client-go's 15, not rendered)."""
    resource_eviction_rate: float = Field(default=0.5, gt=0, le=50)
    """Evictions per second from a failed member (--resource-eviction-rate)."""
    graceful_eviction_timeout: int = Field(default=600, ge=60, le=3600)
    """Seconds an evicted workload's old copy is kept while its new one starts (--graceful-eviction-timeout)."""
    purge_mode: Literal["Gracefully", "Directly"] = "Gracefully"
    """How a failed member's workloads are removed after eviction (--no-execute-taint-eviction-purge-mode)."""
    bindings_per_cluster: int = Field(default=50, ge=1, le=100000)
    """Expected ResourceBindings on one member: sizes the eviction-queue term of the budget."""
    pod_start_seconds: int = Field(default=60, ge=0, le=1800)
    """Estimate of image pull + readiness on the surviving cluster."""
    rto_seconds: int | None = Field(default=None, ge=30)
    """If set, the plan fails when the worst-case budget exceeds it."""

    @model_validator(mode="after")
    def _coherent(self) -> FailoverConfig:
        if self.cluster_monitor_grace_period <= self.cluster_lease_duration * 0.25:
            raise _fail("grace", "clusterMonitorGracePeriod ({g}s) must exceed the lease renew interval "
                        "(clusterLeaseDuration/4 = {r}s)", g=self.cluster_monitor_grace_period,
                        r=self.cluster_lease_duration * 0.25)
        if self.cluster_failure_threshold < self.cluster_status_update_frequency:
            raise _fail("threshold", "clusterFailureThreshold ({t}s) must be >= clusterStatusUpdateFrequency "
                        "({u}s)", t=self.cluster_failure_threshold, u=self.cluster_status_update_frequency)
        return self


class HubStackRef(Model):
    """For `region` stacks: the hub stack whose outputs (karmada kubeconfig, CA, LB) they consume."""

    stack: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    """Fully qualified `org/project/stack` (DIY backends: org is `organization`)."""
    plan_stack: str | None = None
    """Offline: the stack whose `build/plan/<stack>/plan.json` stands in for the hub's outputs."""


class CapiManagementConfig(Model):
    kubeconfig_config_key: str = Field(default="capiKubeconfig", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret holding the CAPI management cluster's kubeconfig (needed when a member uses `source: capi`)."""


# --------------------------------------------------------------------------------------------- root

ROLES = ("all-in-one", "hub", "region")


class FleetConfig(Model):
    role: Literal["all-in-one", "hub", "region"] = "all-in-one"
    """What this stack deploys: `all-in-one` (dev), `hub` (hub cluster + Karmada) or `region` (one region's
    members, traffic and policies)."""
    hub: HubConfig | None = None
    """The hub cluster (roles all-in-one and hub)."""
    karmada: KarmadaConfig = KarmadaConfig()
    """The Karmada control plane."""
    members: list[MemberConfig] = []
    """The member clusters this stack joins."""
    regions: dict[DnsLabel, RegionConfig] = {}
    """Regions by name: each gets a load balancer in front of its members' ingress."""
    tenants: list[TenantConfig] = []
    """Tenants: a namespace each, with placement and quota."""
    dns: DnsConfig | None = None
    """Failover DNS with external-dns (Hetzner); unset: no DNS names."""
    failover: FailoverConfig = FailoverConfig()
    """Karmada's cluster-failover timing."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """Monitoring for a Prometheus Operator already running on the hub (docs/monitoring.md)."""
    hub_stack: HubStackRef | None = None
    """Region stacks: the hub stack they read through a StackReference."""
    capi: CapiManagementConfig = CapiManagementConfig()
    """The Cluster API management cluster members are read from."""
    region: DnsLabel | None = None
    """For `region` stacks: which region this stack rolls out."""
    region_stacks: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]] = []
    """For `hub` stacks: the region stacks (names of files in stacks/) this hub serves. The hub reads their
    members, tenants and identity CSR from those files: it owns the objects a region's identity cannot be
    trusted with (Cluster objects, agent RBAC, tenant namespaces, estimators) and signs each region's identity."""
    identity_csr: str | None = Field(default=None, pattern=r"^-----BEGIN CERTIFICATE REQUEST-----\n[\s\S]+"
                                                          r"-----END CERTIFICATE REQUEST-----\n?$")
    """For `region` stacks: the PEM CSR of this stack's identity, exactly as `hubctl region-key <stack>` prints it
    (subject `CN=karmada-hub:region:<region>` and nothing else); its key is the stack secret `identityKey`. The hub
    signs it once its file carries it, and refuses any other subject, extension or a key the offline planner
    derives."""
    secrets: dict[str, str] = Field(default={}, exclude=True)
    """Flat secret config keys (kubeconfigs, tokens) referenced by name elsewhere; never printed."""

    @model_validator(mode="after")
    def _cross_checks(self) -> FleetConfig:
        if self.role in ("all-in-one", "hub") and self.hub is None:
            raise _fail("missing_hub", "role '{role}' needs a hub section", role=self.role, loc=("hub",))
        if self.region_stacks and self.role != "hub":
            raise _fail("region_stacks", "only a hub stack (role hub) serves region stacks; remove it here",
                        loc=("regionStacks",))
        if self.identity_csr is not None and self.role != "region":
            raise _fail("region_stacks", "only a region stack has an identity CSR; remove it here",
                        loc=("identityCsr",))
        if self.role == "region":
            if self.hub_stack is None:
                raise _fail("role_keys", "role 'region' needs hubStack.stack (the hub stack to reference)",
                            loc=("hubStack",))
            if self.identity_csr is None:
                raise _fail("identity", "role 'region' needs its identity CSR: run `hubctl region-key <stack>` and "
                            "commit the CSR it prints here", loc=("identityCsr",))
            self._require_secret(IDENTITY_KEY, "< region.key (hubctl region-key sets it)", ("identityCsr",))
            if self.region is None or self.region not in self.regions:
                got = f"'{self.region}' is not a key of regions ({', '.join(self.regions) or 'none'}); " if \
                    self.region is not None else ""
                raise _fail("role_keys", "{got}role 'region' needs region: the key of regions this stack rolls out",
                            got=got, loc=("region",))
        self._check_role_keys()
        names = [m.name for m in self.members]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise _fail("dup", "member name '{n}' is used twice", n=name, loc=("members", i, "name"))
        for i, m in enumerate(self.members):
            if self.role == "region" and m.region != self.region:
                raise _fail("region", "this stack rolls out region {mine}; a member of {r} belongs in the region "
                            "stack with region: {r} (its hub reads it from there)", mine=self.region, r=m.region,
                            loc=("members", i, "region"))
            if m.region not in self.regions:
                raise _fail("region", "region '{r}' is not defined under regions ({known})", r=m.region,
                            known=", ".join(self.regions) or "none", loc=("members", i, "region"))
            try:
                versions.check_member_kubernetes(self.karmada.version, m.kubernetes_version)
            except ValueError as exc:
                raise _fail("skew", "{msg}", msg=str(exc), loc=("members", i, "kubernetesVersion")) from None
            if m.scheduler_estimator and self.role == "all-in-one" and not self.karmada.scheduler_estimators:
                raise _fail("estimator", "needs karmada.schedulerEstimators: true, or the scheduler never asks it",
                            loc=("members", i, "schedulerEstimator"))
            host = m.api_endpoint.removeprefix("https://").rstrip("/").rsplit(":", 1)[0].strip("[]")
            try:
                private = m.sync_mode == "Push" and not ipaddress.ip_address(host).is_global
            except ValueError:
                private = False  # a name: where it resolves is not known offline
            if private:
                raise _fail("push_endpoint", "{h} is not a public address: the hub's karmada-controller-manager dials "
                            "a Push member from the hub's own network, which does not reach it; use the member's "
                            "public API endpoint, or syncMode: Pull (its agent dials the hub)", h=host,
                            loc=("members", i, "apiEndpoint"))
            if m.sync_mode != "Pull" and m.cluster_id is not None:
                raise _fail("cluster_id", "only a Pull member's Cluster carries the member's kube-system UID (a Push "
                            "member's is read by the hub); remove clusterId", loc=("members", i, "clusterId"))
            if isinstance(m.credentials, SecretCredentials):
                self._require_secret(m.credentials.config_key, "< kubeconfig",
                                     ("members", i, "credentials", "configKey"))
            _check_zones(m, self.regions[m.region], i)
        self._check_region_networks()
        self._check_tenant_identity()
        if any(isinstance(m.credentials, CapiCredentials) for m in self.members):
            self._require_secret(self.capi.kubeconfig_config_key, "< capi-management.kubeconfig",
                                 ("capi", "kubeconfigConfigKey"))
        elif self.role == "hub" and self.capi.kubeconfig_config_key in self.secrets:
            # A CAPI credential where nothing reads it is one more place it leaks from (security review 2, C3).
            raise _fail("capi_unused", "a hub stack joins no members and reads no Cluster API credential; remove "
                        "karmada-hub:{k} from this file", k=self.capi.kubeconfig_config_key,
                        loc=("capi", "kubeconfigConfigKey"))
        backup = self.karmada.etcd.backup
        if backup is not None:
            for field in ("access_key_config_key", "secret_key_config_key"):
                self._require_secret(getattr(backup, field), "<value>", ("karmada", "etcd", "backup", _alias(field)))
            loc = ("karmada", "etcd", "backup", "encryptionKeyConfigKey")
            self._require_secret(backup.encryption_key_config_key, '"$(openssl rand -base64 32)"', loc)
            if len(self.secrets[backup.encryption_key_config_key].strip()) < 32:
                raise _fail("secret", "stack secret karmada-hub:{k} must be at least 32 characters (pulumi config set "
                            '--secret {k} "$(openssl rand -base64 32)")', k=backup.encryption_key_config_key, loc=loc)
        if self.karmada.replicas.apiserver is None:
            # one per hub server; a new KarmadaConfig on this instance only (defaults may be shared instances)
            replicas = self.karmada.replicas.model_copy(
                update={"apiserver": self.hub.servers if self.hub is not None else 2})
            object.__setattr__(self, "karmada", self.karmada.model_copy(update={"replicas": replicas}))
        if self.hub is not None:
            try:
                versions.check_hub_kubernetes(self.karmada.version, self.hub.k3s_version)
            except ValueError as exc:
                raise _fail("skew", "{msg}", msg=str(exc), loc=("hub", "k3sVersion")) from None
            for field in ("etcd",):
                reps = self.karmada.etcd.replicas
                if reps > self.hub.servers:
                    raise _fail("spread", "{r} etcd replicas need {r} hub servers (required anti-affinity); "
                                "hub.servers is {s}", r=reps, s=self.hub.servers, loc=("karmada", field, "replicas"))
            for comp, reps in self.karmada.replicas.model_dump(by_alias=True).items():
                if reps > self.hub.servers:
                    raise _fail("spread", "{r} replicas need {r} hub servers (required anti-affinity); hub.servers "
                                "is {s}", r=reps, s=self.hub.servers, loc=("karmada", "replicas", comp))
            if self.karmada.replicas.apiserver != self.hub.servers:
                raise _fail("spread", "must equal hub.servers ({s}): every server's public address serves the "
                            "karmada-apiserver from a local replica only (externalTrafficPolicy: Local keeps the "
                            "client address for the NetworkPolicy); set apiserver: {s} or leave it unset",
                            s=self.hub.servers, loc=("karmada", "replicas", "apiserver"))
        if self.role == "region" and self.karmada.addons.any_enabled:
            raise _fail("addons", "addons run on the hub: enable them in the hub stack, not in a region stack",
                        loc=("karmada", "addons"))
        member_names = set(names)
        for t_i, tenant in enumerate(self.tenants):
            for cluster in tenant.placement.weights:
                if cluster not in member_names:
                    raise _fail("member", "weights name unknown member '{c}'", c=cluster,
                                loc=("tenants", t_i, "placement", "weights"))
            for r in tenant.placement.preferred_regions:
                if r not in self.regions:
                    raise _fail("region", "preferredRegions names unknown region '{r}'", r=r,
                                loc=("tenants", t_i, "placement", "preferredRegions"))
            if tenant.quota is not None:
                _check_quota(tenant.quota, member_names, t_i)
        if self.role == "region" and self.monitoring.enabled:
            raise _fail("monitoring", "monitoring runs in the stack that owns the hub (role hub); enable it there "
                        "and remove it here", loc=("monitoring", "enabled"))
        self._check_tenant_features()
        self._check_regions_survive_loss()
        self._check_dns()
        return self

    def _check_role_keys(self) -> None:
        """Keys another role reads are refused here rather than ignored: a hub that silently drops the members
        written in its file would unjoin them on a live stack."""
        if self.role == "hub":
            for key, value in (("members", self.members), ("tenants", self.tenants), ("regions", self.regions)):
                if value:
                    raise _fail("role_keys", "a hub stack reads {k} from the region stacks in regionStacks, never "
                                "from its own file; move them to a region stack (role: region) or use role: "
                                "all-in-one", k=key, loc=(key,))
        if self.role != "region":
            for key, value in (("region", self.region), ("hubStack", self.hub_stack)):
                if value is not None:
                    raise _fail("role_keys", "only a region stack (role: region) has {k}; {role} stacks ignore "
                                "it: remove it here", k=key, role=self.role, loc=(key,))

    def _check_tenant_identity(self) -> None:
        """One tenant per namespace and per name: two policies selecting the same workloads conflict, and Karmada
        applies only one of them (the what-if table and the budget would describe the other)."""
        names: dict[str, int] = {}
        namespaces: dict[str, int] = {}
        for i, tenant in enumerate(self.tenants):
            if tenant.name in names:
                raise _fail("dup", "tenant name '{n}' is also tenants[{j}]'s; give each tenant its own name",
                            n=tenant.name, j=names[tenant.name], loc=("tenants", i, "name"))
            names[tenant.name] = i
            if tenant.namespace in namespaces:
                j = namespaces[tenant.namespace]
                raise _fail("dup", "'{ns}' is already tenant {other}'s namespace (tenants[{j}]); one tenant per "
                            "namespace: both policies would select the same workloads and Karmada would apply only "
                            "one", ns=tenant.namespace, other=self.tenants[j].name, j=j,
                            loc=("tenants", i, "namespace"))
            namespaces[tenant.namespace] = i

    def _check_region_networks(self) -> None:
        """Each region's members live on their own Hetzner network: a range copied from another region, or one
        network id with two ranges, is a copy-paste mistake the load balancers would act on."""
        nets = [(name, r) for name, r in self.regions.items() if r.network_cidr is not None]
        for i, (name, region) in enumerate(nets):
            for other, seen in nets[:i]:
                shared = region.network_id is not None and region.network_id == seen.network_id
                if shared and region.network_cidr != seen.network_cidr:
                    raise _fail("region_network", "networkId {id} is also region {o}'s, whose networkCidr is {c}; "
                                "one Hetzner network has one range: write {c} here, or the id of this region's own "
                                "network", id=region.network_id, o=other, c=str(seen.network_cidr),
                                loc=("regions", name, "networkCidr"))
                if not shared and region.network_cidr.overlaps(seen.network_cidr):  # type: ignore[union-attr]
                    raise _fail("region_network", "{c} overlaps region {o}'s network {oc}; give each region's "
                                "network its own range (or, if both regions' members share one network, the same "
                                "networkId)", c=str(region.network_cidr), o=other, oc=str(seen.network_cidr),
                                loc=("regions", name, "networkCidr"))

    def _check_tenant_features(self) -> None:
        """Each tenant feature has its gate on (a policy using a feature whose gate is off is accepted by the
        webhook and silently does nothing), names rows and groups that exist, and asks for nothing the hub lacks."""
        fleet_gates = set(self.karmada.feature_gates)
        karmada = self.karmada.version
        for gate in sorted(fleet_gates):
            if not versions.supports(karmada, gate):
                raise _fail("gates", "{g} needs Karmada {s} or newer (karmada.version is {v}, whose binaries exit on "
                            "an unknown gate); upgrade Karmada first or remove the gate", g=gate,
                            s=versions.ADDED_IN[gate], v=karmada, loc=("karmada", "featureGates"))
        classes = {c.name: c.value for c in self.karmada.priority_classes}
        if self.role == "region" and self.karmada.priority_classes:
            raise _fail("priority", "the hub stack creates the priority table; set karmada.priorityClasses there and "
                        "remove it here", loc=("karmada", "priorityClasses"))
        fleet_regions = set(self.regions) | {m.region for m in self.members}
        member_regions = {m.region for m in self.members}
        members = {m.name for m in self.members}
        used: set[str] = set()
        for t_i, tenant in enumerate(self.tenants):
            needs = tenant.feature_gates()
            used |= needs
            for gate in sorted(needs - fleet_gates):
                key = _GATE_FEATURE[gate]
                raise _fail("gates", "needs {g} in karmada.featureGates: while the gate is off the policy is "
                            "accepted and does nothing", g=gate, loc=("tenants", t_i, *key.split(".")))
            if tenant.placement.overflow and not versions.supports(karmada, "overflowAffinities"):
                raise _fail("overflow", "overflow groups need Karmada {s} or newer (karmada.version is {v}: its "
                            "PropagationPolicy has no overflowAffinities)", s=versions.ADDED_IN["overflowAffinities"],
                            v=karmada, loc=("tenants", t_i, "placement", "overflow"))
            if tenant.placement.overcommit_protection and self.role == "all-in-one" and \
                    not self.karmada.scheduler_estimators:
                raise _fail("gates", "needs karmada.schedulerEstimators: true (overcommit protection corrects the "
                            "estimators' answers)", loc=("tenants", t_i, "placement", "overcommitProtection"))
            if self.role != "region":
                for key, name in (("priorityClass", tenant.priority_class),
                                  ("critical.priorityClass", tenant.critical and tenant.critical.priority_class)):
                    if name is not None and name not in classes:
                        raise _fail("priority", "'{n}' is not in karmada.priorityClasses ({known}); the "
                                    "controller-manager would fail to build the tenant's bindings", n=name,
                                    known=", ".join(classes) or "none", loc=("tenants", t_i, *key.split(".")))
                if tenant.critical is not None:
                    base = classes.get(tenant.priority_class, 0) if tenant.priority_class else 0
                    if classes[tenant.critical.priority_class] <= base:
                        raise _fail("priority", "'{n}' ({v}) must be higher than the tenant's own priority ({b})",
                                    n=tenant.critical.priority_class, v=classes[tenant.critical.priority_class],
                                    b=base, loc=("tenants", t_i, "critical", "priorityClass"))
            for g_i, group in enumerate(tenant.placement.overflow):
                loc = ("tenants", t_i, "placement", "overflow", g_i)
                for region in group.regions:
                    if region not in fleet_regions:
                        raise _fail("overflow", "overflow group '{n}' names unknown region '{r}'", n=group.name,
                                    r=region, loc=(*loc, "regions"))
                if group.regions and not set(group.regions) & member_regions:
                    raise _fail("overflow", "overflow group '{n}' selects no member cluster (no member in {r})",
                                n=group.name, r=", ".join(group.regions), loc=(*loc, "regions"))
                for cluster in group.clusters:
                    if cluster not in members:
                        raise _fail("overflow", "overflow group '{n}' names unknown member '{c}'", n=group.name,
                                    c=cluster, loc=(*loc, "clusters"))
        estimator_gates = sorted(fleet_gates & {"SchedulingOvercommitProtection", "ResourceQuotaEstimate"})
        if estimator_gates and self.role != "region" and not self.karmada.scheduler_estimators:
            raise _fail("gates", "{g} acts through the scheduler-estimators; set karmada.schedulerEstimators: true",
                        g=", ".join(estimator_gates), loc=("karmada", "featureGates"))
        if self.role == "all-in-one":
            for gate in sorted(fleet_gates - used):
                raise _fail("gates", "{g} is on but no tenant uses it; remove it (alpha gates stay off unless a "
                            "tenant needs them)", g=gate, loc=("karmada", "featureGates"))

    def _check_regions_survive_loss(self) -> None:
        """Upstream #7455: when a reschedule after eviction finds no feasible cluster, graceful eviction purges
        the old copy and the workload is gone. minRegions is a hard rule, so it must stay satisfiable with
        one region down."""
        live = len({m.region for m in self.members})
        if live < 2:
            return
        for t_i, tenant in enumerate(self.tenants):
            p = tenant.placement
            if p.spread_by_region and p.min_regions > live - 1:
                raise _fail("min_regions", "{n} needs {need} regions with members so that losing one still leaves "
                            "{n} (upstream #7455 deletes the workload otherwise); the fleet has {live}: lower it "
                            "to {max}", n=p.min_regions, need=p.min_regions + 1, live=live, max=live - 1,
                            loc=("tenants", t_i, "placement", "minRegions"))

    def _check_dns(self) -> None:
        if self.dns is None:
            return
        if self.role == "region":
            if self.dns.txt_owner_id is not None:
                raise _fail("owner", "external-dns runs in the hub stack (role hub), which owns the fleet's names; "
                            "set txtOwnerId there and remove it here", loc=("dns", "txtOwnerId"))
            # The hub owns every record (external-dns with the zone's token, on the hub): a region's config holding
            # that token could edit every name of the zone (security review 2, H5).
            if self.dns.token_config_key in self.secrets:
                raise _fail("dns_token", "a region stack holds no DNS zone token (the hub stack owns every record); "
                            "remove karmada-hub:{k} from this file", k=self.dns.token_config_key,
                            loc=("dns", "tokenConfigKey"))
            return
        if self.dns.mode == "hetzner" and self.dns.txt_owner_id is None:
            raise _fail("owner_missing", "required: an external-dns owner id unique to this fleet (e.g. "
                        "{example})", example=self.hub.name if self.hub else "karmada-hub-prod",
                        loc=("dns", "txtOwnerId"))
        self._require_secret(self.dns.token_config_key, "<token>", ("dns", "tokenConfigKey"))

    def _require_secret(self, key: str, value_hint: str, loc: tuple[str | int, ...]) -> None:
        """A stack secret the config names must be set; the error says the command that sets it."""
        if key not in self.secrets:
            raise _fail("secret", "stack secret karmada-hub:{k} is not set (pulumi config set --secret {k} {hint})",
                        k=key, hint=value_hint, loc=loc)

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls) -> FleetConfig:
        """Read and validate this stack's `karmada-hub:*` config (pulumi.Config), or raise ConfigError."""
        stack = pulumi.get_stack()
        raw, secret_keys = _read_pulumi_config()
        return cls.from_mapping(raw, stack_file=f"stacks/Pulumi.{stack}.yaml", secret_keys=secret_keys)

    @classmethod
    def from_mapping(
        cls, raw: Mapping[str, Any], stack_file: str, secret_keys: frozenset[str] = frozenset()
    ) -> FleetConfig:
        """Validate `{key: value}` (keys without the `karmada-hub:` prefix); errors name `stack_file`."""
        data: dict[str, Any] = {}
        secrets: dict[str, str] = {}
        fields = {f.alias or n for n, f in cls.model_fields.items() if n != "secrets"}
        decoded = {k: _decode(v) for k, v in raw.items() if k in fields and k not in secret_keys}
        for key, value in raw.items():
            if key in secret_keys:
                if not isinstance(value, str):
                    raise ConfigError(f"{stack_file}: {PROJECT}:{key}: secret values must be strings")
                secrets[key] = value
            elif key in fields:
                data[key] = decoded[key]
            elif key in _named_secrets(decoded):
                raise ConfigError(f"{stack_file}: {PROJECT}:{key}: is in plain text, but it is a stack secret (the "
                                  f"config names it); remove it from the file and run `pulumi config set --secret "
                                  f"{key} <value>` so it is stored encrypted")
            else:
                known = ", ".join(sorted(fields))
                raise ConfigError(f"{stack_file}: {PROJECT}:{key}: unknown key{did_you_mean(key, fields)} "
                                  f"(known keys: {known})")
        data["secrets"] = secrets
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_one_line(exc, stack_file)) from None


def did_you_mean(word: str, options: Any) -> str:
    """` (did you mean sshCidrs?)` for a near miss (difflib), or nothing."""
    import difflib

    match = difflib.get_close_matches(str(word), sorted(str(o) for o in options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


_SECRET_NAME_FIELDS = ("configKey", "tokenConfigKey", "kubeconfigConfigKey", "accessKeyConfigKey",
                       "secretKeyConfigKey")


def _named_secrets(data: Mapping[str, Any]) -> set[str]:
    """Stack secrets the config refers to by name (explicitly or by a field's default), before validation."""
    names = {DnsConfig.model_fields["token_config_key"].default,
             CapiManagementConfig.model_fields["kubeconfig_config_key"].default,
             EtcdBackupConfig.model_fields["access_key_config_key"].default,
             EtcdBackupConfig.model_fields["secret_key_config_key"].default}
    stack: list[Any] = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                if k in _SECRET_NAME_FIELDS and isinstance(v, str):
                    names.add(v)
                stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)
    return names


_GATE_FEATURE: dict[str, str] = {
    "FederatedQuotaEnforcement": "quota.enforce",
    "WorkloadAffinity": "placement.workloadAffinity",
    "SchedulingOvercommitProtection": "placement.overcommitProtection",
    "ResourceQuotaEstimate": "placement.overcommitProtection",
    "PriorityBasedScheduling": "priorityClass",
    "PropagationPolicyPreemption": "critical",
    "StatefulFailoverInjection": "state",
}
"""Tenant gate -> the tenant key whose feature needs it (for the error's path)."""


def _check_quota(quota: QuotaConfig, members: set[str], t_i: int) -> None:
    from components.kube.quantity import parse_quantity

    totals: dict[str, float] = {}
    for a_i, assignment in enumerate(quota.static_assignments):
        loc = ("tenants", t_i, "quota", "staticAssignments", a_i)
        if assignment.cluster not in members:
            raise _fail("member", "cluster '{c}' is not a member", c=assignment.cluster, loc=(*loc, "cluster"))
        for res, qty in assignment.hard.items():
            if res not in quota.overall:
                raise _fail("quota", "resource '{r}' is not in quota.overall", r=res, loc=(*loc, "hard", res))
            totals[res] = totals.get(res, 0.0) + parse_quantity(qty)
    for res, total in totals.items():
        overall = parse_quantity(quota.overall[res])
        if total > overall + 1e-9:
            raise _fail("quota_sum", "staticAssignments sum to more {r} than overall ({total} > {overall})", r=res,
                        total=_fmt_number(total), overall=quota.overall[res],
                        loc=("tenants", t_i, "quota", "staticAssignments"))


def _check_zones(member: MemberConfig, region: RegionConfig, m_i: int) -> None:
    """A member's zones are Hetzner locations (or a location's data centre, as the Hetzner cloud controller labels
    nodes: fsn1-dc14), and the location of its region's load balancer."""
    for z_i, zone in enumerate(member.zones):
        loc = re.sub(r"-dc[0-9]+$", "", zone)
        where = ("members", m_i, "zones", z_i)
        if loc not in NETWORK_ZONES:
            raise _fail("zone", "'{z}' is not a Hetzner location{hint} (one of: {known})", z=zone[:40],
                        hint=did_you_mean(zone, NETWORK_ZONES).replace(" (", "; ").rstrip(")"),
                        known=", ".join(NETWORK_ZONES), loc=where)
        if loc != region.location:
            raise _fail("zone", "{z} is not where region {r} is (location {rl}): a region's members sit behind its "
                        "load balancer there; write zones: [{rl}], or put the member in a region located at {zl}",
                        z=zone, r=member.region, rl=region.location, zl=loc, loc=where)


def _fmt_number(x: float) -> str:
    return str(int(x)) if x == int(x) else f"{x:g}"


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON strings; plain strings stay strings."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") or stripped in ("true", "false") or re.fullmatch(r"-?\d+", stripped):
            try:
                return json.loads(stripped)
            except json.JSONDecodeError:
                return value
    return value


def _read_pulumi_config() -> tuple[dict[str, Any], frozenset[str]]:
    """Every `karmada-hub:*` key the engine (or hubctl plan) handed the program, and which are secret."""
    from pulumi.runtime import config as rc

    merged: dict[str, Any] = {**rc.get_config_env(), **rc.CONFIG.get()}
    secret_keys = set(rc.get_config_secret_keys_env()) | set(rc._SECRET_KEYS.get())
    prefix = f"{PROJECT}:"
    raw = {k[len(prefix):]: v for k, v in merged.items() if k.startswith(prefix)}
    return raw, frozenset(k[len(prefix):] for k in secret_keys if k.startswith(prefix))


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("capi", "secret") and out.endswith("credentials"):
            continue  # pydantic's discriminator tag, not a key the user wrote
        elif any(c in str(part) for c in "[(="):
            break  # pydantic's validator internals (union members), not a key the user wrote
        else:
            out += f".{part}" if out else str(part)
    return out


def _one_line(exc: ValidationError, stack_file: str) -> str:
    """The first error of a pydantic ValidationError as one line naming file, key path and fix."""
    err = exc.errors(include_url=False)[0]
    ctx = err.get("ctx") or {}
    loc = tuple(ctx.get("loc", ())) or tuple(err["loc"])
    if ctx.get("loc"):
        loc = tuple(ctx["loc"])
    elif ctx.get("loc_key"):  # a model validator naming the field (or the path below it) it refuses
        key = ctx["loc_key"]
        loc = (*err["loc"], *((key,) if isinstance(key, str) else key))
    elif err["type"] in ("world_open",):
        loc = (*err["loc"],)
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        known = _keys_at(tuple(err["loc"])[:-1])
        hint = did_you_mean(err["loc"][-1], known)
        if not hint and known:
            hint = f" (known keys here: {', '.join(sorted(known))})"
        message = f"unknown key{hint}"
    elif err["type"] == "missing":
        message = "is required"
    elif err["type"] not in _CUSTOM_TYPES and (words := _in_words(err)) is not None:
        message = words
        if isinstance(err.get("input"), bool) and err["type"] in ("literal_error", "string_type"):
            message += "; YAML reads yes/no/on/off/true/false unquoted as booleans: quote the value"
    elif err["type"] not in _CUSTOM_TYPES and "input" in err and not isinstance(err["input"], dict | list):
        message = f"{message[0].lower()}{message[1:]} (got {_shown(err['input'])})"
        if isinstance(err["input"], bool) and err["type"] in ("literal_error", "string_type"):
            message += "; YAML reads yes/no/on/off/true/false unquoted as booleans: quote the value"
    message = message.replace("\n", " ")
    path = _path(loc)
    return f"{stack_file}: {PROJECT}:{path}: {message}"


PATTERN_WORDS: dict[str, str] = {
    DNS_LABEL: "a lowercase DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit, like eu-fsn",
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$":
        "an OpenSSH public key line: its type (ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp256/384/521), a space, the "
        "base64 key and an optional comment, as `ssh-keygen -y -f <keyfile>` prints it",
    r"^[a-z0-9][a-z0-9._-]{0,62}$": "a Hetzner image name like ubuntu-24.04",
    r"^[0-9a-f]{64}$": "a sha256: 64 lowercase hex digits",
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$":
        "an apiVersion as a manifest writes it, like apps/v1 or v1 (group/version, or the version alone)",
    r"^[A-Z][A-Za-z0-9]{0,62}$": "a kind as a manifest writes it, like Deployment (starts with a capital letter)",
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$":
        "a lowercase DNS name like api.hub.example.com, without a scheme or a trailing dot",
    r"^https://[a-z0-9.-]+(:\d+)?$": "https://host[:port] with nothing after it, like "
                                     "https://fsn1.your-objectstorage.com",
    r"^[a-z0-9-]+$": "lowercase letters, digits and '-', like fsn1",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": "an S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', "
                                          "starting and ending with a letter or digit",
    r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$": "an object key prefix: letters, digits, '.', '_' and '-' in "
                                            "'/'-separated parts, without a leading or trailing '/'",
    r"^[a-zA-Z][a-zA-Z0-9]*$": "the name of a stack config key: a letter, then letters and digits, like "
                              "etcdBackupAccessKey (not the secret itself)",
    r"^[1-9][0-9]*(Mi|Gi|Ti)$": "a whole size in Kubernetes units Mi, Gi or Ti, like 8Gi (not GB)",
    r"^[1-9][0-9]*(Mi|Gi)$": "a whole size in Kubernetes units Mi or Gi, like 2Gi (not GB)",
    r"^([1-9][0-9]*m|[0-9]+(\.[0-9]+)?)$": "CPU as millicores like 100m, or cores like 0.5",
    r"^https://[^/?#@]+(:\d+)?/?$": "https://host:port of an API server, like https://member.example.com:6443 "
                                    "(https, no path, no credentials)",
    r"^[a-z0-9.-]+(:\d+)?(/[a-z0-9._/-]+)?$": "a lowercase registry host with an optional port and path, like "
                                             "registry.example.com/mirror (no scheme)",
    r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$": "a Kubernetes quantity like \"40\", 500m or 80Gi (binary "
                                                   "Ki/Mi/Gi/Ti or decimal k/M/G/T; not GB)",
    LABEL_KEY: "a Kubernetes label key like tier or example.com/tier",
    r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$":
        "a Kubernetes label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$":
        "a lowercase DNS subdomain: DNS labels joined by '.', like fleet-critical",
    r"^\{\..+\}$": "a JSONPath in braces, relative to the workload's .status, like {.observedGeneration}",
    r"^[a-z0-9][-a-z0-9]*$": "lowercase letters, digits and '-', like karmada-hub-prod",
    r"^https://[^\s?#]+[^/\s?#]$": "an https:// URL without a trailing '/', query or fragment",
    r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$":
        "a fully qualified stack org/project/stack, like organization/karmada-hub/prod-hub",
    r"^[A-Za-z0-9_.-]+$": "a stack name: the <name> of stacks/Pulumi.<name>.yaml",
    r"^-----BEGIN CERTIFICATE REQUEST-----\n[\s\S]+-----END CERTIFICATE REQUEST-----\n?$":
        "a PEM certificate request from -----BEGIN CERTIFICATE REQUEST----- to -----END CERTIFICATE REQUEST----- "
        "(what `hubctl region-key <stack>` prints, under identityCsr: |)",
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$":
        "a lowercase UUID like 0d92e743-09b2-41fb-9061-9068cc804212: the member's kube-system UID (`kubectl get ns "
        "kube-system -o jsonpath='{.metadata.uid}'`, or the region stack's output pullClusterIds)",
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$":
        "a mailbox as a DNS name, its first '.' standing for '@', like hostmaster.example.com",
}
"""What to write, for every `pattern=` of the models: an error shows these words, never the regular expression."""

_FIXES: tuple[Any, ...] = (
    str.lower,
    lambda v: v.rstrip("."),
    lambda v: "https://" + v.removeprefix("http://"),
    lambda v: v.rstrip("/"),
    lambda v: re.sub(r"([0-9])([KMGT])B?$", r"\1\2i", v),
    lambda v: re.sub(r"^[a-z]+://", "", v),
    lambda v: re.sub(r"^(https://[^/]+)/.*$", r"\1", v),
)
"""Edits that turn a common near miss into a match: the error offers the edited value."""


def _in_words(err: Any) -> str | None:
    """Pydantic's message for a built-in check, in the words of a stack file and with what to write instead;
    None to keep pydantic's own (bounds like `greater than or equal to 30` already say it)."""
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    got = f" (got {_shown(value)})" if not isinstance(value, dict | list) else f" (got a {_yaml_kind(value)})"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        words = PATTERN_WORDS.get(pattern, "in the form docs/configuration.md gives for this key")
        hint = ""
        if isinstance(value, str):
            for fix in _FIXES:
                fixed = fix(value)
                if fixed != value and re.fullmatch(pattern, fixed):
                    hint = f"; did you mean '{fixed[:80]}'?"
                    break
        return f"must be {words}{got}{hint}"
    if value is None and kind.endswith("_type"):
        return "is empty (nothing after the colon): write a value, or remove the key for its default"
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"must be text, but YAML read the number {value}: quote it (\"{value}\")"
    if kind == "string_type":
        return f"must be text{got}"
    if kind in ("model_type", "model_attributes_type"):
        return f"must be a mapping of this key's settings (docs/configuration.md lists them){got}"
    if kind == "dict_type":
        example = "{tier: standard}" if err["loc"][-1:] == ("labels",) else "{name: value}"
        if isinstance(value, list) and value and all(isinstance(v, str) and "=" in v for v in value):
            example = "{" + ", ".join(": ".join(v.split("=", 1)) for v in value[:3]) + "}"
        return f"must be a mapping of key: value, like {example}{got}"
    if kind == "list_type":
        example = f"[{value}]" if isinstance(value, str | int | float) and not isinstance(value, bool) else "[a, b]"
        return f"must be a list, like {example[:80]}{got}"
    if kind in ("too_short", "too_long") and ctx.get("field_type") in ("List", "Dictionary"):
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        what = "item" if ctx.get("field_type") == "List" else "entry"
        return (f"must have at {'least' if kind == 'too_short' else 'most'} {bound} {what}{'s' if bound != 1 else ''} "
                f"(got {ctx.get('actual_length')})")
    comment = "; a # starts a comment only after a space" if isinstance(value, str) and "#" in value else ""
    unit = re.fullmatch(r"\s*([0-9]+)\s*(s|m|h)\s*", value) if isinstance(value, str) else None
    if unit is not None:  # a Kubernetes-style duration where the key counts seconds
        seconds = int(unit.group(1)) * {"s": 1, "m": 60, "h": 3600}[unit.group(2)]
        comment = f"; the value is in seconds, without a unit: write {seconds}"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"must be a whole number like 3{got}{comment}"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number like 0.5{got}"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false{got}"
    if kind == "literal_error":
        allowed = [a.strip("'") for a in re.findall(r"'[^']*'", str(ctx.get("expected", "")))]
        near = next((a for a in allowed if isinstance(value, str) and a.lower() == value.lower()), None)
        hint = f"; did you mean {near}?" if near else did_you_mean(value, allowed).replace(" (", "; ").rstrip(")")
        return f"must be one of {', '.join(allowed)}{got}{hint}"
    bounds = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("<=", "le"),
              "less_than": ("<", "lt")}
    if kind in bounds:
        sign, key = bounds[kind]
        return f"must be {sign} {ctx.get(key)}{got}"
    if kind == "union_tag_invalid":
        tags = ", ".join(t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(","))
        return (f"{str(ctx.get('discriminator', 'source')).strip(chr(39))} must be one of {tags} (got "
                f"{_shown(ctx.get('tag'))})")
    if kind == "union_tag_not_found":
        return f"needs {ctx.get('discriminator', 'source').strip(chr(39))}: one of capi, secret"
    return None


def _shown(value: Any) -> str:
    """A rejected input as an error may echo it: never key material or a URL's password, never a screenful."""
    text = str(value)
    if "PRIVATE KEY" in text or "-----BEGIN" in text:
        return "a value that looks like key material (not shown)"
    text = re.sub(r"(://)[^/@\s]*:[^/@\s]*@", r"\1<credentials not shown>@", text)
    if len(text) > 100:
        text = text[:60] + "…"
        return repr(text)
    return repr(value) if text == str(value) else repr(text)


def _keys_at(loc: tuple[Any, ...]) -> set[str]:
    """The keys the model at `loc` (a pydantic error location) accepts; empty when it cannot be resolved."""
    import types
    import typing

    def strip(annotation: Any) -> list[Any]:
        """Optional/Annotated/union members, each as itself."""
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            return strip(typing.get_args(annotation)[0])
        if origin in (typing.Union, types.UnionType):
            return [a for arg in typing.get_args(annotation) if arg is not type(None) for a in strip(arg)]
        return [annotation]

    current: list[Any] = [FleetConfig]
    for part in loc:
        containers = [a for a in current if typing.get_origin(a) in (list, dict)]
        if containers:
            current = strip(typing.get_args(containers[0])[-1])
            continue
        models = [a for a in current if isinstance(a, type) and issubclass(a, Model)]
        if not models or not isinstance(part, str):
            return set()
        tagged = [m for m in models if "source" in m.model_fields and m.model_fields["source"].default == part]
        if tagged:  # a discriminated union's tag (credentials.capi)
            current = tagged
            continue
        field = next((f for n, f in models[0].model_fields.items() if part in (f.alias, n)), None)
        if field is None:
            return set()
        current = strip(field.annotation)
    models = [a for a in current if isinstance(a, type) and issubclass(a, Model)]
    return {f.alias or n for n, f in models[0].model_fields.items() if n != "secrets"} if models else set()


_CUSTOM_TYPES = frozenset(
    {"world_open", "subnet", "private", "quorum", "location", "zones", "deprecated", "k3s", "lb_location", "ha",
     "validity", "k8s_version", "interval", "timeout", "version", "ttl", "grace", "threshold", "missing_hub",
     "dup", "region", "skew", "secret", "spread", "member", "quota", "quota_sum", "overflow", "workload_affinity",
     "placement", "state", "app_failover", "stateful", "gates", "priority", "descheduler", "whatif",
     "hold_down", "mode", "cidr", "world_cover", "private_key", "spread_group", "server_type",
     "label", "reserved_ns", "etcd_quota", "monitoring", "region_stacks", "quota_zero", "k3s_cidr", "spread_quorum",
     "role_keys", "region_network", "zone", "estimator", "ssh_key", "push_endpoint", "ingress", "secondary", "owner"}
)


# ---------------------------------------------------------------------------------- other stacks' files


def read_stack_file(path: Any, stack_file: str) -> FleetConfig:
    """Another stack's `stacks/Pulumi.<stack>.yaml`, validated as that stack's FleetConfig: what a hub stack
    reads of its region stacks (members, tenants, identity CSR). Read with the same bounds as the CLI's own reads
    (components/kube/safeyaml.py) and no aliases at all (Pulumi never writes them); `secure:` values stay
    placeholders (a hub cannot decrypt a region's secrets and never needs them); errors name `stack_file`."""
    from pathlib import Path

    from components.kube import safeyaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{stack_file}: no such stack file")
    try:
        doc = safeyaml.load(path.read_bytes(), max_aliases=0) or {}
    except safeyaml.YamlRefused as exc:
        raise ConfigError(f"{stack_file}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{stack_file}: must be a mapping with a `config:` section")
    raw: dict[str, Any] = {}
    secrets: set[str] = set()
    for key, value in (doc.get("config") or {}).items():
        key = str(key)
        if ":" not in key:
            key = f"{PROJECT}:{key}"
        namespace, _, name = key.partition(":")
        if namespace != PROJECT:
            continue
        if isinstance(value, dict) and set(value) == {"secure"}:
            raw[name] = f"{OFFLINE_PLACEHOLDER}{name}"
            secrets.add(name)
        else:
            raw[name] = value
    return FleetConfig.from_mapping(raw, stack_file, frozenset(secrets))

