"""Monitoring that ships with the hub: the PodMonitors and the PrometheusRule against the Prometheus Operator
v0.93.0 CRDs; every scrape target's runtime contract (port, path, scheme, auth) against what the rendered
component serves; Prometheus's identity (a client certificate allowed GET /metrics and nothing else) in real TLS
handshakes with the rendered certificates; the member-readiness exporter run for real; the network flows.
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from agents import hub_exporter as ex
from components.karmada import flags, manifests
from components.operations import monitoring_docs as docs
from hubctl.plan import Plan, run_program
from tests.support import agent_pod
from tests.support.httpfake import Handler, LoopbackServer, server_tls
from tests.support.rendered import find, objects, secret_files
from tests.support.schemas import SchemaError, validate_any
from tests.support.tools import REPO, edited_stack, load_stack

MONITORING_KINDS = ("PodMonitor", "PrometheusRule")


DEV_DNS_MODE = "self-hosted"
"""The dev stack's dns.mode: its Prometheus also scrapes the traffic failover controller."""


def _monitors(plan: Plan) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for t, o in objects(plan) if t == "host" and o["kind"] == "PodMonitor"}


def _pods(plan: Plan, target: docs.ScrapeTarget) -> list[dict[str, Any]]:
    """The rendered workloads' pod templates this target's PodMonitor selects."""
    out = []
    for t, obj in objects(plan):
        if t != "host" or obj["kind"] not in ("Deployment", "StatefulSet") or \
                obj["metadata"].get("namespace") != target.namespace:
            continue
        name = obj["spec"]["template"]["metadata"]["labels"].get(docs.NAME_LABEL, "")
        if (name.startswith(target.job + "-") if target.name_prefix else name == target.job):
            out.append(obj["spec"]["template"])
    return out


