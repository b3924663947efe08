"""A path-style S3 bucket on loopback that checks what a real store checks, for the backup tests.

Every request's SigV4 signature is recomputed with botocore (AWS's own signer) from what arrived on the wire;
a mismatch is a 403. Multipart uploads follow the S3 rules the uploader must respect: parts of at least 5 MiB
except the last, at most 10,000 parts, ascending part numbers with the ETags the store returned; an abort
removes the upload. `complete_error` makes CompleteMultipartUpload answer 200 with an <Error> body, as AWS
documents it may. The server binds 127.0.0.1 on a random port (`tests.support.httpfake`) and stops with `close()`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from unittest import mock
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from tests.support.httpfake import Handler, LoopbackServer

MIN_PART = 5 * 2**20
MAX_PARTS = 10_000
NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def botocore_authorization(method: str, url: str, body: bytes, headers: dict[str, str], region: str,
                           access_key: str, secret_key: str, when: dt.datetime) -> str:
    req = AWSRequest(method=method, url=url, data=body, headers=headers)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when.replace(tzinfo=None)):
        S3SigV4Auth(BotoCredentials(access_key, secret_key), "s3", region).add_auth(req)
    return str(req.headers["Authorization"])


@dataclass
class Upload:
    key: str
    initiated: dt.datetime
    parts: dict[int, bytes] = field(default_factory=dict)


class FakeS3:
    def __init__(self, bucket: str, region: str, access_key: str, secret_key: str) -> None:
        self.bucket, self.region = bucket, region
        self.objects: dict[str, bytes] = {}
        self.uploads: dict[str, Upload] = {}
        self.rejected: list[str] = []
        self.requests: list[str] = []
        self.part_sizes: list[int] = []
        self.aborted: list[str] = []
        self.complete_error = False
        self.fail_part: int | None = None
        self._counter = 0
        fake = self

        class S3Handler(Handler):
            def _verify(self, body: bytes) -> bool:
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    when = dt.datetime.strptime(headers.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(
                        tzinfo=dt.UTC)
                    signed = headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
                except (ValueError, KeyError, IndexError):
                    signed, when = [], dt.datetime.now(dt.UTC)
                extra = {k: headers[k] for k in signed if k not in ("host", "x-amz-date", "x-amz-content-sha256")}
                expected = botocore_authorization(self.command, f"http://{headers.get('host')}{self.path}", body,
                                                  extra, region, access_key, secret_key, when)
                ok = headers.get("authorization") == expected and \
                    headers.get("x-amz-content-sha256") == hashlib.sha256(body).hexdigest()
                fake.requests.append(f"{self.command} {self.path.split('?')[0]}?{self._query_names()}")
                if not ok:
                    fake.rejected.append(f"{self.command} {self.path}")
                    self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
                return ok

            def _query_names(self) -> str:
                return ",".join(sorted(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                                             keep_blank_values=True)))

            def _accept(self) -> tuple[bytes, str, dict[str, str]] | None:
                """(body, key, query) of a correctly signed request; None once a refusal has been sent."""
                body = self.body()
                if not self._verify(body):
                    return None
                return (body, *self._key())

            def _key(self) -> tuple[str, dict[str, str]]:
                parts = urllib.parse.urlsplit(self.path)
                path = urllib.parse.unquote(parts.path)
                assert path.startswith(f"/{bucket}"), path
                return path[len(bucket) + 2:], dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))

            def do_PUT(self) -> None:  # noqa: N802 - http.server names it
                if (accepted := self._accept()) is None:
                    return
                body, key, query = accepted
                if "uploadId" in query:
                    upload = fake.uploads.get(query["uploadId"])
                    number = int(query["partNumber"])
                    if upload is None or upload.key != key:
                        return self.reply(404, b"<Error><Code>NoSuchUpload</Code></Error>")
                    if fake.fail_part == number:
                        return self.reply(500, b"<Error><Code>InternalError</Code></Error>")
                    upload.parts[number] = body
                    fake.part_sizes.append(len(body))
                    return self.reply(200, headers={"ETag": f'"{hashlib.md5(body).hexdigest()}"'})
                fake.objects[key] = body
                self.reply(200)

            def do_POST(self) -> None:  # noqa: N802 - http.server names it
                if (accepted := self._accept()) is None:
                    return
                body, key, query = accepted
                if "uploads" in query:
                    fake._counter += 1
                    upload_id = f"upload-{fake._counter}"
                    fake.uploads[upload_id] = Upload(key, dt.datetime.now(dt.UTC))
                    xml = (f'<InitiateMultipartUploadResult xmlns="{NS}"><Bucket>{bucket}</Bucket>'
                           f"<Key>{escape(key)}</Key><UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>")
                    return self.reply(200, xml.encode())
                upload = fake.uploads.get(query.get("uploadId", ""))
                if upload is None or upload.key != key:
                    return self.reply(404, b"<Error><Code>NoSuchUpload</Code></Error>")
                listed = [(int(p.findtext("PartNumber") or 0), p.findtext("ETag") or "")
                          for p in ET.fromstring(body).findall("Part")]
                numbers = [n for n, _ in listed]
                error = None
                if not listed or numbers != sorted(set(numbers)) or len(listed) > MAX_PARTS:
                    error = "InvalidPartOrder"
                elif any(n not in upload.parts or etag != f'"{hashlib.md5(upload.parts[n]).hexdigest()}"'
                         for n, etag in listed):
                    error = "InvalidPart"
                elif any(len(upload.parts[n]) < MIN_PART for n in numbers[:-1]):
                    error = "EntityTooSmall"
                elif fake.complete_error:
                    error = "InternalError"
                if error:  # S3 may answer 200 and put the error in the body
                    status = 200 if error == "InternalError" else 400
                    return self.reply(status, f"<Error><Code>{error}</Code></Error>".encode())
                fake.objects[key] = b"".join(upload.parts[n] for n in numbers)
                del fake.uploads[query["uploadId"]]
                xml = (f'<CompleteMultipartUploadResult xmlns="{NS}"><Bucket>{bucket}</Bucket><Key>{escape(key)}</Key>'
                       f'<ETag>"done"</ETag></CompleteMultipartUploadResult>')
                self.reply(200, xml.encode())

            def do_DELETE(self) -> None:  # noqa: N802 - http.server names it
                if (accepted := self._accept()) is None:
                    return
                _, key, query = accepted
                if "uploadId" in query:
                    fake.uploads.pop(query["uploadId"], None)
                    fake.aborted.append(key)
                else:
                    fake.objects.pop(key, None)
                self.reply(204)

            def do_GET(self) -> None:  # noqa: N802 - http.server names it
                if (accepted := self._accept()) is None:
                    return
                _, key, query = accepted
                if key:
                    if key not in fake.objects:
                        return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
                    return self.reply(200, fake.objects[key])
                if "uploads" in query:
                    ups = "".join(f"<Upload><Key>{escape(u.key)}</Key><UploadId>{i}</UploadId>"
                                  f"<Initiated>{u.initiated.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</Initiated></Upload>"
                                  for i, u in fake.uploads.items() if u.key.startswith(query.get("prefix", "")))
                    return self.reply(200, f'<ListMultipartUploadsResult xmlns="{NS}">{ups}'
                                            "</ListMultipartUploadsResult>".encode())
                keys = sorted(k for k in fake.objects if k.startswith(query.get("prefix", "")))
                start = int(query.get("continuation-token", "0"))
                page, more = keys[start:start + 2], start + 2 < len(keys)  # tiny pages: pagination is exercised
                body = (f'<ListBucketResult xmlns="{NS}">'
                        + "".join(f"<Contents><Key>{escape(k)}</Key><Size>{len(fake.objects[k])}</Size></Contents>"
                                  for k in page)
                        + f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"
                        + (f"<NextContinuationToken>{start + 2}</NextContinuationToken>" if more else "")
                        + "</ListBucketResult>").encode()
                self.reply(200, body)

        self.server = LoopbackServer(S3Handler)
        self.endpoint = self.server.url

    def close(self) -> None:
        self.server.close()
