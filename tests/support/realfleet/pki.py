"""Re-issuing a leaf certificate the way `pulumi up` renews one: same CA, subject, names, usages; a new key."""

from __future__ import annotations

import datetime as dt
from collections.abc import MutableMapping

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.support.testpki import Pair

_COPIED = (x509.BasicConstraints, x509.KeyUsage, x509.ExtendedKeyUsage, x509.SubjectAlternativeName)


def reissue(files: MutableMapping[str, bytes], cas: list[Pair]) -> list[str]:
    """Every `<name>.crt`/`tls.crt` leaf in `files` whose issuer is one of `cas` and whose key sits beside it
    (`<name>.key`/`tls.key`) is re-issued in place; returns the certificate keys renewed."""
    renewed = []
    for name, pem in list(files.items()):
        if not name.endswith(".crt"):
            continue
        key_name = name[:-4] + ".key"
        if key_name not in files:
            continue
        try:
            cert = x509.load_pem_x509_certificate(pem)
        except ValueError:
            continue
        ca = next((c for c in cas if c.cert.subject == cert.issuer and c.cert.subject != cert.subject), None)
        if ca is None:
            continue
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (x509.CertificateBuilder().subject_name(cert.subject).issuer_name(ca.cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=1))
                   .not_valid_after(now + (cert.not_valid_after_utc - cert.not_valid_before_utc)))
        for ext in cert.extensions:
            if isinstance(ext.value, _COPIED):
                builder = builder.add_extension(ext.value, ext.critical)
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca.key.public_key()), critical=False)  # type: ignore[arg-type]
        files[name] = builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)  # type: ignore[arg-type]
        files[key_name] = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption())
        renewed.append(name)
    return renewed
