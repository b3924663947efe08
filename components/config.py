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
    ConfigDict,
    Field,
    ValidationError,
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
WORLD = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
ClusterName = Annotated[str, Field(pattern=DNS_LABEL, max_length=48)]
Seconds = Annotated[float, Field(gt=0)]


class ConfigError(Exception):
    """A user mistake in stack configuration; `str()` is the one line to print."""


def _fail(kind: str, message: str, **ctx: Any) -> PydanticCustomError:
    return PydanticCustomError(kind, message, ctx)


def _alias(name: str) -> str:
    """snake_case -> camelCase, keeping `k3s` as people write it (`k3sVersion`, not `k3SVersion`)."""
    return to_camel(name).replace("k3S", "k3s")


class Model(BaseModel):
    """Base for every config model: camelCase keys in YAML, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=_alias, populate_by_name=True, str_strip_whitespace=True
    )


# ---------------------------------------------------------------------------------------------- hub


class FirewallConfig(Model):
    ssh_cidrs: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = Field(min_length=1)
    """Who may reach the servers' SSH port."""
    api_cidrs: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = Field(min_length=1)
    """Who may reach 6443 (k3s) and 5443 (karmada-apiserver) on the servers' public addresses."""
    allow_world: bool = False
    """Must be true for 0.0.0.0/0 or ::/0 to be accepted in either list."""

    @model_validator(mode="after")
    def _no_world_unless_explicit(self) -> FirewallConfig:
        if self.allow_world:
            return self
        for field in ("ssh_cidrs", "api_cidrs"):
            for net in getattr(self, field):
                if net in WORLD:
                    raise _fail(
                        "world_open",
                        "{net} opens the port to the whole internet; list your admin CIDRs or set "
                        "hub.firewall.allowWorld: true",
                        net=str(net),
                    )
        return self


class LoadBalancerConfig(Model):
    type: Literal["lb11", "lb21", "lb31"] = "lb11"
    location: str | None = None
    """Defaults to the first hub location."""
    public_interface: bool = True


class NetworkConfig(Model):
    cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/16")
    subnet: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.1.0/24")

    @model_validator(mode="after")
    def _subnet_inside(self) -> NetworkConfig:
        if not self.subnet.subnet_of(self.cidr):
            raise _fail("subnet", "subnet {subnet} is not inside the network {cidr}", subnet=str(self.subnet),
                        cidr=str(self.cidr))
        if not self.cidr.is_private:
            raise _fail("private", "network {cidr} must be a private (RFC 1918) range", cidr=str(self.cidr))
        return self


