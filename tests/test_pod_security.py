"""Pod Security on the hub's host cluster: every namespace the program creates enforces a level, and every pod it
renders passes the level of its namespace (tests/support/pod_security.py: the Pod Security Standards' checks).

k3s sets no cluster-wide Pod Security default, so a namespace without the label admits anything; the metadata
guard (components/hetzner/cloud_init.py) relies on "only namespaces labelled privileged may run hostNetwork pods".
"""

from __future__ import annotations

from typing import Any

from components.traffic import docs as traffic_docs
from tests.support import pod_security as ps
from tests.support.rendered import objects

PRIVILEGED_REASON = "karmada-hub.io/pod-security-exception"
"""On a namespace whose level is below restricted: why (one sentence); tests/test_pod_security.py requires it."""


def _namespaces(plan: Any) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for t, o in objects(plan) if t == "host" and o["kind"] == "Namespace"}


def test_every_host_namespace_enforces_a_level_and_its_pods_pass_it(rendered_dev: Any) -> None:
    namespaces = _namespaces(rendered_dev)
    levels = {}
    for name, ns in namespaces.items():
        labels = ns["metadata"].get("labels") or {}
        assert labels.get(ps.LEVEL_LABEL) in ps.LEVELS, f"namespace {name} enforces no Pod Security level"
        levels[name] = labels[ps.LEVEL_LABEL]
    checked = 0
    for target, obj in objects(rendered_dev):
        spec = ps.pod_spec(obj)
        namespace = obj["metadata"].get("namespace")
        if target != "host" or spec is None or namespace not in levels:
            continue
        checked += 1
        problems = ps.violations(spec, levels[namespace])
        assert not problems, f"{obj['kind']} {namespace}/{obj['metadata']['name']} breaks {levels[namespace]}: " \
                             f"{problems}"
    assert checked >= 10


def test_a_namespace_below_restricted_says_why(rendered_dev: Any) -> None:
    for name, ns in _namespaces(rendered_dev).items():
        meta = ns["metadata"]
        if (meta.get("labels") or {}).get(ps.LEVEL_LABEL) != "restricted":
            assert len((meta.get("annotations") or {}).get(PRIVILEGED_REASON, "")) > 20, \
                f"namespace {name} is not restricted and does not say why ({PRIVILEGED_REASON})"


def test_the_dns_namespace_is_restricted(rendered_dev: Any) -> None:
    """review-host-and-traffic F9: `external-dns` (the Hetzner DNS token, the DNSEndpoint writer, the failover
    controller) had no label, i.e. privileged, while the docs relied on "the program's namespaces enforce
    restricted, which forbids hostNetwork"."""
    ns = _namespaces(rendered_dev)[traffic_docs.EXTERNAL_DNS_NAMESPACE]
    assert (ns["metadata"].get("labels") or {}).get(ps.LEVEL_LABEL) == "restricted"


def test_the_checker_catches_what_each_level_forbids() -> None:
    """The checker itself can fail: hostNetwork breaks baseline, a root container breaks restricted only."""
    host_network = {"hostNetwork": True, "containers": [{"name": "c"}]}
    assert ps.violations(host_network, "baseline") and not ps.violations(host_network, "privileged")
    root = {"containers": [{"name": "c", "securityContext": {"runAsUser": 0}}]}
    assert not ps.violations(root, "baseline") and ps.violations(root, "restricted")
