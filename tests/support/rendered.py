"""Reading a rendered plan in tests: the objects each API server would get, and the certificates."""

from __future__ import annotations

from typing import Any

from cryptography import x509

from hubctl.mocks import unwrap
from hubctl.plan import k8s_target


def objects(plan: Any) -> list[tuple[str, dict[str, Any]]]:
    """`(target, object)` for every Kubernetes object the program applies (inputs, secrets unwrapped)."""
    out = []
    for record in plan.records:
        if record.type.startswith("kubernetes:") and record.custom and not record.options.get("read"):
            obj = {k: v for k, v in unwrap(record.inputs).items() if not k.startswith("__")}
            out.append((k8s_target(record.provider) or "unknown", obj))
    return out


def find(plan: Any, target: str, kind: str, name: str) -> dict[str, Any]:
    matches = [o for t, o in objects(plan) if t == target and o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{target} {kind}/{name}: {len(matches)} objects"
    return matches[0]


def certs(plan: Any) -> dict[str, tuple[x509.Certificate, dict[str, Any]]]:
    """Every locally signed certificate by logical name: `(certificate, inputs)`."""
    out = {}
    for r in plan.records:
        if r.type == "tls:index/locallySignedCert:LocallySignedCert":
            out[r.name] = (x509.load_pem_x509_certificate(unwrap(r.outputs)["certPem"].encode()), unwrap(r.inputs))
    return out


def secret_files(secret: dict[str, Any]) -> dict[str, str]:
    """A Secret's contents as text, whether rendered as `stringData` or base64 `data`."""
    import base64

    files = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
    return {**files, **(secret.get("stringData") or {})}
