"""`hubctl plan`: run the real program under the SDK's mock runtime and write what it would create.

There is no second code path: `__main__.py` runs exactly as under `pulumi up`, with the engine
replaced by a recording mock monitor (`RecordingMonitor`) and provider-computed values produced by
`hubctl.mocks.PlanMocks`. The result is written to `build/plan/<stack>/`:

- `plan.json`: every resource (urn, type, name, parent, provider, dependencies, inputs, options) and
  the stack outputs, sorted, with every secret as `[secret]`;
- `manifests/<target>.yaml`: every Kubernetes object per API server (`host`, `karmada`, `member-<n>`);
- `cloud-init/<server>.yaml`: each server's user-data with secret files redacted.

Before writing, every file is checked against every secret value the run saw; a leak aborts the plan.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import hashlib
import json
import os
import runpy
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor, MockResourceArgs, _ensure_event_loop, _resolve_callbacks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func

from components.config import PROJECT
from components.kube.yamlutil import dump
from hubctl import providers
from hubctl.mocks import SECRET_SIG, PlanMocks, unwrap
from hubctl.stackfile import StackConfig

REDACTED = "[secret]"
DEPLOYED_ENV = "HUBCTL_DEPLOYED"
"""A JSON file `{"servers": [...], "networks": [...]}` in the shape hubctl.mocks.live_server/live_network
write: what the offline plan assumes Hetzner already runs (to preview a day-two change offline)."""
K8S_PROVIDER_PREFIX = "k8s-"
"""Kubernetes providers are named `k8s-<target>`; the target names the manifests file."""

_OPTION_FIELDS = (
    "protect",
    "ignoreChanges",
    "replaceOnChanges",
    "deleteBeforeReplace",
    "retainOnDelete",
    "additionalSecretOutputs",
    "deletedWith",
)


@dataclass
class Record:
    urn: str
    type: str
    name: str
    parent: str
    provider: str
    dependencies: list[str]
    inputs: Any
    """Inputs as the monitor saw them: secret values still wrapped, so they can be redacted."""
    options: dict[str, Any]
    custom: bool
    outputs: Any = None
    version: str = ""
    """The provider plugin version the SDK asked for (names the package's default provider)."""


@dataclass
class Plan:
    project: str
    stack: str
    records: list[Record] = field(repr=False)
    """Unredacted inputs and outputs: kept out of repr, so a failing test's report never prints a key."""
    outputs: dict[str, Any]
    """Stack outputs, secret ones already replaced by REDACTED."""
    secret_values: set[str] = field(default_factory=set, repr=False)
    raw_outputs: dict[str, Any] = field(default_factory=dict, repr=False)
    """Unredacted stack outputs, in memory only (they stand in for StackReference reads offline)."""
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Each record's inputs as the files show them (`written_inputs`), redacted once per record."""

    def by_type(self, typ: str) -> list[Record]:
        return [r for r in self.records if r.type == typ]

    def as_stack_reference(self) -> tuple[dict[str, Any], list[str]]:
        """What a region stack's StackReference to this (hub) stack reads: the declared `HubOutputs` with
        their planned, unredacted values, and which of them are secret (components/roles.py)."""
        from components.roles import stand_in

        return stand_in(self.raw_outputs)


def _engine_urn(parent: str, type_: str, name: str) -> str:
    """URNs as the engine makes them: the full parent type chain, nothing for the root stack."""
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != "pulumi:pulumi:Stack":
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{qualified}::{name}"


class RecordingMonitor(MockMonitor):
    """A mock monitor that records every registration with its options, like the engine's plan."""

    def __init__(self, mocks: PlanMocks) -> None:
        super().__init__(mocks)
        self.records: dict[str, Record] = {}
        self.generated_secrets: set[str] = set()
        """Secret values providers generate (keys, passwords, tokens): what must never reach a file."""
        self._lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return _engine_urn(parent, type_, name)

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """MockMonitor.RegisterResource, with the inputs deserialized once for both the mocks and the record,
        and the state serialized once, after the engine's secret marking."""
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        _ensure_event_loop()  # deserializing resource references needs a loop on this worker thread
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        rid, state = self.mocks.new_resource(MockResourceArgs(
            typ=request.type, name=request.name, inputs=inputs, provider=request.provider,
            resource_id=request.importId, custom=request.custom or False,
            transforms=_resolve_callbacks(request.transforms),
        ))
        secret_outputs = list(request.additionalSecretOutputs)
        if secret_outputs and request.type.startswith(_SECRET_SOURCES):
            with self._lock:
                for key in secret_outputs:
                    _collect_secrets(state.get(key), self.generated_secrets, True)
            # The engine marks these outputs secret; the mock monitor does not, so do it here.
            state = {k: ({**SECRET_SIG, "value": v} if k in secret_outputs and not rpc.is_rpc_secret(v) else v)
                     for k, v in state.items()}
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, rid, state)
        response = resource_pb2.RegisterResourceResponse(urn=urn, id=rid, object=_serialize(state))
        options = {}
        for name in _OPTION_FIELDS:
            value = getattr(request, name, None)
            if value:
                options[name] = list(value) if not isinstance(value, bool | str) else value
        aliases = [a.spec.parentUrn for a in request.aliases if a.HasField("spec") and a.spec.parentUrn]
        if aliases:
            options["aliasParents"] = aliases  # where the resource lived before (same logical name)
        if request.HasField("customTimeouts"):
            ct = request.customTimeouts
            options["customTimeouts"] = {k: v for k, v in (("create", ct.create), ("update", ct.update),
                                                           ("delete", ct.delete)) if v}
        record = Record(
            urn=urn,
            type=request.type,
            name=request.name,
            parent=request.parent if "pulumi:pulumi:Stack" not in request.parent else "",
            provider=request.provider.rsplit("::", 1)[0] if request.provider else "",
            dependencies=sorted(set(request.dependencies)),
            inputs=inputs,
            options=options,
            custom=bool(request.custom),
            outputs=state,
            version=request.version,
        )
        with self._lock:
            self.records[urn] = record
        return response

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().ReadResource(request)
        record = Record(
            urn=response.urn, type=request.type, name=request.name,
            parent=request.parent if "pulumi:pulumi:Stack" not in request.parent else "",
            provider=request.provider.rsplit("::", 1)[0] if request.provider else "",
            dependencies=sorted(set(request.dependencies)),
            inputs={"id": request.id}, options={"read": True}, custom=True,
            outputs=self.resources[response.urn].state, version=request.version,
        )
        with self._lock:
            self.records[response.urn] = record
        return response


