"""A region's identity CSR as the hub accepts it, and the certificate the hub makes from it: plain functions.

The hub decides the identity, never the requester (kubeadm and the CSR API's signers work the same way). A CSR a
region stack file carries (`karmada-hub:identityCsr`) is accepted only when

- it is one PEM CSR whose self-signature verifies (the requester holds the key);
- its subject is exactly `CN=karmada-hub:region:<region>` for the file's own region: no O (groups), no OU, no
  other attribute, and it carries no attributes at all (no extension request, so no SANs);
- its key is ECDSA P-256/P-384 or RSA 2048-8192;
- its public key is not one the offline planner derives (`planner_key`): those private keys are computable by
  anyone with the repository (hubctl/mocks.py derives every stand-in key from a resource name).

Anything else is a `ValueError` whose text is the reason; the hub's reading of its region files
(operations/region_intents.py) turns it into one line naming the file and the key, so `pulumi preview` stops.

The certificate's user name is the hub's choice: `karmada-hub:region:<region>:<key id>`, the key id being the
first 12 hex digits of the SHA-256 of the key's SubjectPublicKeyInfo. The hub binds RBAC to that exact name, so
committing a CSR for a new key revokes every certificate of the old one at the hub's next `up` (Kubernetes has no
revocation list for client certificates; a name nobody is bound to is the revocation). Certificates are short
(`REGION_CERT_DAYS`) and cut from fixed windows (`REGION_CERT_WINDOW_DAYS`), so every hub `up` in a new window
issues fresh ones and one that leaked stops working within weeks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REGION_USER_PREFIX = "karmada-hub:region:"
REGION_CERT_DAYS = 30
"""How long a region certificate is valid."""
REGION_CERT_WINDOW_DAYS = 10
"""A new certificate at the first hub `up` of every window, so one in use has at least 20 days left."""
CLOCK_SKEW = dt.timedelta(minutes=5)
"""notBefore is this far before the window starts, for clocks slightly behind."""
EC_CURVES = {"secp256r1": 256, "secp384r1": 384}
RSA_BITS = (2048, 8192)
KEY_ID_HEX = 12


def region_common_name(region: str) -> str:
    """What a region's CSR asks for, exactly."""
    return f"{REGION_USER_PREFIX}{region}"


def key_id(public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey) -> str:
    """The key's generation in the user name: SHA-256 of its DER SubjectPublicKeyInfo, 12 hex digits."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:KEY_ID_HEX]


def region_user(region: str, kid: str) -> str:
    """The user name the hub signs into a region's certificates and binds its RBAC to."""
    return f"{REGION_USER_PREFIX}{region}:{kid}"


def planner_key(seed: str) -> ec.EllipticCurvePrivateKey:
    """The private key the offline planner stands in for the `tls.PrivateKey` whose type and name are `seed`
    (`<type>::<name>`): public to anyone with this repository, so never an identity (hubctl/mocks.py uses it)."""
    order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # P-256 group order
    digest = hashlib.sha256("\x00".join(("ec", seed)).encode()).digest()
    return ec.derive_private_key(int.from_bytes(digest, "big") % (order - 1) + 1, ec.SECP256R1())


PRIVATE_KEY_TYPE = "tls:index/privateKey:PrivateKey"


def planner_identity_keys(regions: Iterable[str]) -> list[ec.EllipticCurvePublicKey]:
    """The public keys the offline planner derives for region identity keys (`region-identity-<region>`, the name
    the program gave a region's key when the stack made it) of every region named."""
    return [planner_key(f"{PRIVATE_KEY_TYPE}::region-identity-{r}").public_key() for r in sorted(set(regions))]


@dataclass(frozen=True)
class RegionCsr:
    """An accepted region CSR."""

    region: str
    pem: str
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)

    @property
    def user(self) -> str:
        return region_user(self.region, self.key_id)


def _same_key(a: object, b: object) -> bool:
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return a.public_bytes(*fmt) == b.public_bytes(*fmt)  # type: ignore[attr-defined]


