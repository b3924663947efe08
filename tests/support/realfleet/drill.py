"""`hubctl drill` against the local real fleet, as an operator runs it: kubeconfigs in, timeline out.

The drill runs from the fleet's client namespace (its resolver is the real Unbound), kills with
`--method command` through the fleet's control socket (`control.py`): `blackhole` drops every packet of the
member's namespaces (timeouts), `stop` kills every process of the member (refusals).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.realfleet.fleet import RealFleet
from tests.support.tools import REPO

WAYS = {"blackhole": ("blackhole", "heal"), "stop": ("stop", "start")}


class DrillFailed(AssertionError):
    pass


def run_drill(fleet: RealFleet, member: str, how: str, out: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """`hubctl drill dev --method command` killing `member` `how`; returns its timeline.json (also in `out`)."""
    kill, restore = WAYS[how]
    kubeconfigs = out / "kubeconfigs"
    fleet.write_kubeconfigs(kubeconfigs)
    argv = [sys.executable, "-m", "hubctl", "drill", "dev", "--yes", "--member", member, "--method", "command",
            "--kill-command", fleet.control_command(kill, member),
            "--restore-command", fleet.control_command(restore, member),
            "--kubeconfigs", str(kubeconfigs), "--nameserver", fleet.public_addresses()[0],
            "--resolver", fleet.resolver_ip, "--out", str(out / "timeline"), "--poll", "1",
            "--connect-timeout", "2", "--timeout", "420", "--settle-timeout", "300", *extra]
    res = subprocess.run(fleet.network.exec_argv(fleet.client.name, argv), cwd=REPO, capture_output=True, text=True,
                         timeout=1800)
    (out / "drill.log").write_text(res.stdout + res.stderr)
    path = out / "timeline" / "timeline.json"
    if not path.is_file():
        raise DrillFailed(f"the drill wrote no timeline (exit {res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
    timeline = dict(json.loads(path.read_text()))
    if res.returncode != 0:
        raise DrillFailed(f"drill {timeline['outcome']} (exit {res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
    return timeline
