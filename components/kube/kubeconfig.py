"""Kubeconfig documents (pure): one cluster, one user, one context."""

from __future__ import annotations

import base64

import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter where PyYAML has it: `yaml.safe_dump`'s bytes for a kubeconfig (no scalar has a space to
fold at; tests/test_hubctl_kubeconfig.py compares both), at a fraction of the pure-Python emitter's cost."""


def _b64(pem: str) -> str:
    return base64.b64encode(pem.encode()).decode()


def kubeconfig(
    name: str,
    server: str,
    ca_pem: str,
    client_cert_pem: str | None = None,
    client_key_pem: str | None = None,
    token: str | None = None,
    tls_server_name: str | None = None,
) -> str:
    """A kubeconfig for `server`, authenticating with a client certificate or a bearer token. `tls_server_name`:
    verify the server's certificate for this name instead of the URL's host (client-go clientcmd
    `tls-server-name`, e.g. when dialling an address the certificate does not list)."""
    if (client_cert_pem is None) != (client_key_pem is None):
        raise ValueError("client_cert_pem and client_key_pem go together")
    if token is None and client_cert_pem is None:
        raise ValueError("a kubeconfig needs a client certificate or a token")
    user: dict[str, str] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        user["client-certificate-data"] = _b64(client_cert_pem)
        user["client-key-data"] = _b64(client_key_pem)
    if token is not None:
        user["token"] = token
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem),
                                                **({"tls-server-name": tls_server_name} if tls_server_name else {})}}],
        "users": [{"name": f"{name}-admin", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
    }
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)