def check_region_csr(pem: str, region: str, known_regions: Iterable[str] = ()) -> RegionCsr:
    """Accept `pem` as region `region`'s identity CSR or raise ValueError with the reason. `known_regions`: every
    region of the fleet, whose offline-planner keys are refused too."""

    def refuse(why: str) -> ValueError:
        return ValueError(why)

    if pem.count("-----BEGIN CERTIFICATE REQUEST-----") != 1:
        raise refuse("must be exactly one PEM certificate request")
    try:
        csr = x509.load_pem_x509_csr(pem.encode())
    except ValueError:
        raise refuse("is not a readable PEM certificate request") from None
    try:
        key = csr.public_key()
    except (ValueError, UnsupportedAlgorithm):
        raise refuse("its public key cannot be read") from None
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in EC_CURVES:
            raise refuse(f"its key is ECDSA {key.curve.name}; use P-256 or P-384")
    elif isinstance(key, rsa.RSAPublicKey):
        if not RSA_BITS[0] <= key.key_size <= RSA_BITS[1]:
            raise refuse(f"its key is RSA {key.key_size} bits; use 2048 to 8192 bits (or ECDSA P-256)")
    else:
        raise refuse(f"its key type {type(key).__name__.removeprefix('_')} is not ECDSA P-256/P-384 or RSA")
    try:
        valid = csr.is_signature_valid
    except (ValueError, UnsupportedAlgorithm):
        valid = False
    if not valid:
        raise refuse("its self-signature does not verify (the CSR was altered or not signed by its key)")
    if csr.signature_hash_algorithm is None or csr.signature_hash_algorithm.name not in ("sha256", "sha384",
                                                                                         "sha512"):
        raise refuse("its signature must use SHA-256, SHA-384 or SHA-512")
    want = region_common_name(region)
    attrs = [a for rdn in csr.subject.rdns for a in rdn]
    if len(attrs) != 1 or attrs[0].oid != NameOID.COMMON_NAME or attrs[0].value != want:
        got = csr.subject.rfc4514_string() or "an empty subject"
        raise refuse(f"its subject must be exactly CN={want} (no O, OU or other attribute), got {got}")
    if len(list(csr.extensions)) or len(list(csr.attributes)):
        raise refuse("it must carry no attributes or extensions (no SANs, no key usages): the hub decides those")
    if any(_same_key(key, k) for k in planner_identity_keys([region, *known_regions])):
        raise refuse("its key is one the offline planner derives from a resource name, so its private key is "
                     "public (anyone with the repository computes it)")
    return RegionCsr(region=region, pem=pem, public_key=key)


# ------------------------------------------------------------------------------------------ certificates


def cert_window(now: dt.datetime) -> dt.datetime:
    """The start of the window `now` falls in (UTC midnight, every REGION_CERT_WINDOW_DAYS days since 1970)."""
    day = (now.astimezone(dt.UTC).date() - dt.date(1970, 1, 1)).days
    start = day - day % REGION_CERT_WINDOW_DAYS
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=start)


def validity(window: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    return window - CLOCK_SKEW, window + dt.timedelta(days=REGION_CERT_DAYS)


def sign_region_certificate(csr_pem: str, region: str, ca_cert_pem: str, ca_key_pem: str,
                            window: dt.datetime) -> str:
    """The region's client certificate from `ca`, for the CSR's key, with the subject the hub chooses
    (`region_user`, no organization: no groups), clientAuth only, valid for the window's `validity`. Deterministic
    (serial from the inputs, RFC 6979 ECDSA), so one window's certificate is the same bytes on every run."""
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    key = csr.public_key()
    assert isinstance(key, (ec.EllipticCurvePublicKey, rsa.RSAPublicKey)), "check_region_csr first"
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
    start, end = validity(window)
    serial = int.from_bytes(hashlib.sha256(
        b"\x00".join((csr_pem.encode(), ca_cert_pem.encode(), start.isoformat().encode()))).digest()[:16], "big") >> 1
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, region_user(region, key_id(key)))]))
        .issuer_name(ca_cert.subject)
        .public_key(key)
        .serial_number(serial)
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                     key_encipherment=isinstance(key, rsa.RSAPublicKey), data_encipherment=False,
                                     key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False,
                                     decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
                       critical=False)
    )
    if isinstance(ca_key, ec.EllipticCurvePrivateKey):
        cert = builder.sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    elif isinstance(ca_key, rsa.RSAPrivateKey):
        cert = builder.sign(ca_key, hashes.SHA256())
    else:
        raise ValueError(f"cannot sign with a {type(ca_key).__name__} CA key")
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def certificate_problems(cert_pem: str, region: str, csr_pem: str) -> list[str]:
    """Why a certificate the hub signed for `region` is not what it must be (the policy pack's second line):
    its subject must be exactly the hub's user name for the CSR's key, with no groups, clientAuth only, no SANs,
    no CA, and at most REGION_CERT_DAYS (plus the skew) long."""
    problems = []
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    key = csr.public_key()
    if not _same_key(cert.public_key(), key):
        problems.append("its key is not the CSR's")
    want = region_user(region, key_id(key))  # type: ignore[arg-type]
    attrs = [a for rdn in cert.subject.rdns for a in rdn]
    if len(attrs) != 1 or attrs[0].oid != NameOID.COMMON_NAME or attrs[0].value != want:
        problems.append(f"its subject is {cert.subject.rfc4514_string()}, not exactly CN={want}")
    try:
        ekus = list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        ekus = []
    if ekus != [ExtendedKeyUsageOID.CLIENT_AUTH]:
        problems.append("its extended key usage is not clientAuth alone")
    try:
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        problems.append("it carries subject alternative names")
    except x509.ExtensionNotFound:
        pass
    try:
        if cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            problems.append("it is a CA certificate")
    except x509.ExtensionNotFound:
        pass
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    if life > dt.timedelta(days=REGION_CERT_DAYS) + CLOCK_SKEW:
        problems.append(f"it is valid for {life.days} days, more than {REGION_CERT_DAYS}")
    return problems
