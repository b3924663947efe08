"""The CRDs of the pinned Karmada release, fetched at deploy time and verified against recorded sha256s.

The repo never carries upstream CRD files: `pulumi up` downloads each one from the release tag
(`raw.githubusercontent.com/karmada-io/karmada/<tag>/charts/karmada/_crds/bases/<path>`), checks it
against the digest recorded here for that version, and refuses anything else. Offline (tests, the
plan) the same bytes come from a local copy: `KARMADA_HUB_CRDS_DIR`, the workspace's `shared/karmada/crds`
(beside this checkout, or beside the local checkout it was cloned from), or a cache filled by an earlier
download; the digests are checked there too.
The two binding CRDs get the conversion webhook the chart's kustomize patches add.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from components.kube import yamlutil

CRD_SHA256: dict[str, dict[str, str]] = {
    "v1.18.2": {
        "apps/apps.karmada.io_workloadrebalancers.yaml": "7dbd19ae003fc6873c13c58307b4b03872b910661af0f6373d15c98f22ef52c8",
        "autoscaling/autoscaling.karmada.io_cronfederatedhpas.yaml": "94abd3a9e5e2ab768065c603834747fb4b68b1854fd797fc5147207b5f0dbd71",
        "autoscaling/autoscaling.karmada.io_federatedhpas.yaml": "6e231413c5bcc77c51cceaa9aa7c65694a2393b1c418e62254f2cf0835f4d0b6",
        "config/config.karmada.io_resourceinterpretercustomizations.yaml": "75a40fcbda5d09e0e3fc78d93fd066f93764b264f224fbf91872f52788ad218c",
        "config/config.karmada.io_resourceinterpreterwebhookconfigurations.yaml": "5b68ff2852e0875a5f8558223f89680d25dfbc681a9488b52f7228abc656c2ae",
        "multicluster/multicluster.x-k8s.io_serviceexports.yaml": "552a23e5d8859f30b1b802309e2196e5c86e941d76e7dc2c31d8ac70db3919b1",
        "multicluster/multicluster.x-k8s.io_serviceimports.yaml": "3fe2271e2408ab33940eed61670c692ef6f9f667f5c1705d21535c8fc565570e",
        "networking/networking.karmada.io_multiclusteringresses.yaml": "856779dae5ee7a9642a8cb1d5fd2b3fca517eda1bec700551c4cca5c102b58ab",
        "networking/networking.karmada.io_multiclusterservices.yaml": "8ae62f2c27faa7528c94454ca7376a8f85a77c595d72e6976b44d34fe6ae4bd9",
        "policy/policy.karmada.io_clusteroverridepolicies.yaml": "944a09be1f6d708d117bb6f3e2aa9066ae0de3dad9ee897c06fd171508e0ee59",
        "policy/policy.karmada.io_clusterpropagationpolicies.yaml": "b46f806938456f92af605e9e7361201a3d139f81a086cc24a972ef82f513758c",
        "policy/policy.karmada.io_clustertaintpolicies.yaml": "63b5d13b45cf33a3481a24b4282ea3c342ff096976410a3b8eceb4e2a0786a59",
        "policy/policy.karmada.io_federatedresourcequotas.yaml": "cf1e1dd6209ad9c284b043b26414670392981611c799a0d8cbdc1f0f10baef36",
        "policy/policy.karmada.io_overridepolicies.yaml": "f650d7b776e6ea31d6733aefefa027edc567172a556190f46b0de0730f05af52",
        "policy/policy.karmada.io_propagationpolicies.yaml": "d6d86476d0ca15e850645937c0e775145520bd6d134b91f823b536d80e5ff770",
        "remedy/remedy.karmada.io_remedies.yaml": "72a18053f6b547a5d3ebe0e4cf455f728e76cd40217dba27662584f0fb95dd10",
        "work/work.karmada.io_clusterresourcebindings.yaml": "386d15e1296295d11aa4d0bc0325748ee0608b46378222372018a7784214bd34",
        "work/work.karmada.io_resourcebindings.yaml": "75c71d2dbe2c2d8cf3cedf7fa0d255ffd31773f40365ce9611596cdd7d19998d",
        "work/work.karmada.io_works.yaml": "de2815d267ba1e1f19c6594a1f7a4401d37b7d073a206a0ae26277085d343bc2",
    },
    # computed from the module zip of github.com/karmada-io/karmada@v1.17.1 (Go module proxy; a module zip holds
    # the tagged files byte for byte: the v1.18.2 digests above match its zip too)
    "v1.17.1": {
        "apps/apps.karmada.io_workloadrebalancers.yaml": "7dbd19ae003fc6873c13c58307b4b03872b910661af0f6373d15c98f22ef52c8",
        "autoscaling/autoscaling.karmada.io_cronfederatedhpas.yaml": "94abd3a9e5e2ab768065c603834747fb4b68b1854fd797fc5147207b5f0dbd71",
        "autoscaling/autoscaling.karmada.io_federatedhpas.yaml": "6e231413c5bcc77c51cceaa9aa7c65694a2393b1c418e62254f2cf0835f4d0b6",
        "config/config.karmada.io_resourceinterpretercustomizations.yaml": "75a40fcbda5d09e0e3fc78d93fd066f93764b264f224fbf91872f52788ad218c",
        "config/config.karmada.io_resourceinterpreterwebhookconfigurations.yaml": "5b68ff2852e0875a5f8558223f89680d25dfbc681a9488b52f7228abc656c2ae",
        "multicluster/multicluster.x-k8s.io_serviceexports.yaml": "552a23e5d8859f30b1b802309e2196e5c86e941d76e7dc2c31d8ac70db3919b1",
        "multicluster/multicluster.x-k8s.io_serviceimports.yaml": "3fe2271e2408ab33940eed61670c692ef6f9f667f5c1705d21535c8fc565570e",
        "networking/networking.karmada.io_multiclusteringresses.yaml": "856779dae5ee7a9642a8cb1d5fd2b3fca517eda1bec700551c4cca5c102b58ab",
        "networking/networking.karmada.io_multiclusterservices.yaml": "8ae62f2c27faa7528c94454ca7376a8f85a77c595d72e6976b44d34fe6ae4bd9",
        "policy/policy.karmada.io_clusteroverridepolicies.yaml": "944a09be1f6d708d117bb6f3e2aa9066ae0de3dad9ee897c06fd171508e0ee59",
        "policy/policy.karmada.io_clusterpropagationpolicies.yaml": "e95b266d29334c6b32d42cc343f10d32e6fd58e5ac3e86073b530402cf0895be",
        "policy/policy.karmada.io_clustertaintpolicies.yaml": "63b5d13b45cf33a3481a24b4282ea3c342ff096976410a3b8eceb4e2a0786a59",
        "policy/policy.karmada.io_federatedresourcequotas.yaml": "cf1e1dd6209ad9c284b043b26414670392981611c799a0d8cbdc1f0f10baef36",
        "policy/policy.karmada.io_overridepolicies.yaml": "f650d7b776e6ea31d6733aefefa027edc567172a556190f46b0de0730f05af52",
        "policy/policy.karmada.io_propagationpolicies.yaml": "76d4483621f6956e063a3d203f5b880f555408292af7a205ddb588bb1485f888",
        "remedy/remedy.karmada.io_remedies.yaml": "72a18053f6b547a5d3ebe0e4cf455f728e76cd40217dba27662584f0fb95dd10",
        "work/work.karmada.io_clusterresourcebindings.yaml": "21a6717a3f87ac8f651f78bb6fdcd668b88aa01ca4078cbda1336a6b0c6cd783",
        "work/work.karmada.io_resourcebindings.yaml": "9c11056d9ca2c1fa352918f79f718096205e6e90b123707735abc9026778e9ad",
        "work/work.karmada.io_works.yaml": "de2815d267ba1e1f19c6594a1f7a4401d37b7d073a206a0ae26277085d343bc2",
    },
}
"""sha256 of every CRD file at `charts/karmada/_crds/bases/<path>` of each supported tag."""

CONVERSION_CRDS = ("resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io")
REPO_ROOT = Path(__file__).resolve().parents[2]


class CrdIntegrityError(RuntimeError):
    pass


def crd_url(version: str, rel: str) -> str:
    return f"https://raw.githubusercontent.com/karmada-io/karmada/{version}/charts/karmada/_crds/bases/{rel}"


def _cache_dir(version: str) -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "karmada-hub" / "crds" / version


CRDS_DIR_ENV = "KARMADA_HUB_CRDS_DIR"
WORKSPACE_VERSION = "v1.18.2"
"""The release the workspace's copy (`shared/karmada/crds`, see shared/karmada/SOURCE.md) is of."""


