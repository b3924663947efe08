"""Killing and restoring parts of the local real fleet from another process: what `hubctl drill --method command`
runs as its kill and restore commands.

The harness serves a Unix socket (`ControlServer`); `python -m tests.support.realfleet.control SOCKET ACTION NAME`
sends one line and prints the answer, exiting non-zero on an error. Actions:

- `blackhole <member>` / `heal <member>`: every packet of the member's namespaces dropped but loopback (its
  control plane, its pods' namespaces, its region's LB address with it): peers see timeouts, not refusals;
- `stop <member>` / `start <member>`: every process of the member killed at once (SIGKILL: its control plane and
  its pods, which no kubelet restarts while it is stopped), then started again as its machines would boot;
- `stop-server <n>` / `start-server <n>`: hub server n crashes (every pod on it killed, its addresses dropped),
  then comes back (its pods re-created, StatefulSet members with the data they had).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path

Action = Callable[[str], str]


class ControlServer:
    def __init__(self, path: Path, actions: dict[str, Action]) -> None:
        self.path, self.actions = path, actions
        path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="fleet control")
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(600)
                line = conn.makefile("r").readline().strip()
                action, _, name = line.partition(" ")
                try:
                    answer = "ok " + self.actions[action](name)
                except Exception as exc:  # the client prints it and exits 1
                    answer = f"error {type(exc).__name__}: {exc}"
                with contextlib.suppress(OSError):
                    conn.sendall((answer + "\n").encode())

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()
        self.path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m tests.support.realfleet.control SOCKET ACTION NAME", file=sys.stderr)
        return 2
    path, action, name = argv
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(600)
        sock.connect(path)
        sock.sendall(f"{action} {name}\n".encode())
        answer = sock.makefile("r").readline().strip()
    print(answer)
    return 0 if answer.startswith("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
