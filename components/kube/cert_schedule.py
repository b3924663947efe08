"""When each certificate expires and when `pulumi up` renews it, as plain data.

pulumi_tls (terraform-provider-tls v4.2.1, `internal/provider/common_cert.go`
`modifyPlanIfCertificateReadyForRenewal`) replaces a `SelfSignedCert`/`LocallySignedCert` at plan time once
`now >= validity_end_time - early_renewal_hours`; the key (`tls.PrivateKey`) stays. Nothing happens between two
`pulumi up` runs, so a renewal lands on the first run inside the window.

Staggering: every certificate of a stack is issued in the same first `up`, with the same validity, so without
care they would all renew in the same run and expire together afterwards. `renewal_hours` widens each window by
a stable, name-derived offset (leaves: validity/5 plus up to validity/10 more; CAs: validity/10 plus up to
validity/20), so renewals spread over weeks and the next generation's expiry dates differ. Changing
`early_renewal_hours` is an in-place update in the provider (the attribute has no RequiresReplace in
`resource_locally_signed_cert.go` / `resource_self_signed_cert.go`), so introducing the offsets re-issues
nothing by itself.

`certificate_expiry` reads plan resources (the entries of `plan.json`'s `resources`, or the same shape built from
the in-memory plan with `outputs`) and is what `hubctl plan`'s summary prints and `hubctl diff` can compare.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

OFFLINE_ENV = "KARMADA_HUB_OFFLINE"
"""Set to 1 while the offline planner (`hubctl plan`) runs the program."""
EPOCH_ENV = "HUBCTL_PLAN_EPOCH"


def offline_epoch() -> dt.datetime:
    """The offline planner's clock: HUBCTL_PLAN_EPOCH (an ISO date) or 00:00 UTC today, so its runs are
    byte-identical within a day (hubctl/mocks.py issues every certificate at it)."""
    override = os.environ.get(EPOCH_ENV)
    today = dt.datetime.now(dt.UTC).date()
    if override:  # hubctl refuses anything but a date first (hubctl/mocks.py parse_epoch)
        today = dt.date.fromisoformat(override.strip())
    return dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC)


def program_now() -> dt.datetime:
    """What the program takes for now: the wall clock, or the offline planner's epoch while it runs."""
    return offline_epoch() if os.environ.get(OFFLINE_ENV) == "1" else dt.datetime.now(dt.UTC)


SELF_SIGNED = "tls:index/selfSignedCert:SelfSignedCert"
LOCALLY_SIGNED = "tls:index/locallySignedCert:LocallySignedCert"


def renewal_hours(name: str, validity_hours: int, ca: bool) -> int:
    """`early_renewal_hours` for the certificate resource `name`: the base window plus a stable offset."""
    base = validity_hours // 10 if ca else max(validity_hours // 5, 1)
    spread = validity_hours // 20 if ca else validity_hours // 10
    offset = int.from_bytes(hashlib.sha256(f"renewal:{name}".encode()).digest()[:8], "big") % (spread + 1)
    hours = base + offset
    if hours >= validity_hours:  # the provider would then renew on every run
        raise ValueError(f"{name}: early renewal {hours}h is not shorter than the validity {validity_hours}h")
    return hours


@dataclass(frozen=True)
class CertificateExpiry:
    """One certificate: when it stops being valid and from when `pulumi up` replaces it."""

    name: str
    """The Pulumi resource name (unique per stack)."""
    kind: Literal["ca", "leaf"]
    signer: str
    """The issuing CA's common name (itself for a CA)."""
    validity_hours: int
    early_renewal_hours: int
    not_after: dt.datetime
    renew_from: dt.datetime
    issued: bool
    """True when `not_after` is the certificate's own (known state); False when it assumes issue at
    `issued_at` (a certificate the run creates, or an offline plan)."""

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["not_after"] = _iso(self.not_after)
        out["renew_from"] = _iso(self.renew_from)
        return out


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value or value.startswith("["):
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(dt.UTC)


def _common_name(pem: Any) -> str:
    if not isinstance(pem, str) or "BEGIN CERTIFICATE" not in pem:
        return "?"
    from cryptography import x509

    names = x509.load_pem_x509_certificate(pem.encode()).subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else "?"


def certificate_expiry(resources: Iterable[Mapping[str, Any]], issued_at: dt.datetime) -> list[CertificateExpiry]:
    """Every CA and leaf among `resources` (each with `type`, `name`, `inputs`, and optionally `outputs`),
    sorted by renewal time. A certificate's own `validityEndTime` output wins; without one, it is assumed
    issued at `issued_at`."""
    rows = []
    for res in resources:
        typ = res.get("type")
        if typ not in (SELF_SIGNED, LOCALLY_SIGNED):
            continue
        inputs = res.get("inputs") or {}
        outputs = res.get("outputs") or {}
        validity = int(inputs["validityPeriodHours"])
        early = int(inputs.get("earlyRenewalHours") or 0)
        end = _parse(outputs.get("validityEndTime"))
        issued = end is not None
        if end is None:
            end = issued_at + dt.timedelta(hours=validity)
        ca = typ == SELF_SIGNED
        subject = (inputs.get("subject") or {}).get("commonName") if ca else None
        rows.append(CertificateExpiry(
            name=str(res["name"]), kind="ca" if ca else "leaf",
            signer=str(subject) if ca else _common_name(inputs.get("caCertPem")),
            validity_hours=validity, early_renewal_hours=early, not_after=end,
            renew_from=end - dt.timedelta(hours=early), issued=issued,
        ))
    return sorted(rows, key=lambda r: (r.renew_from, r.name))


def expiry_changes(old: Sequence[CertificateExpiry], new: Sequence[CertificateExpiry]
                   ) -> list[tuple[str, CertificateExpiry | None, CertificateExpiry | None]]:
    """Per certificate name: (name, before, after) wherever expiry, renewal time or kind changed, or the
    certificate appears or goes away. For `hubctl diff`."""
    before, after = {r.name: r for r in old}, {r.name: r for r in new}
    changes = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None or (a.not_after, a.renew_from, a.kind) != (b.not_after, b.renew_from, b.kind):
            changes.append((name, a, b))
    return changes


def stagger_problems(rows: Sequence[CertificateExpiry], min_spread_days: float, max_share_per_day: float
                     ) -> list[str]:
    """Why renewals of certificates that expire together are not spread: per group of same-kind certificates
    with the same `not_after`, renewal moments must span `min_spread_days`, and no calendar day may hold more
    than `max_share_per_day` of the group."""
    problems = []
    groups: dict[tuple[str, dt.datetime], list[CertificateExpiry]] = {}
    for r in rows:
        groups.setdefault((r.kind, r.not_after), []).append(r)
    for (kind, end), group in sorted(groups.items()):
        if len(group) < 3:
            continue
        moments = sorted(r.renew_from for r in group)
        span = (moments[-1] - moments[0]).total_seconds() / 86400
        if span < min_spread_days:
            problems.append(f"{len(group)} {kind} certificates expiring {_iso(end)} renew within {span:.1f} days")
        day, count = Counter(m.date() for m in moments).most_common(1)[0]
        if count > max_share_per_day * len(group):
            problems.append(f"{count} of {len(group)} {kind} certificates expiring {_iso(end)} renew on {day}")
    return problems
