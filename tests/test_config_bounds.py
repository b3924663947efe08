"""components/config.py at its edges: every numeric bound accepts its limit and refuses one step past it, every
default is the documented one, the JSON schema (docs/stack.schema.json) states the bounds the program enforces,
and the cross-field rules hold exactly at their boundary. A bound moved by one, a `>=` turned into `>`, a default
changed: one of these fails (they are the tests the mutation run gives the `config` target, with test_config.py).
"""

from __future__ import annotations

import copy
import ipaddress
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from components import config as c
from components.config import ConfigError, FleetConfig
from tests.support.tools import load_dev_raw, stack_values

BACKUP = {"endpoint": "https://fsn1.your-objectstorage.com", "region": "fsn1", "bucket": "karmada-backups"}

# (model, key, default, lowest accepted, highest accepted, step, other keys the edge needs)
BOUNDS: list[tuple[type[BaseModel], str, Any, Any, Any, Any, dict[str, Any]]] = [
    (c.FailoverConfig, "clusterStatusUpdateFrequency", 10, 5, 60, 1, {"clusterFailureThreshold": 300}),
    (c.FailoverConfig, "clusterFailureThreshold", 30, 10, 300, 1, {}),
    (c.FailoverConfig, "clusterSuccessThreshold", 30, 10, 300, 1, {}),
    (c.FailoverConfig, "clusterMonitorPeriod", 5, 1, 60, 1, {}),
    (c.FailoverConfig, "clusterMonitorGracePeriod", 60, 10, 600, 1, {"clusterLeaseDuration": 10}),
    (c.FailoverConfig, "clientReadIdleSeconds", 10, 5, 60, 1, {}),
    (c.FailoverConfig, "clientPingTimeoutSeconds", 5, 1, 60, 1, {}),
    (c.FailoverConfig, "clusterLeaseDuration", 40, 10, 600, 1, {"clusterMonitorGracePeriod": 600}),
    (c.FailoverConfig, "gracefulEvictionTimeout", 600, 60, 3600, 1, {}),
    (c.FailoverConfig, "bindingsPerCluster", 50, 1, 100000, 1, {}),
    (c.FailoverConfig, "podStartSeconds", 60, 0, 1800, 1, {}),
    (c.FailoverConfig, "rtoSeconds", None, 30, None, 1, {}),
    (c.DnsFailoverConfig, "probePeriodSeconds", 3, 3, 60, 1, {}),
    (c.DnsFailoverConfig, "probeTimeoutSeconds", 2, 1, 10, 1, {"probePeriodSeconds": 60}),
    (c.DnsFailoverConfig, "probeAttempts", 2, 1, 4, 1, {}),
    (c.DnsFailoverConfig, "failureThreshold", 3, 2, 10, 1, {"successThreshold": 30}),
    (c.DnsFailoverConfig, "successThreshold", 6, 3, 30, 1, {}),
    (c.DnsFailoverConfig, "holdDownSeconds", 60, 0, 3600, 1, {}),
    (c.DnsConfig, "intervalSeconds", 60, 10, 600, 1, {"domain": "example.com"}),
    (c.DnsConfig, "refreshSeconds", 15, 5, 120, 1, {"domain": "example.com"}),
    (c.HealthCheckConfig, "interval", 5, 3, 60, 1, {"timeout": 1}),
    (c.HealthCheckConfig, "timeout", 3, 1, 60, 1, {"interval": 60}),
    (c.HealthCheckConfig, "retries", 2, 0, 5, 1, {}),
    (c.PkiConfig, "caValidityHours", 87600, 8760, 175200, 1, {"leafValidityHours": 720}),
    (c.PkiConfig, "leafValidityHours", 8760, 720, 43800, 1, {}),
    (c.EtcdBackupConfig, "retain", None, 1, 1000, 1, BACKUP),
    (c.MonitoringConfig, "scrapeIntervalSeconds", 30, 10, 300, 1, {}),
]
"""probePeriodSeconds' floor is 2 in the model, but the timeout (at least 1) must stay below it: 3 is the lowest
period a default timeout of 2 allows, so the table takes 3 with the default timeout (the bare floor is checked
below). successThreshold likewise: at least the default failureThreshold of 3."""


def _field(model: type[BaseModel], key: str) -> str:
    return next(n for n, f in model.model_fields.items() if (f.alias or n) == key)


def _ok(model: type[BaseModel], data: dict[str, Any]) -> BaseModel:
    return model.model_validate(data)


