"""`hubctl drill --method command`: the member is killed and restored by commands the operator gives.

For fleets whose machines the drill cannot reach through Hetzner (another provider, a chaos tool, the local real
fleet of the tests): `--kill-command` must make the member fail for real and return once it has started to,
`--restore-command` must undo exactly that. Each runs with `sh -c`, the member's name in `DRILL_MEMBER`, its
region in `DRILL_REGION`; a non-zero exit stops the drill (and a failed kill still runs the restore).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from hubctl.drill.kube import DrillError

TIMEOUT_SECONDS = 300.0


class Command:
    name = "command"
    kills = "whatever --kill-command does (the operator's own tooling)"

    def __init__(self, kill: str, restore: str, member: str, region: str, log: Callable[[str], None]) -> None:
        self.kill_command, self.restore_command = kill, restore
        self.env = {**os.environ, "DRILL_MEMBER": member, "DRILL_REGION": region}
        self.log = log

    def _run(self, flag: str, command: str) -> None:
        try:
            res = subprocess.run(["sh", "-c", command], env=self.env, capture_output=True, text=True,
                                 timeout=TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            raise DrillError(f"{flag} did not return within {TIMEOUT_SECONDS:.0f} s: {command}") from None
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
            raise DrillError(f"{flag} exited {res.returncode}: {tail[0]}")
        self.log(f"{flag} done")

    def kill(self) -> None:
        self._run("--kill-command", self.kill_command)

    def restore(self) -> None:
        self._run("--restore-command", self.restore_command)