def effective_args(template: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """A container's settings: its args, or for etcd (only `--config-file`) the flags its pod's `prepare` init
    container writes into that file (agents/etcd_member_prepare.py: the args after `--`)."""
    args = list(container.get("args") or [])
    if [a.split("=", 1)[0] for a in args] == ["--config-file"]:
        for init in template["spec"].get("initContainers") or []:
            own = list(init.get("args") or [])
            if "--" in own and args[0] in own[: own.index("--")]:
                return own[own.index("--") + 1:]
    return args


def served_metrics(container: dict[str, Any], template: dict[str, Any] | None = None) -> tuple[str, int]:
    """(scheme, port) of the container's /metrics, read from its own command line the way each binary reads it."""
    args = flags.flag_values(effective_args(template, container) if template else container.get("args") or [])
    command = " ".join(container.get("command") or [])
    if "listen-metrics-urls" in args:  # etcd
        url = args["listen-metrics-urls"]
        return url.split(":", 1)[0], int(url.rsplit(":", 1)[1])
    if "metrics-bind-address" in args:  # karmada binaries: a plain HTTP metrics server
        return "http", int(args["metrics-bind-address"].rsplit(":", 1)[1])
    if command.endswith(docs.EXPORTER_SCRIPT):
        return "http", int(args["port"])
    if command.endswith("traffic_failover.py"):  # agents/traffic_failover.py `respond`: /metrics on its health port
        return "http", int(args["health-port"])
    if "metrics-address" in args:  # external-dns v0.22.0 --metrics-address
        return "http", int(args["metrics-address"].rsplit(":", 1)[1])
    if "secure-port" in args:  # kube-apiserver, the aggregated apiserver: /metrics on the secure port
        return "https", int(args["secure-port"])
    if command == "kube-controller-manager":
        return "https", flags.KCM_PORT  # --secure-port's default (k8s cmd/kube-controller-manager options)
    raise AssertionError(f"do not know how {command} serves /metrics")


# ---------------------------------------------------------------------------------------- schemas


def test_monitoring_objects_validate_against_the_prometheus_operator_crds(rendered_dev: Plan) -> None:
    objs = [o for t, o in objects(rendered_dev) if o["kind"] in MONITORING_KINDS]
    assert len(objs) == len(docs.scrape_targets(DEV_DNS_MODE)) + 1
    for obj in objs:
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        validate_any(obj)
    bad = copy.deepcopy(objs[0])
    bad["spec"]["podMetricsEndpoints"][0]["tlsConfg"] = {}
    with pytest.raises(SchemaError, match="tlsConfg"):
        validate_any(bad)
    bad = copy.deepcopy(objs[0])
    bad["spec"]["podMetricsEndpoints"][0]["scheme"] = "ftp"
    with pytest.raises(SchemaError, match="scheme"):
        validate_any(bad)


def test_monitoring_is_off_unless_enabled(prod_region: Plan) -> None:
    assert not [o for _, o in objects(prod_region) if o["kind"] in MONITORING_KINDS]
    assert not [o for _, o in objects(prod_region) if o["metadata"].get("name") == docs.EXPORTER]


@pytest.fixture(scope="module")
def prod_region(rendered_prod_hub: Plan) -> Plan:
    from hubctl.commands import load_config

    cfg, config = load_config(REPO, "prod-fsn1")
    assert config.hub_stack is not None
    return run_program(REPO, cfg, {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()})


def test_config_errors() -> None:
    from components.config import ConfigError

    with pytest.raises(ConfigError, match=r"karmada-hub:monitoring.runbookBaseUrl: required when monitoring"):
        load_stack("dev", monitoring={"enabled": True})
    with pytest.raises(ConfigError, match=r"karmada-hub:monitoring.enabled: monitoring runs in the stack that owns"):
        load_stack("prod-fsn1", monitoring={"enabled": True, "runbookBaseUrl": "https://x.example/runbooks"})


# -------------------------------------------------------------------------------- runtime contract


@pytest.mark.parametrize("target", docs.scrape_targets(DEV_DNS_MODE), ids=lambda t: t.job)
def test_each_target_is_scraped_the_way_its_component_serves_metrics(rendered_dev: Plan,
                                                                     target: docs.ScrapeTarget) -> None:
    monitor = _monitors(rendered_dev)[f"karmada-hub-{target.job}"]
    endpoint = monitor["spec"]["podMetricsEndpoints"][0]
    assert (endpoint["port"], endpoint["path"], endpoint["scheme"]) == (target.port_name, "/metrics", target.scheme)
    pods = _pods(rendered_dev, target)
    assert pods, f"no rendered pod for {target.job}"
    for template in pods:
        container = template["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports.get(target.port_name) == target.port, (target.job, ports)
        assert served_metrics(container, template) == (target.scheme, target.port)
    if target.scheme == "http":
        assert "tlsConfig" not in endpoint
        return
    tls = endpoint["tlsConfig"]
    assert tls["cert"]["secret"]["name"] == tls["keySecret"]["name"] == docs.CLIENT_SECRET
    args = flags.flag_values(pods[0]["spec"]["containers"][0]["args"])
    if target.insecure_skip_verify:
        assert "tls-cert-file" not in args and "cert-dir" not in args, "it has a certificate: verify it"
        assert tls == {"cert": tls["cert"], "keySecret": tls["keySecret"], "insecureSkipVerify": True}
    else:
        assert "insecureSkipVerify" not in tls and tls["ca"]["secret"]["name"] == docs.CLIENT_SECRET


def _secret_of_flag(plan: Plan, component: str, path: str) -> str:
    secret = secret_files(find(plan, "host", "Secret", component + manifests.PKI_SECRET_SUFFIX))
    return secret[manifests.secret_key(path.removeprefix(flags.PKI_DIR + "/"))]


def test_prometheus_identity_is_trusted_and_may_only_get_metrics(rendered_dev: Plan) -> None:
    client = secret_files(find(rendered_dev, "host", "Secret", docs.CLIENT_SECRET))
    cert = x509.load_pem_x509_certificate(client["tls.crt"].encode())
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    assert cn == docs.PROMETHEUS_USER and not cert.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)
    # the CA every https target authenticates clients with: --client-ca-file (apiserver, KCM); the aggregated
    # apiserver takes karmada-apiserver's from the extension-apiserver-authentication ConfigMap (delegated authn)
    for component in ("karmada-apiserver", "kube-controller-manager"):
        deploy = find(rendered_dev, "host", "Deployment", component)
        ca_path = flags.flag_values(deploy["spec"]["template"]["spec"]["containers"][0]["args"])["client-ca-file"]
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(
            _secret_of_flag(rendered_dev, component, ca_path).encode()))
    bindings = [o for t, o in objects(rendered_dev) if t == "karmada" and o["kind"] == "ClusterRoleBinding"
                and any(s["name"] == cn for s in o["subjects"])]
    assert len(bindings) == 1
    role = find(rendered_dev, "karmada", "ClusterRole", bindings[0]["roleRef"]["name"])
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def _serving(plan: Plan, component: str) -> tuple[str, str]:
    deploy = find(plan, "host", "Deployment", component)
    args = flags.flag_values(deploy["spec"]["template"]["spec"]["containers"][0]["args"])
    return (_secret_of_flag(plan, component, args["tls-cert-file"]),
            _secret_of_flag(plan, component, args["tls-private-key-file"]))


