"""The DNSEndpoint CRD of the pinned external-dns release, fetched at deploy time and verified by sha256.

external-dns reads the failover controller's decisions as `externaldns.k8s.io/v1alpha1 DNSEndpoint` objects on
the hub's host cluster (`--source=crd`), so the program installs that CRD there. Like the Karmada CRDs
(components/karmada/crds.py) the file never lives in the repo: `pulumi up` downloads it from the release tag
(`raw.githubusercontent.com/kubernetes-sigs/external-dns/<tag>/config/crd/standard/...`) and refuses any other
bytes than the digest recorded here. Offline (tests, the plan) the same bytes come from
`KARMADA_HUB_UPSTREAM_CRDS_DIR`, the workspace's `shared/upstream-crds` (found the way the Karmada copy is
found), or the cache of an earlier download.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from components.karmada.crds import CrdIntegrityError, _verified, upstream_crds_dirs
from components.kube import yamlutil
from components.versions import EXTERNAL_DNS_VERSION

REL = "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml"
FILE = "dnsendpoints.externaldns.k8s.io.yaml"
SHA256 = {"v0.22.0": "7d1c06b1e991c8db3a70be658fb628e61e71ba72f2686469c276f4f6ab0d1e30"}
"""sha256 of `config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml` at each supported tag."""
DIR_ENV = "KARMADA_HUB_UPSTREAM_CRDS_DIR"
"""A directory laid out like `shared/upstream-crds` (this CRD under `external-dns/`)."""


def url(version: str = EXTERNAL_DNS_VERSION) -> str:
    return f"https://raw.githubusercontent.com/kubernetes-sigs/external-dns/{version}/{REL}"


def _cache(version: str) -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "karmada-hub" / "external-dns" / version


def local_dirs(version: str) -> list[Path]:
    dirs = [Path(os.environ[DIR_ENV]) / "external-dns"] if os.environ.get(DIR_ENV) else []
    dirs += [d / "external-dns" for d in upstream_crds_dirs()]  # <workspace>/shared/upstream-crds
    dirs.append(_cache(version))
    return dirs


def fetch(version: str = EXTERNAL_DNS_VERSION, allow_download: bool | None = None) -> bytes:
    if version not in SHA256:
        raise CrdIntegrityError(f"no recorded DNSEndpoint CRD digest for external-dns {version}")
    expected = SHA256[version]
    for directory in local_dirs(version):
        path = directory / FILE
        if path.is_file():
            return _verified(FILE, path.read_bytes(), expected, str(path))
    if allow_download is None:
        allow_download = os.environ.get("KARMADA_HUB_NO_DOWNLOAD") != "1"
    if not allow_download:
        raise CrdIntegrityError(f"DNSEndpoint CRD of external-dns {version} not found offline (set {DIR_ENV})")
    source = url(version)
    try:
        with urllib.request.urlopen(source, timeout=30) as resp:
            data = _verified(FILE, resp.read(), expected, source)
    except (urllib.error.URLError, OSError) as err:
        raise CrdIntegrityError(f"DNSEndpoint CRD of external-dns {version}: no local copy and the download from "
                                f"{source} failed ({getattr(err, 'reason', err)}); set {DIR_ENV} to a directory "
                                "with external-dns/" + FILE) from None
    cached = _cache(version) / FILE
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    return data


def load(version: str = EXTERNAL_DNS_VERSION, allow_download: bool | None = None) -> dict[str, Any]:
    """The CRD document, parsed, without upstream's `status`."""
    doc = yamlutil.load(fetch(version, allow_download))
    return {k: v for k, v in doc.items() if k != "status"}