def _local_origin(repo: Path) -> Path | None:
    """The checkout this one was cloned from, when `origin` is a local path (`git clone /work/main /tmp/x`)."""
    try:
        url = subprocess.run(["git", "-C", str(repo), "config", "--get", "remote.origin.url"], capture_output=True,
                             text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    url = url.removeprefix("file://")
    if not url or "://" in url or (":" in url and not url.startswith(("/", "."))):
        return None  # a remote (https, ssh, scp-like): nothing beside it on this machine
    origin = (repo / url).resolve()
    return origin if origin.is_dir() else None


def workspace_crds_dir(repo: Path = REPO_ROOT, max_hops: int = 5) -> Path | None:
    """The workspace's copy of the pinned release's CRDs (never in the repo): `shared/karmada/crds` beside
    this checkout, or beside the local checkout it was cloned from (following local origins a few hops,
    so a clone of a clone still finds it)."""
    root: Path | None = repo
    seen: set[Path] = set()
    while root is not None and root not in seen and len(seen) <= max_hops:
        seen.add(root)
        candidate = root.parent / "shared" / "karmada" / "crds"
        if candidate.is_dir():
            return candidate
        root = _local_origin(root)
    return None


def crds_source_dir() -> Path | None:
    """Where offline readers (tests, the plan) take CRD files from: `KARMADA_HUB_CRDS_DIR`, else the workspace,
    else the download cache when it holds the whole pinned release (a clone that downloaded them once)."""
    override = os.environ.get(CRDS_DIR_ENV)
    if override:
        return Path(override)
    workspace = workspace_crds_dir()
    if workspace is not None:
        return workspace
    cache = _cache_dir(WORKSPACE_VERSION)
    return cache if all((cache / rel).is_file() for rel in CRD_SHA256[WORKSPACE_VERSION]) else None


def upstream_crds_dirs() -> list[Path]:
    """The workspace's `shared/upstream-crds` (other projects' CRDs), the sibling of its Karmada copy: beside the
    Karmada CRD source in use and beside the workspace's own copy. Both, because `KARMADA_HUB_CRDS_DIR` may name a
    Karmada release's files anywhere (another tag's, for an upgrade), which says nothing about where the others are."""
    out: list[Path] = []
    for karmada in (crds_source_dir(), workspace_crds_dir()):
        if karmada is not None and karmada.parent.parent / "upstream-crds" not in out:
            out.append(karmada.parent.parent / "upstream-crds")
    return out


def layout_hint(version: str) -> str:
    """How to get the CRDs onto a machine without network, in one sentence (for every 'not found' message)."""
    example = sorted(CRD_SHA256.get(version, CRD_SHA256[WORKSPACE_VERSION]))[0]
    return (f"set {CRDS_DIR_ENV} to a directory laid out like the release's charts/karmada/_crds/bases "
            f"(<group>/<file>.yaml, e.g. {example}), e.g. `git clone --depth 1 --branch {version} "
            f"https://github.com/karmada-io/karmada` and {CRDS_DIR_ENV}=$PWD/karmada/charts/karmada/_crds/bases, "
            "or allow the one-time verified download (unset KARMADA_HUB_NO_DOWNLOAD, needs github.com)")


def _resolves(host: str, timeout: float = 5.0) -> bool:
    """DNS answers within `timeout` (urlopen's timeout does not cover getaddrinfo, which can hang a minute)."""
    import socket
    import threading

    answer: list[bool] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, 443)
            answer.append(True)
        except OSError:
            answer.append(False)

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def local_dirs(version: str) -> list[Path]:
    dirs = [Path(os.environ[CRDS_DIR_ENV])] if os.environ.get(CRDS_DIR_ENV) else []
    workspace = workspace_crds_dir() if version == WORKSPACE_VERSION else None
    if workspace is not None:
        dirs.append(workspace)
    dirs.append(_cache_dir(version))
    return dirs


