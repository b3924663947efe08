"""The optional per-member scheduler-estimator as the dev plan renders it on the hub's host cluster.

dev-fsn1-a opts in (`schedulerEstimator: true`), dev-hel1-a does not. Beyond the shape, a real TLS
handshake runs with the rendered Secrets: the scheduler's client cert against the estimator's serving
cert, both exactly as the pods would mount them.
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.karmada import flags, manifests
from components.karmada.pki_spec import estimator_service_name
from tests.support.rendered import find, objects

ESTIMATOR = estimator_service_name("dev-fsn1-a")


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def test_every_member_gets_the_estimator_the_scheduler_and_descheduler_dial(rendered_dev: Any) -> None:
    """With estimators on, both dial one per Cluster, Pull ones too (the descheduler has no Pull-mode opt-out):
    dev's Push and Pull member each get one (a member without is refused, tests/test_hub_contract.py)."""
    names = {o["metadata"]["name"] for t, o in objects(rendered_dev) if t == "host" and o["kind"] == "Deployment"}
    assert ESTIMATOR in names
    assert estimator_service_name("dev-hel1-a") in names


def test_estimator_is_ha_and_reachable_where_the_scheduler_dials(rendered_dev: Any) -> None:
    deploy = find(rendered_dev, "host", "Deployment", ESTIMATOR)
    service = find(rendered_dev, "host", "Service", ESTIMATOR)
    find(rendered_dev, "host", "PodDisruptionBudget", ESTIMATOR)
    assert deploy["spec"]["replicas"] == 2
    assert service["spec"]["selector"].items() <= deploy["spec"]["template"]["metadata"]["labels"].items()
    assert [p["port"] for p in service["spec"]["ports"]] == [flags.ESTIMATOR_PORT]
    scheduler = flags.flag_values(_container(find(rendered_dev, "host", "Deployment", "karmada-scheduler"))["args"])
    assert scheduler["enable-scheduler-estimator"] == "true"
    assert scheduler["scheduler-estimator-port"] == str(flags.ESTIMATOR_PORT)
    assert scheduler["scheduler-estimator-service-namespace"] == service["metadata"]["namespace"]
    args = flags.flag_values(_container(deploy)["args"])
    assert args["cluster-name"] == "dev-fsn1-a" and args["server-port"] == str(flags.ESTIMATOR_PORT)


