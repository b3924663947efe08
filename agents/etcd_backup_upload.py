"""etcd backup: encrypt a Karmada etcd snapshot and stream it to S3-compatible object storage; fetch it back.

Runs in the hub host cluster as the second step of the etcd backup CronJob (components/operations/
etcd_backup.py): an etcd container has just written the snapshot with `etcdctl snapshot save`; `upload`
seals it chunk by chunk with AES-256-GCM under a key derived from the stack secret (mounted as a file) and
sends the ciphertext as an S3 multipart upload, one part at a time, so memory stays at about two parts
whatever the database size. The same file restores: `list` shows the snapshots, `fetch` downloads and
decrypts one, `decrypt` opens a local copy (docs/runbooks/restore-etcd.md). Stdlib only (AES-GCM through the
OpenSSL libcrypto this Python links, via ctypes, checked against a known answer before use): the file is the
container's program, mounted from a ConfigMap into a pinned Python image. Object-storage credentials come
from the environment (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY), never from arguments.

Encrypted format `KHB1` (all integers big-endian):

    header (43 bytes)  "KHB1" | version 1 (1) | algorithm 1 = AES-256-GCM (1) | reserved 0 (2)
                       | chunk size (4) | key id (8) | salt (16) | nonce prefix (7)
    record i           AES-256-GCM(K, nonce_i, aad = header, plaintext chunk i) = ciphertext | tag (16)

- `K = HKDF-SHA256(ikm = the stack secret, salt, info = "karmada-hub etcd backup v1", 32 bytes)`: a fresh key
  per snapshot; `key id = HMAC-SHA256(secret, "karmada-hub etcd backup key id")[:8]` names the secret
  without revealing it, so a wrong key is reported as such.
- every chunk has `chunk size` plaintext bytes except the last (1..chunk size); the snapshot is never empty;
- `nonce_i = nonce prefix (7) | i (4) | 1 if record i is the last else 0 (1)` (the STREAM construction): a
  record moved to another position, a record from another snapshot (other salt, other key), a stream cut
  after any record, or bytes after the last record all fail authentication; the header is the AAD of
  every record, so it cannot be altered either. Plaintext is written only after its record verified, and
  `fetch`/`decrypt` write to `<out>.partial` and rename only at the authenticated end.

Objects: `<prefix>/<stack>/<UTC time>.db.enc` plus `<same>.json` (sizes, sha256 of plaintext and ciphertext,
key id), written after the snapshot completed. Retention keeps the newest `--retain` snapshots (legacy
unencrypted `<time>.db` objects count too) and deletes older ones with their manifests.

With `--k3s-folder`/`--k3s-retain` (only beside `--retain`: a run without it sends no delete) the same run bounds
the hub's own k3s snapshots in that folder the way k3s itself prunes them (`pkg/etcd/s3/s3.go` `SnapshotRetention`:
every server's scheduled `etcd-snapshot-*` objects together, newest first, each with its `.metadata/` copy), so the
bucket stays bounded whether or not the pinned k3s applies the retention the program hands it
(components/operations/k3s_snapshots.py).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "s3"
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
SNAPSHOT_SUFFIX = ".db.enc"
LEGACY_SUFFIX = ".db"
MANIFEST_SUFFIX = ".json"

MAGIC = b"KHB1"
VERSION = 1
AES_256_GCM = 1
HEADER = struct.Struct(">4sBBHI8s16s7s")
TAG_BYTES = 16
CHUNK_BYTES = 1 << 20
HKDF_INFO = b"karmada-hub etcd backup v1"
KEY_ID_INFO = b"karmada-hub etcd backup key id"

MIB = 1 << 20
MIN_PART_BYTES = 5 * MIB
"""S3: every part but the last must be at least 5 MiB; at most 10,000 parts (AWS S3 user guide, "Amazon S3
multipart upload limits")."""
MAX_PARTS = 10_000
DEFAULT_PART_BYTES = 16 * MIB
STALE_UPLOAD = dt.timedelta(hours=24)


class BackupError(Exception):
    """A failure to report in one line (exit 1)."""


# -------------------------------------------------------------------------------------------- AES-GCM


class Aead(Protocol):
    def seal(self, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes: ...

    def open(self, key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None: ...


class LibcryptoGcm:
    """AES-256-GCM through OpenSSL's EVP interface in the process's own libcrypto (the one CPython's ssl
    and hashlib modules link; libssl3 in the Debian-based python image, which is built against libssl-dev and
    keeps the libraries its binaries link: docker-library/python 3.12/slim-bookworm/Dockerfile)."""

    _GET_TAG, _SET_TAG = 0x10, 0x11  # EVP_CTRL_GCM_GET_TAG / EVP_CTRL_GCM_SET_TAG (openssl/evp.h)

    def __init__(self, lib: ctypes.CDLL) -> None:
        c = ctypes
        lib.EVP_CIPHER_CTX_new.restype = c.c_void_p
        lib.EVP_CIPHER_CTX_new.argtypes = []
        lib.EVP_CIPHER_CTX_free.argtypes = [c.c_void_p]
        lib.EVP_aes_256_gcm.restype = c.c_void_p
        lib.EVP_aes_256_gcm.argtypes = []
        for name in ("EVP_EncryptInit_ex", "EVP_DecryptInit_ex"):
            getattr(lib, name).argtypes = [c.c_void_p, c.c_void_p, c.c_void_p, c.c_char_p, c.c_char_p]
        for name in ("EVP_EncryptUpdate", "EVP_DecryptUpdate"):
            getattr(lib, name).argtypes = [c.c_void_p, c.c_void_p, c.POINTER(c.c_int), c.c_char_p, c.c_int]
        for name in ("EVP_EncryptFinal_ex", "EVP_DecryptFinal_ex"):
            getattr(lib, name).argtypes = [c.c_void_p, c.c_void_p, c.POINTER(c.c_int)]
        lib.EVP_CIPHER_CTX_ctrl.argtypes = [c.c_void_p, c.c_int, c.c_int, c.c_void_p]
        self.lib = lib

    def _run(self, encrypt: bool, key: bytes, nonce: bytes, aad: bytes, data: bytes, tag: bytes | None
             ) -> tuple[bytes, bytes] | None:
        lib, c = self.lib, ctypes
        if len(key) != 32 or len(nonce) != 12:
            raise ValueError("AES-256-GCM needs a 32-byte key and a 12-byte nonce")
        ctx = lib.EVP_CIPHER_CTX_new()
        if not ctx:
            raise MemoryError("EVP_CIPHER_CTX_new")
        try:
            init, update, final = (("EVP_EncryptInit_ex", "EVP_EncryptUpdate", "EVP_EncryptFinal_ex") if encrypt
                                   else ("EVP_DecryptInit_ex", "EVP_DecryptUpdate", "EVP_DecryptFinal_ex"))
            if getattr(lib, init)(ctx, lib.EVP_aes_256_gcm(), None, key, nonce) != 1:
                raise BackupError(f"libcrypto {init} failed")
            n = c.c_int(0)
            if aad and getattr(lib, update)(ctx, None, c.byref(n), aad, len(aad)) != 1:
                raise BackupError("libcrypto: AAD rejected")
            out = c.create_string_buffer(len(data) + 16)
            if getattr(lib, update)(ctx, out, c.byref(n), data, len(data)) != 1:
                raise BackupError(f"libcrypto {update} failed")
            written = n.value
            if tag is not None and lib.EVP_CIPHER_CTX_ctrl(ctx, self._SET_TAG, TAG_BYTES, tag) != 1:
                raise BackupError("libcrypto: tag rejected")
            if getattr(lib, final)(ctx, c.byref(out, written), c.byref(n)) != 1:
                if encrypt:
                    raise BackupError("libcrypto EVP_EncryptFinal_ex failed")
                return None  # authentication failed
            written += n.value
            out_tag = c.create_string_buffer(TAG_BYTES)
            if encrypt and lib.EVP_CIPHER_CTX_ctrl(ctx, self._GET_TAG, TAG_BYTES, out_tag) != 1:
                raise BackupError("libcrypto: no tag")
            return out.raw[:written], out_tag.raw
        finally:
            lib.EVP_CIPHER_CTX_free(ctx)

    def seal(self, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        result = self._run(True, key, nonce, aad, plaintext, None)
        assert result is not None
        return result[0] + result[1]

    def open(self, key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None:
        if len(sealed) < TAG_BYTES:
            return None
        result = self._run(False, key, nonce, aad, sealed[:-TAG_BYTES], sealed[-TAG_BYTES:])
        return None if result is None else result[0]


_KAT = (bytes(32), bytes(12), bytes(16), bytes.fromhex(
    "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"))
"""McGrew & Viega, "The Galois/Counter Mode of Operation", test case 14 (256-bit zero key, zero IV, one zero
block): every backend must reproduce it before it encrypts anything."""


def _libcrypto_candidates() -> list[str]:
    """Where the EVP functions are: first the `_hashlib` extension itself (dlsym on its handle also searches
    the libcrypto it links, so this is exactly the OpenSSL this Python uses), then the usual sonames. Never
    `find_library("crypto")`: on macOS that is a stub that aborts the process when loaded."""
    names = []
    try:
        import _hashlib

        names.append(str(_hashlib.__file__))
    except (ImportError, AttributeError):
        pass
    return [*names, "libcrypto.so.3", "libcrypto.so.1.1"]


def _passes_kat(backend: Aead) -> bool:
    key, iv, plaintext, expected = _KAT
    return backend.seal(key, iv, b"", plaintext) == expected and backend.open(key, iv, b"", expected) == plaintext


def aead() -> Aead:
    """A verified AES-256-GCM from the OpenSSL this Python links (through ctypes: no package to install)."""
    errors = []
    for name in _libcrypto_candidates():
        try:
            backend = LibcryptoGcm(ctypes.CDLL(name))
        except (OSError, AttributeError) as err:
            errors.append(f"{name}: {err}")
            continue
        if _passes_kat(backend):
            return backend
        errors.append(f"{name}: known-answer test failed")
    raise BackupError("no working AES-256-GCM in this Python's OpenSSL: " + "; ".join(errors))


# -------------------------------------------------------------------------------------- the format


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869 HKDF with SHA-256."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def key_id(master: bytes) -> bytes:
    return hmac.new(master, KEY_ID_INFO, hashlib.sha256).digest()[:8]


def read_master(path: Path) -> bytes:
    """The stack secret from its file; surrounding whitespace (a trailing newline) is not part of it."""
    master = path.read_bytes().strip()
    if len(master) < 32:
        raise BackupError(f"{path}: the backup key must be at least 32 characters (openssl rand -base64 32)")
    return master


@dataclass(frozen=True)
class Header:
    chunk: int
    key_id: bytes
    salt: bytes
    nonce_prefix: bytes

    def pack(self) -> bytes:
        return HEADER.pack(MAGIC, VERSION, AES_256_GCM, 0, self.chunk, self.key_id, self.salt, self.nonce_prefix)

    @classmethod
    def unpack(cls, raw: bytes) -> Header:
        if len(raw) < HEADER.size or raw[:4] != MAGIC:
            raise BackupError("not a KHB1 encrypted snapshot (no KHB1 header)")
        _magic, version, algorithm, reserved, chunk, kid, salt, prefix = HEADER.unpack(raw[:HEADER.size])
        if (version, algorithm, reserved) != (VERSION, AES_256_GCM, 0) or not 0 < chunk <= 64 * MIB:
            raise BackupError(f"unsupported KHB1 header (version {version}, algorithm {algorithm}, chunk {chunk})")
        return cls(chunk, kid, salt, prefix)


def nonce(prefix: bytes, index: int, last: bool) -> bytes:
    if index >= 1 << 32:
        raise BackupError("snapshot too large for one KHB1 stream")
    return prefix + struct.pack(">IB", index, 1 if last else 0)


@dataclass
class Digests:
    plaintext_bytes: int = 0
    ciphertext_bytes: int = 0
    plaintext_sha256: Any = None
    ciphertext_sha256: Any = None

    def __post_init__(self) -> None:
        self.plaintext_sha256 = hashlib.sha256()
        self.ciphertext_sha256 = hashlib.sha256()


def encrypt_stream(source: IO[bytes], master: bytes, cipher: Aead, digests: Digests, chunk: int = CHUNK_BYTES
                   ) -> Iterator[bytes]:
    """The KHB1 stream of `source`, one header and then one record at a time (reads one chunk ahead, so it
    knows which record is the last)."""
    header = Header(chunk, key_id(master), secrets.token_bytes(16), secrets.token_bytes(7))
    raw_header = header.pack()
    key = hkdf_sha256(master, header.salt, HKDF_INFO)
    digests.ciphertext_sha256.update(raw_header)
    digests.ciphertext_bytes += len(raw_header)
    yield raw_header
    current = source.read(chunk)
    if not current:
        raise BackupError("the snapshot is empty: etcdctl wrote nothing")
    index = 0
    while current:
        following = source.read(chunk)
        digests.plaintext_sha256.update(current)
        digests.plaintext_bytes += len(current)
        record = cipher.seal(key, nonce(header.nonce_prefix, index, not following), raw_header, current)
        digests.ciphertext_sha256.update(record)
        digests.ciphertext_bytes += len(record)
        yield record
        current, index = following, index + 1


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    parts, missing = [], n
    while missing:
        piece = stream.read(missing)
        if not piece:
            break
        parts.append(piece)
        missing -= len(piece)
    return b"".join(parts)


def decrypt_stream(source: IO[bytes], master: bytes, cipher: Aead, sink: IO[bytes], digests: Digests) -> None:
    """Authenticate and decrypt a KHB1 stream into `sink`, record by record; raises BackupError on any
    tampering, truncation, trailing data or a wrong key."""
    raw_header = _read_exactly(source, HEADER.size)
    header = Header.unpack(raw_header)
    if not hmac.compare_digest(header.key_id, key_id(master)):
        raise BackupError(f"the snapshot was encrypted with key id {header.key_id.hex()}, this key is "
                          f"{key_id(master).hex()}: use the backup key the stack had when it was written")
    key = hkdf_sha256(master, header.salt, HKDF_INFO)
    size = header.chunk + TAG_BYTES
    current = _read_exactly(source, size)
    if not current:
        raise BackupError("truncated: the stream has a header but no record")
    index = 0
    while current:
        following = _read_exactly(source, size)
        last = not following
        plain = cipher.open(key, nonce(header.nonce_prefix, index, last), raw_header, current)
        if plain is None:
            if last and cipher.open(key, nonce(header.nonce_prefix, index, False), raw_header, current) is not None:
                raise BackupError(f"truncated: record {index} is not the last one, and nothing follows it")
            if not last and cipher.open(key, nonce(header.nonce_prefix, index, True), raw_header, current) is not None:
                raise BackupError(f"data after the final record {index}")
            raise BackupError(f"record {index} failed authentication (corrupted, reordered or from another file)")
        if not last and len(plain) != header.chunk:
            raise BackupError(f"record {index} is short but not the last")
        digests.plaintext_sha256.update(plain)
        digests.plaintext_bytes += len(plain)
        sink.write(plain)
        current, index = following, index + 1


# ------------------------------------------------------------------------------------------- SigV4


def _quote(value: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(value, safe=safe)


def canonical_query(query: str) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(pairs))


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | memoryview


def sign(method: str, url: str, body: bytes | memoryview, creds: Credentials, region: str, now: dt.datetime,
         extra_headers: Mapping[str, str] | None = None) -> Request:
    """A SigV4-signed request (header auth, signed payload hash) for an S3-compatible endpoint."""
    parts = urllib.parse.urlsplit(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date,
               **{k.lower(): v for k, v in (extra_headers or {}).items()}}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([
        method,
        parts.path or "/",  # already URI-encoded once by the caller; S3 does not encode it twice
        canonical_query(parts.query),
        "".join(f"{k}:{' '.join(headers[k].split())}\n" for k in sorted(headers)),
        signed,
        payload_hash,
    ])
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + creds.secret_key).encode()
    for part in (day, region, SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"{ALGORITHM} Credential={creds.access_key}/{scope}, SignedHeaders={signed}, "
                                f"Signature={signature}")
    return Request(method, url, headers, body)


# ------------------------------------------------------------------------------------------ store


class StoreError(BackupError):
    pass


class Store:
    """Path-style S3: `<endpoint>/<bucket>/<key>`."""

    def __init__(self, endpoint: str, region: str, bucket: str, creds: Credentials, timeout: float = 120.0) -> None:
        if not endpoint.startswith(("https://", "http://")):
            raise ValueError(f"endpoint must be an http(s) URL (got {endpoint!r})")
        self.base = endpoint.rstrip("/") + "/" + _quote(bucket)
        self.region = region
        self.creds = creds
        self.timeout = timeout

    def _open(self, method: str, key: str = "", query: str = "", body: bytes | memoryview = b"",
              headers: Mapping[str, str] | None = None) -> Any:
        url = self.base + ("/" + _quote(key, safe="/-_.~") if key else "") + (f"?{query}" if query else "")
        req = sign(method, url, body, self.creds, self.region, dt.datetime.now(dt.UTC), headers)
        http_req = urllib.request.Request(req.url, data=req.body if method in ("PUT", "POST") else None,
                                          method=method, headers={k: v for k, v in req.headers.items() if k != "host"})
        try:
            return urllib.request.urlopen(http_req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            what = f"{key or '/'}?{query.split('&')[0].split('=')[0]}" if query else key or "/"
            raise StoreError(f"{method} {what}: HTTP {err.code} {err.read()[:300]!r}") from None
        except urllib.error.URLError as err:
            raise StoreError(f"{method} {key or '/'}: {err.reason}") from None

    def _send(self, method: str, key: str = "", query: str = "", body: bytes | memoryview = b"",
              headers: Mapping[str, str] | None = None) -> tuple[bytes, Mapping[str, str]]:
        with self._open(method, key, query, body, headers) as resp:
            return resp.read(), resp.headers

    def put(self, key: str, body: bytes, content_type: str = "application/octet-stream") -> None:
        self._send("PUT", key, body=body, headers={"content-type": content_type})

    def get_stream(self, key: str) -> Any:
        return self._open("GET", key)

    def list_objects(self, prefix: str) -> dict[str, int]:
        """Key -> size under `prefix` (ListObjectsV2, every page)."""
        objects: dict[str, int] = {}
        token = ""
        while True:
            query = urllib.parse.urlencode({"list-type": "2", "prefix": prefix,
                                            **({"continuation-token": token} if token else {})})
            root = ET.fromstring(self._send("GET", query=query)[0])
            for c in root.findall(f"{S3_NS}Contents"):
                objects[c.findtext(f"{S3_NS}Key") or ""] = int(c.findtext(f"{S3_NS}Size") or 0)
            if root.findtext(f"{S3_NS}IsTruncated") != "true":
                return objects
            token = root.findtext(f"{S3_NS}NextContinuationToken") or ""

    def list_keys(self, prefix: str) -> list[str]:
        return list(self.list_objects(prefix))

    def delete(self, key: str) -> None:
        self._send("DELETE", key)

    # ---- multipart (CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload)

    def create_multipart(self, key: str) -> str:
        body, _ = self._send("POST", key, query="uploads", headers={"content-type": "application/octet-stream"})
        upload_id = ET.fromstring(body).findtext(f"{S3_NS}UploadId")
        if not upload_id:
            raise StoreError(f"CreateMultipartUpload {key}: no UploadId in {body[:200]!r}")
        return upload_id

    def upload_part(self, key: str, upload_id: str, number: int, data: bytes | memoryview) -> str:
        query = urllib.parse.urlencode({"partNumber": str(number), "uploadId": upload_id})
        _, headers = self._send("PUT", key, query=query, body=data)
        etag = headers.get("ETag")
        if not etag:
            raise StoreError(f"UploadPart {key} #{number}: no ETag")
        return etag

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> None:
        xml = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{_xml(etag)}</ETag></Part>" for n, etag in parts
        ) + "</CompleteMultipartUpload>"
        body, _ = self._send("POST", key, query=urllib.parse.urlencode({"uploadId": upload_id}), body=xml.encode(),
                             headers={"content-type": "application/xml"})
        # "A request could fail after the initial 200 OK response has been sent": the error is in the body.
        root = ET.fromstring(body) if body.strip() else None
        if root is None or root.tag.endswith("Error") or (
                root.find(f"{S3_NS}Key") is None and root.find(f"{S3_NS}ETag") is None):
            raise StoreError(f"CompleteMultipartUpload {key}: {body[:300]!r}")

    def abort_multipart(self, key: str, upload_id: str) -> None:
        self._send("DELETE", key, query=urllib.parse.urlencode({"uploadId": upload_id}))

    def list_multipart(self, prefix: str) -> list[tuple[str, str, dt.datetime]]:
        """(key, upload id, initiated) of unfinished uploads under `prefix` (first page: enough to clean up)."""
        body, _ = self._send("GET", query="uploads&" + urllib.parse.urlencode({"prefix": prefix}))
        out = []
        for up in ET.fromstring(body).findall(f"{S3_NS}Upload"):
            initiated = (up.findtext(f"{S3_NS}Initiated") or "").replace("Z", "+00:00")
            out.append((up.findtext(f"{S3_NS}Key") or "", up.findtext(f"{S3_NS}UploadId") or "",
                        dt.datetime.fromisoformat(initiated) if initiated else dt.datetime.now(dt.UTC)))
        return out


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# --------------------------------------------------------------------------------------- decisions


def snapshot_key(prefix: str, stack: str, now: dt.datetime) -> str:
    """`<prefix>/<stack>/<UTC timestamp>.db.enc`: names sort by time, so retention is a sort."""
    return f"{stack_prefix(prefix, stack)}{now.strftime('%Y%m%dT%H%M%SZ')}{SNAPSHOT_SUFFIX}"


def stack_prefix(prefix: str, stack: str) -> str:
    return f"{prefix.strip('/')}/{stack}/"


def is_snapshot(key: str) -> bool:
    return key.endswith((SNAPSHOT_SUFFIX, LEGACY_SUFFIX))


def expired(keys: list[str], retain: int) -> list[str]:
    """The snapshots beyond the newest `retain`, oldest first (encrypted and legacy plain ones alike), each
    followed by its manifest when there is one. Other objects under the prefix are left alone."""
    if retain < 1:
        raise ValueError("retain must be >= 1: a backup job must never delete the snapshot it just wrote")
    snapshots = sorted(k for k in keys if is_snapshot(k))
    out = []
    present = set(keys)
    for key in snapshots[: max(0, len(snapshots) - retain)]:
        out.append(key)
        if key + MANIFEST_SUFFIX in present:
            out.append(key + MANIFEST_SUFFIX)
    return out


K3S_SCHEDULED = re.compile(r"etcd-snapshot-.+-(\d{9,})(\.zip)?")
"""A k3s scheduled snapshot: `<etcd-snapshot-name>-<node>-<unix seconds>`, `.zip` when compressed (k3s
`pkg/etcd/snapshot.go` `Snapshot`, stored version). On-demand snapshots (`on-demand-…`) are the operator's: k3s
prunes them only when asked, and so does this agent (never)."""
K3S_METADATA_DIR = ".metadata"


def k3s_expired(keys: list[str], folder: str, retain: int) -> list[str]:
    """k3s' scheduled snapshots directly in `folder/` beyond the newest `retain` (by the time in their names),
    oldest first, each followed by its `folder/.metadata/<name>` when there is one."""
    if retain < 1:
        raise ValueError("k3s retention must be >= 1")
    base = folder.strip("/") + "/"
    present = set(keys)
    dated = []
    for key in keys:
        name = key[len(base):] if key.startswith(base) else ""
        match = K3S_SCHEDULED.fullmatch(name) if "/" not in name else None
        if match:
            dated.append((int(match.group(1)), name))
    dated.sort()
    out = []
    for _, name in dated[: max(0, len(dated) - retain)]:
        out.append(base + name)
        metadata = f"{base}{K3S_METADATA_DIR}/{name}"
        if metadata in present:
            out.append(metadata)
    return out


def prune_k3s(store: Store, folder: str, retain: int) -> list[str]:
    """Apply `k3s_expired` to what the folder holds now; returns what was deleted."""
    old = k3s_expired(store.list_keys(folder.strip("/") + "/"), folder, retain)
    for key in old:
        store.delete(key)
    return old


def part_bytes(ciphertext_bytes: int, wanted: int = DEFAULT_PART_BYTES) -> int:
    """A part size of whole MiB, at least 5 MiB, that fits the stream in at most 10,000 parts."""
    if wanted < MIN_PART_BYTES:
        raise ValueError(f"part size must be at least {MIN_PART_BYTES // MIB} MiB")
    needed = -(-ciphertext_bytes // MAX_PARTS)
    return max(wanted, -(-needed // MIB) * MIB)


def ciphertext_size(plaintext_bytes: int, chunk: int = CHUNK_BYTES) -> int:
    return HEADER.size + plaintext_bytes + TAG_BYTES * max(1, -(-plaintext_bytes // chunk))


@dataclass(frozen=True)
class Uploaded:
    key: str
    parts: int
    manifest: dict[str, Any]
    deleted: list[str]


def upload(store: Store, snapshot: Path, prefix: str, stack: str, retain: int | None, master: bytes,
           now: dt.datetime, cipher: Aead, wanted_part: int = DEFAULT_PART_BYTES) -> Uploaded:
    """Encrypt and stream `snapshot` as one multipart object, write its manifest, then apply retention.

    `retain` None: write only. No list, no delete, no abort of another run's upload: the bucket's lifecycle rule
    expires old snapshots and incomplete uploads, so the hub's key needs no right to delete (a compromised hub
    cannot erase the backups; security review 2, M7)."""
    size = snapshot.stat().st_size
    if size == 0:
        raise BackupError(f"{snapshot} is empty: etcdctl wrote no snapshot")
    key = snapshot_key(prefix, stack, now)
    part_size = part_bytes(ciphertext_size(size), wanted_part)
    for stale_key, upload_id, initiated in (store.list_multipart(stack_prefix(prefix, stack))
                                            if retain is not None else ()):
        if now - initiated > STALE_UPLOAD:  # a run killed mid-upload; its parts cost storage until aborted
            store.abort_multipart(stale_key, upload_id)
    digests = Digests()
    upload_id = store.create_multipart(key)
    parts: list[tuple[int, str]] = []
    try:
        # One buffer, allocated once: a part is the records that reach `part_size` (so every part but the last
        # is at least that), sent straight from the buffer. Memory: one part plus one record.
        buffer = memoryview(bytearray(part_size + HEADER.size + CHUNK_BYTES + TAG_BYTES))
        filled = 0
        with snapshot.open("rb") as source:
            for piece in encrypt_stream(source, master, cipher, digests):
                buffer[filled:filled + len(piece)] = piece
                filled += len(piece)
                if filled >= part_size:
                    parts.append((len(parts) + 1, store.upload_part(key, upload_id, len(parts) + 1, buffer[:filled])))
                    filled = 0
        if filled:
            parts.append((len(parts) + 1, store.upload_part(key, upload_id, len(parts) + 1, buffer[:filled])))
        if len(parts) > MAX_PARTS:
            raise BackupError(f"{len(parts)} parts: more than S3 allows")
        store.complete_multipart(key, upload_id, parts)
    except BaseException:
        try:
            store.abort_multipart(key, upload_id)
        except BackupError as err:
            print(f"warning: could not abort the multipart upload {upload_id}: {err}", file=sys.stderr)
        raise
    manifest = {
        "format": "KHB1", "object": key, "keyId": key_id(master).hex(), "createdAt": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "plaintextBytes": digests.plaintext_bytes, "plaintextSha256": digests.plaintext_sha256.hexdigest(),
        "ciphertextBytes": digests.ciphertext_bytes, "ciphertextSha256": digests.ciphertext_sha256.hexdigest(),
        "parts": len(parts), "partBytes": part_size,
    }
    if digests.plaintext_bytes != size:
        raise BackupError(f"{snapshot} changed while it was read ({size} -> {digests.plaintext_bytes} bytes)")
    store.put(key + MANIFEST_SUFFIX, json.dumps(manifest, indent=2).encode(), "application/json")
    if retain is None:
        return Uploaded(key, len(parts), manifest, [])
    listed = store.list_keys(stack_prefix(prefix, stack))
    if key not in listed:
        raise StoreError(f"{key} is not listed after the upload; refusing to delete older snapshots")
    old = expired(listed, retain)
    for stale in old:
        store.delete(stale)
    return Uploaded(key, len(parts), manifest, old)


def _write_atomically(out: Path, fill: Any) -> None:
    partial = out.with_name(out.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as sink:
            fill(sink)
        partial.replace(out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def fetch(store: Store, key: str, master: bytes, out: Path, cipher: Aead) -> Digests:
    """Download `key` and decrypt it into `out` as it streams; checks it against its manifest if there is one."""
    if not key.endswith(SNAPSHOT_SUFFIX):
        raise BackupError(f"{key} is not an encrypted snapshot ({SNAPSHOT_SUFFIX}); legacy plain .db objects are "
                          "downloaded with any S3 client")
    digests = Digests()
    with store.get_stream(key) as resp:
        _write_atomically(out, lambda sink: decrypt_stream(resp, master, cipher, sink, digests))
    try:
        manifest = json.loads(store._send("GET", key + MANIFEST_SUFFIX)[0])
    except StoreError:
        return digests
    if (manifest.get("plaintextSha256"), manifest.get("plaintextBytes")) != (
            digests.plaintext_sha256.hexdigest(), digests.plaintext_bytes):
        out.unlink(missing_ok=True)
        raise BackupError(f"{key}: decrypted snapshot does not match its manifest")
    return digests


def decrypt_file(source: Path, master: bytes, out: Path, cipher: Aead) -> Digests:
    digests = Digests()
    with source.open("rb") as stream:
        _write_atomically(out, lambda sink: decrypt_stream(stream, master, cipher, sink, digests))
    return digests


# -------------------------------------------------------------------------------------------- CLI


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--bucket", required=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upload", help="encrypt a snapshot and stream it to the bucket; apply retention")
    _store_args(up)
    up.add_argument("--prefix", required=True)
    up.add_argument("--stack", required=True)
    up.add_argument("--retain", type=int, default=None,
                    help="keep this many snapshots and delete older ones (needs a key that may delete); omitted: "
                    "write only, the bucket's lifecycle rule does retention")
    up.add_argument("--snapshot", required=True, type=Path)
    up.add_argument("--key-file", required=True, type=Path)
    up.add_argument("--part-size-mib", type=int, default=DEFAULT_PART_BYTES // MIB)
    up.add_argument("--k3s-folder", default="", help="also bound k3s' scheduled snapshots in this folder")
    up.add_argument("--k3s-retain", type=int, default=0, help="how many of them to keep (all servers together)")
    ls = sub.add_parser("list", help="the stack's snapshots, oldest first")
    _store_args(ls)
    ls.add_argument("--prefix", required=True)
    ls.add_argument("--stack", required=True)
    fe = sub.add_parser("fetch", help="download one snapshot and decrypt it")
    _store_args(fe)
    fe.add_argument("--object", required=True, help="the object key, as `list` prints it")
    fe.add_argument("--key-file", required=True, type=Path)
    fe.add_argument("--out", required=True, type=Path)
    de = sub.add_parser("decrypt", help="decrypt a downloaded snapshot")
    de.add_argument("--key-file", required=True, type=Path)
    de.add_argument("--in", dest="source", required=True, type=Path)
    de.add_argument("--out", required=True, type=Path)
    return p.parse_args(argv)


def _credentials() -> Credentials | None:
    try:
        return Credentials(os.environ["S3_ACCESS_KEY_ID"], os.environ["S3_SECRET_ACCESS_KEY"])
    except KeyError as missing:
        print(f"error: environment variable {missing} is not set", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "decrypt":
            d = decrypt_file(args.source, read_master(args.key_file), args.out, aead())
            print(f"decrypted {args.out} ({d.plaintext_bytes} bytes, sha256 {d.plaintext_sha256.hexdigest()})")
            return 0
        creds = _credentials()
        if creds is None:
            return 2
        store = Store(args.endpoint, args.region, args.bucket, creds)
        if args.command == "list":
            for key, size in sorted(store.list_objects(stack_prefix(args.prefix, args.stack)).items()):
                if is_snapshot(key):
                    print(f"{key}\t{size}")
            return 0
        if args.command == "fetch":
            d = fetch(store, args.object, read_master(args.key_file), args.out, aead())
            print(f"fetched {args.object} -> {args.out} ({d.plaintext_bytes} bytes, sha256 "
                  f"{d.plaintext_sha256.hexdigest()})")
            return 0
        if bool(args.k3s_folder) != (args.k3s_retain > 0):
            raise ValueError("--k3s-folder and --k3s-retain (>= 1) go together")
        if args.k3s_folder and args.retain is None:
            raise ValueError("--k3s-folder needs --retain: without it this run only writes (its key may not "
                             "delete) and the bucket's lifecycle rule bounds both folders")
        result = upload(store, args.snapshot, args.prefix, args.stack, args.retain, read_master(args.key_file),
                        dt.datetime.now(dt.UTC), aead(), args.part_size_mib * MIB)
    except (BackupError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    m = result.manifest
    print(f"uploaded {result.key} ({m['plaintextBytes']} bytes, {result.parts} part(s), key id {m['keyId']}); "
          f"deleted {len([k for k in result.deleted if is_snapshot(k)])} older snapshot(s)", flush=True)
    if args.k3s_folder:
        try:
            pruned = prune_k3s(store, args.k3s_folder, args.k3s_retain)
        except BackupError as err:
            print(f"error: the Karmada snapshot is stored, but bounding k3s' snapshots in {args.k3s_folder}/ "
                  f"failed: {err}", file=sys.stderr)
            return 1
        print(f"k3s snapshots: kept the newest {args.k3s_retain} in {args.k3s_folder}/, deleted "
              f"{len([k for k in pruned if f'/{K3S_METADATA_DIR}/' not in k])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
