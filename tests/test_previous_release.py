"""The previous Karmada minor as a RELEASES row (the upgrade rehearsal's starting point, issue 26 point 6).

Upstream facts are read from karmada-io/karmada@<tag> in the Go module cache (`go mod download`); without it these
tests skip with one reason (KARMADA_HUB_REQUIRE_TOOLS=1 makes that a failure). Supporting the previous release must
not change what the pinned stacks render: tests/test_plan.py and the golden plans cover that.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import types
from pathlib import Path
from typing import Any

import pytest

from components import versions
from components.config import ConfigError, FleetConfig
from components.karmada import crds
from components.operations import k3s_upgrade_docs
from components.traffic import dnsendpoint_crd
from hubctl.mocks import unwrap
from hubctl.stackfile import read_stack
from tests.support.kubelet import workloads
from tests.support.kubelet.images import ImageError, ImageTable
from tests.support.realfleet.upgrade import crds_from, fleet_config, module_crds_dir, module_dir, previous_stack
from tests.support.tools import REPO, require_tool
from upstream import build

PREVIOUS = build.PREVIOUS_KARMADA


def _module(version: str) -> Path:
    root = module_dir(version)
    if root is None:
        require_tool(f"github.com/karmada-io/karmada@{version} (Go module cache)",
                     f"go mod download github.com/karmada-io/karmada@{version}")
    assert root is not None
    return root


def test_the_previous_release_is_a_row_of_the_matrix() -> None:
    assert PREVIOUS in versions.RELEASES
    assert versions.minor_of(PREVIOUS)[1] == versions.minor_of(versions.KARMADA_VERSION)[1] - 1


def test_its_row_says_what_its_installers_say() -> None:
    root = _module(PREVIOUS)
    row = versions.release(PREVIOUS)
    constants = (root / "operator" / "pkg" / "constants" / "constants.go").read_text()
    kube = re.search(r'KubeDefaultVersion\s*=\s*"([^"]+)"', constants)
    etcd = re.search(r'EtcdDefaultVersion\s*=\s*"([^"]+)"', constants)
    values = (root / "charts" / "karmada" / "values.yaml").read_text()
    assert etcd and etcd.group(1) == row.etcd and f'tag: "{row.etcd}"' in values
    # the image tag is the nearest patch of the same minor the Go module proxy serves (versions.py says why)
    assert kube and versions.minor_of(kube.group(1)) == versions.minor_of(row.kube_apiserver)
    assert f'tag: "{kube.group(1)}"' in values
    # README "Kubernetes compatibility" at the tag: its own row is the one named HEAD (master)
    readme = (root / "README.md").read_text()
    header = next(line for line in readme.splitlines() if line.startswith("|") and "Kubernetes 1." in line)
    head = next(line for line in readme.splitlines() if line.startswith("| Karmada HEAD"))
    columns = [c.strip() for c in header.split("|")[2:-1]]
    ticked = [col.removeprefix("Kubernetes ") for col, cell in zip(columns, head.split("|")[2:-1], strict=True)
              if "✓" in cell]
    lo, hi = min(ticked, key=lambda v: int(v.split(".")[1])), max(ticked, key=lambda v: int(v.split(".")[1]))
    assert row.member_kubernetes == (f"v{lo}", f"v{hi}") == row.hub_kubernetes


def test_its_crd_digests_are_the_release_files() -> None:
    _module(PREVIOUS)
    directory = module_crds_dir(PREVIOUS)
    assert directory is not None
    files = {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in directory.rglob("*.yaml")}
    assert files == crds.CRD_SHA256[PREVIOUS]


def test_gates_added_since_are_the_ones_the_previous_release_lacks() -> None:
    """ADDED_IN names exactly the gates v1.18.2 defines and the previous release does not."""
    def gates(version: str) -> set[str]:
        text = (_module(version) / "pkg" / "features" / "features.go").read_text()
        return set(re.findall(r'featuregate\.Feature = "(\w+)"', text))

    added = gates(versions.KARMADA_VERSION) - gates(PREVIOUS)
    assert added == {g for g, since in versions.ADDED_IN.items() if g[0].isupper()
                     and versions.minor_of(since) > versions.minor_of(PREVIOUS)}


def _dev_values() -> tuple[dict[str, Any], dict[str, Any]]:
    values, secrets = read_stack(REPO, "dev").project_values()
    return copy.deepcopy(values), secrets


def test_a_gate_the_release_lacks_is_refused_in_one_line() -> None:
    """dev at the previous release with a gate only the pinned one has: its scheduler and estimators would exit
    with "unrecognized feature gate"; the config says so before anything renders."""
    values, secrets = _dev_values()
    values["karmada"]["version"] = PREVIOUS
    assert "SchedulingOvercommitProtection" in values["karmada"]["featureGates"]
    with pytest.raises(ConfigError) as err:
        FleetConfig.from_mapping(values, "stacks/Pulumi.dev.yaml", secrets)
    line = str(err.value)
    assert "\n" not in line.strip()
    assert "SchedulingOvercommitProtection needs Karmada v1.18 or newer" in line and PREVIOUS in line


def test_overflow_groups_are_refused_on_the_previous_release() -> None:
    assert not versions.supports(PREVIOUS, "overflowAffinities")
    assert versions.supports(versions.KARMADA_VERSION, "overflowAffinities")
    assert versions.supports(PREVIOUS, "Failover")  # anything not listed is in every release


def test_the_previous_stack_is_dev_without_what_the_release_lacks() -> None:
    stack = read_stack(REPO, "dev")
    old = previous_stack(stack)
    config = fleet_config(old)
    assert config.karmada.version == PREVIOUS
    assert "SchedulingOvercommitProtection" not in config.karmada.feature_gates
    assert not any(t.placement.overcommit_protection for t in config.tenants)
    # nothing else changed
    new = fleet_config(stack)
    assert {t.name for t in config.tenants} == {t.name for t in new.tenants}
    assert set(new.karmada.feature_gates) - set(config.karmada.feature_gates) == {"SchedulingOvercommitProtection"}
    assert json.loads(old.config["karmada-hub:members"]) == json.loads(stack.config["karmada-hub:members"])


def _karmada_containers(plan: Any) -> list[dict[str, Any]]:
    """Every container (or container-shaped object) of the plan's Kubernetes objects running a Karmada image."""
    prefix = f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-"
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("image"), str) and node["image"].startswith(prefix):
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for record in plan.records:
        if record.type.startswith("kubernetes:"):
            walk(unwrap(record.inputs))
    return found


