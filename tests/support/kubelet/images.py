"""Which host program stands in for each rendered image: the upstream binary that image ships, at its version.

A container's `command[0]` (or the image's entrypoint when the container names none) is looked up per image
repository; the image's tag must be the version the binary was built at, so a container rendered with another tag
never silently runs the pinned binary. Python agent images run this machine's interpreter (the agents are
standard-library programs for CPython >= 3.11). An image or a command that is not in the table is refused.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from components import versions
from upstream.build import PREVIOUS_KARMADA, binary


class ImageError(RuntimeError):
    pass


@dataclass(frozen=True)
class ImageEntry:
    tag: str
    """The only tag this entry stands in for."""
    commands: Mapping[str, str]
    """command[0] as the container names it -> upstream binary name (or `python`)."""
    entrypoint: tuple[str, ...] = ()
    """The image's ENTRYPOINT, used when the container renders no `command`."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files the image has that its programs read (its user database), mounted at their paths."""
    version_check: tuple[str, ...] = ()
    """For a program of this machine's (a Debian package), a command whose output must name the image's version."""
    other_tags: tuple[str, ...] = ()
    """Further tags this entry stands in for, each with the upstream build at that tag (`binary(name, tag)`): the
    previous Karmada minor of the upgrade rehearsal (`upstream.build.PREVIOUS_KARMADA`)."""


def default_table() -> dict[str, ImageEntry]:
    release = versions.release(versions.KARMADA_VERSION)
    karmada = {f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-{c}": ImageEntry(
        versions.KARMADA_VERSION, {f"/bin/karmada-{c}": f"karmada-{c}", f"karmada-{c}": f"karmada-{c}"},
        other_tags=(PREVIOUS_KARMADA,))
        for c in ("controller-manager", "scheduler", "webhook", "aggregated-apiserver", "descheduler",
                  "scheduler-estimator", "agent", "search")}
    kube = {f"{versions.KUBE_IMAGE_REGISTRY}/{c}": ImageEntry(
        release.kube_apiserver, {c: c, f"/usr/local/bin/{c}": c})
        for c in ("kube-apiserver", "kube-controller-manager")}
    python_repo, python_tag = versions.AGENT_PYTHON_IMAGE.rsplit(":", 1)
    return {
        **karmada, **kube,
        f"{versions.KUBE_IMAGE_REGISTRY}/etcd": ImageEntry(release.etcd, {
            "/usr/local/bin/etcd": "etcd", "etcd": "etcd", "/usr/local/bin/etcdctl": "etcdctl",
            "etcdctl": "etcdctl"}),
        python_repo: ImageEntry(python_tag, {"python3": "python", "python": "python"}),
        # Debian bookworm's knot is the upstream release the pinned image carries; the image's knot user is uid 53
        # (CZ.NIC's Dockerfile), which the seed step hands the zone storage to and knotd drops to
        versions.KNOT_IMAGE.rsplit(":", 1)[0]: ImageEntry(
            versions.KNOT_VERSION, {"knotd": "/usr/sbin/knotd", "/sbin/knotd": "/usr/sbin/knotd",
                                    "knotc": "/usr/sbin/knotc", "kdig": "/usr/bin/kdig", "sh": "/bin/sh"},
            files={"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nknot:x:53:53:knot:/storage:/sbin/nologin\n",
                   "/etc/group": "root:x:0:\nknot:x:53:\n"},
            version_check=("/usr/sbin/knotd", "-V")),
    }


def python_interpreter() -> str:
    """The system's CPython when it has one (its standard library lives under /usr, which no pod mounts over),
    else this interpreter."""
    for candidate in ("/usr/bin/python3", sys.executable):
        if Path(candidate).is_file():
            return candidate
    return sys.executable


@dataclass
class ImageTable:
    entries: Mapping[str, ImageEntry]

    def files(self, image: str) -> Mapping[str, str]:
        entry = self.entries.get(image.rpartition(":")[0])
        return entry.files if entry else {}

    @classmethod
    def default(cls) -> ImageTable:
        return cls(default_table())

    def resolve(self, image: str, argv: list[str]) -> list[str]:
        """The host argv for a container's `image` and rendered `argv` (command + args)."""
        repo, _, tag = image.rpartition(":")
        entry = self.entries.get(repo)
        if entry is None:
            raise ImageError(f"image {image}: no upstream binary stands in for {repo} here")
        if tag != entry.tag and tag not in entry.other_tags:
            raise ImageError(f"image {image}: the binary here is built at "
                             f"{' or '.join((entry.tag, *entry.other_tags))}, not {tag}")
        if not argv:
            if not entry.entrypoint:
                raise ImageError(f"image {image}: the container names no command and the image has no entrypoint here")
            argv = list(entry.entrypoint)
        name = entry.commands.get(argv[0])
        if name is None:
            raise ImageError(f"image {image}: command {argv[0]!r} is not one this image ships")
        if name == "python":
            return [python_interpreter(), *argv[1:]]
        if name.startswith("/"):  # a program of this machine's, the same release as the image's
            if not Path(name).is_file():
                raise ImageError(f"image {image}: {name} is not installed here")
            if entry.version_check:
                out = subprocess.run(list(entry.version_check), capture_output=True, text=True, check=False)
                if entry.tag.lstrip("v") not in out.stdout + out.stderr:
                    raise ImageError(f"image {image}: {entry.version_check[0]} here is not {entry.tag}")
            return [name, *argv[1:]]
        if tag != entry.tag:
            path = binary(name, tag)
            if path is None:
                raise ImageError(f"{name} {tag} is not built: run `python -m upstream.build --only karmada-prev`")
            return [str(Path(path)), *argv[1:]]
        path = binary(name)
        if path is None:
            raise ImageError(f"{name} is not built: run `make upstream`")
        return [str(Path(path)), *argv[1:]]
