"""The etcd backup: SigV4 checked against botocore's own signer; the uploader run for real (as the CronJob runs
it) against a fake S3 that verifies every signature and the multipart rules; the KHB1 encryption checked
against an independent decryptor written here with `cryptography`, and against tampering; bounded memory
measured; the rendered CronJob.

The snapshot step (etcdctl with the rendered args and certificate against a real etcd cluster) and the
restore are in tests/integration/test_etcd_cluster.py and tests/integration/test_etcd_restore.py.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from agents import etcd_backup_upload as up
from components.karmada import flags
from components.operations import etcd_backup_docs as docs
from tests.support.fake_s3 import FakeS3, botocore_authorization
from tests.support.rendered import certs, find, secret_files
from tests.support.schemas import validate_any
from tests.support.tools import REPO, load_stack

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
CREDS = up.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
MASTER = b"q0s8Wb0mQ0yKc9V0b1u7C3m3hXl0Zk2rTj3Gf5Jr5nE="
SCRIPT = REPO / "agents" / "etcd_backup_upload.py"
MIB = 2**20


@pytest.mark.parametrize(("method", "url", "body", "extra"), [
    ("PUT", "https://fsn1.your-objectstorage.com/backups/karmada-etcd/dev/20261130T120000Z.db", b"snapshot",
     {"content-type": "application/octet-stream"}),
    ("GET", "https://fsn1.your-objectstorage.com/backups?list-type=2&prefix=karmada-etcd%2Fdev%2F", b"", {}),
    ("GET", "https://fsn1.your-objectstorage.com/backups?prefix=a%20b&list-type=2&continuation-token=x%2By", b"", {}),
    ("DELETE", "https://fsn1.your-objectstorage.com/backups/karmada-etcd/dev/a%20b%2Bc.db", b"", {}),
    ("POST", "https://fsn1.your-objectstorage.com/backups/k/dev/x.db.enc?uploads", b"", {"content-type": "x/y"}),
    ("PUT", "https://fsn1.your-objectstorage.com/backups/k/dev/x.db.enc?partNumber=2&uploadId=a%2Fb", b"part", {}),
    ("POST", "https://fsn1.your-objectstorage.com/backups/k/dev/x.db.enc?uploadId=a%2Fb", b"<xml/>", {}),
    ("GET", "https://fsn1.your-objectstorage.com/backups?uploads&prefix=k%2Fdev%2F", b"", {}),
])
def test_sigv4_matches_botocore(method: str, url: str, body: bytes, extra: dict[str, str]) -> None:
    mine = up.sign(method, url, body, CREDS, "fsn1", NOW, extra)
    assert mine.headers["authorization"] == botocore_authorization(method, url, body, extra, "fsn1",
                                                                   CREDS.access_key, CREDS.secret_key, NOW)


def test_keys_sort_by_time_and_retention_keeps_the_newest() -> None:
    keys = [up.snapshot_key("karmada-etcd", "dev", NOW - dt.timedelta(hours=6 * i)) for i in range(5)]
    assert keys[0] == "karmada-etcd/dev/20261130T120000Z.db.enc"
    legacy = "karmada-etcd/dev/20261101T000000Z.db"  # written unencrypted before KHB1: oldest, goes first
    manifests = [k + ".json" for k in keys]
    listed = [*keys, *manifests, legacy, "karmada-etcd/dev/README"]
    old = sorted(keys)[:2]
    assert up.expired(listed, retain=3) == [legacy, old[0], old[0] + ".json", old[1], old[1] + ".json"]
    assert up.expired(keys, retain=10) == []
    with pytest.raises(ValueError, match="retain must be >= 1"):
        up.expired(keys, retain=0)


def _k3s_objects(folder: str, servers: int, runs: int, start: int = 1_790_000_000) -> list[str]:
    """What k3s writes: per run and server `etcd-snapshot-<node>-<unix>` (same minute on every server) and its
    `.metadata/` copy."""
    out = []
    for run in range(runs):
        for n in range(servers):
            name = f"etcd-snapshot-karmada-hub-dev-cp-{n}-{start + run * 21600 + n}"
            out += [f"{folder}/{name}", f"{folder}/.metadata/{name}"]
    return out


def test_k3s_retention_counts_every_servers_snapshots_together() -> None:
    folder = "k3s-etcd/dev"
    keys = _k3s_objects(folder, servers=3, runs=4)
    keys += [f"{folder}/on-demand-karmada-hub-dev-cp-0-1780000000", f"{folder}/etcd-snapshot-cp-0-1700000000.zip",
             "k3s-etcd/dev-2/etcd-snapshot-x-1600000000", f"{folder}/notes.txt"]
    old = up.k3s_expired(keys, folder, retain=6)
    # the compressed one is the oldest; then the first two runs of three servers; each with its metadata copy
    assert old[0] == f"{folder}/etcd-snapshot-cp-0-1700000000.zip"
    names = [k for k in old if "/.metadata/" not in k]
    assert len(names) == 7 and all(f"{folder}/.metadata/{k.rsplit('/', 1)[1]}" in old for k in names[1:])
    kept = {k for k in keys if k not in old and "/.metadata/" not in k and "/etcd-snapshot-" in k
            and k.startswith(folder + "/")}
    assert len(kept) == 6 and min(int(k.rsplit("-", 1)[1]) for k in kept) > max(
        int(k.rsplit("-", 1)[1].removesuffix(".zip")) for k in names)
    assert not any("on-demand" in k or "dev-2" in k or "notes" in k for k in old), "only k3s' scheduled ones"
    assert up.k3s_expired(keys, folder, retain=100) == []
    with pytest.raises(ValueError):
        up.k3s_expired(keys, folder, retain=0)


@pytest.mark.parametrize(("size", "parts_max"), [(1, 1), (200 * MIB, 13), (8 * 2**30, 513), (400 * 2**30, 10_000)])
def test_part_size_respects_the_s3_limits(size: int, parts_max: int) -> None:
    cipher = up.ciphertext_size(size)
    part = up.part_bytes(cipher)
    assert part >= up.MIN_PART_BYTES and part % MIB == 0
    assert -(-cipher // part) <= min(parts_max, up.MAX_PARTS)
    with pytest.raises(ValueError, match="at least 5 MiB"):
        up.part_bytes(cipher, 4 * MIB)


# ----------------------------------------------------------------------------- the format, independently


def independent_decrypt(blob: bytes, master: bytes) -> bytes:
    """KHB1 as the docstring of agents/etcd_backup_upload.py specifies it, with `cryptography` only."""
    magic, version, algorithm, reserved, chunk, _kid, salt, prefix = struct.unpack(">4sBBHI8s16s7s", blob[:43])
    assert (magic, version, algorithm, reserved) == (b"KHB1", 1, 1, 0)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=b"karmada-hub etcd backup v1").derive(master)
    records = [blob[i:i + chunk + 16] for i in range(43, len(blob), chunk + 16)]
    gcm = AESGCM(key)
    return b"".join(gcm.decrypt(prefix + struct.pack(">IB", i, int(i == len(records) - 1)), r, blob[:43])
                    for i, r in enumerate(records))


def _seal(data: bytes, master: bytes = MASTER, cipher: up.Aead | None = None, chunk: int = up.CHUNK_BYTES) -> bytes:
    return b"".join(up.encrypt_stream(io.BytesIO(data), master, cipher or up.aead(), up.Digests(), chunk))


def _open(blob: bytes, master: bytes = MASTER, cipher: up.Aead | None = None) -> bytes:
    out = io.BytesIO()
    up.decrypt_stream(io.BytesIO(blob), master, cipher or up.aead(), out, up.Digests())
    return out.getvalue()


class CryptographyGcm:
    """The same cipher from `cryptography`: a second, independent AES-GCM to check the ctypes one against."""

    def seal(self, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        return bytes(AESGCM(key).encrypt(nonce, plaintext, aad))

    def open(self, key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None:
        from cryptography.exceptions import InvalidTag

        try:
            return bytes(AESGCM(key).decrypt(nonce, sealed, aad))
        except InvalidTag:
            return None


def test_the_agent_uses_this_pythons_libcrypto_and_agrees_with_cryptography() -> None:
    libcrypto, other = up.aead(), CryptographyGcm()
    assert isinstance(libcrypto, up.LibcryptoGcm)
    data = os.urandom(3 * 4096 + 17)
    for a, b in ((libcrypto, other), (other, libcrypto)):
        assert _open(_seal(data, cipher=a, chunk=4096), cipher=b) == data
    assert independent_decrypt(_seal(data, chunk=4096), MASTER) == data
    assert up._passes_kat(libcrypto)


def test_a_libcrypto_that_fails_the_known_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up.LibcryptoGcm, "seal", lambda self, k, n, a, p: b"\0" * (len(p) + 16))
    with pytest.raises(up.BackupError, match="known-answer test failed"):
        up.aead()


@pytest.mark.parametrize("size", [1, 4095, 4096, 4097, 3 * 4096])
def test_round_trip_at_chunk_boundaries(size: int) -> None:
    data = os.urandom(size)
    blob = _seal(data, chunk=4096)
    assert len(blob) == up.ciphertext_size(size, 4096)
    assert _open(blob) == data == independent_decrypt(blob, MASTER)


def _records(blob: bytes, chunk: int = 4096) -> tuple[bytes, list[bytes]]:
    return blob[:43], [blob[i:i + chunk + 16] for i in range(43, len(blob), chunk + 16)]


@pytest.mark.parametrize(("tamper", "message"), [
    (lambda h, r, o: h[:5] + bytes([h[5] ^ 1]) + h[6:] + b"".join(r), "unsupported KHB1 header"),
    (lambda h, r, o: h[:30] + bytes([h[30] ^ 1]) + h[31:] + b"".join(r), "record 0 failed authentication"),
    (lambda h, r, o: h + r[0][:9] + bytes([r[0][9] ^ 1]) + r[0][10:] + b"".join(r[1:]), "record 0 failed"),
    (lambda h, r, o: h + r[1] + r[0] + r[2] + r[3], "record 0 failed authentication"),
    (lambda h, r, o: h + b"".join(r[:2]), "truncated: record 1 is not the last one"),
    (lambda h, r, o: h, "truncated: the stream has a header but no record"),
    (lambda h, r, o: h + b"".join(r) + r[-1], "record 3 failed authentication"),
    (lambda h, r, o: h + r[0] + o[1][1] + r[2] + r[3], "record 1 failed authentication"),
    (lambda h, r, o: b"PK\x03\x04" + h[4:] + b"".join(r), "not a KHB1 encrypted snapshot"),
])
def test_tampering_is_refused(tamper: Any, message: str) -> None:
    data = os.urandom(3 * 4096 + 100)
    header, records = _records(_seal(data, chunk=4096))
    other = _records(_seal(data, chunk=4096))  # the same plaintext, another salt: its records do not fit
    with pytest.raises(up.BackupError, match=message):
        _open(tamper(header, records, other))


def test_data_after_a_full_final_record_is_refused() -> None:
    header, records = _records(_seal(os.urandom(3 * 4096), chunk=4096))
    with pytest.raises(up.BackupError, match="data after the final record 2"):
        _open(header + b"".join(records) + records[0])


def test_a_wrong_key_is_named_as_such() -> None:
    blob = _seal(b"x" * 100)
    with pytest.raises(up.BackupError, match=r"encrypted with key id [0-9a-f]{16}, this key is [0-9a-f]{16}"):
        _open(blob, master=b"another key that is long enough for the check!")


# ----------------------------------------------------------------------------------------- against S3


@pytest.fixture
def s3() -> Iterator[FakeS3]:
    fake = FakeS3("backups", "fsn1", CREDS.access_key, CREDS.secret_key)
    yield fake
    fake.close()


def _env(creds: up.Credentials = CREDS) -> dict[str, str]:
    return {**os.environ, "S3_ACCESS_KEY_ID": creds.access_key, "S3_SECRET_ACCESS_KEY": creds.secret_key}


def _key_file(tmp_path: Path, master: bytes = MASTER) -> Path:
    path = tmp_path / "backup.key"
    path.write_bytes(master + b"\n")  # as `pulumi config get` writes it
    return path


def _cli(*args: str, creds: up.Credentials = CREDS, wrapper: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), *args] if wrapper is None else [sys.executable, "-c", wrapper, str(SCRIPT),
                                                                          *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env(creds))


def _upload(s3: FakeS3, snapshot: Path, tmp_path: Path, retain: int | None = 3, creds: up.Credentials = CREDS,
            part_mib: int = 5, wrapper: str | None = None) -> subprocess.CompletedProcess[str]:
    """The script with the CronJob's rendered arguments (docs.uploader_args), pointed at the fake store."""
    keep = [f"--retain={retain}"] if retain is not None else []
    return _cli("upload", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups", "--prefix=karmada-etcd",
                "--stack=dev", *keep, f"--snapshot={snapshot}", f"--key-file={_key_file(tmp_path)}",
                f"--part-size-mib={part_mib}", creds=creds, wrapper=wrapper)