class SshKeyConfig(Model):
    name: DnsLabel
    public_key: str = Field(pattern=r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$")


class HubConfig(Model):
    name: DnsLabel = "karmada-hub"
    locations: list[str] = Field(default=["fsn1", "nbg1", "hel1"], min_length=1)
    server_type: str = "cx23"
    servers: int = 3
    image: str = "ubuntu-24.04"
    k3s_version: str = versions.K3S_VERSION
    k3s_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """Optional pin of the k3s binary's sha256; the release's own sha256sum file is checked either way."""
    api_dns_name: str | None = Field(default=None, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$")
    ssh_keys: list[SshKeyConfig] = Field(min_length=1)
    firewall: FirewallConfig
    load_balancer: LoadBalancerConfig = LoadBalancerConfig()
    network: NetworkConfig = NetworkConfig()
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


class ReplicaConfig(Model):
    apiserver: int = 2
    aggregated_apiserver: int = 2
    kube_controller_manager: int = 2
    scheduler: int = 2
    controller_manager: int = 2
    webhook: int = 2

    @field_validator("*")
    @classmethod
    def _ha(cls, v: int) -> int:
        if v < 2:
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
    prefix: str = Field(default="karmada-etcd", pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
    retain: int = Field(default=28, ge=1, le=1000)
    """Snapshots kept per stack; older ones are deleted after each successful upload."""
    access_key_config_key: str = Field(default="etcdBackupAccessKey", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    secret_key_config_key: str = Field(default="etcdBackupSecretKey", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
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
    replicas: int = 3
    storage_class: str = "local-path"
    storage_size: str = Field(default="8Gi", pattern=r"^[1-9][0-9]*(Mi|Gi|Ti)$")
    backup: EtcdBackupConfig | None = None
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
    leaf_validity_hours: int = Field(default=8760, ge=720, le=43800)

    @model_validator(mode="after")
    def _leaf_inside_ca(self) -> PkiConfig:
        if self.leaf_validity_hours >= self.ca_validity_hours:
            raise _fail("validity", "leafValidityHours ({leaf}) must be shorter than caValidityHours ({ca})",
                        leaf=self.leaf_validity_hours, ca=self.ca_validity_hours)
        return self


class KarmadaConfig(Model):
    version: str = versions.KARMADA_VERSION
    replicas: ReplicaConfig = ReplicaConfig()
    etcd: EtcdConfig = EtcdConfig()
    pki: PkiConfig = PkiConfig()
    scheduler_estimators: bool = False
    """The scheduler asks per-member scheduler-estimators for available replicas (members opt in with
    `schedulerEstimator: true`; the hub's stack turns the scheduler side on, so prod-hub sets this)."""

    @field_validator("version")
    @classmethod
    def _in_matrix(cls, v: str) -> str:
        if v not in versions.RELEASES:
            raise _fail("version", "Karmada {v} is not in the compatibility matrix (supported: {known})", v=v,
                        known=", ".join(sorted(versions.RELEASES)))
        return v

    @property
    def release(self) -> versions.KarmadaRelease:
        return versions.RELEASES[self.version]


# ------------------------------------------------------------------------------------------ members


class CapiCredentials(Model):
    """Read the `<cluster>-kubeconfig` Secret (key `value`) from the CAPI management cluster."""

    source: Literal["capi"] = "capi"
    cluster: ClusterName
    namespace: DnsLabel = "default"


class SecretCredentials(Model):
    """A kubeconfig stored as a stack secret under `karmada-hub:<configKey>` (clusters not made by CAPI)."""

    source: Literal["secret"] = "secret"
    config_key: str = Field(pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")


class IngressConfig(Model):
    """Where the member's ingress controller listens, for the regional load balancer."""

    node_selector: str = "node-role.kubernetes.io/ingress=true"
    http_node_port: int = Field(default=30080, ge=30000, le=32767)
    https_node_port: int = Field(default=30443, ge=30000, le=32767)


class MemberConfig(Model):
    name: ClusterName
    region: DnsLabel
    zones: list[str] = []
    sync_mode: Literal["Push", "Pull"] = "Push"
    kubernetes_version: str
    api_endpoint: str = Field(pattern=r"^https://[^/?#@]+(:\d+)?/?$")
    credentials: CapiCredentials | SecretCredentials = Field(discriminator="source")
    labels: dict[str, str] = {}
    scheduler_estimator: bool = False
    ingress: IngressConfig = IngressConfig()

    @field_validator("kubernetes_version")
    @classmethod
    def _version_shape(cls, v: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+$", v):
            raise _fail("k8s_version", "must be a Kubernetes version like v1.33.4 (got '{v}')", v=v)
        return v


# ------------------------------------------------------------------------------------------ regions


class HealthCheckConfig(Model):
    interval: int = 5
    timeout: int = 3
    retries: int = Field(default=2, ge=0, le=5)

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
    load_balancer_type: Literal["lb11", "lb21", "lb31"] = "lb11"
    health_check: HealthCheckConfig = HealthCheckConfig()
    proxy_protocol: bool = False
    registry_mirror: str | None = Field(default=None, pattern=r"^[a-z0-9.-]+(:\d+)?(/[a-z0-9._/-]+)?$")
    network_cidr: ipaddress.IPv4Network | None = None
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

Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")]


class StaticAssignment(Model):
    cluster: ClusterName
    hard: dict[str, Quantity]


class QuotaConfig(Model):
    overall: dict[str, Quantity] = Field(min_length=1)
    static_assignments: list[StaticAssignment] = []
    enforce: bool = True
    """Turns on FederatedQuotaEnforcement (controller-manager and webhook) for the fleet."""


class PlacementConfig(Model):
    replica_scheduling: Literal["Duplicated", "Divided"] = "Duplicated"
    weighting: Literal["static", "dynamic"] = "static"
    """Divided only: static weights per cluster, or dynamic by available replicas."""
    weights: dict[str, Annotated[int, Field(ge=1)]] = {}
    """Divided + static: cluster name -> weight (clusters not listed get none)."""
    preferred_regions: list[str] = []
    """First affinity group; the fleet-wide fallback group always follows it."""
    spread_by_region: bool = True
    min_regions: int = Field(default=1, ge=1)
    toleration_seconds: int | None = Field(default=None, ge=0, le=3600)
    """Tolerate the failover taint this long before eviction (None: evict at once)."""


class TenantConfig(Model):
    name: DnsLabel
    namespace: DnsLabel
    placement: PlacementConfig = PlacementConfig()
    quota: QuotaConfig | None = None


# --------------------------------------------------------------------------------------- dns/traffic


class DnsConfig(Model):
    domain: str = Field(pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$")
    ttl: int = 30
    txt_owner_id: str | None = Field(default=None, pattern=r"^[a-z0-9][-a-z0-9]*$")
    """external-dns ownership id, unique to the fleet. Only the stack that runs external-dns (role
    all-in-one or hub) sets it: two owners of one name would fight over it."""
    token_config_key: str = Field(default="hetznerDnsToken", pattern=r"^[a-zA-Z][a-zA-Z0-9]*$")
    """Stack secret holding the Hetzner Cloud API token the webhook uses."""
    interval_seconds: int = Field(default=60, ge=10, le=600)
    """external-dns reconcile interval (it also reacts to events)."""
    refresh_seconds: int = Field(default=15, ge=5, le=120)
    """Status refresher period: how often the hub looks for a dead member's address still in an Ingress or
    Service status (agents/status_refresher.py, docs/traffic-failover.md §2.1)."""

    @field_validator("ttl")
    @classmethod
    def _short_ttl(cls, v: int) -> int:
        if v < 1 or v > 60:
            raise _fail("ttl", "must be 1..60 seconds so clients follow failover quickly (got {v})", v=v)
        return v


class MonitoringConfig(Model):
    """Monitoring that ships with the hub, for a Prometheus Operator the user already runs on the hub's host
    cluster (its PodMonitor and PrometheusRule CRDs, and kube-state-metrics for the workload and backup alerts).
    components/operations/monitoring.py; the alerts' runbook is docs/runbooks/monitoring.md."""

    enabled: bool = False
    runbook_base_url: str | None = Field(default=None, pattern=r"^https://[^\s?#]+[^/\s?#]$")
    """Where this repository's docs/runbooks are served (alerts link `<this>/monitoring.md#<alert>`), e.g.
    https://github.com/<org>/karmada-hub/blob/main/docs/runbooks."""
    labels: dict[str, str] = {}
    """Added to every PodMonitor and PrometheusRule, so the Prometheus's selectors pick them up (e.g.
    `release: kube-prometheus-stack`)."""
    prometheus_namespace: DnsLabel = "monitoring"
    prometheus_pod_labels: dict[str, str] = {"app.kubernetes.io/name": "prometheus"}
    """Where Prometheus runs: the source of the scrape flows a NetworkPolicy must allow (docs/monitoring.md)."""
    scrape_interval_seconds: int = Field(default=30, ge=10, le=300)

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
    cluster_failure_threshold: int = Field(default=30, ge=10, le=300)
    cluster_success_threshold: int = Field(default=30, ge=10, le=300)
    cluster_monitor_period: int = Field(default=5, ge=1, le=60)
    cluster_monitor_grace_period: int = Field(default=40, ge=10, le=600)
    cluster_lease_duration: int = Field(default=40, ge=10, le=600)
    resource_eviction_rate: float = Field(default=0.5, gt=0, le=50)
    graceful_eviction_timeout: int = Field(default=600, ge=60, le=3600)
    purge_mode: Literal["Gracefully", "Directly"] = "Gracefully"
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


# --------------------------------------------------------------------------------------------- root

ROLES = ("all-in-one", "hub", "region")


class FleetConfig(Model):
    role: Literal["all-in-one", "hub", "region"] = "all-in-one"
    hub: HubConfig | None = None
    karmada: KarmadaConfig = KarmadaConfig()
    members: list[MemberConfig] = []
    regions: dict[DnsLabel, RegionConfig] = {}
    tenants: list[TenantConfig] = []
    dns: DnsConfig | None = None
    failover: FailoverConfig = FailoverConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    hub_stack: HubStackRef | None = None
    capi: CapiManagementConfig = CapiManagementConfig()
    region: DnsLabel | None = None
    """For `region` stacks: which region this stack rolls out."""
    secrets: dict[str, str] = Field(default={}, exclude=True)
    """Flat secret config keys (kubeconfigs, tokens) referenced by name elsewhere; never printed."""

    @model_validator(mode="after")
    def _cross_checks(self) -> FleetConfig:
        if self.role in ("all-in-one", "hub") and self.hub is None:
            raise _fail("missing_hub", "role '{role}' needs a hub section", role=self.role, loc=("hub",))
        if self.role == "region":
            if self.hub_stack is None:
                raise _fail("missing", "role 'region' needs hubStack.stack (the hub stack to reference)",
                            loc=("hubStack",))
            if self.region is None or self.region not in self.regions:
                raise _fail("missing", "role 'region' needs region: one of the keys of regions",
                            loc=("region",))
        names = [m.name for m in self.members]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise _fail("dup", "member name '{n}' is used twice", n=name, loc=("members", i, "name"))
        for i, m in enumerate(self.members):
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
            if isinstance(m.credentials, SecretCredentials):
                self._require_secret(m.credentials.config_key, "< kubeconfig",
                                     ("members", i, "credentials", "configKey"))
        backup = self.karmada.etcd.backup
        if backup is not None:
            for field in ("access_key_config_key", "secret_key_config_key"):
                self._require_secret(getattr(backup, field), "<value>", ("karmada", "etcd", "backup", _alias(field)))
            loc = ("karmada", "etcd", "backup", "encryptionKeyConfigKey")
            self._require_secret(backup.encryption_key_config_key, '"$(openssl rand -base64 32)"', loc)
            if len(self.secrets[backup.encryption_key_config_key].strip()) < 32:
                raise _fail("secret", "stack secret karmada-hub:{k} must be at least 32 characters (pulumi config set "
                            '--secret {k} "$(openssl rand -base64 32)")', k=backup.encryption_key_config_key, loc=loc)
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
        self._check_regions_survive_loss()
        self._check_dns()
        return self

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
            return
        if self.dns.txt_owner_id is None:
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
        for key, value in raw.items():
            if key in secret_keys:
                if not isinstance(value, str):
                    raise ConfigError(f"{stack_file}: {PROJECT}:{key}: secret values must be strings")
                secrets[key] = value
            elif key in fields:
                data[key] = _decode(value)
            else:
                known = ", ".join(sorted(fields))
                raise ConfigError(f"{stack_file}: {PROJECT}:{key}: unknown key (known keys: {known})")
        data["secrets"] = secrets
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_one_line(exc, stack_file)) from None


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
    elif err["type"] in ("world_open",):
        loc = (*err["loc"],)
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] == "missing":
        message = "is required"
    elif err["type"] not in _CUSTOM_TYPES and "input" in err and not isinstance(err["input"], dict | list):
        message = f"{message[0].lower()}{message[1:]} (got {err['input']!r})"
    message = message.replace("\n", " ")
    path = _path(loc)
    return f"{stack_file}: {PROJECT}:{path}: {message}"


_CUSTOM_TYPES = frozenset(
    {"world_open", "subnet", "private", "quorum", "location", "zones", "deprecated", "k3s", "lb_location", "ha",
     "validity", "k8s_version", "interval", "timeout", "version", "ttl", "grace", "threshold", "missing_hub",
     "dup", "region", "skew", "secret", "spread", "member", "quota", "quota_sum", "etcd_quota", "monitoring"}
)