def _verified(rel: str, data: bytes, expected: str, where: str) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CrdIntegrityError(f"CRD {rel} from {where} has sha256 {actual}, expected {expected}")
    return data


def fetch(version: str, rel: str, allow_download: bool) -> bytes:
    expected = CRD_SHA256[version][rel]
    for directory in local_dirs(version):
        path = directory / rel
        if path.is_file():
            return _verified(rel, path.read_bytes(), expected, str(path))
    if not allow_download:
        raise CrdIntegrityError(f"CRD {rel} of Karmada {version} not found offline: {layout_hint(version)}")
    url = crd_url(version, rel)
    if not _resolves("raw.githubusercontent.com"):
        raise CrdIntegrityError(f"CRD {rel} of Karmada {version}: no local copy and raw.githubusercontent.com does "
                                f"not resolve (offline?): {layout_hint(version)}")
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            data = _verified(rel, resp.read(), expected, url)
    except (urllib.error.URLError, OSError) as err:
        raise CrdIntegrityError(f"CRD {rel} of Karmada {version}: no local copy and the download from {url} failed "
                                f"({getattr(err, 'reason', err)}); {layout_hint(version)}") from None
    cached = _cache_dir(version) / rel
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    return data


def with_conversion_webhook(crd: dict[str, Any], ca_bundle_b64: Any, namespace: str = "karmada-system"
                            ) -> dict[str, Any]:
    """The chart's `webhook_in_*bindings.yaml` patch: convert v1alpha1 <-> v1alpha2 via karmada-webhook."""
    if crd["metadata"]["name"] not in CONVERSION_CRDS:
        return crd
    spec = dict(crd["spec"])
    spec["conversion"] = {"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": f"https://karmada-webhook.{namespace}.svc:443/convert", "caBundle": ca_bundle_b64},
        "conversionReviewVersions": ["v1"],
    }}
    return {**crd, "spec": spec}


def load_crds(version: str, allow_download: bool | None = None) -> list[dict[str, Any]]:
    """Every CRD of the release, parsed, in a stable order. Downloads only outside the offline plan."""
    if version not in CRD_SHA256:
        raise CrdIntegrityError(f"no recorded CRD digests for Karmada {version}")
    if allow_download is None:
        # Offline runs use a local copy when there is one (CI, tests); a laptop without one may download
        # once into the cache, verified the same way. KARMADA_HUB_NO_DOWNLOAD=1 forbids that.
        allow_download = os.environ.get("KARMADA_HUB_NO_DOWNLOAD") != "1"
    crds = []
    for rel in sorted(CRD_SHA256[version]):
        doc = yamlutil.load(fetch(version, rel, allow_download))
        crds.append({k: v for k, v in doc.items() if k != "status"})
    return crds
