"""The real fleet removes its working directory when it closes, never through a mount still under it."""

from __future__ import annotations

from pathlib import Path

from tests.support.realfleet.fleet import remove_workdir


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "realfleet-x"
    (work / "storage" / "etcd-0").mkdir(parents=True)
    (work / "storage" / "etcd-0" / "db").write_bytes(b"x" * 1024)
    (work / "unbound.log").write_text("log\n")
    return work


def test_the_workdir_is_removed(tmp_path: Path) -> None:
    work = _workdir(tmp_path)
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n/dev/vda /work ext4 rw 0 0\n")
    assert remove_workdir(work, mounts) and not work.exists()


def test_a_workdir_with_a_mount_under_it_is_left_alone(tmp_path: Path) -> None:
    work = _workdir(tmp_path)
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda {work.resolve()}/storage/etcd-0 ext4 rw 0 0\n")
    assert not remove_workdir(work, mounts)
    assert (work / "storage" / "etcd-0" / "db").is_file()
