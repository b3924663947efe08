"""etcd backup upload: put one Karmada etcd snapshot into S3-compatible object storage, keep the newest N.

Runs in the hub host cluster as the second step of the etcd backup CronJob (components/etcd_backup.py):
an etcd container has just written the snapshot with `etcdctl snapshot save`; this uploads it with an
AWS Signature Version 4 request (Hetzner Object Storage and other S3-compatible stores accept it),
then lists the prefix and deletes the oldest snapshots beyond `--retain`. Stdlib only: the file is the
container's program, mounted from a ConfigMap into a pinned Python image. Credentials come from the
environment (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY), never from arguments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import hmac
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "s3"
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
SNAPSHOT_SUFFIX = ".db"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes


# ------------------------------------------------------------------------------------------- SigV4


def _quote(value: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(value, safe=safe)


def canonical_query(query: str) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(pairs))


def sign(method: str, url: str, body: bytes, creds: Credentials, region: str, now: dt.datetime,
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


class StoreError(Exception):
    pass


class Store:
    """Path-style S3: `<endpoint>/<bucket>/<key>`."""

    def __init__(self, endpoint: str, region: str, bucket: str, creds: Credentials, timeout: float = 60.0) -> None:
        if not endpoint.startswith(("https://", "http://")):
            raise ValueError(f"endpoint must be an http(s) URL (got {endpoint!r})")
        self.base = endpoint.rstrip("/") + "/" + _quote(bucket)
        self.region = region
        self.creds = creds
        self.timeout = timeout

    def _send(self, method: str, key: str = "", query: str = "", body: bytes = b"",
              headers: Mapping[str, str] | None = None) -> bytes:
        url = self.base + ("/" + _quote(key, safe="/-_.~") if key else "") + (f"?{query}" if query else "")
        req = sign(method, url, body, self.creds, self.region, dt.datetime.now(dt.UTC), headers)
        http_req = urllib.request.Request(req.url, data=req.body if method == "PUT" else None, method=method,
                                          headers={k: v for k, v in req.headers.items() if k != "host"})
        try:
            with urllib.request.urlopen(http_req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as err:
            raise StoreError(f"{method} {key or '/'}: HTTP {err.code} {err.read()[:300]!r}") from None

    def put(self, key: str, body: bytes) -> None:
        self._send("PUT", key, body=body, headers={"content-type": "application/octet-stream"})

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        token = ""
        while True:
            query = urllib.parse.urlencode({"list-type": "2", "prefix": prefix,
                                            **({"continuation-token": token} if token else {})})
            root = ET.fromstring(self._send("GET", query=query))
            keys += [c.findtext(f"{S3_NS}Key") or "" for c in root.findall(f"{S3_NS}Contents")]
            if root.findtext(f"{S3_NS}IsTruncated") != "true":
                return keys
            token = root.findtext(f"{S3_NS}NextContinuationToken") or ""

    def delete(self, key: str) -> None:
        self._send("DELETE", key)


# --------------------------------------------------------------------------------------- decisions


def snapshot_key(prefix: str, stack: str, now: dt.datetime) -> str:
    """`<prefix>/<stack>/<UTC timestamp>.db`: names sort by time, so retention is a sort."""
    return f"{prefix.strip('/')}/{stack}/{now.strftime('%Y%m%dT%H%M%SZ')}{SNAPSHOT_SUFFIX}"


def expired(keys: list[str], retain: int) -> list[str]:
    """The snapshots beyond the newest `retain`, oldest first. Other objects under the prefix are left alone."""
    if retain < 1:
        raise ValueError("retain must be >= 1: a backup job must never delete the snapshot it just wrote")
    snapshots = sorted(k for k in keys if k.endswith(SNAPSHOT_SUFFIX))
    return snapshots[: max(0, len(snapshots) - retain)]


def run(store: Store, snapshot: Path, prefix: str, stack: str, retain: int, now: dt.datetime) -> tuple[str, list[str]]:
    body = snapshot.read_bytes()
    if not body:
        raise StoreError(f"{snapshot} is empty: etcdctl wrote no snapshot")
    key = snapshot_key(prefix, stack, now)
    store.put(key, body)
    listed = store.list_keys(f"{prefix.strip('/')}/{stack}/")
    if key not in listed:
        raise StoreError(f"{key} is not listed after the upload; refusing to delete older snapshots")
    old = expired(listed, retain)
    for stale in old:
        store.delete(stale)
    return key, old


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--stack", required=True)
    p.add_argument("--retain", type=int, required=True)
    p.add_argument("--snapshot", required=True, type=Path)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        creds = Credentials(os.environ["S3_ACCESS_KEY_ID"], os.environ["S3_SECRET_ACCESS_KEY"])
    except KeyError as missing:
        print(f"error: environment variable {missing} is not set", file=sys.stderr)
        return 2
    store = Store(args.endpoint, args.region, args.bucket, creds)
    try:
        key, deleted = run(store, args.snapshot, args.prefix, args.stack, args.retain, dt.datetime.now(dt.UTC))
    except (StoreError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"uploaded {key} ({args.snapshot.stat().st_size} bytes); deleted {len(deleted)} older snapshot(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
