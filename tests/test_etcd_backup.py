"""The etcd backup: SigV4 checked against botocore's own signer, the uploader run for real against a fake
S3 endpoint that verifies every signature the same way, retention, and the rendered CronJob.

The snapshot step itself (etcdctl with the rendered args and certificate against a real etcd cluster)
is in tests/integration/test_etcd_cluster.py.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock
from xml.sax.saxutils import escape

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from cryptography import x509

from agents import etcd_backup_upload as up
from components.karmada import flags
from components.operations import etcd_backup_docs as docs
from tests.support.rendered import certs, find, secret_files
from tests.support.schemas import validate_any
from tests.support.tools import REPO

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
CREDS = up.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def botocore_authorization(method: str, url: str, body: bytes, headers: dict[str, str], region: str,
                           creds: up.Credentials, when: dt.datetime) -> str:
    req = AWSRequest(method=method, url=url, data=body, headers=headers)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when.replace(tzinfo=None)):
        S3SigV4Auth(BotoCredentials(creds.access_key, creds.secret_key), "s3", region).add_auth(req)
    return str(req.headers["Authorization"])


@pytest.mark.parametrize(("method", "url", "body", "extra"), [
    ("PUT", "https://fsn1.your-objectstorage.com/backups/karmada-etcd/dev/20261130T120000Z.db", b"snapshot",
     {"content-type": "application/octet-stream"}),
    ("GET", "https://fsn1.your-objectstorage.com/backups?list-type=2&prefix=karmada-etcd%2Fdev%2F", b"", {}),
    ("GET", "https://fsn1.your-objectstorage.com/backups?prefix=a%20b&list-type=2&continuation-token=x%2By", b"", {}),
    ("DELETE", "https://fsn1.your-objectstorage.com/backups/karmada-etcd/dev/a%20b%2Bc.db", b"", {}),
])
def test_sigv4_matches_botocore(method: str, url: str, body: bytes, extra: dict[str, str]) -> None:
    mine = up.sign(method, url, body, CREDS, "fsn1", NOW, extra)
    assert mine.headers["authorization"] == botocore_authorization(method, url, body, extra, "fsn1", CREDS, NOW)


def test_keys_sort_by_time_and_retention_keeps_the_newest() -> None:
    keys = [up.snapshot_key("karmada-etcd", "dev", NOW - dt.timedelta(hours=6 * i)) for i in range(5)]
    assert keys[0] == "karmada-etcd/dev/20261130T120000Z.db"
    assert up.expired([*keys, "karmada-etcd/dev/README"], retain=3) == sorted(keys)[:2]
    assert up.expired(keys, retain=10) == []
    with pytest.raises(ValueError, match="retain must be >= 1"):
        up.expired(keys, retain=0)


# -------------------------------------------------------------------------------------- fake S3


class FakeS3:
    """Path-style bucket in memory. Every request's SigV4 signature is recomputed with botocore from what
    arrived on the wire; a mismatch is a 403, as a real store would answer."""

    def __init__(self, bucket: str, region: str, creds: up.Credentials) -> None:
        self.objects: dict[str, bytes] = {}
        self.rejected: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _verify(self, body: bytes) -> bool:
                headers = {k.lower(): v for k, v in self.headers.items()}
                when = dt.datetime.strptime(headers.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
                url = f"http://{headers['host']}{self.path}"
                signed = headers.get("authorization", "").split("SignedHeaders=")[1].split(",")[0].split(";")
                extra = {k: headers[k] for k in signed if k not in ("host", "x-amz-date", "x-amz-content-sha256")}
                expected = botocore_authorization(self.command, url, body, extra, region, creds, when)
                ok = headers.get("authorization") == expected and \
                    headers.get("x-amz-content-sha256") == up.hashlib.sha256(body).hexdigest()
                if not ok:
                    fake.rejected.append(f"{self.command} {self.path}")
                    self.send_response(403)
                    self.end_headers()
                    self.wfile.write(b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
                return ok

            def _key(self) -> tuple[str, dict[str, str]]:
                parts = urllib.parse.urlsplit(self.path)
                path = urllib.parse.unquote(parts.path)
                assert path.startswith(f"/{bucket}"), path
                return path[len(bucket) + 2:], dict(urllib.parse.parse_qsl(parts.query))

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self._verify(body):
                    fake.objects[self._key()[0]] = body
                    self.send_response(200)
                    self.end_headers()

            def do_DELETE(self) -> None:
                if self._verify(b""):
                    fake.objects.pop(self._key()[0], None)
                    self.send_response(204)
                    self.end_headers()

            def do_GET(self) -> None:
                if not self._verify(b""):
                    return
                _, query = self._key()
                keys = sorted(k for k in fake.objects if k.startswith(query.get("prefix", "")))
                start = int(query.get("continuation-token", "0"))
                page, more = keys[start:start + 2], start + 2 < len(keys)  # tiny pages: pagination is exercised
                body = ("<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                        + "".join(f"<Contents><Key>{escape(k)}</Key></Contents>" for k in page)
                        + f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"
                        + (f"<NextContinuationToken>{start + 2}</NextContinuationToken>" if more else "")
                        + "</ListBucketResult>").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def s3() -> Iterator[FakeS3]:
    fake = FakeS3("backups", "fsn1", CREDS)
    yield fake
    fake.httpd.shutdown()


def _upload(s3: FakeS3, snapshot: Path, retain: int, creds: up.Credentials = CREDS) -> subprocess.CompletedProcess[str]:
    """The script as the CronJob runs it (credentials only in the environment)."""
    env = {**os.environ, "S3_ACCESS_KEY_ID": creds.access_key, "S3_SECRET_ACCESS_KEY": creds.secret_key}
    return subprocess.run([sys.executable, str(REPO / "agents" / "etcd_backup_upload.py"), f"--endpoint={s3.endpoint}",
                           "--region=fsn1", "--bucket=backups", "--prefix=karmada-etcd", "--stack=dev",
                           f"--retain={retain}", f"--snapshot={snapshot}"],
                          capture_output=True, text=True, timeout=60, env=env)


def test_upload_then_retention_against_a_verifying_store(s3: FakeS3, tmp_path: Path) -> None:
    old = [f"karmada-etcd/dev/2026110{d}T000000Z.db" for d in range(1, 6)]
    s3.objects.update({k: b"old" for k in old})
    s3.objects["karmada-etcd/prod-hub/20261101T000000Z.db"] = b"another stack's"
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"\x00etcd snapshot bytes")
    result = _upload(s3, snapshot, retain=3)
    assert result.returncode == 0, result.stderr
    dev = sorted(k for k in s3.objects if k.startswith("karmada-etcd/dev/"))
    assert len(dev) == 3 and dev[:2] == old[3:]  # the newest two old ones and the new one
    assert s3.objects[dev[-1]] == snapshot.read_bytes()
    assert "karmada-etcd/prod-hub/20261101T000000Z.db" in s3.objects  # other stacks are never touched
    assert "deleted 3 older snapshot(s)" in result.stdout
    assert not s3.rejected


def test_wrong_credentials_fail_and_delete_nothing(s3: FakeS3, tmp_path: Path) -> None:
    s3.objects["karmada-etcd/dev/20261101T000000Z.db"] = b"old"
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"x")
    result = _upload(s3, snapshot, retain=1, creds=up.Credentials(CREDS.access_key, "wrong"))
    assert result.returncode == 1 and "HTTP 403" in result.stderr
    assert list(s3.objects) == ["karmada-etcd/dev/20261101T000000Z.db"]


def test_an_empty_snapshot_is_refused(s3: FakeS3, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"")
    result = _upload(s3, snapshot, retain=1)
    assert result.returncode == 1 and "is empty" in result.stderr and not s3.objects


# ------------------------------------------------------------------------------------ rendered


def test_rendered_cron_job(rendered_dev: Any) -> None:
    cron = find(rendered_dev, "host", "CronJob", docs.NAME)
    validate_any(cron)
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    snapshot, upload = pod["initContainers"][0], pod["containers"][0]
    assert snapshot["image"].startswith("registry.k8s.io/etcd:") and snapshot["args"][-3:] == [
        "snapshot", "save", flags.ETCD_SNAPSHOT_PATH]
    args = dict(a.removeprefix("--").split("=", 1) for a in upload["args"])
    assert args["snapshot"] == flags.ETCD_SNAPSHOT_PATH and args["stack"] == "dev"
    assert upload["envFrom"] == [{"secretRef": {"name": docs.CREDENTIALS_SECRET}}]
    configmap = find(rendered_dev, "host", "ConfigMap", docs.NAME)
    assert configmap["data"][docs.SCRIPT_KEY] == (REPO / "agents" / "etcd_backup_upload.py").read_text()
    credentials = secret_files(find(rendered_dev, "host", "Secret", docs.CREDENTIALS_SECRET))
    assert set(credentials) == {"S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"}


def test_backup_client_cert_is_its_own_and_from_the_etcd_ca(rendered_dev: Any) -> None:
    pki = secret_files(find(rendered_dev, "host", "Secret", docs.PKI_SECRET))
    cert = x509.load_pem_x509_certificate(pki["etcd-backup-client.crt"].encode())
    ca = x509.load_pem_x509_certificate(pki["etcd-ca.crt"].encode())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "karmada-etcd-backup"
    etcd_ca = certs(rendered_dev)["karmada-pki-etcd-server"][0].issuer
    assert ca.subject == etcd_ca  # the CA etcd's --trusted-ca-file trusts