def test_member_kubeconfig_is_the_hubs_around_the_regions_token(rendered_dev: Any) -> None:
    """Review H3: the region writes data (a token and a CA), the hub the kubeconfig (server from the member's stack
    file, both credentials as files), so no region can put an `exec` plugin or anything else into a hub pod; of the
    region's Secret only `token` and `ca.crt` are mounted, whatever else it carries."""
    deploy = find(rendered_dev, "host", "Deployment", ESTIMATOR)
    config_map = find(rendered_dev, "host", "ConfigMap", ESTIMATOR + manifests.MEMBER_KUBECONFIG_SUFFIX)
    token = find(rendered_dev, "host", "Secret", ESTIMATOR + manifests.MEMBER_TOKEN_SUFFIX)
    pod = deploy["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in _container(deploy)["volumeMounts"]}
    item = volumes["member-kubeconfig"]["configMap"]["items"][0]
    assert f"{mounts['member-kubeconfig']}/{item['path']}" == flags.flag_values(_container(deploy)["args"])[
        "kubeconfig"]
    kubeconfig = yaml.safe_load(config_map["data"][item["key"]])
    ca_file = f"{manifests.MEMBER_CREDENTIALS_DIR}/ca.crt"
    assert kubeconfig["clusters"][0]["cluster"] == {"server": "https://dev-fsn1-a.k8s.dev.example.com:6443",
                                                    "certificate-authority": ca_file}
    assert kubeconfig["users"][0]["user"] == {"tokenFile": f"{manifests.MEMBER_CREDENTIALS_DIR}/token"}
    credentials = volumes["member-credentials"]["secret"]
    assert credentials["secretName"] == token["metadata"]["name"]
    assert [(i["key"], i["path"]) for i in credentials["items"]] == [("token", "token"), ("ca.crt", "ca.crt")]
    assert mounts["member-credentials"] == manifests.MEMBER_CREDENTIALS_DIR
    assert set(token["stringData"]) == {"token", "ca.crt"}  # the region's write: data only


def _write(tmp: Path, secret: dict[str, Any], keys: dict[str, str]) -> dict[str, str]:
    paths = {}
    for key, filename in keys.items():
        path = tmp / filename
        path.write_text(secret["stringData"][key])
        paths[key] = str(path)
    return paths


def _handshake(server_files: dict[str, str], client_files: dict[str, str], server_hostname: str) -> str:
    """A TLS 1.3 handshake over loopback with client certs required; returns the client CN the server saw."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(server_files["crt"], server_files["key"])
    server_ctx.load_verify_locations(server_files["ca"])
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.create_default_context(cafile=client_files["ca"])
    client_ctx.load_cert_chain(client_files["crt"], client_files["key"])
    listener = socket.create_server(("127.0.0.1", 0))
    seen: dict[str, Any] = {}

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                seen["peer"] = tls.getpeercert()
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError) as exc:
            seen["error"] = exc

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(listener.getsockname(), timeout=5) as raw, \
                client_ctx.wrap_socket(raw, server_hostname=server_hostname) as tls:
            assert tls.recv(2) == b"ok"
    finally:
        thread.join(5)
        listener.close()
    subject = dict(x[0] for x in seen["peer"]["subject"])
    return subject["commonName"]


def test_scheduler_and_estimator_complete_mtls_with_the_rendered_secrets(rendered_dev: Any, tmp_path: Path) -> None:
    est = find(rendered_dev, "host", "Secret", ESTIMATOR + manifests.PKI_SECRET_SUFFIX)
    sched = find(rendered_dev, "host", "Secret", "karmada-scheduler" + manifests.PKI_SECRET_SUFFIX)
    (tmp_path / "est").mkdir()
    (tmp_path / "sched").mkdir()
    est_args = flags.flag_values(_container(find(rendered_dev, "host", "Deployment", ESTIMATOR))["args"])
    sched_args = flags.flag_values(_container(find(rendered_dev, "host", "Deployment", "karmada-scheduler"))["args"])

    def key_of(path: str) -> str:  # flag path -> Secret key, the way the pod's volume items map them
        return manifests.secret_key(path.removeprefix(flags.PKI_DIR + "/"))

    server = _write(tmp_path / "est", est, {key_of(est_args["grpc-auth-cert-file"]): "tls.crt",
                                             key_of(est_args["grpc-auth-key-file"]): "tls.key",
                                             key_of(est_args["grpc-client-ca-file"]): "ca.crt"})
    client = _write(tmp_path / "sched", sched, {key_of(sched_args["scheduler-estimator-cert-file"]): "tls.crt",
                                                 key_of(sched_args["scheduler-estimator-key-file"]): "tls.key",
                                                 key_of(sched_args["scheduler-estimator-ca-file"]): "ca.crt"})
    server_files = dict(zip(("crt", "key", "ca"), server.values(), strict=True))
    client_files = dict(zip(("crt", "key", "ca"), client.values(), strict=True))
    service_host = f"{ESTIMATOR}.{flags.NAMESPACE}.svc.{flags.CLUSTER_DOMAIN}"
    assert _handshake(server_files, client_files, service_host) == "system:karmada:karmada-scheduler-grpc"
    with pytest.raises(ssl.SSLCertVerificationError):  # the cert serves this member's estimator only
        _handshake(server_files, client_files, f"{estimator_service_name('dev-hel1-a')}.{flags.NAMESPACE}.svc")
