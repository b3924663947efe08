"""A simulated first `pulumi preview`: the real `__main__.py` under `set_mocks(preview=True)` with every
provider-computed value unknown, as the engine reports a stack's first preview.

Nothing exists yet, so every resource is a create: the engine answers with the inputs, an unknown id and unknown
computed outputs (pulumi_tls PEMs, random results, hcloud ids and addresses, dynamic resources' outputs, a token
controller's fill-in of an SA-token Secret), and providers get unknown config where their inputs are computed.
Reads (`.get`) and StackReferences are real in a preview (the CAPI cluster and the hub stack exist), so they keep
the offline plan's values. Recorded while it runs:

- every registration's URN, to find duplicates (the engine refuses them; the mock monitor silently overwrites);
- every resource constructed inside an `Output.apply` callback (preview skips callbacks on unknowns, so such a
  resource is missing from the preview and appears only during `up`);
- every input, to find a stringified Output (`Calling __str__ on an Output[T]...` or `<pulumi.output.Output`).
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import rpc

from hubctl.mocks import PlanMocks
from hubctl.plan import Record, RecordingMonitor, run_main
from hubctl.stackfile import StackConfig

_IN_APPLY: contextvars.ContextVar[bool] = contextvars.ContextVar("in_apply", default=False)
STRINGIFIED = ("Calling __str__ on an Output", "<pulumi.output.Output")


class PreviewMocks(PlanMocks):
    """First-preview answers: inputs echoed, id and every computed output unknown."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == "pulumi:pulumi:StackReference" or args.resource_id:
            return super().new_resource(args)
        return "", dict(args.inputs)


class PreviewMonitor(RecordingMonitor):
    def __init__(self, mocks: PlanMocks) -> None:
        super().__init__(mocks)
        self.urns: Counter[str] = Counter()

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.urns[response.urn] += 1
        return response

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().ReadResource(request)
        self.urns[response.urn] += 1
        return response


@dataclass
class Preview:
    records: list[Record]
    urns: Counter[str]
    created_in_apply: list[str] = field(default_factory=list)
    exports: dict[str, Any] = field(default_factory=dict)

    @property
    def duplicates(self) -> list[str]:
        return sorted(u for u, n in self.urns.items() if n > 1)

    def stringified(self) -> list[str]:
        """`<urn> <path>` for every input (and stack output) holding a stringified Output."""
        found: list[str] = []
        for record in self.records:
            _find_strings(record.inputs, record.urn, found)
        for name, value in self.exports.items():
            _find_strings(value, f"stack output {name}", found)
        return found


def _find_strings(value: Any, where: str, sink: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _find_strings(v, f"{where}.{k}", sink)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _find_strings(v, f"{where}[{i}]", sink)
    elif isinstance(value, str) and any(marker in value for marker in STRINGIFIED):
        sink.append(where)


@contextmanager
def _watch_applies(created: list[str]) -> Iterator[None]:
    """Mark apply callbacks, and note every Resource constructed while one runs."""
    original_apply = pulumi.Output.apply
    original_init = pulumi.Resource.__init__

    def apply(self: pulumi.Output, func: Callable[..., Any], *args: Any, **kwargs: Any) -> pulumi.Output:
        def marked(*values: Any) -> Any:
            token = _IN_APPLY.set(True)
            try:
                return func(*values)
            finally:
                _IN_APPLY.reset(token)
        return original_apply(self, marked, *args, **kwargs)

    def init(self: pulumi.Resource, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        if _IN_APPLY.get():
            created.append(f"{t}::{name}")
        original_init(self, t, name, *args, **kwargs)

    pulumi.Output.apply = apply  # type: ignore[method-assign]
    pulumi.Resource.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        pulumi.Output.apply = original_apply  # type: ignore[method-assign]
        pulumi.Resource.__init__ = original_init  # type: ignore[method-assign]


def run_preview(repo: Path, stack: StackConfig,
                stack_outputs: Mapping[str, tuple[dict[str, Any], list[str]]] | None = None) -> Preview:
    """Run `<repo>/__main__.py` as a first `pulumi preview` would; str() of an Output raises while it runs."""
    monitor = PreviewMonitor(PreviewMocks(stack_outputs))
    created: list[str] = []
    with _watch_applies(created):
        exports = run_main(repo, stack, monitor, preview=True, env={"PULUMI_ERROR_OUTPUT_STRING": "1"})
    values = {k: v for k, (v, _) in exports.items()}
    return Preview(records=sorted(monitor.records.values(), key=lambda r: r.urn), urns=monitor.urns,
                   created_in_apply=created, exports=values)


def unknown(value: Any) -> bool:
    """Is a recorded value unknown (the engine's sentinel, the SDK's Unknown, or absent), secret-wrapped or not?"""
    from pulumi.output import Unknown

    from hubctl.mocks import unwrap

    plain = unwrap(value)
    return plain is None or isinstance(plain, Unknown) or plain == rpc.UNKNOWN
