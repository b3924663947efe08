"""The hub's own k3s on day two: system-upgrade-controller and its Plan (k3s upgrades one server at a time),
snapshots to object storage (credentials only in a kube-system Secret), and what `hub.protect` protects."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import versions
from components.hetzner import cloud_init
from components.operations import k3s_snapshots
from components.operations import k3s_upgrade_docs as suc
from hubctl.mocks import unwrap
from tests.support.rendered import find
from tests.support.schemas import SchemaError, validate_any
from tests.support.tools import load_stack


@pytest.fixture(scope="module")
def dev_config() -> Any:
    return load_stack("dev")

# ------------------------------------------------------------------------------------------ the Plan


def test_plan_rolls_this_hubs_servers_one_at_a_time(dev_config: Any) -> None:
    plan = suc.server_plan(dev_config.hub)
    spec = plan["spec"]
    assert spec["concurrency"] == 1 and spec["cordon"] is True and "drain" not in spec
    assert spec["version"] == dev_config.hub.k3s_version and "channel" not in spec, "a fixed version, no polling"
    terms = {t["key"]: t["values"] for t in spec["nodeSelector"]["matchExpressions"]}
    assert terms == {"karmada-hub/cluster": [dev_config.hub.name], "karmada-hub/role": ["control-plane"]}
    # the servers carry exactly these labels (cloud-init node-label), so the Plan selects them
    labels = cloud_init.k3s_config(cloud_init.K3sServer(
        node_name="n", private_ip="10.0.1.11", k3s_version="v1.34.1+k3s1", token="K10" + "0" * 64 + "::server:x",
        tls_sans=(), join_url=None,
        node_labels=(f"karmada-hub/cluster={dev_config.hub.name}", "karmada-hub/role=control-plane")))["node-label"]
    assert {f"{k}={v[0]}" for k, v in terms.items()} <= set(labels)
    assert spec["upgrade"] == {"image": versions.K3S_UPGRADE_IMAGE}, "tag comes from the version (+ -> -)"
    assert spec["serviceAccountName"] == suc.JOB_SERVICE_ACCOUNT


def test_plan_validates_against_the_pinned_crd_and_a_broken_one_does_not(dev_config: Any) -> None:
    plan = suc.server_plan(dev_config.hub)
    validate_any(plan)
    broken = {**plan, "spec": {**plan["spec"], "concurrency": "one"}}
    with pytest.raises(SchemaError):
        validate_any(broken)
    with pytest.raises(SchemaError):
        validate_any({**plan, "spec": {k: v for k, v in plan["spec"].items() if k != "upgrade"}})


def test_crd_is_verified_by_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crd = suc.plan_crd(allow_download=False)
    assert crd["metadata"]["name"] == suc.PLAN_CRD and "status" not in crd
    source = next(d for d in suc._local_dirs() if (d / "upgrade.cattle.io_plans.yaml").is_file())
    data = (source / "upgrade.cattle.io_plans.yaml").read_bytes()
    assert hashlib.sha256(data).hexdigest() == suc.CRD_SHA256[versions.SYSTEM_UPGRADE_CONTROLLER_VERSION]
    (tmp_path / suc.FOLDER).mkdir()
    tampered = data.replace(b"concurrency", b"concurrencY", 1)
    (tmp_path / suc.FOLDER / "upgrade.cattle.io_plans.yaml").write_bytes(tampered)
    monkeypatch.setenv(suc.CRDS_DIR_ENV, str(tmp_path))
    with pytest.raises(suc.CrdIntegrityError, match="sha256"):
        suc.plan_crd(allow_download=False)


def test_upgrade_jobs_may_only_cordon() -> None:
    roles = {(o["kind"], o["metadata"]["name"]): o for o in suc.rbac() if o["kind"] in ("ClusterRole", "Role")}
    assert roles[("ClusterRole", "k3s-upgrade-cordon")]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    every_rule = [r for role in roles.values() for r in role["rules"]]
    assert not any("pods/eviction" in r["resources"] or ("pods" in r["resources"] and "delete" in r["verbs"])
                   for r in every_rule), "nothing here drains"
    crd_writes = [r for r in every_rule if "customresourcedefinitions" in r["resources"]
                  and {"update", "patch"} & set(r["verbs"])]
    assert crd_writes and all(r.get("resourceNames") == [suc.PLAN_CRD] for r in crd_writes)
    bindings = {o["metadata"]["name"]: o for o in suc.rbac() if o["kind"].endswith("Binding")}
    assert bindings["k3s-upgrade-cordon"]["subjects"][0]["name"] == suc.JOB_SERVICE_ACCOUNT
    assert {b["subjects"][0]["name"] for n, b in bindings.items() if n != "k3s-upgrade-cordon"} == {suc.CONTROLLER}


def test_controller_reads_the_env_it_is_given() -> None:
    """Every env name is one system-upgrade-controller v0.20.1 reads (main.go cli EnvVar, job.go LookupEnv)."""
    read_upstream = {
        "SYSTEM_UPGRADE_CONTROLLER_DEBUG", "SYSTEM_UPGRADE_CONTROLLER_LEADER_ELECT", "SYSTEM_UPGRADE_CONTROLLER_NAME",
        "SYSTEM_UPGRADE_CONTROLLER_NAMESPACE", "SYSTEM_UPGRADE_CONTROLLER_NODE_NAME",
        "SYSTEM_UPGRADE_CONTROLLER_THREADS", "SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS",
        "SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT", "SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY", "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE",
        "SYSTEM_UPGRADE_JOB_PRIVILEGED", "SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH"}
    pod = suc.deployment()["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    names = {e["name"] for e in container["env"]}
    assert names <= read_upstream and {"SYSTEM_UPGRADE_CONTROLLER_NAME", "SYSTEM_UPGRADE_CONTROLLER_NAMESPACE"} <= names
    name_ref = next(e for e in container["env"] if e["name"] == "SYSTEM_UPGRADE_CONTROLLER_NAME")
    label = name_ref["valueFrom"]["fieldRef"]["fieldPath"].split("'")[1]
    assert pod["metadata"]["labels"][label] == suc.CONTROLLER
    assert container["image"] == "docker.io/rancher/system-upgrade-controller:v0.20.1"
    assert not [v for v in pod["spec"]["volumes"] if "hostPath" in v], "a fixed version needs no host CA bundle"
    assert suc.namespace()["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_hub_plan_renders_the_controller_and_plan(rendered_dev: Any) -> None:
    plan = find(rendered_dev, "host", "Plan", suc.PLAN_NAME)
    assert plan["spec"]["version"] == load_stack("dev").hub.k3s_version
    find(rendered_dev, "host", "Deployment", suc.CONTROLLER)
    find(rendered_dev, "host", "CustomResourceDefinition", suc.PLAN_CRD)


# ------------------------------------------------------------------------------------------ snapshots


def test_snapshot_secret_has_exactly_the_keys_k3s_reads(dev_config: Any) -> None:
    backup = dev_config.karmada.etcd.backup
    secret = k3s_snapshots.s3_config_secret(backup, "dev", "AKIA", "s3cr3t")
    assert secret["metadata"] == {"name": cloud_init.ETCD_S3_SECRET, "namespace": "kube-system",
                                  "labels": {"app.kubernetes.io/part-of": "karmada-hub"}}
    assert secret["type"] == "etcd.k3s.cattle.io/s3-config-secret"
    # k3s pkg/etcd/s3/config_secret.go getConfigFromSecret reads these keys
    k3s_keys = {"etcd-s3-access-key", "etcd-s3-bucket", "etcd-s3-endpoint", "etcd-s3-folder", "etcd-s3-proxy",
                "etcd-s3-region", "etcd-s3-secret-key", "etcd-s3-timeout", "etcd-s3-skip-ssl-verify",
                "etcd-s3-insecure", "etcd-s3-endpoint-ca", "etcd-s3-endpoint-ca-name",
                # the v1.34 flag (k3s-io/k3s#12669); "keys in the Secret correspond to the --etcd-s3-* CLI flags"
                "etcd-s3-retention"}
    assert set(secret["stringData"]) <= k3s_keys
    assert secret["stringData"]["etcd-s3-endpoint"] == backup.endpoint.removeprefix("https://")
    assert secret["stringData"]["etcd-s3-folder"] == "k3s-etcd/dev"
    assert not secret["stringData"]["etcd-s3-folder"].startswith(f"{backup.prefix}/dev"), \
        "not under the Karmada uploader's retention prefix"
    with pytest.raises(ValueError):
        k3s_snapshots.s3_config_secret(backup, "dev", "", "x")


def test_object_storage_keeps_every_servers_week_and_the_backup_job_bounds_it(rendered_dev: Any,
                                                                             dev_config: Any) -> None:
    """k3s >= v1.34.0 prunes S3 by etcd-s3-retention (default 5), counted over all servers together, not by
    etcd-snapshot-retention: with three servers 5 objects are the last one or two runs. With `retain` set the
    backup job keeps every server's seven days in that folder; the Secret lifts k3s' own prune to the largest
    hub's count, a constant (a Secret whose data changes is replaced), so it never cuts below what the job keeps.
    dev sets no `retain` (the hub's key only writes, review 2 M7): its job deletes nothing, the bucket's lifecycle
    rule bounds the folder."""
    servers = dev_config.hub.servers
    secret = find(rendered_dev, "host", "Secret", cloud_init.ETCD_S3_SECRET)
    assert secret["stringData"]["etcd-s3-retention"] == str(9 * 28) == str(k3s_snapshots.S3_RETENTION_CEILING)
    assert k3s_snapshots.s3_retention(servers) == 84 <= k3s_snapshots.S3_RETENTION_CEILING
    config = yaml.safe_load(_user_data_file(rendered_dev, cloud_init.CONFIG_PATH))
    assert config["etcd-snapshot-retention"] == 28 and config["etcd-snapshot-schedule-cron"] == "0 */6 * * *"
    job = find(rendered_dev, "host", "CronJob", "etcd-backup")
    (upload,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = upload["args"]
    assert dev_config.karmada.etcd.backup.retain is None
    assert not [a for a in args if a.startswith(("--k3s-folder", "--k3s-retain", "--retain"))], args
    backup = dev_config.karmada.etcd.backup.model_copy(update={"retain": 28})
    assert k3s_snapshots.job_bound(backup, "dev", servers) == (secret["stringData"]["etcd-s3-folder"], servers * 28)


def _user_data_file(plan: Any, path: str) -> str:
    r = plan.by_type("hcloud:index/server:Server")[0]
    doc = yaml.safe_load(unwrap(r.inputs)["userData"].split("\n", 1)[1])
    return next(f["content"] for f in doc["write_files"] if f["path"] == path)


def test_servers_enable_s3_by_the_secret_name_only(rendered_dev: Any) -> None:
    for r in rendered_dev.by_type("hcloud:index/server:Server"):
        doc = yaml.safe_load(unwrap(r.inputs)["userData"].split("\n", 1)[1])
        files = {f["path"]: f["content"] for f in doc["write_files"]}
        assert yaml.safe_load(files[cloud_init.ETCD_S3_DROPIN]) == {
            "etcd-s3": True, "etcd-s3-config-secret": cloud_init.ETCD_S3_SECRET}
        assert not any("access-key" in c or "secret-key" in c for c in files.values()), "credentials in user-data"
    find(rendered_dev, "host", "Secret", cloud_init.ETCD_S3_SECRET)


# ------------------------------------------------------------------------------------------ protect


def _protected(plan: Any) -> dict[str, bool]:
    return {r.name: bool(r.options.get("protect")) for r in plan.records}


@pytest.mark.parametrize("stack", ["prod-hub", "dev"])
def test_protect_covers_crds_the_namespace_and_the_cas(stack: str, request: pytest.FixtureRequest) -> None:
    plan = request.getfixturevalue("rendered_prod_hub" if stack == "prod-hub" else "rendered_dev")
    want = load_stack(stack).hub.protect
    protected = _protected(plan)
    cas = [r for r in plan.records if r.type == "tls:index/selfSignedCert:SelfSignedCert"]
    assert len(cas) == 8, "5 k3s CAs and 3 Karmada CAs"
    for r in cas:
        assert protected[r.name] is want, r.name
        assert protected[f"{r.name}-key"] is want, f"{r.name}-key"
    crds = [r for r in plan.records if r.type == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"]
    assert len(crds) >= 20 and all(protected[r.name] is want for r in crds)
    namespaces = {r.name: protected[r.name] for r in plan.records if r.type == "kubernetes:core/v1:Namespace"}
    control_plane = ["host-namespace-karmada-system", "karmada-namespace-karmada-system",
                     "karmada-namespace-karmada-cluster"]
    assert {n: namespaces[n] for n in control_plane} == dict.fromkeys(control_plane, want)
    leaves = [r for r in plan.records if r.type == "tls:index/locallySignedCert:LocallySignedCert"]
    assert not any(protected[r.name] for r in leaves), "leaves must stay renewable"