def test_without_retain_the_upload_only_writes(s3: FakeS3, tmp_path: Path) -> None:
    """Review M7: the recommended mode. The uploader sends no list, delete or abort of another run (a write-only key
    works; the bucket's lifecycle rule does retention), and every older snapshot stays."""
    old = [f"karmada-etcd/dev/2026110{d}T000000Z.db.enc" for d in range(1, 4)]
    s3.objects.update({k: b"old" for k in old})
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(os.urandom(2 * MIB))
    result = _upload(s3, snapshot, tmp_path, retain=None)
    assert result.returncode == 0, result.stderr
    assert "deleted 0 older snapshot(s)" in result.stdout
    assert set(old) <= set(s3.objects)
    verbs = {r.split(" ", 1)[0] for r in s3.requests}
    assert verbs <= {"POST", "PUT"}, sorted(s3.requests)  # create/complete multipart, parts, the manifest
    from components.operations import etcd_backup_docs

    backup = load_stack("prod-hub").karmada.etcd.backup
    assert backup is not None and backup.retain is None
    assert not any(a.startswith("--retain") for a in etcd_backup_docs.uploader_args(backup, "prod-hub"))


def test_multipart_upload_fetch_and_retention(s3: FakeS3, tmp_path: Path) -> None:
    old = [f"karmada-etcd/dev/2026110{d}T000000Z.db.enc" for d in range(1, 6)]
    s3.objects.update({k: b"old" for k in old})
    s3.objects.update({k + ".json": b"{}" for k in old})
    s3.objects["karmada-etcd/prod-hub/20261101T000000Z.db.enc"] = b"another stack's"
    snapshot = tmp_path / "snapshot.db"
    data = os.urandom(12 * MIB + 12345)
    snapshot.write_bytes(data)
    result = _upload(s3, snapshot, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "3 part(s)" in result.stdout and "deleted 3 older snapshot(s)" in result.stdout
    record = up.CHUNK_BYTES + up.TAG_BYTES
    assert len(s3.part_sizes) == 3 and sum(s3.part_sizes) == up.ciphertext_size(len(data))
    assert all(5 * MIB <= size < 5 * MIB + record for size in s3.part_sizes[:-1])  # whole records, >= 5 MiB
    dev = sorted(k for k in s3.objects if k.startswith("karmada-etcd/dev/") and k.endswith(".enc"))
    assert dev[:2] == old[3:] and len(dev) == 3
    assert sorted(k for k in s3.objects if k.endswith(".json")) == sorted(k + ".json" for k in dev)
    assert "karmada-etcd/prod-hub/20261101T000000Z.db.enc" in s3.objects  # other stacks are never touched
    new = dev[-1]
    blob = s3.objects[new]
    assert data not in blob and data[:4096] not in blob  # nothing leaves in the clear
    assert independent_decrypt(blob, MASTER) == data
    manifest = json.loads(s3.objects[new + ".json"])
    assert manifest["plaintextBytes"] == len(data) and manifest["ciphertextBytes"] == len(blob)
    assert manifest["keyId"] == up.key_id(MASTER).hex() and manifest["parts"] == 3
    assert not s3.rejected and not s3.uploads

    listing = _cli("list", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups",
                   "--prefix=karmada-etcd", "--stack=dev")
    assert listing.returncode == 0 and listing.stdout.splitlines()[-1] == f"{new}\t{len(blob)}"
    out = tmp_path / "restored.db"
    fetched = _cli("fetch", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups", f"--object={new}",
                   f"--key-file={_key_file(tmp_path)}", f"--out={out}")
    assert fetched.returncode == 0, fetched.stderr
    assert out.read_bytes() == data and oct(out.stat().st_mode & 0o777) == "0o600"
    local = tmp_path / "copy.db.enc"
    local.write_bytes(blob)
    decrypted = _cli("decrypt", f"--key-file={_key_file(tmp_path)}", f"--in={local}", f"--out={tmp_path / 'd.db'}")
    assert decrypted.returncode == 0 and (tmp_path / "d.db").read_bytes() == data


def test_the_backup_run_bounds_the_hubs_k3s_snapshots_in_the_same_bucket(s3: FakeS3, tmp_path: Path,
                                                                          rendered_dev: Any) -> None:
    """A stack with `retain` (its key may delete): --k3s-folder/--k3s-retain (84 for three servers: each one's week),
    whatever k3s itself prunes: here it pruned nothing, as stored versions of its Secret path would. dev sets no
    retain (write only, review 2 M7): its job sends no delete at all, for neither folder."""
    from components.operations import k3s_snapshots

    upload = find(rendered_dev, "host", "CronJob", docs.NAME)["spec"]["jobTemplate"]["spec"]["template"]["spec"][
        "containers"][0]
    rendered = dict(a.removeprefix("--").split("=", 1) for a in upload["args"][1:])
    assert not {"retain", "k3s-folder", "k3s-retain"} & set(rendered), rendered
    backup = load_stack("dev").karmada.etcd.backup
    assert backup is not None and backup.retain is None
    assert k3s_snapshots.job_bound(backup, "dev", 3) is None
    with_retain = backup.model_copy(update={"retain": 28})
    args = dict(a.removeprefix("--").split("=", 1) for a in docs.uploader_args(
        with_retain, "dev", k3s_snapshots.job_bound(with_retain, "dev", 3))[1:])
    folder, retain = args["k3s-folder"], int(args["k3s-retain"])
    assert (folder, retain) == ("k3s-etcd/dev", 84)
    k3s = _k3s_objects(folder, servers=3, runs=40)  # ten days
    s3.objects.update({k: b"k3s" for k in k3s})
    s3.objects["k3s-etcd/dev/on-demand-cp-0-1780000000"] = b"mine"
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(os.urandom(1000))
    result = _cli("upload", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups",
                  "--prefix=karmada-etcd", "--stack=dev", "--retain=3", f"--snapshot={snapshot}",
                  f"--key-file={_key_file(tmp_path)}", f"--k3s-folder={folder}", f"--k3s-retain={retain}")
    assert result.returncode == 0, result.stderr
    assert f"k3s snapshots: kept the newest 84 in {folder}/, deleted 36" in result.stdout
    left = {k for k in s3.objects if k.startswith(folder + "/etcd-snapshot-")}
    newest = sorted((k for k in k3s if "/.metadata/" not in k), key=lambda k: int(k.rsplit("-", 1)[1]))[-84:]
    assert left == set(newest)
    assert len([k for k in s3.objects if "/.metadata/" in k]) == 84
    assert "k3s-etcd/dev/on-demand-cp-0-1780000000" in s3.objects
    bad = _cli("upload", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups", "--prefix=karmada-etcd",
               "--stack=dev", "--retain=3", f"--snapshot={snapshot}", f"--key-file={_key_file(tmp_path)}",
               f"--k3s-folder={folder}")
    assert bad.returncode == 1 and "go together" in bad.stderr
    write_only = _cli("upload", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups",
                      "--prefix=karmada-etcd", "--stack=dev", f"--snapshot={snapshot}",
                      f"--key-file={_key_file(tmp_path)}", f"--k3s-folder={folder}", f"--k3s-retain={retain}")
    assert write_only.returncode == 1 and "--k3s-folder needs --retain" in write_only.stderr


def test_a_failed_part_aborts_the_upload_and_deletes_nothing(s3: FakeS3, tmp_path: Path) -> None:
    s3.objects["karmada-etcd/dev/20261101T000000Z.db.enc"] = b"old"
    s3.fail_part = 2
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(os.urandom(11 * MIB))
    result = _upload(s3, snapshot, tmp_path, retain=1)
    assert result.returncode == 1 and "HTTP 500" in result.stderr
    assert s3.aborted == [f"karmada-etcd/dev/{k}" for k in [s3.aborted[0].rsplit("/", 1)[1]]] and not s3.uploads
    assert list(s3.objects) == ["karmada-etcd/dev/20261101T000000Z.db.enc"]


def test_an_error_inside_a_200_complete_is_a_failure(s3: FakeS3, tmp_path: Path) -> None:
    s3.complete_error = True
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"x" * 100)
    result = _upload(s3, snapshot, tmp_path)
    assert result.returncode == 1 and "CompleteMultipartUpload" in result.stderr and "InternalError" in result.stderr
    assert len(s3.aborted) == 1 and not s3.objects