def _args(container: dict[str, Any]) -> list[str]:
    return [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]


def test_the_previous_release_renders_only_its_own_images_and_gates() -> None:
    """dev rendered at the previous release (its CRDs from the module): every Karmada image at that tag (the
    dashboard at the release built for it), and every --feature-gates name one that release defines."""
    from hubctl.plan import run_program

    root = _module(PREVIOUS)
    known = set(re.findall(r'featuregate\.Feature = "(\w+)"', (root / "pkg/features/features.go").read_text()))
    with crds_from(module_crds_dir(PREVIOUS)):
        plan = run_program(REPO, previous_stack(read_stack(REPO, "dev")))
    images: set[str] = set()
    gates: set[str] = set()
    for container in _karmada_containers(plan):
        images.add(container["image"])
        for arg in _args(container):
            if arg.startswith("--feature-gates="):
                gates.update(g.split("=")[0] for g in arg.split("=", 1)[1].split(","))
    dashboard = versions.release(PREVIOUS).dashboard
    assert images and {i.rpartition(":")[2] for i in images if "dashboard" not in i} == {PREVIOUS}
    assert {i.rpartition(":")[2] for i in images if "dashboard" in i} <= {dashboard}
    assert gates and gates <= known, gates - known


def test_every_rendered_flag_is_one_the_previous_binaries_list() -> None:
    """Each Karmada container of dev at the previous release names only flags its binary at that release lists in
    `--help` (a removed or newer flag makes it exit with "unknown flag"); needs `make upstream`'s karmada-prev set."""
    import subprocess

    from hubctl.plan import run_program

    _module(PREVIOUS)
    with crds_from(module_crds_dir(PREVIOUS)):
        plan = run_program(REPO, previous_stack(read_stack(REPO, "dev")))
    rendered: dict[str, set[str]] = {}
    for container in _karmada_containers(plan):
        if "dashboard" not in container["image"]:
            name = container["image"].rpartition(":")[0].rpartition("/")[2]
            rendered.setdefault(name, set()).update(a[2:].split("=", 1)[0] for a in _args(container)
                                                    if a.startswith("--"))
    assert set(rendered) >= {"karmada-controller-manager", "karmada-scheduler", "karmada-agent", "karmada-webhook"}
    unknown = {}
    for name, flags in sorted(rendered.items()):
        path = build.binary(name, PREVIOUS)
        if path is None:
            require_tool(f"{name} {PREVIOUS}", "python -m upstream.build --only karmada-prev")
        assert path is not None
        out = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=60, check=False)
        listed = set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9_-]*)", out.stdout + out.stderr, re.M))
        assert len(listed) > 20, (name, out.stderr[-300:])
        if flags - listed:
            unknown[name] = sorted(flags - listed)
    assert not unknown, unknown