def _refused(model: type[BaseModel], data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return True
    return False


@pytest.mark.parametrize(("model", "key", "default", "lo", "hi", "step", "ctx"), BOUNDS,
                         ids=[f"{b[0].__name__}.{b[1]}" for b in BOUNDS])
def test_each_bound_accepts_its_limit_and_refuses_one_step_past(model: type[BaseModel], key: str, default: Any,
                                                                lo: Any, hi: Any, step: Any,
                                                                ctx: dict[str, Any]) -> None:
    base = {k: v for k, v in ctx.items() if k != key}
    assert getattr(_ok(model, {k: v for k, v in base.items() if k in ("domain", *BACKUP)}), _field(model, key)) \
        == default
    assert getattr(_ok(model, {**base, key: lo}), _field(model, key)) == lo
    assert _refused(model, {**base, key: lo - step}), f"{key}={lo - step} accepted"
    if hi is not None:
        assert getattr(_ok(model, {**base, key: hi}), _field(model, key)) == hi
        assert _refused(model, {**base, key: hi + step}), f"{key}={hi + step} accepted"


SCHEMA_BOUNDS = [(m, k, lo, hi) for m, k, _, lo, hi, _, _ in BOUNDS
                 if k not in ("probePeriodSeconds", "successThreshold")] + [
    (c.DnsFailoverConfig, "probePeriodSeconds", 2, 60),
    (c.DnsFailoverConfig, "successThreshold", 2, 30),
    (c.ReplicaConfig, "aggregatedApiserver", 2, None),
    (c.EtcdConfig, "replicas", 3, None),
    (c.HubConfig, "servers", 3, c.MAX_SPREAD_GROUP_SERVERS),
]


@pytest.mark.parametrize(("model", "key", "lo", "hi"), SCHEMA_BOUNDS,
                         ids=[f"{b[0].__name__}.{b[1]}" for b in SCHEMA_BOUNDS])
def test_the_schema_states_the_bounds_the_program_enforces(model: type[BaseModel], key: str, lo: Any,
                                                           hi: Any) -> None:
    prop = model.model_json_schema(by_alias=True)["properties"][key]
    prop = next((p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"), prop)
    assert prop.get("minimum") == lo and prop.get("maximum") == hi, prop


def test_the_schema_states_the_ttl_range_of_both_modes() -> None:
    """dns.ttl is optional (its default depends on the mode): the bounds sit beside the anyOf, 5 (self-hosted's
    floor) to 60; mode hetzner's floor of 60 is the model's check, tested below."""
    prop = c.DnsConfig.model_json_schema(by_alias=True)["properties"]["ttl"]
    assert (prop["minimum"], prop["maximum"]) == (c.SELF_HOSTED_MIN_TTL, c.DNS_MAX_TTL) == (5, 60)
    assert {p["type"] for p in prop["anyOf"]} == {"integer", "null"} and prop["default"] is None


def test_the_float_rate_is_strictly_positive_and_at_most_fifty() -> None:
    rate = "resourceEvictionRate"
    assert c.FailoverConfig().resource_eviction_rate == 0.5
    assert _ok(c.FailoverConfig, {rate: 0.01}).resource_eviction_rate == 0.01  # type: ignore[attr-defined]
    assert _ok(c.FailoverConfig, {rate: 50}).resource_eviction_rate == 50  # type: ignore[attr-defined]
    assert _refused(c.FailoverConfig, {rate: 0}) and _refused(c.FailoverConfig, {rate: 50.01})
    schema = c.FailoverConfig.model_json_schema(by_alias=True)["properties"][rate]
    assert (schema["exclusiveMinimum"], schema["maximum"]) == (0, 50)


# ------------------------------------------------------------------------------------------ cross-field rules


def test_failover_grace_must_exceed_a_quarter_lease_and_failure_cover_an_update() -> None:
    f = c.FailoverConfig
    assert _refused(f, {"clusterLeaseDuration": 40, "clusterMonitorGracePeriod": 10})  # 10 <= 40/4
    assert _ok(f, {"clusterLeaseDuration": 40, "clusterMonitorGracePeriod": 11})
    assert _refused(f, {"clusterLeaseDuration": 600, "clusterMonitorGracePeriod": 150})
    assert _ok(f, {"clusterLeaseDuration": 600, "clusterMonitorGracePeriod": 151})
    assert _ok(f, {"clusterStatusUpdateFrequency": 30, "clusterFailureThreshold": 30})
    assert _refused(f, {"clusterStatusUpdateFrequency": 31, "clusterFailureThreshold": 30})
    assert f().purge_mode == "Gracefully" and f().rto_seconds is None


def test_probe_timeout_below_period_and_restore_slower_than_withdraw() -> None:
    d = c.DnsFailoverConfig
    assert _ok(d, {"probePeriodSeconds": 5, "probeTimeoutSeconds": 4})
    assert _refused(d, {"probePeriodSeconds": 5, "probeTimeoutSeconds": 5})
    assert _ok(d, {"probePeriodSeconds": 2, "probeTimeoutSeconds": 1})
    assert _ok(d, {"failureThreshold": 3, "successThreshold": 3})
    assert _refused(d, {"failureThreshold": 3, "successThreshold": 2})


def test_ttl_is_hetzners_minimum_and_hold_down_covers_it() -> None:
    assert (c.HETZNER_DNS_MIN_TTL, c.DNS_MAX_TTL) == (60, 60)
    assert c.DnsConfig(domain="example.com").ttl == 60 and c.DnsConfig(domain="example.com").record_ttl == 60
    assert _refused(c.DnsConfig, {"domain": "example.com", "ttl": 59})
    assert _refused(c.DnsConfig, {"domain": "example.com", "ttl": 61})
    assert _ok(c.DnsConfig, {"domain": "example.com", "failover": {"holdDownSeconds": 60}})
    assert _refused(c.DnsConfig, {"domain": "example.com", "failover": {"holdDownSeconds": 59}})


SELF_HOSTED = {"mode": "self-hosted", "domain": "fleet.example.com", "selfHosted": {"parentZone": "example.com"}}


def test_self_hosted_ttl_is_five_to_sixty_default_fifteen_and_hold_down_covers_it() -> None:
    assert c.SELF_HOSTED_MIN_TTL == 5 and c.DNS_TTL_DEFAULTS == {"hetzner": 60, "self-hosted": 15}
    assert _ok(c.DnsConfig, SELF_HOSTED).record_ttl == 15  # type: ignore[attr-defined]
    for ttl in (5, 60):
        assert _ok(c.DnsConfig, {**SELF_HOSTED, "ttl": ttl}).record_ttl == ttl  # type: ignore[attr-defined]
    for ttl in (4, 61):
        assert _refused(c.DnsConfig, {**SELF_HOSTED, "ttl": ttl}), ttl
    assert _ok(c.DnsConfig, {**SELF_HOSTED, "ttl": 30, "failover": {"holdDownSeconds": 30}})
    assert _refused(c.DnsConfig, {**SELF_HOSTED, "ttl": 30, "failover": {"holdDownSeconds": 29}})


def test_health_check_timeout_within_its_interval() -> None:
    h = c.HealthCheckConfig
    assert _ok(h, {"interval": 10, "timeout": 10}) and _refused(h, {"interval": 10, "timeout": 11})
    assert _refused(h, {"interval": 3, "timeout": 0})


def test_leaf_certificates_live_shorter_than_their_ca() -> None:
    assert _ok(c.PkiConfig, {"caValidityHours": 8760, "leafValidityHours": 8759})
    assert _refused(c.PkiConfig, {"caValidityHours": 8760, "leafValidityHours": 8760})


def test_quorum_sizes_are_odd_and_at_least_three() -> None:
    for model, key in ((c.EtcdConfig, "replicas"), (c.HubConfig, "servers")):
        base = {} if model is c.EtcdConfig else _hub_data()
        assert [n for n in range(0, 12) if not _refused(model, {**base, key: n})] == [3, 5, 7, 9, 11], model
    assert c.EtcdConfig().replicas == 3 and c.HubConfig.model_validate(_hub_data()).servers == 3


def test_replicas_are_ha() -> None:
    r = c.ReplicaConfig()
    assert r.apiserver is None
    assert (r.aggregated_apiserver, r.kube_controller_manager, r.scheduler, r.controller_manager, r.webhook,
            r.descheduler) == (2, 2, 2, 2, 2, 2)
    for key in ("apiserver", "aggregatedApiserver", "kubeControllerManager", "scheduler", "controllerManager",
                "webhook", "descheduler"):
        assert _ok(c.ReplicaConfig, {key: 2}) and _refused(c.ReplicaConfig, {key: 1}), key


def test_etcd_quota_at_most_8gi_and_the_volume_holds_twice_it() -> None:
    e = c.EtcdConfig
    assert c.ETCD_MAX_QUOTA == 8 * 2**30
    assert e().quota_backend_bytes == 2 * 2**30 and e().storage_size == "8Gi"
    assert _ok(e, {"quotaBackendSize": "8Gi", "storageSize": "16Gi"})
    assert _refused(e, {"quotaBackendSize": "8193Mi", "storageSize": "32Gi"})
    assert _ok(e, {"quotaBackendSize": "2Gi", "storageSize": "4Gi"})
    assert _refused(e, {"quotaBackendSize": "2Gi", "storageSize": "4095Mi"})


@pytest.mark.parametrize(("cron", "ok"), [("17 */6 * * *", True), ("0 0 1,15 * 1-5", True), ("* * * *", False),
                                          ("* * * * * *", False), ("@daily", False), ("0 0 * * mon", False)])
def test_schedules_are_five_field_crons(cron: str, ok: bool) -> None:
    assert (not _refused(c.EtcdBackupConfig, {**BACKUP, "schedule": cron})) is ok
    assert (not _refused(c.EtcdConfig, {"defragSchedule": cron})) is ok
    assert c.EtcdBackupConfig.model_validate(BACKUP).schedule == "17 */6 * * *"
    assert c.EtcdConfig().defrag_schedule == "37 3 * * 0"


# ------------------------------------------------------------------------------------------ networks


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _ssh_key(kind: str, *fields: bytes, comment: str = "ops") -> str:
    """An OpenSSH public key line whose base64 holds SSH strings: the key type, then `fields`."""
    import base64

    blob = b"".join(_ssh_string(f) for f in (kind.encode(), *fields))
    return f"{kind} {base64.b64encode(blob).decode()} {comment}".rstrip()


ED25519 = _ssh_key("ssh-ed25519", bytes(range(32)))


def _hub_data(**firewall: Any) -> dict[str, Any]:
    return {"sshKeys": [{"name": "ops", "publicKey": ED25519}],
            "firewall": {"sshCidrs": ["198.51.100.0/24"], "apiCidrs": ["198.51.100.0/24"], **firewall}}


def test_admin_lists_may_admit_at_most_a_public_slash_8_or_slash_32() -> None:
    assert c.ADMIN_MAX_PUBLIC == {4: 2**24, 6: 2**96}
    for key in ("sshCidrs", "apiCidrs", "karmadaCidrs"):
        assert _ok(c.FirewallConfig, {**_hub_data()["firewall"], key: ["11.0.0.0/8"]})
        assert _refused(c.FirewallConfig, {**_hub_data()["firewall"], key: ["11.0.0.0/8", "12.0.0.0/31"]}), key
        assert _ok(c.FirewallConfig, {**_hub_data()["firewall"], key: ["2a00::/32"]})
        assert _refused(c.FirewallConfig, {**_hub_data()["firewall"], key: ["2a00::/31"]}), key
        assert _refused(c.FirewallConfig, {**_hub_data()["firewall"], key: ["0.0.0.0/0"]}), key
        assert _refused(c.FirewallConfig, {**_hub_data()["firewall"], key: ["::/0"]}), key
        assert _ok(c.FirewallConfig, {**_hub_data()["firewall"], key: ["0.0.0.0/0", "::/0"], "allowWorld": True})
    assert c.FirewallConfig.model_validate(_hub_data()["firewall"]).allow_world is False
    assert c.FirewallConfig.model_validate(_hub_data()["firewall"]).karmada_cidrs == []
    for key in ("sshCidrs", "apiCidrs"):
        assert _refused(c.FirewallConfig, {**_hub_data()["firewall"], key: []}), key


def test_world_cover_names_the_share() -> None:
    with pytest.raises(ValidationError) as exc:
        c.FirewallConfig.model_validate({**_hub_data()["firewall"], "apiCidrs": ["0.0.0.0/1", "128.0.0.0/1"]})
    assert "apiCidrs 0.0.0.0/1, 128.0.0.0/1 admit 100% of the public IPv4 internet" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        c.FirewallConfig.model_validate({**_hub_data()["firewall"], "sshCidrs": ["2a00::/16"]})
    assert "admit 0.01% of the public IPv6 internet; an admin list may admit at most a /32" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        c.FirewallConfig.model_validate({**_hub_data()["firewall"], "sshCidrs": ["12.0.0.0/6"]})
    assert "admit 2% of the public IPv4 internet; an admin list may admit at most a /8" in str(exc.value)


def test_public_addresses_count_only_routable_space_once() -> None:
    n = ipaddress.ip_network
    special_v4 = sum(b.num_addresses for b in c._NOT_PUBLIC if b.version == 4)
    assert c.public_addresses([n("0.0.0.0/0")], 4) == 2**32 - special_v4
    assert c.public_addresses([n("10.0.0.0/8"), n("192.168.1.0/24")], 4) == 0
    assert c.public_addresses([n("11.0.0.0/8"), n("11.1.0.0/16")], 4) == 2**24, "overlaps count once"
    assert c.public_addresses([n("11.0.0.0/8"), n("2a00::/32")], 4) == 2**24, "the other family is not counted"
    assert c.public_addresses([n("192.0.0.0/16")], 4) == 2**16 - 256 - 256, "less 192.0.0.0/24 and 192.0.2.0/24"
    assert c.public_addresses([n("::/0")], 6) == 2**125 - 2**96, "global unicast minus documentation"
    assert c.public_addresses([n("fc00::/7")], 6) == 0
    assert c.public_addresses([n("::/2")], 6) == 2**125 - 2**96, "a block around all of 2000::/3"
    assert c.public_addresses([n("2001:db8::/48")], 6) == 0
    assert n("2000::/3") == c.GLOBAL_V6
    assert {str(b) for b in c._NOT_PUBLIC} == {
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "2001:db8::/32"}


@pytest.mark.parametrize(("value", "family", "error"), [
    ("2001:db8::/48", 4, "'2001:db8::/48' is IPv6; Hetzner private networks are IPv4 (like 10.0.0.0/16)"),
    ("10.0.0.1/16", None, "'10.0.0.1/16' has host bits set; did you mean 10.0.0.0/16?"),
    ("2001:db8::1/48", None, "'2001:db8::1/48' has host bits set; did you mean 2001:db8::/48?"),
    ("10.0.0.300/16", None, "'10.0.0.300/16' is not a valid IPv4 network like 198.51.100.0/24"),
    ("2001:zz::/48", None, "'2001:zz::/48' is not a valid IPv6 network like 2001:db8::/48"),
    (42, None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got the number 42)"),
    (4.5, None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got the number 4.5)"),
    (True, None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got a boolean)"),
    (["10.0.0.0/8"], None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got a list)"),
    ({"a": 1}, None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got a mapping)"),
    (None, None, "must be a network in CIDR notation written as text, like 198.51.100.0/24 (got a NoneType)"),
])
def test_networks_are_read_with_a_message_for_the_family_written(value: Any, family: int | None, error: str) -> None:
    from pydantic_core import PydanticCustomError

    with pytest.raises(PydanticCustomError) as exc:
        c._network(value, family)
    assert str(exc.value).startswith(error)
    assert c._network(" 10.0.0.0/16 ", 4) == ipaddress.ip_network("10.0.0.0/16")
    net = ipaddress.ip_network("10.0.0.0/16")
    assert c._network(net) is net
    assert c._network("2001:db8::/48") == ipaddress.ip_network("2001:db8::/48")


def test_a_cidr_that_is_not_a_string_is_a_one_line_error(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    """A number in a CIDR list (YAML `- 10`) is a user error like any other, not a crash."""
    def edit(raw: dict[str, Any]) -> None:
        raw["hub"]["firewall"]["sshCidrs"] = [42]

    with pytest.raises(ConfigError) as exc:
        _validate(dev, edit)
    assert str(exc.value) == ("stacks/Pulumi.dev.yaml: karmada-hub:hub.firewall.sshCidrs[0]: must be a network in "
                              "CIDR notation written as text, like 198.51.100.0/24 (got the number 42)")


def test_the_hub_network_is_private_and_holds_its_subnet() -> None:
    net = c.NetworkConfig()
    assert (str(net.cidr), str(net.subnet)) == ("10.0.0.0/16", "10.0.1.0/24")
    assert _ok(c.NetworkConfig, {"cidr": "10.1.0.0/16", "subnet": "10.1.255.0/24"})
    assert _refused(c.NetworkConfig, {"cidr": "10.1.0.0/16", "subnet": "10.2.0.0/24"})
    assert _refused(c.NetworkConfig, {"cidr": "11.0.0.0/16", "subnet": "11.0.1.0/24"})
    assert _refused(c.NetworkConfig, {"cidr": "2001:db8::/48", "subnet": "10.0.1.0/24"})


def test_ssh_keys_are_public_keys() -> None:
    ok = {"name": "ops", "publicKey": _ssh_key("ssh-ed25519", bytes(32), comment="ops@host")}
    assert _ok(c.SshKeyConfig, ok)
    for key in (_ssh_key("ssh-rsa", b"\x01\x00\x01", bytes(257), comment=""),
                _ssh_key("ecdsa-sha2-nistp256", b"nistp256", bytes(65), comment=""),
                _ssh_key("ecdsa-sha2-nistp384", b"nistp384", bytes(97), comment=""),
                _ssh_key("ecdsa-sha2-nistp521", b"nistp521", bytes(133), comment="x")):
        assert _ok(c.SshKeyConfig, {**ok, "publicKey": key}), key
    for key in (_ssh_key("ssh-dss", bytes(20)), _ssh_key("ecdsa-sha2-nistp257", bytes(20)), "ssh-ed25519",
                "-----BEGIN OPENSSH PRIVATE KEY-----", ED25519 + " PRIVATE KEY"):
        assert _refused(c.SshKeyConfig, {**ok, "publicKey": key}), key


@pytest.mark.parametrize(("key", "kind"), [
    ("ssh-ed25519 AAAA ops", "ssh-ed25519"),  # three zero bytes: no SSH string at all
    ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 ops", "ssh-ed25519"),  # cut short after the type
    (_ssh_key("ssh-ed25519", bytes(31)), "ssh-ed25519"),
    (_ssh_key("ssh-ed25519", bytes(33)), "ssh-ed25519"),
    (_ssh_key("ssh-ed25519", bytes(32), b"x"), "ssh-ed25519"),
    (_ssh_key("ssh-ed25519"), "ssh-ed25519"),  # the type alone
    (ED25519.replace("ssh-ed25519", "ssh-rsa", 1), "ssh-rsa"),  # the line's type is not the blob's
    (_ssh_key("ssh-rsa", b"\x01\x00\x01", bytes(257))[:-8] + " ops", "ssh-rsa"),  # a length past the end
    (_ssh_key("ssh-rsa", b"\x01\x00\x01"), "ssh-rsa"),  # e without n
    (_ssh_key("ssh-rsa", b"\x01\x00\x01", bytes(257), b""), "ssh-rsa"),  # a fourth (empty) string
    (_ssh_key("ssh-rsa", b"", bytes(257)), "ssh-rsa"),  # an empty exponent
    (_ssh_key("ecdsa-sha2-nistp256", b"nistp384", bytes(65)), "ecdsa-sha2-nistp256"),  # another curve's name
    (_ssh_key("ecdsa-sha2-nistp256", b"nistp256"), "ecdsa-sha2-nistp256"),  # no point
    (_ssh_key("ecdsa-sha2-nistp256", b"nistp256", b""), "ecdsa-sha2-nistp256"),  # an empty point
])
def test_a_cut_or_mangled_ssh_key_is_refused_with_what_to_paste(key: str, kind: str) -> None:
    with pytest.raises(ValidationError) as exc:
        c.SshKeyConfig.model_validate({"name": "ops", "publicKey": key})
    assert (f"the {kind} key is cut short or mangled (its base64 does not hold a whole {kind} key); paste the whole "
            "line `ssh-keygen -y -f <keyfile>` prints") in str(exc.value)


def test_an_ssh_key_blob_with_bytes_after_its_last_string_is_refused() -> None:
    import base64

    blob = base64.b64decode(ED25519.split()[1]) + b"\x00\x00"
    assert _refused(c.SshKeyConfig, {"name": "ops", "publicKey": f"ssh-ed25519 {base64.b64encode(blob).decode()}"})
    rsa = base64.b64decode(_ssh_key("ssh-rsa", b"\x01\x00\x01", bytes(8)).split()[1]) + b"\x00"
    assert _refused(c.SshKeyConfig, {"name": "ops", "publicKey": f"ssh-rsa {base64.b64encode(rsa).decode()}"})


def test_hub_defaults_and_names() -> None:
    hub = c.HubConfig.model_validate(_hub_data())
    assert (hub.name, hub.locations, hub.server_type, hub.image, hub.protect) == (
        "karmada-hub", ["fsn1", "nbg1", "hel1"], "cx33", "ubuntu-24.04", False)
    assert (hub.network_zone, hub.lb_location, [hub.server_location(i) for i in range(4)]) == (
        "eu-central", "fsn1", ["fsn1", "nbg1", "hel1", "fsn1"])
    assert hub.k3s_sha256 is None and hub.api_dns_name is None and hub.load_balancer.type == "lb11"
    for key, bad in (("serverType", "cx2"), ("serverType", "cx22"), ("serverType", "c123"), ("k3sVersion", "v1.34.1"),
                     ("k3sVersion", "1.34.1+k3s1"), ("locations", ["fsn1", "ash"]), ("locations", ["mars"]),
                     ("locations", []), ("loadBalancer", {"location": "ash"}), ("image", "Ubuntu"),
                     ("k3sSha256", "A" * 64), ("apiDnsName", "hub")):
        assert _refused(c.HubConfig, {**_hub_data(), key: bad}), (key, bad)
    for key, good in (("serverType", "cax11"), ("serverType", "ccx123"), ("k3sVersion", "v1.34.1+k3s2"),
                      ("locations", ["ash"]), ("loadBalancer", {"location": "nbg1"}), ("k3sSha256", "a" * 64),
                      ("apiDnsName", "api.hub.example.com")):
        assert _ok(c.HubConfig, {**_hub_data(), key: good}), (key, good)


# ------------------------------------------------------------------------------------------ the whole stack


@pytest.fixture(scope="module")
def dev() -> tuple[dict[str, Any], frozenset[str]]:
    return load_dev_raw()


def _validate(dev: tuple[dict[str, Any], frozenset[str]], edit: Any = None, secrets: Any = None) -> FleetConfig:
    raw, keys = copy.deepcopy(dev[0]), dev[1]
    if edit:
        edit(raw)
    return FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", keys if secrets is None else secrets)


def test_the_backup_key_minimum_is_the_backup_jobs(dev: tuple[dict[str, Any], frozenset[str]], tmp_path: Path) -> None:
    """32 characters (surrounding whitespace not counted) pass the config exactly when the backup job takes them:
    a shorter key would pass `preview` and make every backup fail at run time."""
    from agents import etcd_backup_upload as upload

    key = "etcdBackupEncryptionKey"
    for n in (31, 32, 33):
        value = "k" * n
        path = tmp_path / f"key{n}"
        path.write_text(f"\n {value} \n")
        try:
            upload.read_master(path)
            job_takes_it = True
        except upload.BackupError:
            job_takes_it = False
        try:
            _validate(dev, lambda raw, v=value: raw.__setitem__(key, f"  {v}\n"))
            config_takes_it = True
        except ConfigError as exc:
            assert "must be at least 32 characters" in str(exc)
            config_takes_it = False
        assert config_takes_it is job_takes_it is (n >= 32), n


def test_apiserver_replicas_follow_the_hub(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    cfg = _validate(dev)
    assert cfg.karmada.replicas.apiserver == cfg.hub.servers == 3  # type: ignore[union-attr]

    def five(raw: dict[str, Any]) -> None:
        raw["hub"]["servers"] = 5

    assert _validate(dev, five).karmada.replicas.apiserver == 5


def test_nothing_asks_for_more_replicas_than_servers(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    def replicas(key: str, n: int) -> Any:
        def edit(raw: dict[str, Any]) -> None:
            raw["karmada"].setdefault("replicas", {})[key] = n
        return edit

    for key in ("aggregatedApiserver", "scheduler", "webhook"):
        assert _validate(dev, replicas(key, 3)).karmada.replicas.model_dump(by_alias=True)[key] == 3
        with pytest.raises(ConfigError, match=rf"karmada\.replicas\.{key}: 4 replicas need 4 hub servers"):
            _validate(dev, replicas(key, 4))
    with pytest.raises(ConfigError, match=r"karmada\.replicas\.apiserver: must equal hub\.servers \(3\)"):
        _validate(dev, replicas("apiserver", 2))

    def etcd(n: int) -> Any:
        return lambda raw: raw["karmada"].setdefault("etcd", {}).__setitem__("replicas", n)

    with pytest.raises(ConfigError, match=r"karmada\.etcd\.replicas: 5 etcd replicas need 5 hub servers"):
        _validate(dev, etcd(5))
    assert _validate(dev, etcd(3)).karmada.etcd.replicas == 3


def test_member_names_are_unique_and_regions_known(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    def dup(raw: dict[str, Any]) -> None:
        raw["members"].append(copy.deepcopy(raw["members"][0]))

    with pytest.raises(ConfigError, match=r"members\[\d+\]\.name: member name '.*' is used twice"):
        _validate(dev, dup)

    def unknown(raw: dict[str, Any]) -> None:
        raw["members"][-1]["region"] = "mars"

    with pytest.raises(ConfigError, match=r"members\[\d+\]\.region: region 'mars' is not defined under regions"):
        _validate(dev, unknown)


@pytest.mark.parametrize("stack", ["dev", "prod-hub", "prod-fsn1", "prod-hel1", "prod-ash"])
def test_every_example_stack_passes_the_checks(stack: str) -> None:
    from tests.support.tools import load_stack

    assert load_stack(stack).role == {"dev": "all-in-one", "prod-hub": "hub"}.get(stack, "region")


def test_only_a_hub_serves_region_stacks_and_only_a_region_has_an_identity(
        dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    with pytest.raises(ConfigError, match=r"regionStacks: only a hub stack \(role hub\) serves region stacks"):
        _validate(dev, lambda raw: raw.__setitem__("regionStacks", ["prod-fsn1"]))
    csr = "-----BEGIN CERTIFICATE REQUEST-----\nx\n-----END CERTIFICATE REQUEST-----\n"
    with pytest.raises(ConfigError, match="identityCsr: only a region stack has an identity CSR"):
        _validate(dev, lambda raw: raw.__setitem__("identityCsr", csr))


def test_a_region_stack_names_its_hub_and_one_of_its_regions() -> None:
    from tests.support.tools import stack_values

    raw, secrets = stack_values("prod-fsn1")

    def check(**changes: Any) -> str:
        with pytest.raises(ConfigError) as exc:
            FleetConfig.from_mapping({**raw, **changes}, "stacks/Pulumi.prod-fsn1.yaml", secrets)
        return str(exc.value)

    assert check(region="mars") == (
        "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:region: 'mars' is not a key of regions (eu-fsn); role 'region' "
        "needs region: the key of regions this stack rolls out")
    without = {k: v for k, v in raw.items() if k != "region"}
    with pytest.raises(ConfigError) as exc:
        FleetConfig.from_mapping(without, "stacks/Pulumi.prod-fsn1.yaml", secrets)
    assert str(exc.value) == ("stacks/Pulumi.prod-fsn1.yaml: karmada-hub:region: role 'region' needs region: the key "
                              "of regions this stack rolls out")
    without_hub = {k: v for k, v in raw.items() if k != "hubStack"}
    with pytest.raises(ConfigError) as exc:
        FleetConfig.from_mapping(without_hub, "stacks/Pulumi.prod-fsn1.yaml", secrets)
    assert str(exc.value) == ("stacks/Pulumi.prod-fsn1.yaml: karmada-hub:hubStack: role 'region' needs hubStack.stack "
                              "(the hub stack to reference)")


def test_public_space_after_a_private_v6_network_still_counts() -> None:
    n = ipaddress.ip_network
    assert c.public_addresses([n("::1/128"), n("2a00::/32")], 6) == 2**96
    assert c.public_addresses([n("fc00::/7"), n("2a00::/32"), n("2a01::/32")], 6) == 2 * 2**96


def test_quorum_sizes_are_stated_odd_in_the_schema() -> None:
    for model, key in ((c.HubConfig, "servers"), (c.EtcdConfig, "replicas")):
        assert model.model_json_schema(by_alias=True)["properties"][key]["not"] == {"multipleOf": 2}


def test_a_hub_has_at_least_one_ssh_key_and_its_zone_is_its_first_locations() -> None:
    assert _refused(c.HubConfig, {**_hub_data(), "sshKeys": []})
    two = [{"name": "a", "publicKey": _ssh_key("ssh-ed25519", bytes(32), comment="a")},
           {"name": "b", "publicKey": _ssh_key("ssh-ed25519", bytes(range(32)), comment="b")}]
    assert len(c.HubConfig.model_validate({**_hub_data(), "sshKeys": two}).ssh_keys) == 2
    assert c.HubConfig.model_validate({**_hub_data(), "locations": ["ash"]}).network_zone == "us-east"
    assert c.HubConfig.model_validate({**_hub_data(), "locations": ["ash"]}).lb_location == "ash"


def _region(**changes: Any) -> tuple[dict[str, Any], frozenset[str]]:
    raw, secrets = stack_values("prod-fsn1")
    return {**raw, **changes}, secrets


def _error(raw: dict[str, Any], secrets: frozenset[str], stack: str = "prod-fsn1") -> str:
    with pytest.raises(ConfigError) as exc:
        FleetConfig.from_mapping(raw, f"stacks/Pulumi.{stack}.yaml", secrets)
    return str(exc.value)


def test_region_stacks_run_two_apiservers_by_assumption_and_no_monitoring() -> None:
    raw, secrets = _region()
    assert FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets).karmada.replicas.apiserver == 2
    raw, secrets = _region(monitoring={"enabled": True, "runbookBaseUrl": "https://example.com/runbooks"})
    assert _error(raw, secrets).endswith("karmada-hub:monitoring.enabled: monitoring runs in the stack that owns the "
                                         "hub (role hub); enable it there and remove it here")


def test_a_region_stack_holds_no_dns_zone_token_and_no_owner_id() -> None:
    """The hub owns every record (security review 2, H5): the zone's token in a region's file is refused, under
    whatever key dns.tokenConfigKey names, and so is external-dns' owner id."""
    raw, secrets = _region()
    assert "hetznerDnsToken" not in secrets
    assert FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets).dns is not None
    assert _error({**raw, "hetznerDnsToken": "x"}, secrets | {"hetznerDnsToken"}) == (
        "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:dns.tokenConfigKey: a region stack holds no DNS zone token (the hub "
        "stack owns every record); remove karmada-hub:hetznerDnsToken from this file")
    other = {**raw, "dns": {**raw["dns"], "tokenConfigKey": "zoneToken"}}
    assert FleetConfig.from_mapping({**other, "hetznerDnsToken": "x"}, "stacks/Pulumi.prod-fsn1.yaml",
                                    secrets | {"hetznerDnsToken"}).dns is not None
    assert _error({**other, "zoneToken": "x"}, secrets | {"zoneToken"}).endswith(
        "remove karmada-hub:zoneToken from this file")
    owned = {**raw, "dns": {**HETZNER, "domain": raw["dns"]["domain"], "txtOwnerId": "fleet"}}
    assert _error(owned, secrets) == (
        "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:dns.txtOwnerId: external-dns runs in the hub stack (role hub), "
        "which owns the fleet's names; set txtOwnerId there and remove it here")


HETZNER = {"mode": "hetzner", "ttl": 60}


def test_a_hub_in_mode_hetzner_needs_an_owner_id_and_the_token(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    def hetzner(owner: str | None = None) -> Any:
        def edit(raw: dict[str, Any]) -> None:
            raw["dns"] = {**HETZNER, "domain": raw["dns"]["domain"], **({"txtOwnerId": owner} if owner else {})}
        return edit

    assert _validate(dev, hetzner("fleet")).dns.txt_owner_id == "fleet"  # type: ignore[union-attr]
    with pytest.raises(ConfigError) as exc:
        _validate(dev, hetzner())
    assert str(exc.value) == ("stacks/Pulumi.dev.yaml: karmada-hub:dns.txtOwnerId: required: an external-dns owner id "
                              "unique to this fleet (e.g. karmada-hub-dev)")
    with pytest.raises(ConfigError) as exc:
        _validate(dev, lambda raw: (hetzner("fleet")(raw), raw.pop("hetznerDnsToken", None)),
                  secrets=dev[1] - {"hetznerDnsToken"})
    assert str(exc.value) == ("stacks/Pulumi.dev.yaml: karmada-hub:dns.tokenConfigKey: stack secret "
                              "karmada-hub:hetznerDnsToken is not set (pulumi config set --secret hetznerDnsToken "
                              "<token>)")


def test_a_hub_role_without_a_hub_section_is_refused(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    for role in ("hub", "all-in-one"):
        with pytest.raises(ConfigError, match=f"hub: role '{role}' needs a hub section"):
            _validate(dev, lambda raw, r=role: (raw.pop("hub"), raw.__setitem__("role", r)))


def test_one_capi_member_is_enough_to_need_the_capi_kubeconfig(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    def mixed(raw: dict[str, Any]) -> None:
        raw["members"][0]["credentials"] = {"source": "secret", "configKey": "memberKubeconfig"}
        raw["memberKubeconfig"] = "apiVersion: v1"
        del raw["capiKubeconfig"]

    with pytest.raises(ConfigError, match=r"capi\.kubeconfigConfigKey: stack secret karmada-hub:capiKubeconfig is not"):
        _validate(dev, mixed, secrets=dev[1] | {"memberKubeconfig"} - {"capiKubeconfig"})


def test_hub_facts_and_defaults_other_rooms_read(dev: tuple[dict[str, Any], frozenset[str]]) -> None:
    cfg = _validate(dev)
    assert cfg.hub is not None
    assert cfg.hub.kubernetes_minor == ".".join(cfg.hub.k3s_version.lstrip("v").split(".")[:2])  # "1.34", a value
    assert c.EtcdBackupConfig.model_validate(BACKUP).prefix == "karmada-etcd"
    assert c.EtcdConfig().storage_class == "local-path"
    for key in ("-----BEGIN SSH2 ENCRYPTED KEY-----", "  -----BEGIN OPENSSH KEY-----"):
        with pytest.raises(ValidationError, match="this is a private key"):
            c.SshKeyConfig.model_validate({"name": "ops", "publicKey": key})


def _hub(servers: int, locations: list[str]) -> c.HubConfig:
    return c.HubConfig.model_validate({**_hub_data(), "servers": servers, "locations": locations})


@pytest.mark.parametrize(("servers", "locations", "worst", "share", "left"), [
    (3, ["fsn1"], "fsn1", 3, 0),
    (3, ["fsn1", "nbg1"], "fsn1", 2, 1),
    (5, ["fsn1", "nbg1"], "fsn1", 3, 2),
    (5, ["nbg1", "fsn1", "hel1", "nbg1"], "nbg1", 3, 2),
])
def test_servers_that_lose_quorum_with_one_location_are_refused_with_the_count(
        servers: int, locations: list[str], worst: str, share: int, left: int) -> None:
    """Round-robin over `locations` (a location named twice takes two turns): the message says how many servers
    the worst location holds and how many losing it leaves, and names three locations of the zone."""
    with pytest.raises(ValidationError) as exc:
        _hub(servers, locations)
    assert (f"{servers} servers over {', '.join(dict.fromkeys(locations))} put {share} in {worst}: losing {worst} "
            f"leaves {left} of {servers}, no etcd quorum") in str(exc.value)
    assert "locations: [fsn1, nbg1, hel1]" in str(exc.value)


@pytest.mark.parametrize(("servers", "locations"), [
    (3, ["fsn1", "nbg1", "hel1"]), (5, ["fsn1", "nbg1", "hel1"]), (7, ["hel1", "fsn1", "nbg1"]),
    (3, ["ash"]), (5, ["sin"]),
])
def test_servers_that_keep_quorum_or_have_nowhere_to_spread_are_accepted(servers: int, locations: list[str]) -> None:
    """A majority left after any one location fails; a zone of one location (ash, sin) cannot spread."""
    assert _hub(servers, locations).servers == servers


def test_an_ssh_key_one_byte_short_of_its_last_string_or_padded_inside_is_refused() -> None:
    import base64

    rsa = _ssh_key("ssh-rsa", b"\x01\x00\x01", bytes(range(1, 200)))
    assert c.SshKeyConfig.model_validate({"name": "ops", "publicKey": rsa})
    kind, blob, comment = rsa.split()
    raw = base64.b64decode(blob)
    short = f"{kind} {base64.b64encode(raw[:-1]).decode()} {comment}"
    padded = f"{kind} {blob[:8]}={blob[8:]} {comment}"  # a lenient decoder reads the same bytes; OpenSSH does not
    for key in (short, padded):
        with pytest.raises(ValidationError, match="the ssh-rsa key is cut short or mangled"):
            c.SshKeyConfig.model_validate({"name": "ops", "publicKey": key})


SECONDARY = {"name": "hel", "ipv4": "95.216.0.10"}


def test_the_hetzner_zone_and_record_follow_the_mode() -> None:
    """Mode hetzner writes every name under dns.domain into the zone dns.domain; mode self-hosted writes only what
    is under the parent zone and not under dns.domain (the delegation's own names), relative to the parent."""
    hetzner = c.DnsConfig(domain="example.com")
    assert not hetzner.self_hosted_mode and hetzner.hetzner_zone == "example.com"
    assert hetzner.hetzner_record("api.example.com") == ("example.com", "api")
    assert hetzner.hetzner_record("a.b.example.com") == ("example.com", "a.b")
    for outside in (None, "", "example.com", "api.example.org", "apiexample.com"):
        assert hetzner.hetzner_record(outside) is None, outside
    own = _ok(c.DnsConfig, SELF_HOSTED)
    assert own.self_hosted_mode and own.hetzner_zone == "example.com"  # type: ignore[attr-defined]
    assert own.hetzner_record("ns-hel.example.com") == ("example.com", "ns-hel")  # type: ignore[attr-defined]
    for answered_by_the_fleet in ("fleet.example.com", "api.fleet.example.com"):
        assert own.hetzner_record(answered_by_the_fleet) is None  # type: ignore[attr-defined]
    assert own.hetzner_record("myfleet.example.com") == ("example.com", "myfleet")  # type: ignore[attr-defined]


def test_a_secondary_name_used_twice_is_refused_at_its_second_use() -> None:
    one = {**SELF_HOSTED, "selfHosted": {"parentZone": "example.com", "secondaries": [SECONDARY]}}
    assert _ok(c.DnsConfig, one)
    other = {"name": "ash", "ipv4": "5.161.0.10"}
    assert _ok(c.DnsConfig, {**SELF_HOSTED, "selfHosted": {"parentZone": "example.com",
                                                           "secondaries": [SECONDARY, other]}})
    twice = {**SELF_HOSTED, "selfHosted": {"parentZone": "example.com",
                                           "secondaries": [SECONDARY, other, {**SECONDARY, "ipv4": "95.216.0.11"}]}}
    with pytest.raises(ValidationError) as exc:
        c.DnsConfig.model_validate(twice)
    assert "secondary name 'hel' is used twice" in str(exc.value)


def test_a_hub_stack_with_a_capi_credential_is_refused_and_a_member_stack_needs_it() -> None:
    raw, secrets = stack_values("prod-hub")
    FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    with pytest.raises(ConfigError, match=r"capi\.kubeconfigConfigKey: a hub stack joins no members"):
        FleetConfig.from_mapping({**raw, "capiKubeconfig": "apiVersion: v1"}, "stacks/Pulumi.prod-hub.yaml",
                                 secrets | {"capiKubeconfig"})


@pytest.mark.parametrize(("mode", "endpoint", "refused"), [
    ("Push", "https://10.0.0.5:6443", True),
    ("Push", "https://[fd00::5]:6443", True),
    ("Push", "https://95.216.0.10:6443", False),
    ("Push", "https://api.dev.example.com:6443", False),
    ("Pull", "https://10.0.0.5:6443", False),
])
def test_a_push_member_needs_a_public_endpoint(dev: tuple[dict[str, Any], frozenset[str]], mode: str, endpoint: str,
                                               refused: bool) -> None:
    """The hub dials a Push member from its own network; a Pull member's agent dials the hub, so its endpoint is
    never dialled from the hub."""
    def edit(raw: dict[str, Any]) -> None:
        member = raw["members"][0]
        member.update(syncMode=mode, apiEndpoint=endpoint)
        if mode == "Push":
            member.pop("clusterId", None)

    if refused:
        with pytest.raises(ConfigError, match=r"members\[0\]\.apiEndpoint: .* is not a public address"):
            _validate(dev, edit)
    else:
        assert _validate(dev, edit).members[0].sync_mode == mode


def test_a_zone_of_two_locations_cannot_spread_over_three_and_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a zone with three locations or more can keep a quorum through the loss of one: with two (ash and a
    second US-east location, say), three servers over both are the best there is."""
    monkeypatch.setitem(c.NETWORK_ZONES, "ash2", "us-east")
    assert _hub(3, ["ash", "ash2"]).servers == 3


def test_real_public_keys_of_every_accepted_type_are_whole() -> None:
    """Keys written by an independent encoder (cryptography's OpenSSH format) pass the shape check."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    keys = [ed25519.Ed25519PrivateKey.generate(), rsa.generate_private_key(65537, 2048),
            *(ec.generate_private_key(curve) for curve in (ec.SECP256R1(), ec.SECP384R1(), ec.SECP521R1()))]
    for key in keys:
        line = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                             serialization.PublicFormat.OpenSSH).decode()
        assert c.SshKeyConfig.model_validate({"name": "ops", "publicKey": f"{line} ops@host"}), line


@pytest.mark.parametrize("cidr", ["10.42.0.0/16", "10.43.128.0/17", "10.40.0.0/13"])
def test_a_hub_network_over_k3s_pod_or_service_space_is_refused(cidr: str) -> None:
    net = ipaddress.IPv4Network(cidr)
    with pytest.raises(ValidationError, match=f"{cidr} overlaps k3s's (pod|service) network"):
        c.NetworkConfig.model_validate({"cidr": cidr, "subnet": str(next(net.subnets(new_prefix=24)))})


def test_a_server_type_in_capitals_is_told_its_spelling() -> None:
    with pytest.raises(ValidationError, match=r"'CX23' is not a Hetzner server type name .*; write cx23"):
        c.HubConfig.model_validate({**_hub_data(), "serverType": "CX23"})
    with pytest.raises(ValidationError) as exc:
        c.HubConfig.model_validate({**_hub_data(), "serverType": "big-one"})
    assert "write" not in str(exc.value)


def test_a_region_stack_names_the_regions_it_knows_and_the_secret_it_needs() -> None:
    raw, secrets = _region(region="us-ash")
    assert "'us-ash' is not a key of regions (eu-fsn); role 'region' needs region" in _error(raw, secrets)
    raw, secrets = _region()
    del raw["identityKey"]
    assert ("identityCsr: stack secret karmada-hub:identityKey is not set (pulumi config set --secret identityKey "
            "< region.key (hubctl region-key sets it))") in _error(raw, secrets - {"identityKey"})


def test_a_region_stack_holds_only_its_regions_members_and_no_addons() -> None:
    raw, secrets = _region()
    members = copy.deepcopy(raw["members"])
    members[1]["region"] = "eu-hel"
    regions = {**raw["regions"], "eu-hel": {**raw["regions"]["eu-fsn"], "location": "hel1"}}
    assert ("members[1].region: this stack rolls out region eu-fsn; a member of eu-hel belongs in the region stack"
            in _error({**raw, "members": members, "regions": regions}, secrets))
    addons = {**raw["karmada"], "addons": {"search": {
        "enabled": True, "resources": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}}
    assert "karmada.addons: addons run on the hub" in _error({**raw, "karmada": addons}, secrets)
