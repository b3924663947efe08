"""The shared HTTP test plumbing's own promises (`tests.support.httpfake`): a fake sees the user a client
certificate names and nobody without one, certificates are optional only where asked, and a test server never
listens beyond loopback."""

from __future__ import annotations

import ssl
import urllib.request
from pathlib import Path

import pytest

from tests.support.httpfake import Handler, LoopbackServer, server_tls
from tests.support.testpki import Pki


class WhoAmI(Handler):
    def do_GET(self) -> None:  # noqa: N802 - http.server names it
        self.reply(200, str(self.client_cn()).encode())


def _files(tmp: Path, **pems: str) -> dict[str, str]:
    for name, pem in pems.items():
        (tmp / name).write_text(pem)
    return {name: str(tmp / name) for name in pems}


@pytest.fixture
def client(pki: Pki, tmp_path: Path) -> dict[str, ssl.SSLContext]:
    """Client contexts trusting the server CA: `admin` presents the admin certificate, `anonymous` none."""
    files = _files(tmp_path, **{"client.crt": pki.client.cert_pem, "client.key": pki.client.key_pem})
    admin = ssl.create_default_context(cadata=pki.server_ca.cert_pem)
    admin.load_cert_chain(files["client.crt"], files["client.key"])
    return {"admin": admin, "anonymous": ssl.create_default_context(cadata=pki.server_ca.cert_pem)}


def _serving(pki: Pki, tmp: Path, require: bool) -> ssl.SSLContext:
    files = _files(tmp, **{"s.crt": pki.server.cert_pem, "s.key": pki.server.key_pem,
                           "client-ca.crt": pki.client_ca.cert_pem})
    return server_tls(files["s.crt"], files["s.key"], files["client-ca.crt"], require_client_cert=require)


def _get(url: str, context: ssl.SSLContext | None = None) -> str:
    with urllib.request.urlopen(url, context=context, timeout=5) as resp:
        return resp.read().decode()


def test_client_cn_is_the_certificates_user_and_none_without_one(pki: Pki, tmp_path: Path,
                                                                  client: dict[str, ssl.SSLContext]) -> None:
    plain = LoopbackServer(WhoAmI)
    optional = LoopbackServer(WhoAmI, _serving(pki, tmp_path, require=False))
    try:
        assert _get(plain.url) == "None"
        assert _get(optional.url, client["admin"]) == "system:admin"
        assert _get(optional.url, client["anonymous"]) == "None", "optional: a token client connects too"
    finally:
        plain.close()
        optional.close()


def test_a_required_client_certificate_refuses_a_client_without_one(pki: Pki, tmp_path: Path,
                                                                    client: dict[str, ssl.SSLContext]) -> None:
    server = LoopbackServer(WhoAmI, _serving(pki, tmp_path, require=True))
    try:
        assert _get(server.url, client["admin"]) == "system:admin"
        with pytest.raises(OSError):
            _get(server.url, client["anonymous"])
    finally:
        server.close()


def test_test_servers_stay_on_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        LoopbackServer(WhoAmI, address="0.0.0.0")
    with pytest.raises(ValueError, match="client_ca_file"):
        server_tls("s.crt", "s.key", require_client_cert=True)