_SECRET_SOURCES = ("tls:", "random:")
"""Providers whose secret outputs are atomic secrets; a Kubernetes Secret also holds public certs."""


def _serialize(state: dict[str, Any]) -> Any:
    from pulumi.runtime.mocks import _sync_await

    return _sync_await(rpc.serialize_properties(state, {}))


# ------------------------------------------------------------------------------------------ running


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """CPython's cyclic collector kept off the heap that is already there, and rarely run, while the program runs.

    Registering a resource allocates thousands of containers (Outputs, futures, protobuf conversions), and with
    the default thresholds the collector walks them again and again: a quarter of a 300-member plan. Here
    everything alive before the run is frozen (never scanned), young collections run every `YOUNG`
    allocations instead of 700 (the SDK's resource <-> Output cycles are still freed as the run goes, so
    memory stays flat, unlike with the collector off), and no full collection runs until the previous
    settings are back."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*QUIET_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


@contextlib.contextmanager
def no_source_positions() -> Iterator[None]:
    """The SDK skips computing each registration's source position while the offline program runs.

    Under `pulumi up` the SDK walks the whole Python stack at every registration (`traceback.extract_stack`,
    a path per frame) so the engine can point at the line that made a resource; the mock monitor never reads
    it. A tenth of a plan's time goes there; the requests then carry no stack trace, and nothing else changes."""
    from pulumi.runtime import resource as sdk_resource
    from pulumi.runtime.proto import source_pb2

    original = getattr(sdk_resource, "_get_stack_trace", None)
    if original is None:  # a newer SDK without the hook: nothing to skip
        yield
        return
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = original


QUIET_GC_THRESHOLD = (50_000, 20, 1_000)
"""Young collections every 50,000 allocations, middle ones every 20 of those, full ones effectively never
(measured at 100 members: -30 % CPU against the defaults, peak memory unchanged; the collector off entirely
saved no more and took 12 % more memory)."""


