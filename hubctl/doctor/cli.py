"""`hubctl doctor <stack>`: arguments, the one read, the table (or `--json`) and the exit code.

Exit 0 healthy (no finding), 1 findings, 2 a user error (stack file, kubeconfigs, flags) before anything is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hubctl.errors import EXIT_FINDINGS, EXIT_OK, UserError
from hubctl.output import Output, Table

ORDER = {"finding": 0, "unknown": 1, "ok": 2}
VERDICTS = ("hub", "member", "policy", "quota", "skew")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("stack", help="the hub or all-in-one stack (its region stacks' members are read from their files)")
    p.add_argument("--kubeconfigs", default=".", help="directory with karmada.kubeconfig, hub.kubeconfig and, for "
                   "the members whose own API doctor should ask, <member>.kubeconfig (as for hubctl drill; default: "
                   "the current directory)")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per request (default 5)")
    p.add_argument("--cert-warn-days", type=int, default=30, metavar="DAYS",
                   help="a certificate expiring within this many days is a finding (default 30)")


def main(args: argparse.Namespace, repo: Path, out: Output) -> int:
    from components.operations.region_intents import fleet_members, fleet_tenants, region_intents
    from hubctl.commands import load_config
    from hubctl.doctor.checks import diagnose, expect_from
    from hubctl.doctor.read import Reader
    from hubctl.drill.kube import DrillError

    if args.timeout <= 0 or args.cert_warn_days < 0:
        raise UserError("hubctl doctor: --timeout must be > 0 and --cert-warn-days >= 0")
    _, config = load_config(repo, args.stack)
    if config.role == "region":
        hub = config.hub_stack.stack if config.hub_stack else "its hub stack"
        raise UserError(f"stacks/Pulumi.{args.stack}.yaml: a region stack has no hub of its own; run hubctl doctor "
                        f"against the hub stack ({hub})")
    intents = region_intents(config, args.stack)
    expect = expect_from(config, fleet_members(config, intents), fleet_tenants(config, intents))
    try:
        reader = Reader(Path(args.kubeconfigs), expect, timeout=args.timeout)
    except DrillError as err:
        raise UserError(str(err)) from None
    try:
        snap = reader.snapshot()
    finally:
        reader.close()
    report = diagnose(args.stack, snap, expect, args.cert_warn_days)
    if args.json:
        out.json(report.as_dict())
    else:
        rows = sorted(report.rows, key=lambda r: (ORDER[r.status], VERDICTS.index(r.verdict) if r.verdict else 0))
        blames: dict[str, int] = {}
        for r in report.findings:
            blames[r.blame] = blames.get(r.blame, 0) + 1
        unread = sum(r.status == "unknown" for r in report.rows)
        summary = ("healthy: no finding" if report.healthy else
                   f"{len(report.findings)} finding(s): " + ", ".join(f"{b} {n}" for b, n in blames.items()))
        footer = [summary + (f"; {unread} check(s) could not read what they need" if unread else "")]
        out.table(Table(
            headers=("verdict", "check", "subject", "detail", "runbook"),
            rows=[(r.blame or r.status, r.check, r.subject, r.detail, r.runbook.removeprefix("docs/runbooks/"))
                  for r in rows],
            title=f"hubctl doctor {args.stack}", footer=footer))
    return EXIT_FINDINGS if report.findings else EXIT_OK
