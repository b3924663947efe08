"""The rendered plans: the descheduler's runtime contract, each tenant gate on exactly its readers, the priority
table in karmada-apiserver, and the placement policies the example stacks ship."""

from __future__ import annotations

from typing import Any

from components.karmada import flags, manifests, pki_spec
from components.karmada.flags import GATE_READERS
from tests.support.rendered import certs, find, objects, secret_files

COMPONENT_OF_BINARY = {
    "karmada-controller-manager": "karmada-controller-manager",
    "karmada-scheduler": "karmada-scheduler",
    "karmada-webhook": "karmada-webhook",
}


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]["containers"][0]


def _gates(args: list[str]) -> set[str]:
    values = flags.flag_values(args).get("feature-gates", "")
    return {kv.split("=")[0] for kv in values.split(",") if kv.endswith("=true")}


def _deployments(plan: Any) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for t, o in objects(plan) if t == "host" and o["kind"] == "Deployment"}


def test_descheduler_runs_as_upstream_needs_it(rendered_dev: Any) -> None:
    dep = find(rendered_dev, "host", "Deployment", "karmada-descheduler")
    c = _container(dep)
    args = c["args"]
    assert dep["spec"]["replicas"] == 2
    assert c["command"] == ["/bin/karmada-descheduler"]
    assert set(flags.flag_names(args)) <= flags.KNOWN_FLAGS["karmada-descheduler"]
    assert "feature-gates" not in flags.flag_names(args)  # the binary has no such flag
    values = flags.flag_values(args)
    assert values["leader-elect"] == "true"
    # probes on the only path it serves, on the port its flag names
    port = int(values["health-probe-bind-address"].rsplit(":", 1)[1])
    for probe in (c["livenessProbe"], c["readinessProbe"]):
        assert probe["httpGet"] == {"port": port, "path": "/healthz", "scheme": "HTTP"}
    # every $(VAR) it references is defined
    assert flags.env_refs(args) <= {e["name"] for e in c["env"]}
    # every file its flags name is mounted: the CA and its own gRPC cert from <name>-pki, the kubeconfig
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {flags.PKI_DIR, flags.KUBECONFIG_PATH.rsplit("/", 1)[0]} <= mounts
    pki = find(rendered_dev, "host", "Secret", "karmada-descheduler-pki")
    assert set(secret_files(pki)) == {"ca.crt", "descheduler-estimator-client.crt", "descheduler-estimator-client.key"}
    assert find(rendered_dev, "host", "PodDisruptionBudget", "karmada-descheduler")["spec"]["maxUnavailable"] == 1
    assert dep["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_descheduler_identities_are_its_own(rendered_dev: Any) -> None:
    issued = certs(rendered_dev)
    client, _ = issued["karmada-pki-descheduler"]
    grpc, _ = issued["karmada-pki-descheduler-estimator-client"]
    from cryptography.x509.oid import NameOID

    cn = client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert cn == pki_spec.DESCHEDULER_USER
    assert not client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME), "no system:masters"
    grpc_cn = grpc.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert grpc_cn == "system:karmada:karmada-descheduler-grpc"
    binding = find(rendered_dev, "karmada", "ClusterRoleBinding", "karmada-descheduler")
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                    "name": pki_spec.DESCHEDULER_USER}]
    find(rendered_dev, "karmada", "RoleBinding", "karmada-descheduler")


def test_dev_gates_land_exactly_on_their_readers(rendered_dev: Any) -> None:
    from tests.support.tools import load_stack

    fleet_gates = set(load_stack("dev").karmada.feature_gates)
    deployments = _deployments(rendered_dev)
    for binary, component in COMPONENT_OF_BINARY.items():
        on = _gates(_container(deployments[component])["args"]) & set(flags.TENANT_GATES)
        assert on == {g for g in fleet_gates if binary in GATE_READERS[g]}, binary
    estimator = _gates(_container(deployments["karmada-scheduler-estimator-dev-fsn1-a"])["args"])
    assert estimator == {g for g in fleet_gates if "karmada-scheduler-estimator" in GATE_READERS[g]}
    assert estimator == {"SchedulingOvercommitProtection"}


