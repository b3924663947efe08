"""The dependency graph `pulumi up` schedules, read from plan.json, and its critical path.

The engine runs a registration as soon as the program sends it, and the SDK sends it only once everything it
waits for has resolved (pulumi/pulumi pkg/resource/deploy/step_executor.go: "language hosts can only invoke
the resource monitor once all of their dependencies have resolved"; the Python SDK's `prepare_resource` awaits
the parent's URN, every `depends_on` and input dependency, and the provider's URN *and id*). So a resource
starts when the last of these has finished:

- its `dependencies` (explicit `depends_on` and every Output it took as input, components expanded);
- its `provider`, explicit or the engine's default one (plan.json lists both, hubctl/providers.py);
- its `parent` (a component's URN resolves at once; a custom parent only after it was created).

A step's duration depends on what it does. `step_seconds` gives the typical duration of each kind of step as
the providers perform it (a server boots, a Deployment is awaited until its pods are ready, a readiness gate
waits for `/readyz` up to its own `timeoutSeconds`, which is the worst case it is weighted with); the exact
values matter less than that they are the same for every member. `critical_path` is the longest chain by
that weight; its length does not depend on how many members join if members join in parallel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

READINESS_TYPE = "pulumi-python:dynamic:Resource"
PROVIDER_PREFIX = "pulumi:providers:"

STEP_SECONDS: Mapping[str, float] = {
    "hcloud:index/server:Server": 60.0,  # create + boot until the API reports `running`
    "hcloud:index/loadBalancer:LoadBalancer": 15.0,
    "hcloud:index/network:Network": 3.0,
    "hcloud:index/networkSubnet:NetworkSubnet": 3.0,
    "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork": 5.0,
    "kubernetes:apps/v1:Deployment": 60.0,  # pulumi-kubernetes awaits the rollout (pods Ready)
    "kubernetes:apps/v1:StatefulSet": 90.0,
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": 3.0,  # awaited until Established
    "kubernetes:core/v1:Secret": 1.0,
}
"""Typical seconds per step kind; anything else that calls a provider takes DEFAULT_STEP_SECONDS."""
DEFAULT_STEP_SECONDS = 1.0
PROVIDER_STEP_SECONDS = 0.5
"""Configuring a provider (its Check/Configure calls)."""


@dataclass(frozen=True)
class Step:
    urn: str
    type: str
    seconds: float
    after: tuple[str, ...]
    """URNs this step waits for."""


def step_seconds(resource: Mapping[str, Any]) -> float:
    """How long one resource's create step takes: 0 for components (nothing to call), the gate's own timeout for
    a readiness gate, the table's value otherwise."""
    typ = resource["type"]
    if typ.startswith(PROVIDER_PREFIX):
        return PROVIDER_STEP_SECONDS
    if resource.get("component"):
        return 0.0
    if typ == READINESS_TYPE:
        inputs = resource.get("inputs") or {}
        return float(inputs.get("timeoutSeconds") or DEFAULT_STEP_SECONDS)
    if (resource.get("options") or {}).get("read"):
        return DEFAULT_STEP_SECONDS
    return STEP_SECONDS.get(typ, DEFAULT_STEP_SECONDS)


def steps(plan: Mapping[str, Any]) -> dict[str, Step]:
    """Every resource of a plan.json as a step with what it waits for. Components are the program's own types
    (`<project>:index:*`): registering one calls no provider, so it weighs nothing."""
    resources = plan["resources"]
    urns = {r["urn"] for r in resources}
    own = f"{plan['project']}:"
    out: dict[str, Step] = {}
    for r in resources:
        after = {*r["dependencies"], *(u for u in (r["provider"], r["parent"]) if u)}
        missing = after - urns
        if missing:
            raise ValueError(f"{r['urn']} waits for {sorted(missing)[0]}, which the plan does not have")
        out[r["urn"]] = Step(urn=r["urn"], type=r["type"], after=tuple(sorted(after)),
                             seconds=step_seconds({**r, "component": r["type"].startswith(own)}))
    return out


@dataclass(frozen=True)
class CriticalPath:
    seconds: float
    """Sum of the steps' durations along the longest chain."""
    urns: tuple[str, ...]
    """The chain, first step first."""
    steps: int
    """How many steps of the chain call a provider (components excluded)."""


def critical_path(graph: Mapping[str, Step]) -> CriticalPath:
    """The longest chain of waits by duration (ties: the fewest steps, then the smallest URNs), i.e. the least
    wall time a `pulumi up` from empty can take with unbounded parallelism."""
    finish: dict[str, tuple[float, int, tuple[str, ...]]] = {}

    def order() -> list[str]:
        indegree = {u: 0 for u in graph}
        users: dict[str, list[str]] = {u: [] for u in graph}
        for step in graph.values():
            for dep in step.after:
                indegree[step.urn] += 1
                users[dep].append(step.urn)
        ready = sorted(u for u, n in indegree.items() if n == 0)
        out: list[str] = []
        while ready:
            urn = ready.pop()
            out.append(urn)
            for user in users[urn]:
                indegree[user] -= 1
                if indegree[user] == 0:
                    ready.append(user)
        if len(out) != len(graph):
            raise ValueError("the dependency graph has a cycle")
        return out

    for urn in order():
        step = graph[urn]
        best: tuple[float, int, tuple[str, ...]] = (0.0, 0, ())
        for dep in step.after:
            best = _longer(best, finish[dep])
        calls = 1 if step.seconds > 0 else 0
        finish[urn] = (best[0] + step.seconds, best[1] + calls, (*best[2], urn))
    longest = (0.0, 0, ())
    for value in finish.values():
        longest = _longer(longest, value)
    return CriticalPath(seconds=round(longest[0], 3), urns=longest[2], steps=longest[1])


def _longer(a: tuple[float, int, tuple[str, ...]], b: tuple[float, int, tuple[str, ...]]
            ) -> tuple[float, int, tuple[str, ...]]:
    if round(a[0], 6) != round(b[0], 6):
        return a if a[0] > b[0] else b
    if a[1] != b[1]:
        return a if a[1] < b[1] else b
    return a if a[2] <= b[2] else b


def work_seconds(graph: Mapping[str, Step]) -> float:
    """Sum of every step's duration: with P operations in parallel (`pulumi up --parallel`, default 4 x the CPU
    count) an update takes at least max(critical path, work / P)."""
    return round(sum(s.seconds for s in graph.values()), 3)


def lower_bound_seconds(graph: Mapping[str, Step], parallel: int) -> float:
    return max(critical_path(graph).seconds, work_seconds(graph) / parallel)