def run_program(
    repo: Path,
    stack: StackConfig,
    stack_outputs: dict[str, tuple[dict[str, Any], list[str]]] | None = None,
    live: dict[str, list[dict[str, Any]]] | None = None,
    mocks: PlanMocks | None = None,
) -> Plan:
    """Run `<repo>/__main__.py` under the recording mock monitor; return what it registered. `live` is what
    Hetzner would report as already running (hubctl.mocks.live_server/live_network), else the JSON file
    `$HUBCTL_DEPLOYED` names; default nothing (a stack's first `up`)."""
    from components.hetzner import live as live_state

    if live is None and os.environ.get(DEPLOYED_ENV):
        live = json.loads(Path(os.environ[DEPLOYED_ENV]).read_text())
    live_state.forget()
    monitor = RecordingMonitor(mocks or PlanMocks(stack_outputs, live))
    try:
        with quiet_gc(), no_source_positions():
            exports = run_main(repo, stack, monitor, preview=False)
    finally:
        live_state.forget()
    records = providers.complete(list(monitor.records.values()), stack.stack, PROJECT, stack.config,
                                 stack.secret_keys, Record)
    secret_values = set(monitor.generated_secrets)
    secret_values |= {stack.config[k] for k in stack.secret_keys}
    outputs = {k: (REDACTED if s else _redact(v)) for k, (v, s) in sorted(exports.items())}
    raw = {k: unwrap(v) for k, (v, _) in exports.items()}
    return Plan(project=PROJECT, stack=stack.stack, records=records, outputs=outputs, secret_values=secret_values,
                raw_outputs=raw)


def run_main(repo: Path, stack: StackConfig, monitor: MockMonitor, *, preview: bool,
             env: dict[str, str] | None = None) -> dict[str, tuple[Any, bool]]:
    """Run `<repo>/__main__.py` under the SDK's mock runtime with `monitor`, as `pulumi up` (or, with `preview`,
    `pulumi preview`) runs it; return its exports as (value, is_secret). KARMADA_HUB_OFFLINE=1 and `env` are set
    while it runs; the SDK's global settings, config and event loop are reset afterwards either way."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_quiet_after_interrupt)
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.reset_options()
    overrides = {"KARMADA_HUB_OFFLINE": "1", **(env or {})}
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    exports: dict[str, tuple[Any, bool]] = {}
    try:
        pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack.stack, preview=preview,
                                 monitor=monitor)
        pulumi.runtime.set_all_config(dict(stack.config), list(stack.secret_keys))

        def program() -> Any:
            sys.path.insert(0, str(repo))
            try:
                runpy.run_path(str(repo / "__main__.py"), run_name="__pulumi_program__")
            finally:
                sys.path.remove(str(repo))
            return _collect_exports(exports)

        try:
            _run_to_completion(loop, program)
        except BaseException:
            abandon(loop)
            raise
    finally:
        pulumi.runtime.set_all_config({}, [])
        pulumi.runtime.settings.reset_options()
        loop.close()
        asyncio.set_event_loop(None)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return exports


def _quiet_after_interrupt(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's own error report, unless Ctrl-C is ending the command: then a callback it cut in half (a task
    left mid-step) is part of the interruption, not an error to print."""
    from hubctl.errors import INTERRUPTED

    if not INTERRUPTED.is_set():
        loop.default_exception_handler(context)


def abandon(loop: asyncio.AbstractEventLoop) -> None:
    """A run stopped midway (Ctrl-C, an error): its thousands of pending registrations are dropped without a word.
    They would each print "Task was destroyed but it is pending!" (or "coroutine ... was never awaited") when
    collected; the one line that matters is the command's own."""
    import warnings

    loop.set_exception_handler(lambda _loop, _context: None)
    for task in asyncio.all_tasks(loop):
        task.cancel()
    warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)


def _run_to_completion(loop: asyncio.AbstractEventLoop, program: Any) -> None:
    """Run `program` and every registration and Output it starts to completion, as the language host runs a
    program under `pulumi up`: `run_pulumi_func` awaits what the program returns (here: its exports) and then
    every outstanding RPC and Output.

    This is what `pulumi.runtime.test` does, less its inner `_sync_await`: that one awaits the returned
    exports by pumping the already running loop from inside a callback and, when done, pads the loop's ready
    queue back to the length it found with cancelled handles, one per handle the program had queued (hundreds
    of thousands at 100 members, about 7 % of such a plan)."""
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    loop.run_until_complete(run_pulumi_func(program))