def test_a_karmada_crds_dir_elsewhere_keeps_the_other_upstream_crds(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """KARMADA_HUB_CRDS_DIR naming another tag's files (outside the workspace) must not hide the workspace's
    other upstream CRDs (system-upgrade-controller's Plan, external-dns's DNSEndpoint) from the offline plan."""
    if crds.workspace_crds_dir() is None:
        require_tool("the workspace's shared/karmada/crds", "the workspace copy beside the checkout")
    monkeypatch.setenv(crds.CRDS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv("KARMADA_HUB_NO_DOWNLOAD", "1")
    monkeypatch.delenv(k3s_upgrade_docs.CRDS_DIR_ENV, raising=False)
    monkeypatch.delenv(dnsendpoint_crd.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert k3s_upgrade_docs.plan_crd()["kind"] == "CustomResourceDefinition"
    assert dnsendpoint_crd.fetch()


# ------------------------------------------------------------------------------------------ the binaries


def test_the_previous_karmada_set_is_built_by_make_upstream_beside_the_pinned_one() -> None:
    prev = build.previous_karmada_set()
    assert prev.version == PREVIOUS and prev.wrapper == "karmada-prev"
    build.check_wrapper(prev)  # upstream/karmada-prev/go.mod pins it
    assert prev.name not in {s.name for s in build.binary_sets()}
    assert build.main(["--list", "--only", "karmada-prev"]) in (0, 1)  # a set `--only` knows
    karmada = next(s for s in build.binary_sets() if s.name == "karmada")
    assert {f for _, f in prev.binaries} == {f for _, f in karmada.binaries}
    assert prev.tags == karmada.tags
    assert f"-X github.com/karmada-io/karmada/pkg/version.gitVersion={PREVIOUS}" in prev.ldflags


def test_a_previous_karmada_image_runs_the_previous_build_or_says_how_to_build_it() -> None:
    table = ImageTable.default()
    image = f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-agent:{PREVIOUS}"
    path = build.binary("karmada-agent", PREVIOUS)
    if path is None:
        with pytest.raises(ImageError, match=r"karmada-agent v1\.17\.1 is not built: run `python -m upstream.build "
                                             r"--only karmada-prev`"):
            table.resolve(image, ["/bin/karmada-agent", "--v=4"])
    else:
        assert table.resolve(image, ["/bin/karmada-agent", "--v=4"]) == [str(path), "--v=4"]
        assert path.parent.name.startswith(f"karmada-prev-{PREVIOUS}-")
    with pytest.raises(ImageError, match=r"built at v1\.18\.2 or v1\.17\.1, not v1\.16\.0"):
        table.resolve(f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-agent:v1.16.0", ["/bin/karmada-agent"])
    with pytest.raises(KeyError):
        build.binary("karmada-agent", "v1.16.0")


# ------------------------------------------------------------------------------------------ rolling


class _FakeKubelet:
    """Records what the controllers start and stop; every pod is Ready at once."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.network = None

    def run(self, cluster: Any, obj: dict[str, Any], **_: Any) -> Any:
        name = obj["metadata"]["name"]
        self.events.append(f"start {obj['spec']['containers'][0]['image']}")
        return types.SimpleNamespace(name=name, namespace="ns", ready=True, phase="Running", node_name="",
                                     obj=obj)

    def stop(self, pod: Any, grace: float | None = None) -> None:
        self.events.append(f"stop {pod.obj['spec']['containers'][0]['image']} {pod.name.rsplit('-', 1)[-1]}")


def _deployment(image: str, strategy: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "b"}},
                                         "spec": {"containers": [{"name": "c", "image": image}]}}}
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(("strategy", "first"), [
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}, "stop"),
    (None, "start"),  # the API's default: 25 % surge
])
def test_a_roll_follows_the_deployment_strategy(tmp_path: Path, strategy: dict[str, Any] | None, first: str) -> None:
    """The hub's Deployments say maxSurge 0 (required anti-affinity leaves no server for a surge pod): an old pod
    goes before its replacement starts, and the other keeps serving; with a surge the new pod comes first."""
    kubelet = _FakeKubelet()
    controllers = workloads.Controllers(kubelet, types.SimpleNamespace(name="c"), tmp_path)  # type: ignore[arg-type]
    workload = controllers.apply(_deployment("old", strategy))
    kubelet.events.clear()
    controllers.roll(workload, _deployment("new", strategy))
    kinds = [e.split()[0] for e in kubelet.events]
    assert kinds == ([first, "start" if first == "stop" else "stop"] * 2)
    assert all(p.obj["spec"]["containers"][0]["image"] == "new" for p in workload.pods)


def test_a_statefulset_rolls_from_the_highest_ordinal(tmp_path: Path) -> None:
    kubelet = _FakeKubelet()
    controllers = workloads.Controllers(kubelet, types.SimpleNamespace(name="c"), tmp_path,  # type: ignore[arg-type]
                                        netns_for=lambda key: types.SimpleNamespace(name=key))  # type: ignore
    obj = _deployment("old", None) | {"kind": "StatefulSet"}
    obj["metadata"] = {"name": "etcd", "namespace": "ns"}
    obj["spec"] = {**obj["spec"], "replicas": 3, "serviceName": "etcd"}
    workload = controllers.apply(obj)
    kubelet.events.clear()
    new = copy.deepcopy(obj)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "new"
    controllers.roll(workload, new)
    assert [e for e in kubelet.events if e.startswith("stop")] == ["stop old 2", "stop old 1", "stop old 0"]



def test_the_test_support_finds_the_other_upstream_crds_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real fleet's third-party CRDs (Prometheus Operator's) while KARMADA_HUB_CRDS_DIR names the previous
    release's files in the Go module cache (the rehearsal's bring-up)."""
    from tests.support import schemas

    if crds.workspace_crds_dir() is None:
        require_tool("the workspace's shared/karmada/crds", "the workspace copy beside the checkout")
    monkeypatch.setenv(crds.CRDS_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(schemas.UPSTREAM_CRDS_ENV, raising=False)
    assert (schemas.upstream_crds_dir() / "prometheus-operator" / "monitoring.coreos.com_podmonitors.yaml").is_file()


class _FakeFleet:
    """What the skew guard reads of a fleet: Clusters, the Pull agent's Deployment, the running pods' images."""

    def __init__(self, hub: list[str], agent_deployment: str, agent_pods: list[str]) -> None:
        repo = f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-"
        self._pods = {"host": [f"{repo}controller-manager:{t}" for t in hub],
                      "member-dev-hel1-a": [f"{repo}agent:{t}" for t in agent_pods]}
        self._agent = f"{repo}agent:{agent_deployment}"
        clusters = [{"metadata": {"name": n}, "status": {"kubernetesVersion": "v1.35.4"}}
                    for n in ("dev-fsn1-a", "dev-hel1-a")]
        self.karmada = types.SimpleNamespace(list=lambda *a, **k: clusters)

    def member_api(self, name: str) -> Any:
        deployment = {"spec": {"template": {"spec": {"containers": [{"name": "karmada-agent", "image": self._agent}]}}}}
        return types.SimpleNamespace(get=lambda *a, **k: deployment if name == "dev-hel1-a" else None)

    def pods(self, cluster: str) -> list[Any]:
        return [types.SimpleNamespace(spec={"containers": [{"image": i}]}) for i in self._pods.get(cluster, [])]


@pytest.mark.parametrize(("hub", "deployment", "pods", "ok"), [
    ([PREVIOUS], PREVIOUS, [PREVIOUS], True),                                   # before
    ([PREVIOUS, versions.KARMADA_VERSION], PREVIOUS, [PREVIOUS], True),         # the control plane rolling
    ([versions.KARMADA_VERSION], versions.KARMADA_VERSION, [PREVIOUS, versions.KARMADA_VERSION], True),  # agent rolling
    ([PREVIOUS, versions.KARMADA_VERSION], versions.KARMADA_VERSION, [versions.KARMADA_VERSION], False),  # agent first
    ([versions.KARMADA_VERSION], "v1.16.0", ["v1.16.0"], False),                # two minors behind
])
def test_the_live_skew_guard(hub: list[str], deployment: str, pods: list[str], ok: bool) -> None:
    """An agent may trail the control plane by one minor and never lead any part of it, while either rolls."""
    from tests.support.realfleet.upgrade import skew_guard

    config = fleet_config(read_stack(REPO, "dev"))
    problems = skew_guard(_FakeFleet(hub, deployment, pods), config)  # type: ignore[arg-type]
    assert (not problems) == ok, problems
