"""`python -m bench.upgrade_real`: the upgrade rehearsal on the local real fleet (issue 26 point 6).

The dev stack at the previous Karmada minor (`upstream.build.PREVIOUS_KARMADA`), upgraded to the pinned release by
following docs/runbooks/upgrade-karmada.md step by step, the probe service called every second throughout and the
version-skew guard checked after every step and every rolled workload (tests/support/realfleet/upgrade.py).
Writes `report.json` and `report.md` under `--out`; exit 0 when every step passed, the guard held throughout and
no client request failed, else 1 with the failed step and its error. Needs root, `make upstream`, `python -m
upstream.build --only karmada-prev`, and both releases in the Go module cache (`go mod download
github.com/karmada-io/karmada@<tag>`: the previous release's CRDs come from there).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.upgrade_real", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/bench/upgrade"))
    args = parser.parse_args(argv)
    from tests.support.realfleet.fleet import RealFleet
    from tests.support.realfleet.upgrade import markdown, rehearse

    args.out.mkdir(parents=True, exist_ok=True)
    with RealFleet() as fleet:
        report = rehearse(fleet, args.out)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    failed = report["failed"]
    if failed:
        print(f"rehearsal failed: {failed}", file=sys.stderr)
        return 1
    if not report["passed"]:
        print("rehearsal failed: see the steps, the guard and the probe above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
