"""agents/etcd_backup_upload.py in process: the KHB1 pieces against their specifications (RFC 5869 vectors, the
header layout and its limits, nonces), the S3 client against the fake store (paths, queries, every error it turns
into a one-line failure), upload() and fetch() without a subprocess (part boundaries, the stale-upload edge, the
manifest, the refusals), the CLI's output and exit codes.

tests/test_etcd_backup.py runs the script as the CronJob does and checks SigV4 against botocore; these are the
fast tests the mutation run (target `backup`) runs first against every mutant.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import etcd_backup_upload as up
from tests.support.fake_s3 import FakeS3, Upload

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
CREDS = up.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
MASTER = b"q0s8Wb0mQ0yKc9V0b1u7C3m3hXl0Zk2rTj3Gf5Jr5nE="
MIB = 2**20


@pytest.fixture(scope="module")
def cipher() -> up.Aead:
    return up.aead()


@pytest.fixture
def s3() -> Iterator[FakeS3]:
    fake = FakeS3("backups", "fsn1", CREDS.access_key, CREDS.secret_key)
    yield fake
    fake.close()


def _store(s3: FakeS3, creds: up.Credentials = CREDS) -> up.Store:
    return up.Store(s3.endpoint, "fsn1", "backups", creds)


# ------------------------------------------------------------------------------------------ the format


@pytest.mark.parametrize(("ikm", "salt", "info", "length", "okm"), [
    # RFC 5869 A.1 and A.3 (SHA-256)
    ("0b" * 22, "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9", 42,
     "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
    ("0b" * 22, "", "", 42,
     "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
])
def test_hkdf_is_rfc_5869(ikm: str, salt: str, info: str, length: int, okm: str) -> None:
    assert up.hkdf_sha256(bytes.fromhex(ikm), bytes.fromhex(salt), bytes.fromhex(info), length).hex() == okm
    assert len(up.hkdf_sha256(b"k", b"s", b"i")) == 32


def test_the_format_constants() -> None:
    assert (up.MAGIC, up.VERSION, up.AES_256_GCM, up.TAG_BYTES, up.CHUNK_BYTES) == (b"KHB1", 1, 1, 16, 2**20)
    assert up.HEADER.format == ">4sBBHI8s16s7s" and up.HEADER.size == 43
    assert (up.HKDF_INFO, up.KEY_ID_INFO) == (b"karmada-hub etcd backup v1", b"karmada-hub etcd backup key id")
    assert up.key_id(MASTER) == hmac.new(MASTER, b"karmada-hub etcd backup key id", hashlib.sha256).digest()[:8]
    assert (up.SNAPSHOT_SUFFIX, up.LEGACY_SUFFIX, up.MANIFEST_SUFFIX) == (".db.enc", ".db", ".json")
    assert (up.MIN_PART_BYTES, up.MAX_PARTS, up.DEFAULT_PART_BYTES) == (5 * MIB, 10_000, 16 * MIB)
    assert dt.timedelta(hours=24) == up.STALE_UPLOAD
    assert (up.ALGORITHM, up.SERVICE) == ("AWS4-HMAC-SHA256", "s3")


def test_the_master_key_is_at_least_32_characters_without_surrounding_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"\n " + b"k" * 32 + b" \n")
    assert up.read_master(path) == b"k" * 32
    path.write_bytes(b" " + b"k" * 31 + b"\n\n")
    with pytest.raises(up.BackupError, match=r"key: the backup key must be at least 32 characters"):
        up.read_master(path)


def test_the_header_layout_and_what_it_accepts() -> None:
    h = up.Header(4096, b"K" * 8, b"S" * 16, b"P" * 7)
    raw = h.pack()
    assert raw == b"KHB1" + bytes([1, 1, 0, 0]) + struct.pack(">I", 4096) + b"K" * 8 + b"S" * 16 + b"P" * 7
    assert up.Header.unpack(raw + b"trailing") == h
    for chunk in (1, 64 * MIB):
        assert up.Header.unpack(up.Header(chunk, h.key_id, h.salt, h.nonce_prefix).pack()).chunk == chunk
    for bad in (0, 64 * MIB + 1):
        with pytest.raises(up.BackupError, match=f"unsupported KHB1 header .*chunk {bad}"):
            up.Header.unpack(up.Header(bad, h.key_id, h.salt, h.nonce_prefix).pack())
    for offset, value in ((4, 2), (5, 2), (7, 1)):
        with pytest.raises(up.BackupError, match="unsupported KHB1 header"):
            up.Header.unpack(raw[:offset] + bytes([value]) + raw[offset + 1:])
    with pytest.raises(up.BackupError, match="no KHB1 header"):
        up.Header.unpack(raw[:42])


def test_nonces_carry_the_index_and_the_last_flag() -> None:
    assert up.nonce(b"P" * 7, 1, False) == b"P" * 7 + b"\x00\x00\x00\x01\x00"
    assert up.nonce(b"P" * 7, 2**32 - 1, True) == b"P" * 7 + b"\xff\xff\xff\xff\x01"
    with pytest.raises(up.BackupError, match="too large"):
        up.nonce(b"P" * 7, 2**32, False)


def test_encryption_counts_what_it_reads_and_writes(cipher: up.Aead) -> None:
    digests = up.Digests()
    data = os.urandom(2 * 4096 + 1)
    pieces = list(up.encrypt_stream(io.BytesIO(data), MASTER, cipher, digests, chunk=4096))
    assert [len(p) for p in pieces] == [43, 4096 + 16, 4096 + 16, 1 + 16]
    assert up.Header.unpack(pieces[0]).chunk == 4096 and up.Header.unpack(pieces[0]).key_id == up.key_id(MASTER)
    blob = b"".join(pieces)
    assert (digests.plaintext_bytes, digests.ciphertext_bytes) == (len(data), len(blob))
    assert digests.plaintext_sha256.hexdigest() == hashlib.sha256(data).hexdigest()
    assert digests.ciphertext_sha256.hexdigest() == hashlib.sha256(blob).hexdigest()
    key = up.hkdf_sha256(MASTER, up.Header.unpack(pieces[0]).salt, up.HKDF_INFO)
    prefix = up.Header.unpack(pieces[0]).nonce_prefix
    assert cipher.open(key, up.nonce(prefix, 2, True), pieces[0], pieces[3]) == data[-1:]
    assert cipher.open(key, up.nonce(prefix, 1, False), pieces[0], pieces[2]) == data[4096:8192]
    with pytest.raises(up.BackupError, match="the snapshot is empty"):
        list(up.encrypt_stream(io.BytesIO(b""), MASTER, cipher, up.Digests()))
    out, back = io.BytesIO(), up.Digests()
    up.decrypt_stream(io.BytesIO(blob), MASTER, cipher, out, back)
    assert out.getvalue() == data and back.plaintext_bytes == len(data)
    assert back.plaintext_sha256.hexdigest() == hashlib.sha256(data).hexdigest()


class Dribble(io.RawIOBase):
    """A stream that returns at most 3 bytes per read, as a network response may."""

    def __init__(self, data: bytes) -> None:
        self.data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        return self.data.read(min(n, 3) if n >= 0 else 3)


def test_decryption_reads_records_whole_from_a_slow_stream(cipher: up.Aead) -> None:
    data = os.urandom(4096 * 2 + 5)
    blob = b"".join(up.encrypt_stream(io.BytesIO(data), MASTER, cipher, up.Digests(), chunk=4096))
    out = io.BytesIO()
    up.decrypt_stream(Dribble(blob), MASTER, cipher, out, up.Digests())  # type: ignore[arg-type]
    assert out.getvalue() == data
    assert up._read_exactly(Dribble(b"abcdefgh"), 5) == b"abcde"  # type: ignore[arg-type]
    assert up._read_exactly(io.BytesIO(b"ab"), 5) == b"ab"


def test_the_libcrypto_backend_checks_its_inputs_and_tags(cipher: up.Aead) -> None:
    with pytest.raises(ValueError, match="32-byte key and a 12-byte nonce"):
        cipher.seal(bytes(31), bytes(12), b"", b"x")
    with pytest.raises(ValueError, match="32-byte key and a 12-byte nonce"):
        cipher.seal(bytes(32), bytes(11), b"", b"x")
    sealed = cipher.seal(bytes(32), bytes(12), b"aad", b"hello")
    assert len(sealed) == 5 + 16 and cipher.open(bytes(32), bytes(12), b"aad", sealed) == b"hello"
    assert cipher.open(bytes(32), bytes(12), b"other", sealed) is None
    assert cipher.open(bytes(32), bytes(12), b"", cipher.seal(bytes(32), bytes(12), b"", b"")) == b""
    assert cipher.open(bytes(32), bytes(12), b"aad", sealed[:15]) is None
    assert up._passes_kat(cipher)
    assert up._KAT[3].hex() == "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"


def test_the_backend_is_looked_for_in_this_pythons_openssl_first(monkeypatch: pytest.MonkeyPatch) -> None:
    import _hashlib

    candidates = up._libcrypto_candidates()
    assert candidates == [_hashlib.__file__, "libcrypto.so.3", "libcrypto.so.1.1"]
    tried: list[str] = []

    def cdll(name: str) -> Any:
        tried.append(name)
        raise OSError(f"cannot load {name}")

    monkeypatch.setattr(up.ctypes, "CDLL", cdll)
    with pytest.raises(up.BackupError) as exc:
        up.aead()
    assert tried == candidates
    assert str(exc.value) == "no working AES-256-GCM in this Python's OpenSSL: " + "; ".join(
        f"{n}: cannot load {n}" for n in candidates)


# ------------------------------------------------------------------------------------------ the store


def test_store_urls_quote_the_bucket_and_key_and_refuse_other_schemes(s3: FakeS3) -> None:
    store = up.Store(s3.endpoint + "/", "fsn1", "backups", CREDS)
    assert store.base == s3.endpoint + "/backups" and store.timeout == 120.0 and store.region == "fsn1"
    store.put("karmada etcd/dev/a+b.db", b"x")
    assert s3.objects == {"karmada etcd/dev/a+b.db": b"x"}
    assert s3.requests[-1] == "PUT /backups/karmada%20etcd/dev/a%2Bb.db?"
    with pytest.raises(ValueError, match="endpoint must be an http"):
        up.Store("ftp://x", "fsn1", "b", CREDS)
    assert up._quote("a b/c~") == "a%20b%2Fc~" and up.canonical_query("b=2&a=&a=1 x") == "a=&a=1%20x&b=2"


def test_store_errors_name_the_call_in_one_line(s3: FakeS3) -> None:
    store = _store(s3)
    with pytest.raises(up.StoreError) as exc:
        store._send("GET", "missing.db")
    assert str(exc.value) == "GET missing.db: HTTP 404 b'<Error><Code>NoSuchKey</Code></Error>'"
    with pytest.raises(up.StoreError, match=r"^DELETE k\?uploadId: HTTP 403"):
        _store(s3, up.Credentials(CREDS.access_key, "wrong")).abort_multipart("k", "u&x")
    with pytest.raises(up.StoreError, match=r"^GET /\?list-type: HTTP 403"):
        _store(s3, up.Credentials(CREDS.access_key, "wrong")).list_objects("p")
    with pytest.raises(up.StoreError, match=r"^PUT /: HTTP 403"):
        _store(s3, up.Credentials(CREDS.access_key, "wrong"))._send("PUT")
    closed = up.Store("http://127.0.0.1:9", "fsn1", "b", CREDS)
    with pytest.raises(up.StoreError, match=r"^GET /: \[Errno 111\] Connection refused"):
        closed._send("GET")
    with pytest.raises(up.StoreError, match=r"^GET x\.db: \[Errno 111\]"):
        closed.get_stream("x.db")
    assert issubclass(up.StoreError, up.BackupError)


def test_listing_reads_every_page_and_only_the_prefix(s3: FakeS3) -> None:
    s3.objects.update({f"p/{i}.db.enc": b"x" * i for i in range(5)})
    s3.objects["q/other"] = b"y"
    assert _store(s3).list_objects("p/") == {f"p/{i}.db.enc": i for i in range(5)}
    assert _store(s3).list_keys("p/") == [f"p/{i}.db.enc" for i in range(5)]
    assert _store(s3).list_objects("none/") == {}
    _store(s3).delete("q/other")
    assert "q/other" not in s3.objects


def test_multipart_calls(s3: FakeS3) -> None:
    store = _store(s3)
    upload_id = store.create_multipart("k/a&b.db.enc")
    assert upload_id == "upload-1" and s3.uploads[upload_id].key == "k/a&b.db.enc"
    etag = store.upload_part("k/a&b.db.enc", upload_id, 1, b"z" * 10)
    assert etag == f'"{hashlib.md5(b"z" * 10).hexdigest()}"'
    assert store.list_multipart("k/") == [("k/a&b.db.enc", upload_id, s3.uploads[upload_id].initiated.replace(
        microsecond=0))]
    store.complete_multipart("k/a&b.db.enc", upload_id, [(1, etag)])
    assert s3.objects["k/a&b.db.enc"] == b"z" * 10 and not s3.uploads
    assert up._xml('"a" & <b>') == "&quot;a&quot; &amp; &lt;b&gt;"


def test_multipart_answers_without_what_is_needed_are_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    store = up.Store("https://s3.example", "fsn1", "b", CREDS)
    answers: dict[str, tuple[bytes, dict[str, str]]] = {}
    monkeypatch.setattr(store, "_send", lambda method, key="", query="", body=b"", headers=None:
                        answers[method])
    answers["POST"] = (b"<InitiateMultipartUploadResult/>", {})
    with pytest.raises(up.StoreError, match=r"CreateMultipartUpload k: no UploadId in b'<Initiate"):
        store.create_multipart("k")
    answers["PUT"] = (b"", {})
    with pytest.raises(up.StoreError, match="UploadPart k #3: no ETag"):
        store.upload_part("k", "u", 3, b"x")
    for body in (b"", b"  ", b"<Error><Code>InternalError</Code></Error>", b"<Other/>"):
        answers["POST"] = (body, {})
        with pytest.raises(up.StoreError, match="CompleteMultipartUpload k"):
            store.complete_multipart("k", "u", [(1, '"e"')])
    for body in (b'<R xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Key>k</Key></R>',
                 b'<R xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ETag>"e"</ETag></R>'):
        answers["POST"] = (body, {})
        store.complete_multipart("k", "u", [(1, '"e"')])
    answers["GET"] = (b'<L xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Upload><Key>k</Key><UploadId>u</UploadId>'
                      b'<Initiated>2026-11-29T10:00:00.000Z</Initiated></Upload><Upload></Upload></L>', {})
    listed = store.list_multipart("k")
    assert listed[0] == ("k", "u", dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC))
    assert listed[1][:2] == ("", "") and dt.datetime.now(dt.UTC) - listed[1][2] < dt.timedelta(minutes=1)


def test_complete_lists_the_parts_in_order_with_their_etags(monkeypatch: pytest.MonkeyPatch) -> None:
    store = up.Store("https://s3.example", "fsn1", "b", CREDS)
    sent: list[Any] = []

    def send(method: str, key: str = "", query: str = "", body: bytes = b"", headers: Any = None) -> Any:
        sent.append((method, key, query, body, headers))
        return b'<R xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Key>k</Key></R>', {}

    monkeypatch.setattr(store, "_send", send)
    store.complete_multipart("k", "u/1", [(1, '"a"'), (2, '"b&"')])
    assert sent == [("POST", "k", "uploadId=u%2F1",
                     b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part>"
                     b"<Part><PartNumber>2</PartNumber><ETag>&quot;b&amp;&quot;</ETag></Part>"
                     b"</CompleteMultipartUpload>", {"content-type": "application/xml"})]


# ------------------------------------------------------------------------------------------ decisions


def test_keys_prefixes_and_what_counts_as_a_snapshot() -> None:
    assert up.snapshot_key("/karmada-etcd/", "dev", NOW) == "karmada-etcd/dev/20261130T120000Z.db.enc"
    assert up.stack_prefix("a/b/", "s") == "a/b/s/"
    assert up.is_snapshot("x.db.enc") and up.is_snapshot("x.db") and not up.is_snapshot("x.db.enc.json")


def test_retention_keeps_exactly_the_newest(tmp_path: Path) -> None:
    keys = [f"p/{i}.db.enc" for i in range(3)]
    assert up.expired(keys, 3) == [] and up.expired(keys, 2) == ["p/0.db.enc"]
    assert up.expired([*keys, "p/0.db.enc.json", "p/9.json"], 1) == ["p/0.db.enc", "p/0.db.enc.json", "p/1.db.enc"]
    assert up.expired(keys, 1000) == []


def test_part_sizes_are_whole_mib_and_fit_ten_thousand_parts() -> None:
    assert up.part_bytes(1) == 16 * MIB and up.part_bytes(1, 5 * MIB) == 5 * MIB
    assert up.part_bytes(10_000 * 16 * MIB) == 16 * MIB
    assert up.part_bytes(10_000 * 16 * MIB + 1) == 17 * MIB
    assert up.part_bytes(10_000 * 5 * MIB + 1, 5 * MIB) == 6 * MIB
    assert up.ciphertext_size(0) == 43 + 16 and up.ciphertext_size(1) == 43 + 1 + 16
    assert up.ciphertext_size(2**20, 2**20) == 43 + 2**20 + 16
    assert up.ciphertext_size(2**20 + 1, 2**20) == 43 + 2**20 + 1 + 32


def _snapshot(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "snapshot.db"
    path.write_bytes(os.urandom(size))
    return path


def test_upload_in_parts_of_whole_records_then_manifest_then_retention(s3: FakeS3, tmp_path: Path,
                                                                        cipher: up.Aead) -> None:
    s3.objects.update({f"karmada-etcd/dev/2026110{d}T000000Z.db.enc": b"old" for d in range(1, 4)})
    snapshot = _snapshot(tmp_path, 11 * MIB)
    result = up.upload(_store(s3), snapshot, "karmada-etcd", "dev", 2, MASTER, NOW, cipher, 5 * MIB)
    key = "karmada-etcd/dev/20261130T120000Z.db.enc"
    assert result.key == key and result.parts == 3 == len(s3.part_sizes)
    record = up.CHUNK_BYTES + 16
    assert s3.part_sizes[0] == 43 + 5 * record and s3.part_sizes[1] == 5 * record
    assert sum(s3.part_sizes) == up.ciphertext_size(11 * MIB) == len(s3.objects[key])
    assert result.deleted == [f"karmada-etcd/dev/2026110{d}T000000Z.db.enc" for d in (1, 2)]
    manifest = json.loads(s3.objects[key + ".json"])
    blob = s3.objects[key]
    assert manifest == result.manifest == {
        "format": "KHB1", "object": key, "keyId": up.key_id(MASTER).hex(), "createdAt": "2026-11-30T12:00:00Z",
        "plaintextBytes": 11 * MIB, "plaintextSha256": hashlib.sha256(snapshot.read_bytes()).hexdigest(),
        "ciphertextBytes": len(blob), "ciphertextSha256": hashlib.sha256(blob).hexdigest(),
        "parts": 3, "partBytes": 5 * MIB}
    assert sorted(s3.objects) == ["karmada-etcd/dev/20261103T000000Z.db.enc", key, key + ".json"]
    out = tmp_path / "restored.db"
    digests = up.fetch(_store(s3), key, MASTER, out, cipher)
    assert out.read_bytes() == snapshot.read_bytes() and digests.plaintext_bytes == 11 * MIB
    assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_an_upload_exactly_one_part_long_sends_one_part(s3: FakeS3, tmp_path: Path, cipher: up.Aead) -> None:
    record = up.CHUNK_BYTES + 16
    snapshot = _snapshot(tmp_path, 5 * up.CHUNK_BYTES)  # 43 + 5 records: at least 5 MiB in one go
    result = up.upload(_store(s3), snapshot, "p", "dev", 1, MASTER, NOW, cipher, 5 * MIB)
    assert result.parts == 1 and s3.part_sizes == [43 + 5 * record]


def test_only_uploads_older_than_a_day_are_aborted(s3: FakeS3, tmp_path: Path, cipher: up.Aead) -> None:
    day = dt.timedelta(hours=24)
    s3.uploads["edge"] = Upload("p/dev/a.db.enc", NOW - day)
    s3.uploads["older"] = Upload("p/dev/b.db.enc", NOW - day - dt.timedelta(seconds=1))
    s3.uploads["other"] = Upload("p/prod/c.db.enc", NOW - 2 * day)
    up.upload(_store(s3), _snapshot(tmp_path, 100), "p", "dev", 3, MASTER, NOW, cipher)
    assert set(s3.uploads) == {"edge", "other"} and s3.aborted == ["p/dev/b.db.enc"]


def test_upload_refusals(s3: FakeS3, tmp_path: Path, cipher: up.Aead, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(up.BackupError, match=r"empty\.db is empty: etcdctl wrote no snapshot"):
        up.upload(_store(s3), empty, "p", "dev", 3, MASTER, NOW, cipher)
    assert not s3.requests
    snapshot = _snapshot(tmp_path, 100)
    store = _store(s3)
    monkeypatch.setattr(store, "list_keys", lambda prefix: ["p/dev/old.db.enc"])
    with pytest.raises(up.StoreError, match="is not listed after the upload; refusing to delete"):
        up.upload(store, snapshot, "p", "dev", 1, MASTER, NOW, cipher)
    monkeypatch.undo()
    growing = tmp_path / "growing.db"
    growing.write_bytes(b"x" * 100)
    real_open = Path.open

    def open_grown(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == growing:
            return io.BytesIO(b"x" * 150)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_grown)
    with pytest.raises(up.BackupError, match=r"growing.db changed while it was read \(100 -> 150 bytes\)"):
        up.upload(_store(s3), growing, "p", "dev", 1, MASTER, NOW, cipher)
    monkeypatch.undo()
    store = _store(s3)
    monkeypatch.setattr(store, "upload_part", lambda *a: (_ for _ in ()).throw(up.StoreError("part failed")))
    monkeypatch.setattr(store, "abort_multipart", lambda *a: (_ for _ in ()).throw(up.StoreError("abort failed")))
    with pytest.raises(up.StoreError, match="part failed"):
        up.upload(store, snapshot, "p", "dev", 1, MASTER, NOW, cipher)
    assert "warning: could not abort the multipart upload upload-" in capsys.readouterr().err


def test_more_parts_than_s3_allows_are_refused(s3: FakeS3, tmp_path: Path, cipher: up.Aead,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "MAX_PARTS", 1)
    monkeypatch.setattr(up, "part_bytes", lambda size, wanted: 5 * MIB)
    store = _store(s3)
    monkeypatch.setattr(store, "upload_part", lambda key, upload_id, n, data: f'"{n}"')
    with pytest.raises(up.BackupError, match="2 parts: more than S3 allows"):
        up.upload(store, _snapshot(tmp_path, 6 * MIB), "p", "dev", 1, MASTER, NOW, cipher)
    assert s3.aborted


def test_fetch_refuses_other_objects_and_a_manifest_that_disagrees(s3: FakeS3, tmp_path: Path,
                                                                   cipher: up.Aead) -> None:
    with pytest.raises(up.BackupError, match=r"p/x\.db is not an encrypted snapshot \(\.db\.enc\)"):
        up.fetch(_store(s3), "p/x.db", MASTER, tmp_path / "o", cipher)
    data = os.urandom(5000)
    blob = b"".join(up.encrypt_stream(io.BytesIO(data), MASTER, cipher, up.Digests()))
    s3.objects["p/a.db.enc"] = blob
    out = tmp_path / "out.db"
    assert up.fetch(_store(s3), "p/a.db.enc", MASTER, out, cipher).plaintext_bytes == 5000  # no manifest: fine
    s3.objects["p/a.db.enc.json"] = json.dumps({"plaintextSha256": hashlib.sha256(data).hexdigest(),
                                                "plaintextBytes": 5000}).encode()
    assert up.fetch(_store(s3), "p/a.db.enc", MASTER, out, cipher).plaintext_bytes == 5000
    for manifest in ({"plaintextSha256": hashlib.sha256(data).hexdigest(), "plaintextBytes": 4999},
                     {"plaintextSha256": "0" * 64, "plaintextBytes": 5000}, {}):
        s3.objects["p/a.db.enc.json"] = json.dumps(manifest).encode()
        with pytest.raises(up.BackupError, match=r"p/a\.db\.enc: decrypted snapshot does not match its manifest"):
            up.fetch(_store(s3), "p/a.db.enc", MASTER, out, cipher)
        assert not out.exists()


def test_a_failed_decryption_leaves_no_file(tmp_path: Path, cipher: up.Aead) -> None:
    source = tmp_path / "in.db.enc"
    source.write_bytes(b"not a snapshot at all" * 3)
    out = tmp_path / "out.db"
    with pytest.raises(up.BackupError):
        up.decrypt_file(source, MASTER, out, cipher)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.db.enc"]
    data = b"d" * 10
    source.write_bytes(b"".join(up.encrypt_stream(io.BytesIO(data), MASTER, cipher, up.Digests())))
    assert up.decrypt_file(source, MASTER, out, cipher).plaintext_bytes == 10 and out.read_bytes() == data
    assert oct(out.stat().st_mode & 0o777) == "0o600"


# ------------------------------------------------------------------------------------------ the CLI


def _args(s3: FakeS3) -> list[str]:
    return [f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups"]


def test_cli_list_upload_fetch_and_decrypt(s3: FakeS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("S3_ACCESS_KEY_ID", CREDS.access_key)
    monkeypatch.setenv("S3_SECRET_ACCESS_KEY", CREDS.secret_key)
    key_file = tmp_path / "key"
    key_file.write_bytes(MASTER + b"\n")
    s3.objects.update({"karmada-etcd/dev/20261101T000000Z.db.enc": b"old", "karmada-etcd/dev/20261101T000000Z.db":
                       b"legacy!", "karmada-etcd/dev/20261101T000000Z.db.enc.json": b"{}"})
    snapshot = _snapshot(tmp_path, 1000)
    assert up.main(["upload", *_args(s3), "--prefix=karmada-etcd", "--stack=dev", "--retain=1",
                    f"--snapshot={snapshot}", f"--key-file={key_file}"]) == 0
    out = capsys.readouterr().out
    new = next(k for k in s3.objects if k.endswith(".db.enc") and "20261101" not in k)
    assert out == (f"uploaded {new} (1000 bytes, 1 part(s), key id {up.key_id(MASTER).hex()}); "
                   "deleted 2 older snapshot(s)\n")
    assert up.main(["list", *_args(s3), "--prefix=karmada-etcd", "--stack=dev"]) == 0
    assert capsys.readouterr().out == f"{new}\t{len(s3.objects[new])}\n"
    restored = tmp_path / "restored.db"
    assert up.main(["fetch", *_args(s3), f"--object={new}", f"--key-file={key_file}", f"--out={restored}"]) == 0
    digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()
    assert capsys.readouterr().out == f"fetched {new} -> {restored} (1000 bytes, sha256 {digest})\n"
    local = tmp_path / "local.db.enc"
    local.write_bytes(s3.objects[new])
    plain = tmp_path / "plain.db"
    assert up.main(["decrypt", f"--key-file={key_file}", f"--in={local}", f"--out={plain}"]) == 0
    assert capsys.readouterr().out == f"decrypted {plain} (1000 bytes, sha256 {digest})\n"
    assert plain.read_bytes() == snapshot.read_bytes()


def test_cli_failures_are_one_line(s3: FakeS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("S3_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("S3_SECRET_ACCESS_KEY", "x")
    assert up.main(["list", *_args(s3), "--prefix=p", "--stack=dev"]) == 2
    assert capsys.readouterr().err == "error: environment variable 'S3_ACCESS_KEY_ID' is not set\n"
    monkeypatch.setenv("S3_ACCESS_KEY_ID", CREDS.access_key)
    assert up.main(["list", *_args(s3), "--prefix=p", "--stack=dev"]) == 1
    assert capsys.readouterr().err.startswith("error: GET /?list-type: HTTP 403")
    assert up.main(["decrypt", f"--key-file={tmp_path / 'missing'}", f"--in={tmp_path}", "--out=/dev/null"]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    assert up.main(["list", "--endpoint=ftp://x", "--region=r", "--bucket=b", "--prefix=p", "--stack=s"]) == 1
    assert "endpoint must be an http(s) URL" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        up.parse_args(["upload", *_args(s3), "--prefix=p", "--stack=s", "--retain=1", "--snapshot=s"])
    args = up.parse_args(["upload", *_args(s3), "--prefix=p", "--stack=s", "--retain=1", "--snapshot=s",
                          "--key-file=k"])
    assert args.part_size_mib == 16 and args.snapshot == Path("s") and args.key_file == Path("k")


REQUIRED = {
    "upload": ["--endpoint=e", "--region=r", "--bucket=b", "--prefix=p", "--stack=s", "--snapshot=f",
               "--key-file=k"],
    "list": ["--endpoint=e", "--region=r", "--bucket=b", "--prefix=p", "--stack=s"],
    "fetch": ["--endpoint=e", "--region=r", "--bucket=b", "--object=o", "--key-file=k", "--out=x"],
    "decrypt": ["--key-file=k", "--in=i", "--out=x"],
}


@pytest.mark.parametrize(("command", "missing"), [(c, i) for c, args in REQUIRED.items() for i in range(len(args))])
def test_every_option_a_command_needs_is_required(command: str, missing: int,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    args = REQUIRED[command]
    parsed = up.parse_args([command, *args])
    assert parsed.command == command
    with pytest.raises(SystemExit) as exc:
        up.parse_args([command, *args[:missing], *args[missing + 1:]])
    assert exc.value.code == 2
    assert args[missing].split("=")[0] in capsys.readouterr().err


def test_a_command_is_required_and_paths_are_paths() -> None:
    with pytest.raises(SystemExit):
        up.parse_args([])
    parsed = up.parse_args(["decrypt", "--key-file=k", "--in=i", "--out=x"])
    assert (parsed.key_file, parsed.source, parsed.out) == (Path("k"), Path("i"), Path("x"))
    fetched = up.parse_args(["fetch", *REQUIRED["fetch"]])
    assert (fetched.key_file, fetched.out, fetched.object) == (Path("k"), Path("x"), "o")
    # --retain is optional: without it the job only writes (the bucket's lifecycle rule does retention)
    write_only = up.parse_args(["upload", *REQUIRED["upload"]])
    assert (write_only.retain, write_only.k3s_folder, write_only.k3s_retain) == (None, "", 0)
    assert up.parse_args(["upload", *REQUIRED["upload"], "--retain=3"]).retain == 3
    assert up.parse_args(["upload", *REQUIRED["upload"], "--k3s-retain=84"]).k3s_retain == 84


def test_salt_and_nonce_prefix_are_fresh_random_bytes_of_their_size(monkeypatch: pytest.MonkeyPatch,
                                                                     cipher: up.Aead) -> None:
    asked: list[int] = []
    real = up.secrets.token_bytes

    def token_bytes(n: int) -> bytes:
        asked.append(n)
        return real(n)

    monkeypatch.setattr(up.secrets, "token_bytes", token_bytes)
    first = next(up.encrypt_stream(io.BytesIO(b"x"), MASTER, cipher, up.Digests()))
    second = next(up.encrypt_stream(io.BytesIO(b"x"), MASTER, cipher, up.Digests()))
    assert asked == [16, 7, 16, 7]
    assert up.Header.unpack(first).salt != up.Header.unpack(second).salt


def test_records_and_parts_have_the_types_and_sizes_s3_needs() -> None:
    assert isinstance(up.part_bytes(10_000 * 16 * MIB + 1), int), "a bytearray needs an int size"
    assert isinstance(up.part_bytes(1), int)


def test_a_listing_without_sizes_counts_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    store = up.Store("https://s3.example", "fsn1", "b", CREDS)
    ns = "http://s3.amazonaws.com/doc/2006-03-01/"
    body = f'<L xmlns="{ns}"><Contents><Key>a</Key></Contents><Contents><Size>5</Size></Contents></L>'.encode()
    monkeypatch.setattr(store, "_send", lambda method, key="", query="", body_=b"", headers=None: (body, {}))
    assert store.list_objects("") == {"a": 0, "": 5}
