"""`hubctl region-key <stack>`: a region's identity key, made here, and the CSR to commit.

The key is an ECDSA P-256 key from the operating system's random source, never derived from anything in the
repository. It goes where the region stack reads it and nowhere else:

- by default into the stack's encrypted config, `pulumi config set --secret karmada-hub:identityKey`, with the key
  on the CLI's standard input (so it is on no command line and in no file);
- or, with `--key-file PATH`, into a new file (mode 0600) outside this repository, for a secret store.

The CSR (`CN=karmada-hub:region:<region>`, nothing else: the hub chooses everything else) goes to standard output,
to be committed as `karmada-hub:identityCsr` in the region's stack file. The hub then signs it at its next `up`
under the user name `karmada-hub:region:<region>:<key id>`; the old key's certificates lose their RBAC there.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.config import IDENTITY_KEY, PROJECT, ConfigError
from components.kube.region_csr import check_region_csr, region_common_name
from hubctl.stackfile import read_stack


@dataclass(frozen=True)
class RegionKey:
    region: str
    key_pem: str
    csr_pem: str
    user: str
    """The user name the hub will sign into this key's certificates."""


def make_region_key(region: str) -> RegionKey:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, region_common_name(region))]))
           .sign(key, hashes.SHA256()))
    csr_pem = csr.public_bytes(serialization.Encoding.PEM).decode()
    accepted = check_region_csr(csr_pem, region)  # the hub's own check, before anything is stored
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return RegionKey(region=region, key_pem=key_pem, csr_pem=csr_pem, user=accepted.user)


def stack_region(repo: Path, stack: str) -> str:
    """The region a region stack file rolls out (read without the full validation: the file may not carry its
    CSR and key yet, which is why this command runs)."""
    cfg = read_stack(repo, stack)
    rel = f"stacks/Pulumi.{stack}.yaml"
    role = cfg.config.get(f"{PROJECT}:role")
    if role != "region":
        raise ConfigError(f"{rel}: karmada-hub:role: is {role or 'all-in-one (the default)'}; only a region stack "
                          "has an identity key (hub and all-in-one stacks use the hub's own credentials)")
    region = cfg.config.get(f"{PROJECT}:region")
    if not region:
        raise ConfigError(f"{rel}: karmada-hub:region: not set; a region stack names the region it rolls out")
    return region


def _inside(path: Path, repo: Path) -> bool:
    try:
        path.resolve().relative_to(repo.resolve())
        return True
    except ValueError:
        return False


def write_key_file(path: Path, key_pem: str, repo: Path) -> None:
    """A new file (never an existing one), readable by its owner only, outside the repository."""
    if _inside(path, repo):
        raise ConfigError(f"--key-file {path}: is inside the repository ({repo}); a private key never goes there, "
                          "pick a path outside it (or omit --key-file to store it in the stack's encrypted config)")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(f"--key-file {path}: exists already; this command never overwrites a key") from None
    except OSError as exc:
        raise ConfigError(f"--key-file {path}: cannot create it ({exc.strerror})") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(key_pem)


def store_in_config(repo: Path, stack: str, key_pem: str) -> None:
    """`pulumi config set --secret` in the repository, with the key on standard input."""
    try:
        result = subprocess.run(["pulumi", "config", "set", "--secret", "--stack", stack,
                                 f"{PROJECT}:{IDENTITY_KEY}"], input=key_pem, cwd=repo, capture_output=True,
                                text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise ConfigError("the Pulumi CLI is not installed: install it, or pass --key-file PATH (outside the "
                          "repository) and set the key later with `pulumi config set --secret identityKey < PATH`"
                          ) from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"pulumi config set --secret --stack {stack} {PROJECT}:{IDENTITY_KEY} failed: {last}")