def _collect_exports(sink: dict[str, Any]) -> Any:
    root = pulumi.runtime.get_root_resource()
    outputs = dict(getattr(root, "outputs", {}) or {})

    async def gather() -> None:
        for name, value in outputs.items():
            out = pulumi.Output.from_input(value)
            sink[name] = (await out.future(), await out.is_secret())

    return gather()


def _collect_secrets(value: Any, sink: set[str], secret: bool) -> None:
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            _collect_secrets(rpc.unwrap_rpc_secret(value), sink, True)
            return
        for v in value.values():
            _collect_secrets(v, sink, secret)
    elif isinstance(value, list):
        for v in value:
            _collect_secrets(v, sink, secret)
    elif secret and isinstance(value, str) and len(value) >= 8:
        sink.add(value)


def _redact(value: Any) -> Any:
    """Secret values become REDACTED; integral floats (the wire has only floats) become ints."""
    if isinstance(value, dict):
        if rpc.is_rpc_secret(value):
            return REDACTED
        return {k: _redact(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is rpc.UNKNOWN or (isinstance(value, str) and value == rpc.UNKNOWN):
        return "[computed]"
    return value


# ------------------------------------------------------------------------------------------ writing


def k8s_target(provider_urn: str) -> str | None:
    """`…::pulumi:providers:kubernetes::k8s-member-a` -> `member-a`; None for non-Kubernetes providers."""
    if "pulumi:providers:kubernetes::" not in provider_urn:
        return None
    name = provider_urn.rsplit("::", 1)[-1]
    return name[len(K8S_PROVIDER_PREFIX):] if name.startswith(K8S_PROVIDER_PREFIX) else name


def redacted_value(value: Any, base64_field: bool) -> str:
    """One Secret key's value in a plan file: `[secret <fingerprint>]` (base64 of it under `data`, so the object
    stays schema-valid). The fingerprint tells a reviewer which keys changed; offline values are mocks and
    placeholders, never the stack's real secrets, so it reveals nothing."""
    if value is rpc.UNKNOWN or value == rpc.UNKNOWN:
        return "[computed]"
    digest = hashlib.sha256(b"karmada-hub plan fingerprint\0" + str(value).encode()).hexdigest()[:12]
    text = f"{REDACTED[:-1]} {digest}]"
    return base64.b64encode(text.encode()).decode() if base64_field else text


def kubernetes_object(record: Record) -> dict[str, Any]:
    """The object exactly as it would be applied, with Secret payloads redacted per key (keys stay visible)."""
    obj = _redact(record.inputs)
    obj = {k: v for k, v in obj.items() if not k.startswith("__")}
    if obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1":
        for key in ("data", "stringData"):
            payload = unwrap(record.inputs.get(key))
            if isinstance(payload, dict):
                obj[key] = {k: redacted_value(v, key == "data") for k, v in sorted(payload.items())}
            elif key in obj:
                obj[key] = REDACTED
    return obj


_KIND_ORDER = [
    "Namespace", "CustomResourceDefinition", "PriorityClass", "ServiceAccount", "Secret", "ConfigMap",
    "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "PersistentVolumeClaim",
    "StatefulSet", "Deployment", "PodDisruptionBudget", "APIService", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
]


def _object_sort_key(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    kind = obj.get("kind", "")
    order = _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)
    meta = obj.get("metadata") or {}
    return order, kind, meta.get("namespace", ""), meta.get("name", "")


def written_inputs(plan: Plan, record: Record) -> Any:
    """A record's inputs as plan.json and the manifests show them (Kubernetes objects by `kubernetes_object`,
    everything else by `_redact`), computed once per record: plan.json, the manifests and the summary share it."""
    try:
        return plan.written[record.urn]
    except KeyError:
        pass
    if record.type.startswith("kubernetes:") and record.custom:
        shown = kubernetes_object(record)
    else:
        shown = _redact(record.inputs)
    plan.written[record.urn] = shown
    return shown


def manifests(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """Kubernetes objects per target API server."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in plan.records:
        if not record.type.startswith("kubernetes:") or record.options.get("read"):
            continue
        if record.type.startswith("pulumi:providers:") or not record.custom:
            continue
        target = k8s_target(record.provider) or "unknown"
        out.setdefault(target, []).append(written_inputs(plan, record))
    return {t: sorted(objs, key=_object_sort_key) for t, objs in sorted(out.items())}


def cloud_init_documents(plan: Plan) -> dict[str, str]:
    """Each server's user-data, secret files redacted by the module that wrote them."""
    from components.hetzner.cloud_init import redact_user_data

    docs: dict[str, str] = {}
    for record in plan.by_type("hcloud:index/server:Server"):
        user_data = unwrap(record.inputs.get("userData"))
        name = unwrap(record.inputs.get("name")) or record.name
        if isinstance(user_data, str):
            docs[name] = redact_user_data(user_data)
    return dict(sorted(docs.items()))


def plan_document(plan: Plan) -> dict[str, Any]:
    resources = []
    for r in plan.records:
        inputs = written_inputs(plan, r)
        if isinstance(inputs, dict):
            inputs = {k: v for k, v in inputs.items() if k != "__provider"}
        resources.append({
            "urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent, "provider": r.provider,
            "dependencies": r.dependencies, "inputs": inputs, "options": _redact(r.options),
        })
    return {"project": plan.project, "stack": plan.stack, "resources": resources, "outputs": plan.outputs}


class SecretLeak(RuntimeError):
    pass


def _secret_needles(values: Iterable[str]) -> set[str]:
    needles = set()
    for value in values:
        needles.add(value)
        needles.add(base64.b64encode(value.encode()).decode())
    return needles


class _SecretIndex:
    """Finds any of many secret strings in a text in one pass, in time linear in the text and the secrets.

    Secrets of at least `LONG` characters (keys, certificates' keys, most tokens) are found through a sampled
    grid: every occurrence of such a secret covers a position that is a multiple of `STEP`, where some
    `WINDOW`-character slice of the secret (at one of `STEP` offsets, all indexed) starts; each grid position
    is one dictionary lookup, and a hit is confirmed by comparing the whole secret there. The few shorter
    secrets are searched for one by one."""

    WINDOW = 12
    STEP = 32
    LONG = STEP + WINDOW - 1

    def __init__(self, needles: Iterable[str]) -> None:
        self.short: list[str] = []
        self.windows: dict[str, list[tuple[str, int]]] = {}
        for needle in needles:
            if len(needle) < self.LONG:
                self.short.append(needle)
                continue
            for offset in range(self.STEP):
                self.windows.setdefault(needle[offset:offset + self.WINDOW], []).append((needle, offset))

    def found_in(self, content: str) -> bool:
        if any(needle in content for needle in self.short):
            return True
        windows, width = self.windows, self.WINDOW
        for pos in range(0, len(content) - width + 1, self.STEP):
            hits = windows.get(content[pos:pos + width])
            if hits and any(pos >= offset and content.startswith(needle, pos - offset) for needle, offset in hits):
                return True
        return False


def assert_no_secrets(files: dict[str, str], secret_values: Iterable[str]) -> None:
    index = _SecretIndex(_secret_needles(secret_values))
    for path, content in files.items():
        if "PRIVATE KEY-----" in content:
            raise SecretLeak(f"refusing to write {path}: it contains a private key")
        if index.found_in(content):
            raise SecretLeak(f"refusing to write {path}: it contains a secret value")


def render_files(plan: Plan) -> dict[str, str]:
    files: dict[str, str] = {"plan.json": json.dumps(plan_document(plan), indent=2, sort_keys=True) + "\n"}
    for target, objs in manifests(plan).items():
        files[f"manifests/{target}.yaml"] = "".join("---\n" + dump(o) for o in objs)
    for server, doc in cloud_init_documents(plan).items():
        files[f"cloud-init/{server}.yaml"] = doc
    assert_no_secrets(files, plan.secret_values)
    return files


def write_plan(plan: Plan, out_dir: Path) -> dict[str, str]:
    with quiet_gc():
        files = render_files(plan)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    for rel, content in files.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return files
