"""The upgrade rehearsal on the local real fleet (issue 26 point 6): `docs/runbooks/upgrade-karmada.md`, step by step.

The dev stack is brought up at the previous Karmada minor (`upstream.build.PREVIOUS_KARMADA`, its binaries the
`karmada-prev` build, its CRDs from the Go module cache), a probe service goes out from the hub with the
`shop` tenant's Duplicated policy and a client calls it through the real resolver every second, and then the
runbook is followed: the etcd snapshot, the code-change checks of section A, the dev rollout of section B (the
harness applies the new render as `pulumi up` would: the plan's dependency order, each changed Deployment or
StatefulSet rolled as its strategy says), and every check of "Verify". After every step the version-skew guard runs
twice: the config guard (`components/operations/skew.py` over the stack being deployed, what `hubctl plan` checks)
and the live guard (`hubctl doctor`'s `check_versions` over what runs: each Karmada tag the hub's pods run against
each member's Kubernetes version and each tag the Pull member's agents run).

`previous_stack` is the dev stack as it was at the previous minor: its `karmada.version`, and nothing that minor
lacks (`versions.ADDED_IN`: its gates and the tenant options that switch them on).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components import versions
from components.config import _GATE_FEATURE, FleetConfig
from components.karmada import crds
from components.operations.skew import skew_rows
from hubctl.doctor.checks import check_versions, expect_from
from hubctl.plan import k8s_target
from hubctl.stackfile import StackConfig, read_stack
from tests.support.dnslab import query
from tests.support.kubelet.api import Api, wait_for
from tests.support.realfleet.fleet import (
    SKIPPED,
    WORKLOAD_KINDS,
    RealFleet,
    RealMocks,
    Rendered,
    _established,
    dependency_order,
    render,
)
from tests.support.tools import REPO
from upstream.build import PREVIOUS_KARMADA

TARGET = versions.KARMADA_VERSION
KARMADA_REPO = f"{versions.KARMADA_IMAGE_REGISTRY}/karmada-"


class StepFailed(RuntimeError):
    """A runbook step failed: the message names the step and carries the error text."""


# ------------------------------------------------------------------------------------------ the starting stack


def module_dir(version: str) -> Path | None:
    """github.com/karmada-io/karmada@<version> in the Go module cache (`go mod download`), or None."""
    base = os.environ.get("GOMODCACHE") or str(Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod")
    path = Path(base) / "github.com" / "karmada-io" / f"karmada@{version}"
    return path if path.is_dir() else None


def module_crds_dir(version: str) -> Path | None:
    """The release's `charts/karmada/_crds/bases` from its Go module: byte for byte the tag's files (a module zip
    holds them unchanged), so `CRD_SHA256` verifies them as it verifies the download."""
    root = module_dir(version)
    path = root / "charts" / "karmada" / "_crds" / "bases" if root else None
    return path if path is not None and path.is_dir() else None


@contextlib.contextmanager
def crds_from(directory: Path | None) -> Iterator[None]:
    """`KARMADA_HUB_CRDS_DIR` for one render: set for the previous release's, unset for the pinned one's (one
    directory serves one tag; a file of another tag there fails its digest)."""
    saved = os.environ.get(crds.CRDS_DIR_ENV)
    if directory is None:
        os.environ.pop(crds.CRDS_DIR_ENV, None)
    else:
        os.environ[crds.CRDS_DIR_ENV] = str(directory)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(crds.CRDS_DIR_ENV, None)
        else:
            os.environ[crds.CRDS_DIR_ENV] = saved


def previous_stack(stack: StackConfig, version: str = PREVIOUS_KARMADA) -> StackConfig:
    """The stack at Karmada `version`: `karmada.version` set, every gate that release lacks (`versions.ADDED_IN`)
    removed from `karmada.featureGates`, and with it the tenant option that switches it on (config's
    `_GATE_FEATURE`), and overflow groups where the release has no `overflowAffinities`."""
    config = dict(stack.config)
    karmada = json.loads(config["karmada-hub:karmada"])
    gates = karmada.get("featureGates") or []
    dropped = [g for g in gates if not versions.supports(version, g)]
    karmada["version"] = version
    karmada["featureGates"] = [g for g in gates if g not in dropped]
    config["karmada-hub:karmada"] = json.dumps(karmada)
    if "karmada-hub:tenants" in config:
        tenants = json.loads(config["karmada-hub:tenants"])
        for tenant in tenants:
            for gate in dropped:
                *path, leaf = _GATE_FEATURE[gate].split(".")  # the stack file's keys
                node = tenant
                for part in path:
                    node = node.get(part) or {}
                node.pop(leaf, None)
            if not versions.supports(version, "overflowAffinities"):
                (tenant.get("placement") or {}).pop("overflow", None)
        config["karmada-hub:tenants"] = json.dumps(tenants)
    return dataclasses.replace(stack, config=config)


def fleet_config(stack: StackConfig, name: str = "dev") -> FleetConfig:
    values, secrets = stack.project_values()
    return FleetConfig.from_mapping(values, f"stacks/Pulumi.{name}.yaml", secrets)


# ------------------------------------------------------------------------------------------ the probe


def probe_objects(domain: str) -> list[dict[str, Any]]:
    """The probe service: a `shop` Deployment, Service and Ingress (shop's policy duplicates it onto both
    members; the failover controller publishes `storefront.<domain>`)."""
    labels = {"app": "storefront"}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "storefront", "namespace": "shop"},
         "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                  "spec": {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.27",
                                           "ports": [{"containerPort": 80}],
                                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "storefront", "namespace": "shop"},
         "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 80}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
         "metadata": {"name": "storefront", "namespace": "shop", "annotations": {"karmada-hub.io/probe-path": "/"}},
         "spec": {"ingressClassName": "nginx", "rules": [{"host": f"storefront.{domain}", "http": {"paths": [
             {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "storefront",
                                                                         "port": {"number": 80}}}}]}}]}},
    ]


def client_request(resolver_ip: str, host: str) -> str | None:
    """One client request: resolve through the recursive resolver, GET through the first address. None when it
    answered 200, else what went wrong."""
    answer = query(None, None, resolver_ip, host, recursion=True, timeout=2)
    if answer is None or not answer.addresses:
        return f"no address for {host} ({answer.rcode if answer else 'no answer'})"
    conn = http.client.HTTPConnection(answer.addresses[0], 80, timeout=2)
    try:
        conn.request("GET", "/", headers={"Host": host})
        status = conn.getresponse().status
        return None if status == 200 else f"HTTP {status} from {answer.addresses[0]}"
    except OSError as exc:
        return f"{answer.addresses[0]}: {exc}"
    finally:
        conn.close()


@dataclass
class Prober:
    """A client calling the probe service every `interval` s in a thread until `stop`; every failure kept."""

    resolver_ip: str
    host: str
    interval: float = 1.0
    requests: int = 0
    failures: list[tuple[float, str, str]] = field(default_factory=list)
    """(monotonic time, step running then, what failed)."""
    step: str = ""

    def start(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="upgrade probe")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            problem = client_request(self.resolver_ip, self.host)
            self.requests += 1
            if problem is not None:
                self.failures.append((time.monotonic(), self.step, problem))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


# ------------------------------------------------------------------------------------------ the skew guard


def _tag(image: str) -> str:
    return image.rpartition(":")[2]


def running_tags(fleet: RealFleet, cluster: str, component: str | None = None) -> set[str]:
    """Karmada image tags the running pods of `cluster` run (only `component`'s, when given)."""
    tags = set()
    for pod in fleet.pods(cluster):
        for c in pod.spec.get("containers") or []:
            image = str(c.get("image", ""))
            if image.startswith(KARMADA_REPO) and (component is None or
                                                   image.startswith(f"{versions.KARMADA_IMAGE_REGISTRY}/{component}:")):
                tags.add(_tag(image))
    return tags


def skew_guard(fleet: RealFleet, config: FleetConfig) -> list[str]:
    """The guard's problems (empty: it passes). Config: every row of `skew_rows(config)`, what `hubctl plan`
    refuses. Live: `hubctl doctor`'s `check_versions` over each Karmada tag the hub runs, against each member's
    Kubernetes version as Karmada recorded it and each tag a Pull member's agents run (the Deployment's and its
    running pods', which differ while it rolls)."""
    problems = [f"config: {r.component} {r.version}: {r.status}" for r in skew_rows(config) if not r.ok]
    clusters = fleet.karmada.list("cluster.karmada.io/v1alpha1", "Cluster")
    agent_tags: dict[str, set[str]] = {}
    for member in config.members:
        if member.sync_mode != "Pull":
            continue
        deployment = fleet.member_api(member.name).get("apps/v1", "Deployment", "karmada-agent", "karmada-system")
        tags = running_tags(fleet, f"member-{member.name}", "karmada-agent")
        if deployment is not None:
            tags |= {_tag(c["image"]) for c in deployment["spec"]["template"]["spec"]["containers"]
                     if c.get("name") == "karmada-agent"}
        agent_tags[member.name] = tags
    hub_tags = running_tags(fleet, "host")
    if not hub_tags:
        problems.append("live: no Karmada pod runs on the hub")
    combos = [dict(zip(agent_tags, picks, strict=True)) for picks in _product([sorted(t) for t in agent_tags.values()])]
    for cp in sorted(hub_tags):
        expect = dataclasses.replace(expect_from(config, config.members, config.tenants), karmada_version=cp)
        for combo in combos or [{}]:
            agents = {name: {"spec": {"template": {"spec": {"containers": [
                {"name": "karmada-agent", "image": f"{KARMADA_REPO}agent:{tag}"}]}}}} for name, tag in combo.items()}
            for row in check_versions(clusters, agents, expect):
                if row.verdict:
                    problems.append(f"live (control plane {cp}): {row.subject}: {row.detail}")
    return sorted(set(problems))


def _product(lists: list[list[str]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for options in lists:
        out = [(*prefix, o) for prefix in out for o in options]
    return out


# ------------------------------------------------------------------------------------------ the rollout


@dataclass
class Change:
    target: str
    kind: str
    name: str
    action: str
    seconds: float


def _key(target: str, obj: dict[str, Any]) -> tuple[str, str, str, str, str]:
    meta = obj["metadata"]
    return (target, obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _all_objects(rendered: Rendered) -> list[tuple[Any, str, dict[str, Any]]]:
    """(record, target, object) for every object of every API server, in the plan's dependency order (pulumi up
    goes in this order; it runs independent resources at once, which the harness does one after the other)."""
    targets = sorted(t for t in rendered.targets() if t)
    by_target = {t: {r.urn: o for r, o in rendered.objects(t)} for t in targets}
    records = [r for r in rendered.plan.records if r.urn in {u for m in by_target.values() for u in m}]
    ordered = dependency_order(rendered.plan, records, hoist=False)
    out = []
    for record in ordered:
        target = k8s_target(record.provider) or ""
        out.append((record, target, by_target[target][record.urn]))
    return out


def _api_for(fleet: RealFleet, target: str) -> Api | None:
    if target == "karmada":
        return fleet.karmada
    cluster = fleet.clusters.get(target)
    if cluster is not None:
        return cluster.api
    if target.startswith("member-"):
        return fleet.member_api(target.removeprefix("member-"))
    return None


def dynamic_changes(old: Rendered, new: Rendered) -> list[str]:
    """Dynamic-provider resources whose inputs differ (pulumi would run their diff/update): named, for the report."""
    def inputs(rendered: Rendered) -> dict[str, str]:
        from hubctl.mocks import unwrap

        return {r.name: hashlib.sha256(json.dumps(unwrap(r.inputs), sort_keys=True, default=str).encode()).hexdigest()
                for r in rendered.plan.records if r.type == "pulumi-python:dynamic:Resource"}
    before, after = inputs(old), inputs(new)
    return sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))


def rollout(fleet: RealFleet, new: Rendered, after_each: Callable[[str], None],
            log: Callable[[str], None]) -> list[Change]:
    """`pulumi up` of the new render over the running fleet: every object whose inputs changed applied (server-side
    apply) in dependency order, a running Deployment or StatefulSet whose pod template changed rolled as its
    strategy says (and waited for, as pulumi-kubernetes awaits a rollout), objects gone from the plan deleted.
    `after_each(what)` runs after every rolled workload (the skew guard)."""
    assert fleet.rendered is not None
    old_objects = {_key(t, o): o for _, t, o in _all_objects(fleet.rendered)}
    new_list = _all_objects(new)
    fleet.rendered = new
    changes: list[Change] = []
    for record, target, obj in new_list:
        key = _key(target, obj)
        before = old_objects.get(key)
        if before == obj:
            continue
        api = _api_for(fleet, target)
        if api is None:
            raise StepFailed(f"no API server here for target {target} ({key})")
        fleet._await_workloads(record)
        started = time.monotonic()
        what = f"{target} {obj['kind']} {key[3]}/{key[4]}".replace(" /", " ")
        wait_for(f"apply {what}", lambda o=obj, a=api: a.apply(o), 300, 1)
        if obj["kind"] == "CustomResourceDefinition":
            wait_for(f"CRD {key[4]} Established", lambda o=obj, a=api: _established(a, o), 60, 0.5)
        action = "created" if before is None else "updated"
        cluster = fleet.clusters.get(target)
        workload = cluster.workloads.get((key[3], key[4])) if cluster and obj["kind"] in WORKLOAD_KINDS else None
        if workload is not None and (key[3], key[4]) not in SKIPPED:
            if obj["kind"] in ("Deployment", "StatefulSet") and before is not None and \
                    before["spec"]["template"] != obj["spec"]["template"]:
                log(f"rolling {what}")
                cluster.controllers.roll(workload, obj)  # type: ignore[union-attr]
                action = "rolled"
            else:
                workload.obj = obj
        elif obj["kind"] in WORKLOAD_KINDS and before is None and cluster is not None and target != "karmada":
            cluster.workloads[(key[3], key[4])] = cluster.controllers.apply(obj)
            action = "created and started"
        changes.append(Change(target, obj["kind"], f"{key[3]}/{key[4]}".lstrip("/"), action,
                              round(time.monotonic() - started, 1)))
        log(f"{action}: {what} ({changes[-1].seconds} s)")
        if action == "rolled":
            after_each(what)
    for key in sorted(set(old_objects) - {_key(t, o) for _, t, o in new_list}, reverse=True):
        target, api_version, kind, namespace, name = key
        api = _api_for(fleet, target)
        if api is not None:
            api.delete(api_version, kind, name, namespace or None)
        cluster = fleet.clusters.get(target)
        workload = cluster.workloads.pop((namespace, name), None) if cluster else None
        for pod in workload.pods if workload else []:
            fleet.kubelet.stop(pod, 5)
        changes.append(Change(target, kind, f"{namespace}/{name}".lstrip("/"), "deleted", 0.0))
        log(f"deleted: {target} {kind} {namespace}/{name}")
    return changes


# ------------------------------------------------------------------------------------------ the rehearsal


@dataclass
class Step:
    ref: str
    """The runbook's name for it (`Before you start`, `A.2`, `B.6`, `Verify`)."""
    title: str
    ok: bool | None = None
    """None: not run (and why is in `detail`)."""
    detail: str = ""
    seconds: float = 0.0
    guard: list[str] = field(default_factory=list)
    """The skew guard's problems after the step (empty: passed)."""


@dataclass
class Rehearsal:
    fleet: RealFleet
    log: Callable[[str], None]
    workdir: Path
    steps: list[Step] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    probe: Prober | None = None
    config: FleetConfig | None = None
    guard_runs: list[tuple[str, list[str]]] = field(default_factory=list)

    def guard(self, where: str) -> list[str]:
        assert self.config is not None
        problems = skew_guard(self.fleet, self.config)
        self.guard_runs.append((where, problems))
        self.log(f"skew guard after {where}: {'pass' if not problems else '; '.join(problems)}")
        return problems

    def step(self, ref: str, title: str, run: Callable[[], str], guard: bool = True, fatal: bool = False) -> Step:
        """Run one step and the guard after it. A failed step is recorded and the rehearsal goes on (so one report
        says every step's result), except a `fatal` one, after which nothing else can run."""
        step = Step(ref, title)
        if self.probe is not None:
            self.probe.step = f"{ref} {title}"
        self.log(f"==> {ref}: {title}")
        started = time.monotonic()
        try:
            step.detail = run()
            step.ok = True
        except Exception as exc:  # reported with its text, then raised
            step.ok, step.detail = False, f"{type(exc).__name__}: {exc}"
        step.seconds = round(time.monotonic() - started, 1)
        if guard and self.fleet.rendered is not None and step.ok is not False:
            try:
                step.guard = self.guard(f"{ref} {title}")
            except Exception as exc:
                step.guard = [f"the guard could not run: {type(exc).__name__}: {exc}"]
        self.steps.append(step)
        self.log(f"    {ref}: {'ok' if step.ok else 'FAILED'} ({step.seconds} s) {step.detail[:400]}")
        if step.ok is False and fatal:
            raise StepFailed(f"{ref} ({title}) failed: {step.detail}")
        return step

    @property
    def passed(self) -> bool:
        """Every rehearsed step passed, the guard passed every time it ran, and no client request failed."""
        return (all(s.ok is not False for s in self.steps) and all(not p for _, p in self.guard_runs)
                and self.probe is not None and not self.probe.failures)

    def skip(self, ref: str, title: str, why: str) -> None:
        self.steps.append(Step(ref, title, None, why))
        self.log(f"==> {ref}: {title}: not rehearsed ({why})")

    # -------------------------------------------------------------------------------------- steps

    def start(self) -> str:
        """Dev at the previous minor, the traffic path, the probe service served, the client calling it."""
        fleet = self.fleet
        self.config = fleet_config(previous_stack(read_stack(REPO, "dev")))
        fleet.stack_edit = previous_stack
        directory = module_crds_dir(PREVIOUS_KARMADA)
        if directory is None:
            raise StepFailed(f"karmada {PREVIOUS_KARMADA} is not in the Go module cache: its CRDs come from there "
                             f"(go mod download github.com/karmada-io/karmada@{PREVIOUS_KARMADA})")
        with crds_from(directory):
            fleet.up()
        fleet.start_traffic()
        assert fleet.config is not None and fleet.config.dns is not None
        host = f"storefront.{fleet.config.dns.domain}"
        for obj in probe_objects(fleet.config.dns.domain):
            fleet.karmada.apply(obj)
        wait_for(f"{host} answering through the resolver", lambda: client_request(fleet.resolver_ip, host) is None,
                 300, 2)
        self.probe = Prober(fleet.resolver_ip, host)
        self.probe.start()
        tags = sorted(running_tags(fleet, "host"))
        if tags != [PREVIOUS_KARMADA]:
            raise StepFailed(f"the hub runs Karmada {tags}, not {PREVIOUS_KARMADA}")
        return f"hub on Karmada {', '.join(tags)}; {host} answering"

    def snapshot(self) -> str:
        """restore-etcd.md A.1-2 from etcd-0's own namespace (what `kubectl port-forward pod/etcd-0` reaches)."""
        import base64

        from upstream.build import binary

        fleet = self.fleet
        host = fleet.clusters["host"]
        secret = host.api.get("v1", "Secret", "karmada-apiserver-pki", "karmada-system")
        if secret is None:
            raise StepFailed("the host has no Secret karmada-system/karmada-apiserver-pki")
        backup = self.workdir / "etcd-backup"
        backup.mkdir(mode=0o700, parents=True, exist_ok=True)
        for k in ("etcd-ca.crt", "apiserver-etcd-client.crt", "apiserver-etcd-client.key"):
            path = backup / k
            path.touch(mode=0o600)
            path.write_bytes(base64.b64decode(secret["data"][k]))
        etcdctl = binary("etcdctl")
        if etcdctl is None:
            raise StepFailed("etcdctl is not built (make upstream)")
        pod = fleet.workload("host", "karmada-system", "etcd").pods[0]
        base = [str(etcdctl), "--endpoints=https://127.0.0.1:2379", f"--cacert={backup / 'etcd-ca.crt'}",
                f"--cert={backup / 'apiserver-etcd-client.crt'}", f"--key={backup / 'apiserver-etcd-client.key'}"]
        status = subprocess.run(fleet.network.exec_argv(pod.netns.name, [*base, "endpoint", "status", "-w", "table"]),
                                capture_output=True, text=True, timeout=60, check=False)
        if status.returncode != 0:
            raise StepFailed(f"etcdctl endpoint status: {status.stderr.strip()[-500:]}")
        snap = backup / f"karmada-etcd-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.db"
        saved = subprocess.run(fleet.network.exec_argv(pod.netns.name, [*base, "snapshot", "save", str(snap)]),
                               capture_output=True, text=True, timeout=120, check=False)
        if saved.returncode != 0 or not snap.is_file():
            raise StepFailed(f"etcdctl snapshot save: {(saved.stderr or saved.stdout).strip()[-500:]}")
        (backup / "apiserver-etcd-client.key").unlink()
        digest = hashlib.sha256(snap.read_bytes()).hexdigest()
        return f"{snap.name}: {snap.stat().st_size} bytes, sha256 {digest[:16]}… (etcdutl status: not built here)"

    def release_row(self) -> str:
        """A.1: the target's row says what the release's own installers say."""
        root = module_dir(TARGET)
        if root is None:
            raise StepFailed(f"karmada {TARGET} is not in the Go module cache "
                             f"(go mod download github.com/karmada-io/karmada@{TARGET})")
        import re

        constants = (root / "operator" / "pkg" / "constants" / "constants.go").read_text()
        kube = re.search(r'KubeDefaultVersion\s*=\s*"([^"]+)"', constants)
        etcd = re.search(r'EtcdDefaultVersion\s*=\s*"([^"]+)"', constants)
        row = versions.release(TARGET)
        if versions.KARMADA_VERSION != TARGET:
            raise StepFailed(f"KARMADA_VERSION is {versions.KARMADA_VERSION}, not {TARGET}")
        if etcd is None or etcd.group(1) != row.etcd:
            raise StepFailed(f"RELEASES[{TARGET}].etcd is {row.etcd}, upstream's operator says "
                             f"{etcd.group(1) if etcd else '?'}")
        if kube is None or versions.minor_of(kube.group(1)) != versions.minor_of(row.kube_apiserver):
            raise StepFailed(f"RELEASES[{TARGET}].kube_apiserver is {row.kube_apiserver}, upstream's operator says "
                             f"{kube.group(1) if kube else '?'}")
        return (f"RELEASES[{TARGET}]: kube {row.kube_apiserver} (upstream default {kube.group(1)}; the nearest patch "
                f"the proxy serves), etcd {row.etcd}, members {'..'.join(row.member_kubernetes)}")

    def crd_digests(self) -> str:
        """A.2: CRD_SHA256[target] lists exactly the release's files with their digests (from the Go module, not
        from github.com, which this machine cannot reach)."""
        directory = module_crds_dir(TARGET)
        if directory is None:
            raise StepFailed(f"karmada {TARGET} is not in the Go module cache")
        files = {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in directory.rglob("*.yaml")}
        recorded = crds.CRD_SHA256[TARGET]
        if files != recorded:
            diff = sorted(set(files.items()) ^ set(recorded.items()))
            raise StepFailed(f"CRD_SHA256[{TARGET}] differs from the release's files: {diff[:4]}")
        changed = sorted(r for r in recorded if crds.CRD_SHA256[PREVIOUS_KARMADA].get(r) != recorded[r])
        return f"{len(files)} files match; changed since {PREVIOUS_KARMADA}: {', '.join(changed) or 'none'}"

    def stacks_pin(self) -> str:
        """A.4: the stacks that pin `karmada.version` pin the target."""
        out = []
        for name in ("dev", "prod-hub"):
            karmada = json.loads(read_stack(REPO, name).config.get("karmada-hub:karmada", "{}"))
            if karmada.get("version") != TARGET:
                raise StepFailed(f"stacks/Pulumi.{name}.yaml pins karmada.version {karmada.get('version')}")
            out.append(f"{name} {TARGET}")
        return ", ".join(out)

    def offline_plan(self) -> str:
        """A.5: `hubctl plan dev --policy` (exit 0) and its skew table, every row ok."""
        env = {k: v for k, v in os.environ.items() if k != crds.CRDS_DIR_ENV}
        out = self.workdir / "plan"
        res = subprocess.run([_python(), "-m", "hubctl", "plan", "dev", "--policy", "--out", str(out)], cwd=REPO,
                             capture_output=True, text=True, timeout=900, check=False, env=env)
        if res.returncode != 0:
            raise StepFailed(f"hubctl plan dev --policy exited {res.returncode}: "
                             f"{(res.stderr or res.stdout).strip()[-800:]}")
        skew = subprocess.run([_python(), "-m", "hubctl", "skew", "dev"], cwd=REPO, capture_output=True, text=True,
                              timeout=300, check=False, env=env)
        if skew.returncode != 0:
            raise StepFailed(f"hubctl skew dev exited {skew.returncode}: {skew.stdout.strip()[-800:]}")
        return f"plan and policy clean; skew: {skew.stdout.strip().splitlines()[-1]}"

    def rollout_dev(self) -> str:
        """B.6: `hubctl rollout dev`, i.e. `pulumi up` of dev at the target, as the harness applies it."""
        fleet = self.fleet
        stack = fleet._with_cluster_ids(fleet._with_capi(read_stack(REPO, "dev")))
        assert fleet.capi is not None
        with crds_from(None):
            new = render(stack, RealMocks(fleet.capi.api, fleet._member_apis(), read_tokens=True))
        assert fleet.rendered is not None
        dynamic = dynamic_changes(fleet.rendered, new)
        self.config = fleet_config(read_stack(REPO, "dev"))
        fleet.config = self.config

        def guard(what: str) -> None:
            self.guard(f"B.6 rolled {what}")  # recorded; the rollout goes on as pulumi up would

        self.changes = rollout(fleet, new, guard, self.log)
        rolled = [c for c in self.changes if c.action == "rolled"]
        return (f"{len(self.changes)} objects changed, {len(rolled)} workloads rolled "
                f"({', '.join(c.name for c in rolled)}); dynamic resources with new inputs: "
                f"{', '.join(dynamic) or 'none'}")

    def verify(self) -> str:
        """The runbook's "Verify" block, each command's question asked of the live fleet."""
        fleet = self.fleet
        notes = []
        stale = []
        for (namespace, _), workload in fleet.clusters["host"].workloads.items():
            for pod in workload.pods:
                for c in pod.spec.get("containers") or []:
                    image = str(c.get("image", ""))
                    if image.startswith(KARMADA_REPO) and _tag(image) != TARGET:
                        stale.append(f"{namespace}/{pod.name} {image}")
                if workload.kind in ("Deployment", "StatefulSet") and not pod.ready:
                    stale.append(f"{namespace}/{pod.name} not Ready")
        if stale:
            raise StepFailed(f"kubectl get deploy,statefulset: {'; '.join(stale)}")
        notes.append(f"every Karmada pod on the hub runs {TARGET} and is Ready")
        service = fleet.karmada.get("apiregistration.k8s.io/v1", "APIService", "v1alpha1.cluster.karmada.io")
        available = {c["type"]: c["status"] for c in ((service or {}).get("status") or {}).get("conditions") or []}
        if available.get("Available") != "True":
            raise StepFailed(f"APIService v1alpha1.cluster.karmada.io Available={available.get('Available')}")
        notes.append("APIService Available")

        def ready_clusters() -> bool:
            clusters = fleet.karmada.list("cluster.karmada.io/v1alpha1", "Cluster")
            return bool(clusters) and all(any(c["type"] == "Ready" and c["status"] == "True" for c in
                                              (cl.get("status") or {}).get("conditions") or []) for cl in clusters)
        wait_for("every member Ready", ready_clusters, 120, 2)
        notes.append("every Cluster Ready")
        leases = fleet.karmada.list("coordination.k8s.io/v1", "Lease", "karmada-system")
        now = time.time()
        old = []
        import datetime as dt
        for lease in leases:
            spec = lease.get("spec") or {}
            renew = spec.get("renewTime")
            if not renew:
                continue
            age = now - dt.datetime.fromisoformat(renew.replace("Z", "+00:00")).timestamp()
            if age > 3 * int(spec.get("leaseDurationSeconds") or 15):
                old.append(f"{lease['metadata']['name']} ({age:.0f} s)")
        if old:
            raise StepFailed(f"leases not renewing: {', '.join(old)}")
        notes.append(f"{len(leases)} leases renewing")
        crd = fleet.karmada.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                "resourcebindings.work.karmada.io")
        served = [v["name"] for v in (crd or {}).get("spec", {}).get("versions") or []]
        notes.append(f"resourcebindings versions {' '.join(served)}")
        for member in fleet.config.members if fleet.config else []:
            if member.sync_mode != "Pull":
                continue
            agent = fleet.member_api(member.name).get("apps/v1", "Deployment", "karmada-agent", "karmada-system")
            image = (agent or {})["spec"]["template"]["spec"]["containers"][0]["image"]
            tags = running_tags(fleet, f"member-{member.name}", "karmada-agent")
            if _tag(image) != TARGET or tags != {TARGET}:
                raise StepFailed(f"karmada-agent on {member.name}: Deployment {image}, pods {sorted(tags)}")
            notes.append(f"karmada-agent on {member.name} {TARGET}")
        from components.operations.budget import failover_budget, format_budget

        before = format_budget(failover_budget(fleet_config(previous_stack(read_stack(REPO, "dev")))))
        after = format_budget(failover_budget(fleet_config(read_stack(REPO, "dev"))))
        if before != after:
            raise StepFailed("hubctl budget dev changed across the upgrade")
        notes.append("hubctl budget dev unchanged")
        return "; ".join(notes)

    def run(self) -> None:
        self.step("Start", f"dev on Karmada {PREVIOUS_KARMADA}, the probe service answering", self.start,
                  fatal=True)
        self.step("Before you start", "etcd snapshot (restore-etcd.md A.1-2)", self.snapshot)
        self.step("A.1", f"RELEASES row for {TARGET}", self.release_row)
        self.step("A.2", f"CRD digests for {TARGET}", self.crd_digests)
        self.skip("A.3", "flags, gates, webhook rules, RBAC, join objects re-checked",
                  "covered by tests/contract (test_real_flags: every rendered command line on its real binary) and "
                  f"by B.6 itself: a flag or gate {TARGET} lacks makes its binary exit and the roll fail")
        self.step("A.4", "stacks pin the new tag", self.stacks_pin)
        self.step("A.5", "offline check: hubctl plan dev --policy, skew table", self.offline_plan)
        self.step("B.6", f"dev rollout to {TARGET}", self.rollout_dev, fatal=True)
        self.step("Verify", "the runbook's checks", self.verify)
        self.skip("B.7", "prod-hub", "the local real fleet is the dev stack (all-in-one)")
        self.skip("B.8", "region waves", "the local real fleet is the dev stack (all-in-one)")

    def report(self) -> dict[str, Any]:
        probe = self.probe
        return {
            "from": PREVIOUS_KARMADA, "to": TARGET, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "steps": [dataclasses.asdict(s) for s in self.steps],
            "changes": [dataclasses.asdict(c) for c in self.changes],
            "guard": [{"after": w, "problems": p} for w, p in self.guard_runs],
            "passed": self.passed,
            "probe": {"requests": probe.requests if probe else 0,
                      "failures": [{"step": s, "error": e} for _, s, e in (probe.failures if probe else [])]},
            "fleet_timings": self.fleet.timings,
        }


def _python() -> str:
    import sys

    return sys.executable


def rehearse(fleet: Any, out: Path) -> dict[str, Any]:
    """The whole rehearsal on a fleet not yet up: its report, with `failed` the step that stopped it (or None)."""
    failed = None
    rehearsal = Rehearsal(fleet, fleet.log, out)
    try:
        rehearsal.run()
    except StepFailed as err:
        failed = str(err)
    finally:
        if rehearsal.probe is not None:
            rehearsal.probe.stop()
    report = rehearsal.report()
    report["failed"] = failed
    return report


def markdown(report: dict[str, Any]) -> str:
    """The rehearsal as a table: each runbook step, its result, the guard after it; then the probe's count."""
    lines = [f"Karmada {report['from']} -> {report['to']}, {report['date']}: "
             f"{'passed' if report.get('passed') else 'FAILED'}", "",
             "| step | what | result | seconds | skew guard after |", "|---|---|---|---:|---|"]
    for s in report["steps"]:
        result = "not rehearsed" if s["ok"] is None else ("pass" if s["ok"] else "FAIL")
        guard = "-" if s["ok"] is not True else ("pass" if not s["guard"] else "FAIL: " + "; ".join(s["guard"]))
        detail = s["detail"].replace("|", "/").replace("\n", " ")
        lines.append(f"| {s['ref']} | {s['title']} | {result}: {detail} | {s['seconds']} | {guard} |")
    probe = report["probe"]
    lines += ["", f"Probe service: {probe['requests']} requests, {len(probe['failures'])} failed.", ""]
    for f in probe["failures"][:20]:
        lines.append(f"- during {f['step']}: {f['error']}")
    during = [g for g in report["guard"] if g["after"].startswith("B.6 rolled")]
    bad = [g for g in report["guard"] if g["problems"]]
    lines += [f"Skew guard: {len(report['guard'])} runs ({len(during)} during the rollout, one after each rolled "
              f"workload), {len(bad)} failed."]
    for g in bad[:10]:
        lines.append(f"- after {g['after']}: {'; '.join(g['problems'])}")
    rolled = [c for c in report["changes"] if c["action"] == "rolled"]
    if rolled:
        lines += ["", "Rolled, in order: " + ", ".join(f"{c['target']} {c['name']} ({c['seconds']} s)"
                                                      for c in rolled) + "."]
    return "\n".join(lines) + "\n"
