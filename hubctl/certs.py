"""Certificates as a reviewer reads them: subject, SANs, validity and fingerprint instead of PEM text.

Used by `hubctl diff` (a changed PEM is shown as what changed in the certificate) and by the plan's
report (the certificates section and its expiry deltas). Only public material is parsed; anything that is
not a certificate is left alone.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----")


@dataclass(frozen=True)
class CertInfo:
    subject: str
    issuer: str
    sans: tuple[str, ...]
    not_before: str
    not_after: str
    validity_hours: int
    fingerprint: str
    """sha256 of the DER, first 16 hex digits (enough to tell two certificates apart)."""
    is_ca: bool

    def summary(self) -> str:
        sans = ", ".join(self.sans) if self.sans else "none"
        ca = ", CA" if self.is_ca else ""
        return (f"subject {self.subject}; SANs {sans}; valid {self.not_before} → {self.not_after} "
                f"({self.validity_hours} h{ca}); sha256 {self.fingerprint}")

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "issuer": self.issuer, "sans": list(self.sans), "notBefore": self.not_before,
                "notAfter": self.not_after, "validityHours": self.validity_hours, "fingerprint": self.fingerprint,
                "isCa": self.is_ca}


def _name(name: x509.Name) -> str:
    parts = []
    for oid, label in ((NameOID.COMMON_NAME, "CN"), (NameOID.ORGANIZATION_NAME, "O"),
                       (NameOID.ORGANIZATIONAL_UNIT_NAME, "OU")):
        parts += [f"{label}={a.value}" for a in name.get_attributes_for_oid(oid)]
    return ",".join(parts) or "(empty)"


def parse_one(pem: str) -> CertInfo | None:
    try:
        cert = x509.load_pem_x509_certificate(pem.encode())
    except (ValueError, TypeError):
        return None
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        sans = tuple([f"DNS:{n}" for n in ext.get_values_for_type(x509.DNSName)]
                     + [f"IP:{ip}" for ip in ext.get_values_for_type(x509.IPAddress)]
                     + [f"URI:{u}" for u in ext.get_values_for_type(x509.UniformResourceIdentifier)])
    except x509.ExtensionNotFound:
        sans = ()
    try:
        is_ca = bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        is_ca = False
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return CertInfo(
        subject=_name(cert.subject), issuer=_name(cert.issuer), sans=sans,
        not_before=start.strftime("%Y-%m-%d"), not_after=end.strftime("%Y-%m-%d"),
        validity_hours=int((end - start).total_seconds() // 3600),
        fingerprint=cert.fingerprint(hashes.SHA256()).hex()[:16], is_ca=is_ca,
    )


def parse_all(text: str) -> list[CertInfo]:
    """Every certificate in `text` (a PEM bundle, a kubeconfig value, a file's content), in order."""
    found = []
    for match in PEM_CERT.finditer(text):
        info = parse_one(match.group(0))
        if info is not None:
            found.append(info)
    return found


def pem_text(value: Any) -> str | None:
    """The PEM text in `value`: itself, or decoded when it is base64 of PEM (a caBundle); None otherwise."""
    if not isinstance(value, str):
        return None
    if "-----BEGIN CERTIFICATE-----" in value:
        return value
    if value.startswith("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"):  # base64 of "-----BEGIN CERTIFICATE-----"
        try:
            return base64.b64decode(value, validate=True).decode("ascii")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
    return None


def looks_like_cert(value: Any) -> bool:
    return pem_text(value) is not None


def describe_change(before: str | None, after: str | None) -> list[str]:
    """Lines saying how the certificates in `before` became those in `after` (what a reviewer checks)."""
    old = parse_all(before or "")
    new = parse_all(after or "")
    lines: list[str] = []
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        label = f"certificate {i + 1}: " if max(len(old), len(new)) > 1 else ""
        if a is None and b is not None:
            lines.append(f"{label}added: {b.summary()}")
        elif b is None and a is not None:
            lines.append(f"{label}removed: {a.summary()}")
        elif a is not None and b is not None and a != b:
            changed = []
            for attr, title in (("subject", "subject"), ("issuer", "issuer"), ("sans", "SANs"),
                                ("validity_hours", "validity hours"), ("not_after", "expiry"), ("is_ca", "CA")):
                va, vb = getattr(a, attr), getattr(b, attr)
                if va != vb:
                    show = (lambda v: ", ".join(v) or "none") if attr == "sans" else str
                    changed.append(f"{title} {show(va)} → {show(vb)}")
            if not changed:
                changed.append("same subject, SANs and validity; new key or signature")
            lines.append(f"{label}reissued ({a.fingerprint} → {b.fingerprint}): " + "; ".join(changed))
    return lines