def test_prod_hub_switches_on_the_gates_its_regions_use(rendered_prod_hub: Any) -> None:
    """Its tenants live in the region stacks: the hub's own list decides (before, quota enforcement was off)."""
    deployments = _deployments(rendered_prod_hub)
    assert _gates(_container(deployments["karmada-controller-manager"])["args"]) >= {
        "FederatedQuotaEnforcement", "WorkloadAffinity"}
    assert "FederatedQuotaEnforcement" in _gates(_container(deployments["karmada-webhook"])["args"])
    assert _gates(_container(deployments["karmada-scheduler"])["args"]) & set(flags.TENANT_GATES) == {
        "WorkloadAffinity"}
    assert "karmada-descheduler" in deployments


def test_priority_table_is_in_karmada_apiserver(rendered_dev: Any) -> None:
    classes = {o["metadata"]["name"]: o["value"] for t, o in objects(rendered_dev) if o["kind"] == "PriorityClass"}
    assert classes == {"fleet-critical": 100000, "fleet-standard": 1000}
    assert {t for t, o in objects(rendered_dev) if o["kind"] == "PriorityClass"} == {"karmada"}


def test_dev_policies_show_every_option(rendered_dev: Any) -> None:
    pps = {o["metadata"]["name"]: o["spec"] for t, o in objects(rendered_dev) if o["kind"] == "PropagationPolicy"}
    assert set(pps) == {"shop", "shop-critical", "search", "search-shared", "ledger", "ledger-shared", "archive",
                        "archive-shared"}
    assert "spreadConstraints" not in pps["shop"]["placement"]  # a copy in both regions, not one
    assert pps["shop-critical"]["preemption"] == "Always"
    assert pps["search"]["placement"]["clusterAffinities"][0]["overflowAffinities"][0]["affinityName"] == "spill-hel"
    assert pps["ledger"]["failover"]["cluster"]["purgeMode"] == "Directly"
    assert "tolerationSeconds" not in pps["archive"]["placement"]["clusterTolerations"][0]


def test_descheduler_follows_the_estimators() -> None:
    """No estimators, no descheduler (it asks every member's estimator); disabled, none either."""
    from hubctl.plan import run_program
    from tests.support.tools import REPO, edited_stack

    def no_estimators(value: dict[str, Any]) -> None:
        value["schedulerEstimators"] = False
        value["featureGates"].remove("SchedulingOvercommitProtection")

    def members(value: list[dict[str, Any]]) -> None:
        for m in value:
            m["schedulerEstimator"] = False

    def tenants(value: list[dict[str, Any]]) -> None:
        value[1]["placement"].pop("overcommitProtection")

    plan = run_program(REPO, edited_stack("dev", {"karmada": no_estimators, "members": members, "tenants": tenants}))
    assert manifests.DESCHEDULER not in _deployments(plan)
    assert not [o for t, o in objects(plan) if o["kind"] == "ClusterRole" and o["metadata"]["name"] ==
                "karmada-descheduler"]


def test_plan_summary_prints_the_what_if_table_and_json_carries_it(rendered_dev: Any) -> None:
    import json
    from pathlib import Path

    from hubctl import summary
    from tests.support.tools import load_stack

    config = load_stack("dev")
    text = summary.render(rendered_dev, config, Path("build/plan/dev"), {})
    assert "what-if: one member or region lost" in text
    assert "archive  waits for the member to return (no automatic failover)" in text
    data = summary.as_json(rendered_dev, config, Path("build/plan/dev"))
    assert json.loads(json.dumps(data)) == data
    assert {t["tenant"]: t["effect"] for t in data["whatif"]["tenants"]}["ledger"].startswith("rescheduled, then")
    assert data["resources"] == len(rendered_dev.records)


def test_plan_json_is_one_document_on_stdout(tmp_path: Any) -> None:
    """`hubctl plan dev --json --policy`: stdout parses as JSON with the what-if table; the policy verdict goes
    to stderr so it cannot break the document."""
    import json
    import subprocess
    import sys

    from tests.support.tools import REPO, program_env

    done = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--json", "--policy", "--out",
                           str(tmp_path / "plans")], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=program_env())
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["plan"] == "karmada-hub/dev"
    assert [t["tenant"] for t in data["whatif"]["tenants"]] == ["shop", "search", "ledger", "archive"]
    assert "policy: ok in dev" in done.stderr