def test_stale_uploads_of_the_stack_are_aborted(s3: FakeS3, tmp_path: Path) -> None:
    from tests.support.fake_s3 import Upload

    now, two_days = dt.datetime.now(dt.UTC), dt.timedelta(days=2)
    s3.uploads["old"] = Upload("karmada-etcd/dev/20261101T000000Z.db.enc", now - two_days)
    s3.uploads["fresh"] = Upload("karmada-etcd/dev/20261130T000000Z.db.enc", now)
    s3.uploads["other"] = Upload("karmada-etcd/prod-hub/x.db.enc", now - two_days)
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"x" * 100)
    assert _upload(s3, snapshot, tmp_path).returncode == 0
    assert set(s3.uploads) == {"fresh", "other"}


def test_wrong_credentials_fail_and_delete_nothing(s3: FakeS3, tmp_path: Path) -> None:
    s3.objects["karmada-etcd/dev/20261101T000000Z.db.enc"] = b"old"
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"x")
    result = _upload(s3, snapshot, tmp_path, retain=1, creds=up.Credentials(CREDS.access_key, "wrong"))
    assert result.returncode == 1 and "HTTP 403" in result.stderr
    assert list(s3.objects) == ["karmada-etcd/dev/20261101T000000Z.db.enc"]


def test_an_empty_snapshot_or_a_short_key_is_refused(s3: FakeS3, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(b"")
    result = _upload(s3, snapshot, tmp_path)
    assert result.returncode == 1 and "is empty" in result.stderr and not s3.objects
    snapshot.write_bytes(b"x")
    short = _cli("decrypt", f"--key-file={_key_file(tmp_path, b'short')}", f"--in={snapshot}", "--out=/dev/null")
    assert short.returncode == 1 and "at least 32 characters" in short.stderr


def test_a_tampered_object_is_never_written_out(s3: FakeS3, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.db"
    snapshot.write_bytes(os.urandom(3 * MIB))
    assert _upload(s3, snapshot, tmp_path).returncode == 0
    key = next(k for k in s3.objects if k.endswith(".enc"))
    blob = bytearray(s3.objects[key])
    blob[-100] ^= 1
    s3.objects[key] = bytes(blob)
    out = tmp_path / "restored.db"
    fetched = _cli("fetch", f"--endpoint={s3.endpoint}", "--region=fsn1", "--bucket=backups", f"--object={key}",
                   f"--key-file={_key_file(tmp_path)}", f"--out={out}")
    assert fetched.returncode == 1 and "record 2 failed authentication" in fetched.stderr
    assert not out.exists() and not (tmp_path / "restored.db.partial").exists()


PEAK_RSS = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print("peak-kib", hwm, file=sys.stderr)
sys.exit(code)
"""
"""The uploader's own peak RSS (VmHWM belongs to this address space; ru_maxrss would carry the forking
parent's over exec)."""


def _peak_mib(result: subprocess.CompletedProcess[str]) -> float:
    return int(result.stderr.split("peak-kib")[1].split()[0]) / 1024


def test_memory_is_bounded_by_the_part_size_not_the_snapshot(s3: FakeS3, tmp_path: Path) -> None:
    """The old uploader read the whole file (OOM past ~200 MiB under 256Mi). Peak RSS for a 1 KiB and a 192 MiB
    snapshot, 16 MiB parts: the difference must stay below two parts, far below the snapshot's size."""
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    small.write_bytes(b"x" * 1024)
    with large.open("wb") as f:
        for _ in range(192):
            f.write(os.urandom(MIB))
    base = _upload(s3, small, tmp_path, part_mib=16, wrapper=PEAK_RSS)
    big = _upload(s3, large, tmp_path, part_mib=16, wrapper=PEAK_RSS)
    assert base.returncode == 0 and big.returncode == 0, big.stderr
    growth = _peak_mib(big) - _peak_mib(base)
    print(f"uploader peak RSS: {_peak_mib(base):.0f} MiB (1 KiB snapshot), {_peak_mib(big):.0f} MiB (192 MiB "
          f"snapshot); growth {growth:.0f} MiB = {growth / 16:.1f} parts")
    assert growth < 2 * 16, growth
    assert _peak_mib(big) < 64  # well inside docs.UPLOAD_MEMORY_LIMIT (128Mi)
    assert len(s3.part_sizes) == 1 + 12 and all(size >= 16 * MIB for size in s3.part_sizes[1:-1])


# ------------------------------------------------------------------------------------ rendered


def test_rendered_cron_job(rendered_dev: Any) -> None:
    cron = find(rendered_dev, "host", "CronJob", docs.NAME)
    validate_any(cron)
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    snapshot, upload = pod["initContainers"][0], pod["containers"][0]
    assert snapshot["image"].startswith("registry.k8s.io/etcd:") and snapshot["args"][-3:] == [
        "snapshot", "save", flags.ETCD_SNAPSHOT_PATH]
    assert upload["args"][0] == "upload"
    args = dict(a.removeprefix("--").split("=", 1) for a in upload["args"][1:])
    assert args["snapshot"] == flags.ETCD_SNAPSHOT_PATH and args["stack"] == "dev"
    # the argument parser of the script accepts exactly what is rendered
    parsed = up.parse_args(upload["args"])
    assert parsed.command == "upload" and str(parsed.key_file) == f"{docs.KEY_DIR}/{docs.ENCRYPTION_KEY}"
    mounts = {m["mountPath"]: m["name"] for m in upload["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    key_volume = volumes[mounts[docs.KEY_DIR]]["secret"]
    assert key_volume["secretName"] == docs.ENCRYPTION_SECRET
    assert [i["path"] for i in key_volume["items"]] == [docs.ENCRYPTION_KEY]
    assert upload["envFrom"] == [{"secretRef": {"name": docs.CREDENTIALS_SECRET}}]
    assert volumes["backup"]["emptyDir"]["sizeLimit"] == "2560Mi"  # 1.25 x the 2Gi quota
    configmap = find(rendered_dev, "host", "ConfigMap", docs.NAME)
    assert configmap["data"][docs.SCRIPT_KEY] == SCRIPT.read_text()
    credentials = secret_files(find(rendered_dev, "host", "Secret", docs.CREDENTIALS_SECRET))
    assert set(credentials) == {"S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"}
    key = secret_files(find(rendered_dev, "host", "Secret", docs.ENCRYPTION_SECRET))
    assert key == {docs.ENCRYPTION_KEY: "offline-placeholder-for-etcdBackupEncryptionKey"}


def test_backup_client_cert_is_its_own_and_from_the_etcd_ca(rendered_dev: Any) -> None:
    pki = secret_files(find(rendered_dev, "host", "Secret", docs.PKI_SECRET))
    cert = x509.load_pem_x509_certificate(pki["etcd-backup-client.crt"].encode())
    ca = x509.load_pem_x509_certificate(pki["etcd-ca.crt"].encode())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "karmada-etcd-backup"
    etcd_ca = certs(rendered_dev)["karmada-pki-etcd-server"][0].issuer
    assert ca.subject == etcd_ca  # the CA etcd's --trusted-ca-file trusts
