"""The faults `hubctl doctor` must name, one at a time, as data: what is broken and what doctor must say about it.

This table is the contract between the fake fleet (tests/support/doctor_fleet.py, tests/test_doctor.py) and the
local real fleet, whose test injects the same faults into real processes and judges doctor's report with the same
`judge`. Each fault says what to break (`inject`, in words), which findings must appear (`required`: verdict,
check, subject) and which verdicts may appear at all (`allowed`: anything else is a healthy part blamed). `{member}`
and `{tenant}` stand for the member and tenant the test picks. `settle` says when the finding can be expected on a
real fleet (Karmada's detection takes its time; doctor reports what is true at the moment it reads).

A healthy fleet (`HEALTHY`) has no finding at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Expect:
    verdict: str
    """`hub`, `member`, `policy`, `quota` or `skew`."""
    check: str
    subject: str


@dataclass(frozen=True)
class Fault:
    key: str
    inject: str
    required: tuple[Expect, ...]
    allowed: tuple[str, ...]
    """The report's `blame` values (`hub`, `member <name>`, `quota`, ...) any finding may have."""
    settle: str
    needs: str = ""
    """What the fleet must have for this fault (a Pull member, a tenant with quota)."""

    def fill(self, values: Mapping[str, str]) -> Fault:
        def sub(text: str) -> str:
            for key, value in values.items():
                text = text.replace("{" + key + "}", value)
            return text

        return Fault(self.key, sub(self.inject), tuple(Expect(e.verdict, e.check, sub(e.subject))
                                                       for e in self.required),
                     tuple(sub(a) for a in self.allowed), self.settle, self.needs)


HEALTHY = Fault("healthy", "nothing", (), (), "at once")

FAULTS: tuple[Fault, ...] = (
    Fault("webhook-stopped", "scale the karmada-webhook Deployment to 0 (or stop every webhook process)",
          (Expect("hub", "webhook", "karmada-webhook"),), ("hub",),
          "at once: the dry run's admission call fails (connection refused, failurePolicy Fail)"),
    Fault("etcd-member-down", "stop one etcd member (its process, or its pod's container)",
          (Expect("hub", "etcd", "etcd"),), ("hub",),
          "once the member's readiness probe failed (readiness: /readyz on 2381, period 5 s x 30 failures at "
          "most; stopping the process fails it at once)"),
    Fault("member-black-holed", "drop every packet between the hub and {member} (and from this machine)",
          (Expect("member", "cluster", "{member}"),), ("member {member}",),
          "after Karmada's detection: Ready=False within the cluster failure threshold and monitor grace period (up "
          "to ~84 s for a black hole with the defaults, `hubctl budget`); before it, doctor may see nothing yet"),
    Fault("agent-stopped", "stop the karmada-agent of the Pull member {member} (scale it to 0 in the member)",
          (Expect("member", "agent", "{member}"),), ("member {member}",),
          "once its cluster lease outlived its duration (karmada.failover.clusterLeaseDuration, 40 s)",
          needs="a Pull member"),
    Fault("tenant-over-quota", "use up the FederatedResourceQuota of {tenant} (its overallUsed reaches overall)",
          (Expect("quota", "quota", "{tenant}"),), ("quota",),
          "once the controller-manager's quota status controller recomputed overallUsed", needs="a tenant with quota"),
    Fault("skewed-agent", "run the karmada-agent of {member} from an image (or binary) two minors behind the hub, "
          "e.g. v1.16.0", (Expect("skew", "skew", "{member}"),), ("skew", "member {member}"),
          "at once (doctor reads the agent Deployment's image tag in the member)", needs="a Pull member"),
)


def by_key(key: str) -> Fault:
    return next(f for f in (HEALTHY, *FAULTS) if f.key == key)


def judge(fault: Fault, report: Mapping[str, Any]) -> list[str]:
    """What is wrong with doctor's `--json` report for this (filled) fault: a required finding missing, a finding
    that blames a healthy part, or (healthy) any finding at all. Empty: doctor named it correctly."""
    findings = list(report.get("findings") or [])
    problems = []
    for need in fault.required:
        if not any(f["verdict"] == need.verdict and f["check"] == need.check and f["subject"] == need.subject
                   for f in findings):
            problems.append(f"missing: {need.verdict} / {need.check} / {need.subject}")
    for f in findings:
        if f["blame"] not in fault.allowed:
            problems.append(f"blames a healthy part: {f['blame']} ({f['check']} {f['subject']}: {f['detail']})")
    if report.get("healthy") is not (not findings):
        problems.append("`healthy` disagrees with the findings")
    return problems


def keys(faults: Iterable[Fault] = FAULTS) -> list[str]:
    return [f.key for f in faults]