def _mtls(tmp: Path, name: str, cert: str, key: str, client_ca: str) -> ssl.SSLContext:
    """Serving TLS with a rendered certificate that requires a client certificate from `client_ca`."""
    files = {tmp / f"{name}.crt": cert, tmp / f"{name}.key": key, tmp / f"{name}-client-ca.crt": client_ca}
    for path, pem in files.items():
        path.write_text(pem)
    return server_tls(*map(str, files), require_client_cert=True)


def fake_metrics_server(tmp: Path, cert: str, key: str, client_ca: str, allowed: dict[str, list[dict[str, Any]]]
                        ) -> LoopbackServer:
    """Serves /metrics over TLS with a component's rendered serving certificate, requires a client certificate
    from the Karmada CA, and applies the rendered RBAC to its user the way kube-apiserver does."""

    class MetricsHandler(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            ok = any(self.path in r.get("nonResourceURLs", []) and "get" in r["verbs"]
                     for r in allowed.get(self.client_cn() or "", []))
            self.reply(200 if ok else 403, b"up 1\n" if ok else b"forbidden\n")

    return LoopbackServer(MetricsHandler, _mtls(tmp, "metrics-serving", cert, key, client_ca))


def _scrape(port: int, tls_config: dict[str, Any], secret: dict[str, str], tmp: Path, path: str = "/metrics"
            ) -> tuple[int, bytes]:
    """What Prometheus does with a PodMonitor's tlsConfig: dial the pod's address, verify for `serverName`."""
    files = {}
    for key in ("ca.crt", "tls.crt", "tls.key"):
        files[key] = tmp / f"prom-{key}"
        files[key].write_text(secret[key])
    ctx = ssl.create_default_context(cafile=str(files[tls_config["ca"]["secret"]["key"]]))
    ctx.load_cert_chain(str(files[tls_config["cert"]["secret"]["key"]]), str(files[tls_config["keySecret"]["key"]]))
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    conn.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 10),
                                server_hostname=tls_config["serverName"])
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("job", ["karmada-apiserver", "karmada-aggregated-apiserver"])
def test_scrapes_with_the_rendered_identity_succeed_in_real_tls(rendered_dev: Plan, tmp_path: Path, job: str
                                                                ) -> None:
    monitor = _monitors(rendered_dev)[f"karmada-hub-{job}"]
    tls_config = monitor["spec"]["podMetricsEndpoints"][0]["tlsConfig"]
    secret = secret_files(find(rendered_dev, "host", "Secret", docs.CLIENT_SECRET))
    cert, key = _serving(rendered_dev, job)
    ca = secret_files(find(rendered_dev, "host", "Secret", "karmada-apiserver-pki"))["ca.crt"]
    rbac: dict[str, list[dict[str, Any]]] = {}
    for t, o in objects(rendered_dev):
        if t == "karmada" and o["kind"] == "ClusterRoleBinding":
            role = [r for tt, r in objects(rendered_dev) if tt == "karmada" and r["kind"] == "ClusterRole"
                    and r["metadata"]["name"] == o["roleRef"]["name"]]
            for subject in o.get("subjects", []):
                rbac.setdefault(subject["name"], []).extend(role[0]["rules"] if role else [])
    server = fake_metrics_server(tmp_path, cert, key, ca, rbac)
    try:
        assert _scrape(server.port, tls_config, secret, tmp_path) == (200, b"up 1\n")
        assert _scrape(server.port, tls_config, secret, tmp_path, "/api/v1/secrets")[0] == 403  # nothing else
        wrong = {**tls_config, "serverName": "karmada-webhook.karmada-system.svc"}
        with pytest.raises(ssl.SSLCertVerificationError):
            _scrape(server.port, wrong, secret, tmp_path)
    finally:
        server.close()


