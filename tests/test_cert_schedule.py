"""Certificate lifecycle: when each CA and leaf expires, when `pulumi up` renews it, and that renewals are
staggered (components/kube/cert_schedule.py), from the rendered pulumi_tls inputs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest

from components.kube import cert_schedule as cs
from hubctl.mocks import plan_epoch
from hubctl.plan import Plan, plan_document, run_program
from hubctl.report import certificate_resources, certificates_section
from tests.support.tools import REPO, edited_stack, load_stack

SPREAD_DAYS = 14
MAX_SHARE_PER_DAY = 0.25


@pytest.mark.parametrize(("validity", "ca"), [(720, False), (8760, False), (43800, False), (8760, True),
                                              (87600, True), (175200, True)])
def test_renewal_window_stays_inside_the_validity(validity: int, ca: bool) -> None:
    hours = [cs.renewal_hours(f"cert-{i}", validity, ca) for i in range(200)]
    base = validity // 10 if ca else validity // 5
    spread = validity // 20 if ca else validity // 10
    assert min(hours) >= base and max(hours) <= base + spread < validity
    assert max(hours) - min(hours) > spread * 0.8  # the offsets really use the window
    assert cs.renewal_hours("cert-0", validity, ca) == hours[0]  # stable: same name, same window


def test_every_rendered_certificate_has_its_staggered_window(rendered_dev: Plan) -> None:
    certs = [r for r in rendered_dev.records if r.type in (cs.SELF_SIGNED, cs.LOCALLY_SIGNED)]
    assert len(certs) > 20 and sum(r.type == cs.SELF_SIGNED for r in certs) == 8  # 3 Karmada + 5 k3s CAs
    for r in certs:
        inputs = r.inputs
        expected = cs.renewal_hours(r.name, int(inputs["validityPeriodHours"]), ca=r.type == cs.SELF_SIGNED)
        assert int(inputs["earlyRenewalHours"]) == expected, r.name


def test_expiry_table_from_the_plan(rendered_dev: Plan) -> None:
    epoch = plan_epoch()
    rows = cs.certificate_expiry(certificate_resources(rendered_dev), issued_at=epoch)
    by_name = {r.name: r for r in rows}
    assert {r.kind for r in rows} == {"ca", "leaf"} and sum(r.kind == "ca" for r in rows) == 8
    ca, leaf = by_name["karmada-pki-ca"], by_name["karmada-pki-apiserver"]
    assert ca.signer == "karmada" and leaf.signer == "karmada" and by_name["karmada-pki-etcd-peer"].signer == \
        "karmada-etcd-ca"
    assert leaf.not_after == epoch + dt.timedelta(hours=8760) and leaf.issued
    assert leaf.renew_from == leaf.not_after - dt.timedelta(hours=leaf.early_renewal_hours)
    assert ca.not_after == epoch + dt.timedelta(hours=87600)
    assert [r.renew_from for r in rows] == sorted(r.renew_from for r in rows)
    json.dumps([r.as_json() for r in rows])  # JSON-ready for `hubctl diff --json`


def test_plan_json_alone_gives_the_same_table(rendered_dev: Plan) -> None:
    """What `hubctl diff` has: plan.json resources (inputs, no provider outputs) and an assumed issue time."""
    epoch = plan_epoch()
    from_json = cs.certificate_expiry(plan_document(rendered_dev)["resources"], issued_at=epoch)
    from_plan = cs.certificate_expiry(certificate_resources(rendered_dev), issued_at=epoch)
    assert [dataclasses.replace(r, issued=True) for r in from_json] == from_plan
    assert not any(r.issued for r in from_json)


def test_renewals_are_staggered(rendered_dev: Plan, rendered_prod_hub: Plan) -> None:
    for plan in (rendered_dev, rendered_prod_hub):
        rows = cs.certificate_expiry(certificate_resources(plan), issued_at=plan_epoch())
        assert cs.stagger_problems(rows, SPREAD_DAYS, MAX_SHARE_PER_DAY) == []
        leaves = sorted(r.renew_from for r in rows if r.kind == "leaf")
        assert (leaves[-1] - leaves[0]).days >= 30, plan.stack


def test_the_stagger_check_fails_without_offsets(rendered_dev: Plan) -> None:
    rows = cs.certificate_expiry(certificate_resources(rendered_dev), issued_at=plan_epoch())
    flat = [dataclasses.replace(r, early_renewal_hours=1752, renew_from=r.not_after - dt.timedelta(hours=1752))
            if r.kind == "leaf" else r for r in rows]
    problems = cs.stagger_problems(flat, SPREAD_DAYS, MAX_SHARE_PER_DAY)
    from collections import Counter

    leaves = max(Counter(r.not_after for r in rows if r.kind == "leaf").values())  # the leaves that expire together
    assert len(problems) == 2 and "renew within 0.0 days" in problems[0] and f"{leaves} of {leaves} leaf" in problems[1]


def test_the_plan_summary_prints_expiry_and_renewal(rendered_dev: Plan, tmp_path: Any) -> None:
    from hubctl import summary

    section = certificates_section(rendered_dev, load_stack("dev"))
    assert section is not None and section.table is not None
    assert section.table.headers == ["certificate", "kind", "expires", "pulumi up renews from", "validity h"]
    rows = cs.certificate_expiry(certificate_resources(rendered_dev), issued_at=plan_epoch())
    expected = [[r.name, r.kind, r.not_after.strftime("%Y-%m-%d"), r.renew_from.strftime("%Y-%m-%d"),
                 str(r.validity_hours)] for r in rows]
    assert section.table.rows == expected  # soonest renewal first, the dates cert_schedule computes
    data = {c["resource"]: c for c in section.data}
    assert all(data[r.name]["renewFrom"] == r.as_json()["renew_from"] for r in rows)
    text = summary.render(rendered_dev, load_stack("dev"), tmp_path, [])
    assert "pulumi up renews from" in text and "karmada-pki-etcd-server" in text


def test_expiry_changes_for_diff(rendered_dev: Plan) -> None:
    """A new leaf validity changes every leaf's dates and no CA's (nor the operators' 30-day certificates, whose
    life is their own: components/trust/operators.py)."""
    epoch = plan_epoch()

    def edit(karmada: dict[str, Any]) -> None:
        karmada.setdefault("pki", {})["leafValidityHours"] = 4380

    other = run_program(REPO, edited_stack("dev", {"karmada": edit}))
    old = cs.certificate_expiry(certificate_resources(rendered_dev), issued_at=epoch)
    new = cs.certificate_expiry(certificate_resources(other), issued_at=epoch)
    changed = cs.expiry_changes(old, new)
    assert {name for name, _, _ in changed} == {r.name for r in old if r.kind == "leaf"
                                                and not r.name.startswith("operator-")}
    assert all(a is not None and b is not None and b.not_after < a.not_after for _, a, b in changed)
    assert cs.expiry_changes(old, old) == []
    assert cs.expiry_changes(old, old[1:]) == [(old[0].name, old[0], None)]


def test_diff_names_a_moved_renewal_window() -> None:
    """A new early_renewal_hours is an in-place update: same certificate (fingerprint), another renewal date."""
    from hubctl.diff import _certificate_lines

    old = {"resource": "c", "subject": "CN=c", "fingerprint": "f", "validityHours": 8760,
           "notAfter": "2027-12-01T00:00:00Z", "renewFrom": "2027-09-18T00:00:00Z"}
    new = {**old, "renewFrom": "2027-08-14T00:00:00Z"}
    assert _certificate_lines([old], [new]) == [
        "c: pulumi up renews from 2027-09-18T00:00:00Z → 2027-08-14T00:00:00Z (same certificate)"]
    assert _certificate_lines([old], [old]) == []
