"""Fleet-wide feature gates: declared once by the stack that runs the control plane, rendered onto exactly the
binaries that read them (components/karmada/features.py), refused with one line when a tenant needs one that is
not declared or a name is not a gate of the release."""

from __future__ import annotations

from typing import Any

import pytest

from components.config import ConfigError
from components.karmada import features, flags
from components.operations import preflight
from hubctl.plan import run_program
from tests.support.rendered import objects
from tests.support.tools import REPO, edited_stack, load_stack

DEV = "stacks/Pulumi.dev.yaml"


def _dev(**karmada: Any) -> Any:
    config = load_stack("dev")
    return config.model_copy(update={"karmada": config.karmada.model_copy(update=karmada)})


def test_a_gate_reaches_exactly_its_readers() -> None:
    assert features.component_gates(features.CM, {"FederatedQuotaEnforcement": True}) == {
        "FederatedQuotaEnforcement": True}
    assert features.component_gates(features.WEBHOOK, {"FederatedQuotaEnforcement": True}) == {
        "FederatedQuotaEnforcement": True}
    for other in (features.SCHEDULER, features.AGENT, features.ESTIMATOR, features.AGGREGATED):
        assert features.component_gates(other, {"FederatedQuotaEnforcement": True}) == {}
    # a default value is not rendered; the descheduler has no --feature-gates flag at all
    assert features.component_gates(features.CM, {"PropagateDeps": True}) == {}
    assert features.component_gates(features.DESCHEDULER, {"SchedulingOvercommitProtection": True}) == {}


def test_every_gate_names_a_binary_that_takes_the_flag() -> None:
    takes_flag = {b for b, known in flags.KNOWN_FLAGS.items() if "feature-gates" in known}
    for name, gate in features.GATES.items():
        assert gate.reads and gate.source, name
        assert gate.readers <= takes_flag, (name, gate.readers - takes_flag)


def test_dev_declares_what_its_tenants_need() -> None:
    preflight.check(load_stack("dev"), DEV)
    with pytest.raises(ConfigError) as info:
        preflight.check(_dev(features={}), DEV)
    assert str(info.value) == (
        f"{DEV}: karmada-hub:tenants[0].quota.enforce: needs feature gate FederatedQuotaEnforcement, which this "
        "stack does not run (its karmada-controller-manager, karmada-webhook would ignore it): set "
        f"karmada.features.FederatedQuotaEnforcement: true in {DEV}")


@pytest.mark.parametrize(("declared", "expected"), [
    ({"QuotaEnforcement": True}, "karmada.features.QuotaEnforcement: not a feature gate of Karmada v1.18.2 (one of: "),
    ({"Failover": False}, "karmada.features.Failover: always on (the hub's cluster failover is built on it); "
                          "remove it"),
])
def test_a_declared_name_must_be_a_gate_the_hub_may_set(declared: dict[str, bool], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        preflight.check(_dev(features={"FederatedQuotaEnforcement": True, **declared}), DEV)
    assert str(info.value).startswith(f"{DEV}: karmada-hub:{expected}")


def test_a_gate_a_flag_builder_refuses_stops_with_one_line() -> None:
    config = _dev(features={"FederatedQuotaEnforcement": True, "SchedulingOvercommitProtection": True},
                  scheduler_estimators=False)
    config = config.model_copy(update={"members": [m.model_copy(update={"scheduler_estimator": False})
                                                   for m in config.members]})
    with pytest.raises(ConfigError, match=r"^stacks/Pulumi\.dev\.yaml: karmada-hub:karmada\.features: "
                                          r"SchedulingOvercommitProtection needs the scheduler estimator"):
        preflight.check(config, DEV)


def test_the_rendered_plan_puts_a_declared_gate_on_every_reader_and_nowhere_else() -> None:
    def declare(karmada: dict[str, Any]) -> None:
        karmada["features"] = {"FederatedQuotaEnforcement": True, "WorkloadAffinity": True}

    plan = run_program(REPO, edited_stack("dev", {"karmada": declare}))
    seen: dict[str, set[str]] = {}
    for _, obj in objects(plan):
        if obj["kind"] != "Deployment":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            values = flags.flag_values([a for a in container.get("args", []) if a.startswith("--")])
            for pair in filter(None, values.get("feature-gates", "").split(",")):
                seen.setdefault(pair.split("=")[0], set()).add(container["name"])
    assert seen["WorkloadAffinity"] == {"karmada-scheduler", "karmada-controller-manager"}
    assert seen["FederatedQuotaEnforcement"] == {"karmada-controller-manager", "karmada-webhook"}
