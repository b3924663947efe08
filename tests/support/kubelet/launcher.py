"""One container's process, as a container runtime would start it (runs as root inside the pod's namespace).

argv[1] is a JSON spec: `mounts` ([source, target, read_only]), `env`, `cwd`, `argv`,
`hostname`. `ip netns exec` has already
given this process its own mount namespace (mounts do not propagate back); each volume is bind-mounted at its mount
path (read-only when the pod says so), then the program is exec'd with exactly the env the pod defines. Mount points
are made by the kubelet before it starts the process (it records them for cleanup).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
import sys

CLONE_NEWUTS = 0x04000000


def main() -> int:
    spec = json.loads(sys.argv[1])
    # the program is opened before the volumes are mounted: a mount path that shadows where the binary lives on
    # this machine (a pod's /root or /tmp) must not hide it
    program = os.open(spec["argv"][0], os.O_RDONLY | os.O_CLOEXEC)
    if spec.get("hostname"):
        # a container's hostname is its pod's name: a UTS namespace of its own (os.unshare is Python 3.12+)
        if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUTS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS)")
        socket.sethostname(spec["hostname"][:63])
    # every source is opened before the first mount: a volume mounted over /tmp (or wherever the pod's files live
    # on this machine) must not hide the sources of the mounts after it
    # parents before children (containerd sorts a container's mounts by destination depth); a mount point missing
    # under a parent mount is made inside it, on that volume, as the runtime makes it in the container's rootfs
    mounts = sorted(spec["mounts"], key=lambda m: len(os.path.normpath(m[1]).split("/")))
    sources = [os.open(source, os.O_PATH | os.O_CLOEXEC) for source, _, _ in mounts]
    for fd, (_, target, _) in zip(sources, mounts, strict=True):
        os.set_inheritable(fd, True)
        if not os.path.lexists(target):
            if os.path.isdir(f"/proc/self/fd/{fd}"):  # the source itself may be hidden by now
                os.makedirs(target)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "a").close()
        subprocess.run(["mount", "--bind", f"/proc/{os.getpid()}/fd/{fd}", target], check=True, close_fds=False)
    # read-only last: a child's mount point inside a read-only parent is made while the parent is still writable
    for _, target, read_only in mounts:
        if read_only:
            subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)
    os.chdir(spec.get("cwd") or "/")
    os.execve(program, spec["argv"], spec["env"])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