# ---------------------------------------------------------------------------------------- exporter


def test_member_states_cover_push_and_pull() -> None:
    clusters = {"items": [
        {"metadata": {"name": "b"}, "spec": {"syncMode": "Pull"}, "status": {"conditions": [
            {"type": "Ready", "status": "Unknown"}]}},
        {"metadata": {"name": "a"}, "spec": {"syncMode": "Push"}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "c"}, "spec": {}},
    ]}
    assert ex.member_states(clusters) == [("a", "Push", 1), ("b", "Pull", 0), ("c", "Push", 0)]
    text = ex.exposition(ex.member_states(clusters), 12.5)
    assert 'karmada_hub_member_ready{member_cluster="b",sync_mode="Pull"} 0' in text
    assert "karmada_hub_members 3" in text and "karmada_hub_exporter_last_success_timestamp_seconds 12.500" in text


@pytest.fixture
def fake_karmada(rendered_dev: Plan, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A karmada-apiserver stand-in with the rendered serving cert; only the exporter's RBAC (list clusters)."""
    api = secret_files(find(rendered_dev, "host", "Secret", "karmada-apiserver-pki"))
    role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:hub-exporter")
    seen: list[str] = []
    body = json.dumps({"items": [
        {"metadata": {"name": "dev-fsn1-a"}, "spec": {"syncMode": "Push"},
         "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "dev-hel1-a"}, "spec": {"syncMode": "Pull"},
         "status": {"conditions": [{"type": "Ready", "status": "False"}]}}]}).encode()

    class KarmadaApi(Handler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names it
            user = self.client_cn()
            seen.append(f"{user} {self.path}")
            allowed = user == docs.EXPORTER_USER and self.path == ex.CLUSTERS_PATH and role["rules"] == [
                {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["list"]}]
            self.reply(200 if allowed else 403, body if allowed else b"{}")

    server = LoopbackServer(KarmadaApi, _mtls(tmp_path, "karmada-apiserver-serving", api["apiserver.crt"],
                                              api["apiserver.key"], api["ca.crt"]))
    try:
        yield f"https://localhost:{server.port}", seen  # a DNS name the rendered serving certificate lists
    finally:
        server.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_exporter_runs_with_its_rendered_args_and_certificate(rendered_dev: Plan, tmp_path: Path,
                                                                  fake_karmada: tuple[str, list[str]]) -> None:
    url, seen = fake_karmada
    deploy = find(rendered_dev, "host", "Deployment", docs.EXPORTER)
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    command, env = agent_pod.prepare(rendered_dev, "host", pod, tmp_path / "script")
    secret = secret_files(find(rendered_dev, "host", "Secret", docs.EXPORTER_CERT_SECRET))
    for key, pem in secret.items():
        (tmp_path / key).write_text(pem)
    port = _free_port()
    args = []
    for arg in container["args"]:  # substituted: the server URL, the cert dir, the port (random, loopback)
        name, _, value = arg.partition("=")
        if name == "--server":
            assert value == flags.apiserver_url()
            value = url
        elif value.startswith(docs.EXPORTER_CERT_DIR):
            value = str(tmp_path / value.rsplit("/", 1)[1])
        elif name == "--port":
            value = str(port)
        elif name == "--period":
            value = "1"
        args.append(f"{name}={value}")
    proc = subprocess.Popen([*command, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        deadline, text = time.monotonic() + 20, ""
        while time.monotonic() < deadline and "karmada_hub_members 2" not in text:
            time.sleep(0.3)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                continue
        assert 'karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull"} 0' in text, text
        assert 'karmada_hub_member_ready{member_cluster="dev-fsn1-a",sync_mode="Push"} 1' in text
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).status == 200
        assert seen and all(s == f"{docs.EXPORTER_USER} {ex.CLUSTERS_PATH}" for s in seen)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -------------------------------------------------------------------------------------------- flows


def test_every_scrape_has_a_declared_flow_and_the_docs_list_them(rendered_dev: Plan) -> None:
    config = load_stack("dev")
    assert config.karmada.etcd.backup is not None
    flows = docs.flows(config.monitoring.prometheus_namespace, config.monitoring.prometheus_pod_labels,
                       config.karmada.etcd.backup.endpoint, DEV_DNS_MODE)
    scrapes = {(f.destination_pods and next(iter(f.destination_pods.values())), f.port) for f in flows
               if f.source_namespace == "monitoring"}
    for target in docs.scrape_targets(DEV_DNS_MODE):
        wanted = "karmada" if target.name_prefix else target.job
        assert (wanted, target.port) in scrapes, target
    text = (REPO / "docs" / "monitoring.md").read_text()
    for f in flows:
        assert f"| {f.why} |" in text and f"| {f.port} |" in text, f.why


def test_the_operator_needs_no_secret_in_karmada_system(rendered_dev: Plan) -> None:
    """Security review 2, M10: the scrape client Secret and the PodMonitors that reference it live in Prometheus's
    namespace, so Prometheus Operator needs no Secret read in `karmada-system` (CA and etcd keys)."""
    prometheus_ns = load_stack("dev").monitoring.prometheus_namespace
    assert prometheus_ns != docs.NAMESPACE
    secret = find(rendered_dev, "host", "Secret", docs.CLIENT_SECRET)
    assert secret["metadata"]["namespace"] == prometheus_ns
    monitors = _monitors(rendered_dev).values()
    assert monitors and {m["metadata"]["namespace"] for m in monitors} == {prometheus_ns}
    # each selects its target's own pods (the failover controller's are in external-dns), never Prometheus's
    selected = {tuple(m["spec"]["namespaceSelector"]["matchNames"]) for m in monitors}
    assert selected == {(t.namespace,) for t in docs.scrape_targets("self-hosted")}
    assert (docs.NAMESPACE,) in selected and (prometheus_ns,) not in selected


def test_exporter_rbac_lists_clusters_only(rendered_dev: Plan) -> None:
    role = find(rendered_dev, "karmada", "ClusterRole", "karmada-hub:hub-exporter")
    assert role["rules"] == [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["list"]}]


def test_the_monitoring_plan_changes_only_what_it_adds(rendered_dev: Plan) -> None:
    """Turning monitoring off removes exactly the monitoring objects and the exporter (nothing else moves)."""
    def off(value: dict[str, Any]) -> None:
        value["enabled"] = False

    without = run_program(REPO, edited_stack("dev", {"monitoring": off}))
    names = {(t, o["kind"], o["metadata"]["name"]) for t, o in objects(rendered_dev)}
    names_off = {(t, o["kind"], o["metadata"]["name"]) for t, o in objects(without)}
    assert names_off < names
    added = names - names_off
    # NetworkPolicy: the exporter's own (Prometheus scrapes it); the scrapes also widen existing policies
    assert {k for _, k, _ in added} == {"PodMonitor", "PrometheusRule", "Secret", "ConfigMap", "Deployment",
                                        "PodDisruptionBudget", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy"}
    # the scraped components that had no clients before get their own ingress policy (the Prometheus peer)
    assert all(n.startswith("karmada-hub") or (k == "NetworkPolicy" and n.endswith("-ingress"))
               for _, k, n in added), added
