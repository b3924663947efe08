"""A refusal says what to write, never a regular expression or a library's phrase (review-newcomer.md §3 "could
teach more"): every `pattern=` of the models has words (components/config.py PATTERN_WORDS), pydantic's built-in
messages are rewritten into the stack file's terms, and a near miss (uppercase, a trailing dot, http://, GB) is
answered with the value to write."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from components.config import ConfigError, FleetConfig
from tests.support.tools import stack_values

PREFIX = "stacks/Pulumi.dev.yaml: karmada-hub:"


def error(mutation: Callable[[dict[str, Any]], None]) -> str:
    raw, secrets = stack_values("dev")
    raw = copy.deepcopy(raw)
    mutation(raw)
    with pytest.raises(ConfigError) as info:
        FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)
    return str(info.value).removeprefix(PREFIX)


def at(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        node = raw
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("memory-in-gb", at(["tenants", 0, "quota", "overall", "memory"], "80GB"),
     "tenants[0].quota.overall.memory: must be a Kubernetes quantity like \"40\", 500m or 80Gi (binary Ki/Mi/Gi/Ti or "
     "decimal k/M/G/T; not GB) (got '80GB'); did you mean '80Gi'?"),
    ("storage-in-gb", at(["karmada", "etcd", "storageSize"], "8GB"),
     "karmada.etcd.storageSize: must be a whole size in Kubernetes units Mi, Gi or Ti, like 8Gi (not GB) (got "
     "'8GB'); did you mean '8Gi'?"),
    ("member-name-uppercase", at(["members", 0, "name"], "Dev-FSN1-a"),
     "members[0].name: must be a lowercase DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit, "
     "like eu-fsn (got 'Dev-FSN1-a'); did you mean 'dev-fsn1-a'?"),
    ("tenant-name-uppercase", at(["tenants", 1, "name"], "Search"),
     "tenants[1].name: must be a lowercase DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit, "
     "like eu-fsn (got 'Search'); did you mean 'search'?"),
    ("region-key-uppercase", lambda raw: raw["regions"].__setitem__("EU-HEL", raw["regions"].pop("eu-hel")),
     "regions.EU-HEL: must be a lowercase DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit, "
     "like eu-fsn (got 'EU-HEL'); did you mean 'eu-hel'?"),
    ("api-dns-name-trailing-dot", at(["hub", "apiDnsName"], "api.hub.dev.example.com."),
     "hub.apiDnsName: must be a lowercase DNS name like api.hub.example.com, without a scheme or a trailing dot (got "
     "'api.hub.dev.example.com.'); did you mean 'api.hub.dev.example.com'?"),
    ("backup-endpoint-without-scheme", at(["karmada", "etcd", "backup", "endpoint"], "fsn1.your-objectstorage.com"),
     "karmada.etcd.backup.endpoint: must be https://host[:port] with nothing after it, like "
     "https://fsn1.your-objectstorage.com (got 'fsn1.your-objectstorage.com'); did you mean "
     "'https://fsn1.your-objectstorage.com'?"),
    ("kubernetes-version-as-a-number", at(["members", 0, "kubernetesVersion"], 1.33),
     "members[0].kubernetesVersion: must be text, but YAML read the number 1.33: quote it (\"1.33\")"),
    ("labels-as-a-list", at(["members", 0, "labels"], ["tier=standard"]),
     "members[0].labels: must be a mapping of key: value, like {tier: standard} (got a list)"),
    ("ssh-keys-empty", at(["hub", "sshKeys"], []), "hub.sshKeys: must have at least 1 item (got 0)"),
    ("api-cidrs-empty", at(["hub", "firewall", "apiCidrs"], []), "hub.firewall.apiCidrs: must have at least 1 item "
                                                                 "(got 0)"),
    ("zones-not-a-list", at(["members", 0, "zones"], "fsn1"), "members[0].zones: must be a list, like [fsn1] (got "
                                                              "'fsn1')"),
    ("role-capitalised", at(["role"], "Hub"), "role: must be one of all-in-one, hub, region (got 'Hub'); did you mean "
                                              "hub?"),
    ("gate-near-miss", at(["karmada", "featureGates"], ["WorkloadAfinity"]),
     "karmada.featureGates[0]: must be one of WorkloadAffinity, SchedulingOvercommitProtection, ResourceQuotaEstimate, "
     "PriorityBasedScheduling, PropagationPolicyPreemption, StatefulFailoverInjection, FederatedQuotaEnforcement (got "
     "'WorkloadAfinity'); did you mean WorkloadAffinity?"),
    ("servers-fraction", at(["hub", "servers"], 2.5), "hub.servers: must be a whole number like 3 (got 2.5)"),
    ("protect-maybe", at(["hub", "protect"], "maybe"), "hub.protect: must be true or false (got 'maybe')"),
    ("credentials-source-typo", at(["members", 0, "credentials", "source"], "capii"),
     "members[0].credentials: source must be one of capi, secret (got 'capii')"),
    ("hub-not-a-mapping", at(["hub"], "big"),
     "hub: must be a mapping of this key's settings (docs/configuration.md lists them) (got 'big')"),
    ("label-value-a-list", at(["members", 0, "labels"], {"tier": ["a"]}), "members[0].labels.tier: must be text (got "
                                                                          "a list)"),
    ("a-bound", at(["dns", "refreshSeconds"], 1), "dns.refreshSeconds: must be >= 5 (got 1)"),
    ("duration-with-a-unit", at(["failover", "gracefulEvictionTimeout"], "10m"),
     "failover.gracefulEvictionTimeout: must be a whole number like 3 (got '10m'); the value is in seconds, without a "
     "unit: write 600"),
    ("server-type-capitals", at(["hub", "serverType"], "CX33"),
     "hub.serverType: 'CX33' is not a Hetzner server type name like cx23, cpx22, cax11 or ccx13; write cx33"),
    ("karmada-version-without-v", at(["karmada", "version"], "1.18.2"),
     "karmada.version: Karmada 1.18.2 is not in the compatibility matrix (supported: v1.17.1, v1.18.2); write v1.18.2"),
    ("size-in-g", at(["karmada", "etcd", "storageSize"], "8G"),
     "karmada.etcd.storageSize: must be a whole size in Kubernetes units Mi, Gi or Ti, like 8Gi (not GB) (got '8G'); "
     "did you mean '8Gi'?"),
    ("yaml-boolean", at(["members", 0, "syncMode"], True),
     "members[0].syncMode: must be one of Push, Pull (got True); YAML reads yes/no/on/off/true/false unquoted as "
     "booleans: quote the value"),
]

LIBRARY_PHRASES = ("nput should", "should match pattern", "after validation", "instance of", "unable to parse",
                   "Unable to extract", "dictionary", "does not match any of the expected tags", "^")


@pytest.mark.parametrize(("mutation", "expected"), [pytest.param(m, e, id=i) for i, m, e in CASES])
def test_a_refusal_says_what_to_write(mutation: Callable[[dict[str, Any]], None], expected: str) -> None:
    message = error(mutation)
    assert message == expected
    assert not any(p in message for p in LIBRARY_PHRASES), message


def _patterns(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.add(node["pattern"])
        for value in node.values():
            found |= _patterns(value)
    elif isinstance(node, list):
        for value in node:
            found |= _patterns(value)
    return found


def test_every_pattern_of_the_models_has_words() -> None:
    """A new `pattern=` without an entry in PATTERN_WORDS would print a generic line: say what to write."""
    from components.config import PATTERN_WORDS

    patterns = _patterns(FleetConfig.model_json_schema(by_alias=True, mode="validation"))
    assert patterns and not patterns - set(PATTERN_WORDS), sorted(patterns - set(PATTERN_WORDS))
    for pattern, words in PATTERN_WORDS.items():
        assert not re.search(r"[\\^$]", words), (pattern, words)
