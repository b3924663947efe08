"""components/kube/api_client.py (the dynamic providers' client) against a loopback TLS server."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.kube.api_client import ApiError, KubeApi
from components.kube.kubeconfig import kubeconfig
from tests.support.httpfake import Handler, LoopbackServer, server_tls
from tests.support.testpki import make_ca, make_leaf

SERVICE_NAME = "karmada-apiserver.karmada-system.svc"


class _Ok(Handler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's method name
        self.reply_json(200, {"kind": "Status", "path": self.path})


def test_a_kubeconfig_tls_server_name_is_what_the_certificate_is_checked_for(tmp_path: Path) -> None:
    """The program's karmada kubeconfig dials a hub server's address and verifies the Service name (its
    `tls-server-name`); PullJoin's writes go through it. Found when the real karmada-apiserver refused the join:
    'certificate is not valid for 192.0.2.110'."""
    ca = make_ca("karmada")
    leaf = make_leaf(ca, "karmada-apiserver", True, dns_names=(SERVICE_NAME,))
    (tmp_path / "tls.crt").write_text(leaf.cert_pem)
    (tmp_path / "tls.key").write_text(leaf.key_pem)
    server = LoopbackServer(_Ok, server_tls(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")))
    try:
        named = KubeApi.from_kubeconfig(kubeconfig("karmada", server.url, ca.cert_pem, token="t",
                                                   tls_server_name=SERVICE_NAME))
        assert named.tls_server_name == SERVICE_NAME
        assert named.get("/version") == {"kind": "Status", "path": "/version"}
        unnamed = KubeApi.from_kubeconfig(kubeconfig("karmada", server.url, ca.cert_pem, token="t"))
        with pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED"):
            unnamed.get("/version")
    finally:
        server.close()


def test_the_drill_and_doctor_client_checks_tls_server_name_too(tmp_path: Path) -> None:
    """`hubctl drill` and `hubctl doctor` read the program's karmada kubeconfig (a server's address, the Service
    name in tls-server-name): their client must check the certificate for that name, as kubectl does."""
    from hubctl.drill.kube import Kube

    ca = make_ca("karmada")
    leaf = make_leaf(ca, "karmada-apiserver", True, dns_names=(SERVICE_NAME,))
    (tmp_path / "tls.crt").write_text(leaf.cert_pem)
    (tmp_path / "tls.key").write_text(leaf.key_pem)
    server = LoopbackServer(_Ok, server_tls(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")))
    try:
        for name, expected in ((SERVICE_NAME, True), (None, False)):
            path = tmp_path / f"{name}.kubeconfig"
            path.write_text(kubeconfig("karmada", server.url, ca.cert_pem, token="t", tls_server_name=name))
            kube = Kube(path)
            try:
                if expected:
                    assert kube.get("/version") == {"kind": "Status", "path": "/version"}
                else:
                    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
                        kube.get("/version")
            finally:
                kube.close()
    finally:
        server.close()
