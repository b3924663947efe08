"""dns.mode self-hosted's documents (components/traffic/nameserver_docs.py) as the dev plan renders them: Knot's
configuration checked by the real `knotc conf-check`, the zone's numbers, the delegation, the DaemonSet's
privileges. Knot serving with this configuration: tests/integration/test_dns_lab.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from components.hetzner.cloud_init import POD_CIDR
from components.traffic import nameserver_docs as ns
from tests.support.rendered import find
from tests.support.tools import load_stack, require_tool


def test_the_rendered_configuration_is_what_the_module_renders_and_knot_accepts_it(rendered_dev: Any,
                                                                                  tmp_path: Path) -> None:
    dev = load_stack("dev")
    cm = find(rendered_dev, "host", "ConfigMap", ns.CONFIGMAP)
    template = cm["data"]["knot.conf.in"]
    assert template == ns.knot_conf(dev.dns, [str(dev.hub.network.cidr), POD_CIDR])
    assert "address: [ 10.0.0.0/16, 10.42.0.0/16 ]" in template and "action: [ update, transfer ]" in template
    assert "rate-limit: 200" in template and "global-module: mod-rrl/default" in template
    nodes = json.loads(cm["data"]["nodes.json"])
    assert sorted(nodes) == [f"karmada-hub-dev-cp-{i}" for i in range(3)]
    assert [v[1] for _, v in sorted(nodes.items())] == ["10.0.1.11", "10.0.1.12", "10.0.1.13"]
    knotc = require_tool("knotc", "Debian package knot")
    (tmp_path / "tsig.conf").write_text(ns.tsig_conf("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=",
                                                     "dHJhbnNmZXItdHJhbnNmZXItdHJhbnNmZXItdHJhbnM="))
    conf = (template.replace("@LISTEN@", "192.0.2.10@53, 10.0.1.11@53").replace(ns.STORAGE, str(tmp_path))
            .replace(f'"{ns.RUN_DIR}"', f'"{tmp_path}"')
            .replace(f"{ns.TSIG_DIR}/tsig.conf", str(tmp_path / "tsig.conf")))
    (tmp_path / "knot.conf").write_text(conf)
    check = subprocess.run([knotc, "-c", str(tmp_path / "knot.conf"), "conf-check"], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    broken = tmp_path / "broken.conf"
    broken.write_text(conf.replace("rate-limit: 200", "rate-limits: 200"))
    assert subprocess.run([knotc, "-c", str(broken), "conf-check"], capture_output=True, timeout=60).returncode != 0


def test_a_secondarys_configuration_is_accepted_by_knot(tmp_path: Path) -> None:
    from components.config import DnsSecondaryConfig

    dev = load_stack("dev")
    dns = dev.dns.model_copy(update={"self_hosted": dev.dns.self_hosted.model_copy(
        update={"secondaries": [DnsSecondaryConfig(name="ash", ipv4="5.161.0.10")]})})
    text = ns.secondary_knot_conf(dns, ["203.0.113.1@53", "203.0.113.2@53"], ["0.0.0.0@53"], storage=str(tmp_path),
                                  run_dir=str(tmp_path), key_file=str(tmp_path / "tsig.conf"))
    (tmp_path / "tsig.conf").write_text(ns.tsig_conf("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=",
                                                     "dHJhbnNmZXItdHJhbnNmZXItdHJhbnNmZXItdHJhbnM="))
    (tmp_path / "knot.conf").write_text(text)
    check = subprocess.run([require_tool("knotc", "Debian package knot"), "-c", str(tmp_path / "knot.conf"),
                            "conf-check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    primary = ns.knot_conf(dns, ["10.0.0.0/16"])
    assert "notify: [ secondary-5.161.0.10 ]" in primary and f"key: {ns.TRANSFER_KEY}" in primary
    assert [n for n, _ in ns.secondary_nameservers(dns)] == ["ns-ash-dev.example.com"]


def test_the_zone_bounds_negative_caching_and_names_every_nameserver(rendered_dev: Any) -> None:
    zone = json.loads(find(rendered_dev, "host", "ConfigMap", ns.CONFIGMAP)["data"]["zone.json"])
    assert zone["soa"]["minimum"] == zone["soa"]["ttl"] == 15, "RFC 2308: negative TTL = min(SOA TTL, MINIMUM)"
    assert zone["soa"]["expire"] == 14 * 86400 and zone["recordTtl"] == 15
    assert zone["ns"] == ["ns0-dev.example.com.", "ns1-dev.example.com.", "ns2-dev.example.com."]
    controller = find(rendered_dev, "host", "ConfigMap", ns.CONTROLLER_ZONE_CONFIGMAP)
    assert json.loads(controller["data"]["zone.json"]) == zone, "the controller writes the zone the seeds start from"


def test_the_nameservers_run_with_the_least_they_need(rendered_dev: Any) -> None:
    ds = find(rendered_dev, "host", "DaemonSet", ns.NAME)
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["automountServiceAccountToken"] is False
    (knot,) = pod["containers"]
    (seed,) = pod["initContainers"]
    assert knot["securityContext"]["capabilities"] == {"drop": ["ALL"],
                                                      "add": ["NET_BIND_SERVICE", "SETUID", "SETGID"]}
    assert seed["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE"]}
    for c in (knot, seed):
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert "user: knot:knot" in find(rendered_dev, "host", "ConfigMap", ns.CONFIGMAP)["data"]["knot.conf.in"]
    namespace = find(rendered_dev, "host", "Namespace", ns.NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    others = [o for o in rendered_dev.records if o.type == "kubernetes:apps/v1:Deployment"]
    assert others and not any("karmada-dns" in o.name for o in others), "nothing else runs in karmada-dns"
