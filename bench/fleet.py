"""Fleet-size benchmark: `hubctl plan` against the SDK engine replaying the same resources, as ratios.

    .venv/bin/python -m bench.fleet                 # 3, 30, 100 and 300 members
    .venv/bin/python -m bench.fleet --sizes 3,30    # quicker

For each size it generates an all-in-one stack (bench/fleet_stack.py) into a scratch copy of the program and
runs, each in a fresh process, one after the other:

1. `hubctl plan <stack>`: the whole command, as an operator runs it (config, preflight, the program under
   the recording monitor, rendering, the secret scan, writing the files). The same process then writes what
   the monitor recorded to a replay file (after its clock and memory reading stopped);
2. the replay: the Pulumi SDK's mock runtime registering exactly those resources (same types, names,
   parents, providers, dependencies, inputs and options, secrets as secret Outputs) with an echo mock and no
   program logic, which is the floor any program of that shape pays under `set_mocks`. It runs twice:
   with the SDK's defaults, and with the runtime settings `hubctl plan` runs the program under (hubctl/plan.py
   `quiet_gc` and `no_source_positions`), so the ratio reads both "against the engine as it ships" and
   "against the engine tuned the way hubctl tunes itself".

It prints wall seconds, peak RSS (ru_maxrss of each process) and their ratios, and per-resource costs so a
term growing faster than the resource count shows as a rising ms/resource. Timings on a shared machine are
noisy; the ratios, taken back to back, are what to read.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (3, 30, 100, 300)
EPOCH = "2026-12-01"


# ----------------------------------------------------------------------------------------- children


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    """CPU time of this whole process so far (all threads, imports included): steadier than wall time on a
    shared machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child_plan(program: Path, stack: str, out: Path, record_path: Path) -> dict[str, Any]:
    """`hubctl plan` in this process, timed; then the recorded registrations to `record_path`."""
    sys.path.insert(0, str(program))
    captured: dict[str, Any] = {}
    from hubctl import __main__ as cli
    from hubctl import commands

    real_write = commands.write_plan

    def write_and_keep(plan: Any, out_dir: Path) -> Any:
        captured["plan"] = plan
        return real_write(plan, out_dir)

    commands.write_plan = write_and_keep
    start = time.perf_counter()
    rc = cli.main(["plan", stack, "--out", str(out), "--quiet"])
    seconds = time.perf_counter() - start
    rss, cpu = _rss_mib(), _cpu_seconds()
    if rc != 0:
        raise SystemExit(f"hubctl plan {stack} exited {rc}")
    plan = captured["plan"]
    registrations = replay_order(plan.records)
    with record_path.open("wb") as fh:
        pickle.dump(registrations, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return {"seconds": seconds, "cpu": cpu, "rss_mib": rss, "resources": len(plan.records)}


def replay_order(records: list[Any]) -> list[dict[str, Any]]:
    """The plan's records as registrations, parents, providers and dependencies before their users."""
    from hubctl.plan import Record

    by_urn: dict[str, Record] = {r.urn: r for r in records}
    done: set[str] = set()
    order: list[dict[str, Any]] = []

    def visit(urn: str) -> None:
        stack = [(urn, False)]
        while stack:
            current, expanded = stack.pop()
            if current in done or current not in by_urn:
                continue
            record = by_urn[current]
            needs = [u for u in (record.parent, record.provider, *record.dependencies) if u and u not in done]
            if expanded or not needs:
                done.add(current)
                order.append({
                    "type": record.type, "name": record.name, "custom": record.custom, "urn": record.urn,
                    "parent": record.parent, "provider": record.provider, "dependencies": record.dependencies,
                    "inputs": record.inputs, "options": record.options,
                })
                continue
            stack.append((current, True))
            stack.extend((u, False) for u in needs)

    for record in records:
        visit(record.urn)
    return order


def _child_replay(record_path: Path, settings: str) -> dict[str, Any]:
    """Register the recorded resources under the SDK's mock runtime with an echo mock; no program logic."""
    with record_path.open("rb") as fh:
        registrations: list[dict[str, Any]] = pickle.load(fh)
    seconds = replay(registrations, settings)
    return {"seconds": seconds, "cpu": _cpu_seconds(), "rss_mib": _rss_mib(), "resources": len(registrations)}


class EchoMocks:
    """Every resource's outputs are its inputs; no calls."""

    def new_resource(self, args: Any) -> tuple[str, dict]:
        return (args.resource_id or f"{args.name}-id"), dict(args.inputs)

    def call(self, args: Any) -> dict:
        return {}


def replay(registrations: list[dict[str, Any]], settings: str = "default", monitor: Any = None,
           stack: str = "bench") -> float:
    """Register `registrations` (replay_order) under the SDK's mock runtime with EchoMocks, or with `monitor`
    (whose mocks answer); return the wall seconds it took. `settings`: "default" (the SDK as it ships) or
    "hubctl" (hubctl plan's collector and source-position settings)."""
    import asyncio
    import contextlib

    import pulumi
    from pulumi.runtime import rpc

    def value(v: Any) -> Any:
        if isinstance(v, dict):
            if rpc.is_rpc_secret(v):
                return pulumi.Output.secret(value(rpc.unwrap_rpc_secret(v)))
            return {k: value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [value(x) for x in v]
        return v

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.reset_options()
    mocks = monitor.mocks if monitor is not None else EchoMocks()
    pulumi.runtime.set_mocks(mocks, project="karmada-hub", stack=stack, preview=False, monitor=monitor)
    context: Any = contextlib.ExitStack()
    if settings == "hubctl":
        from hubctl import plan as hubctl_plan

        for setting in ("quiet_gc", "no_source_positions"):
            context.enter_context(getattr(hubctl_plan, setting, contextlib.nullcontext)())
    start = time.perf_counter()
    try:
        with context:

            @pulumi.runtime.test
            def program() -> Any:
                made: dict[str, pulumi.Resource] = {}
                for reg in registrations:
                    options = reg["options"]
                    timeouts = options.get("customTimeouts")
                    opts = pulumi.ResourceOptions(
                        parent=made.get(reg["parent"]) if reg["parent"] else None,
                        provider=made.get(reg["provider"]) if reg["provider"] else None,  # type: ignore[arg-type]
                        depends_on=[made[d] for d in reg["dependencies"] if d in made],
                        protect=options.get("protect"),
                        ignore_changes=options.get("ignoreChanges"),
                        replace_on_changes=options.get("replaceOnChanges"),
                        delete_before_replace=options.get("deleteBeforeReplace"),
                        retain_on_delete=options.get("retainOnDelete"),
                        additional_secret_outputs=options.get("additionalSecretOutputs"),
                        aliases=[pulumi.Alias(parent=p) for p in options.get("aliasParents", [])] or None,
                        custom_timeouts=pulumi.CustomTimeouts(**timeouts) if timeouts else None,
                        deleted_with=made.get(options["deletedWith"]) if options.get("deletedWith") else None,
                    )
                    typ, name = reg["type"], reg["name"]
                    inputs = reg["inputs"] if isinstance(reg["inputs"], dict) else {}
                    if options.get("read"):
                        opts.id = inputs["id"]
                        made[reg["urn"]] = pulumi.CustomResource(typ, name, {}, opts)
                    elif typ.startswith("pulumi:providers:"):
                        made[reg["urn"]] = pulumi.ProviderResource(typ.split(":")[-1], name, value(inputs), opts)
                    elif reg["custom"]:
                        made[reg["urn"]] = pulumi.CustomResource(typ, name, value(inputs), opts)
                    else:
                        made[reg["urn"]] = pulumi.ComponentResource(typ, name, None, opts)
                return pulumi.Output.from_input(len(made))

            program()
        return time.perf_counter() - start
    finally:
        pulumi.runtime.settings.reset_options()
        loop.close()
        asyncio.set_event_loop(None)


# ------------------------------------------------------------------------------------------- parent


def _program_copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "__main__.py", dest / "__main__.py")
    for folder in ("agents", "components", "hubctl", "policy", "stacks"):
        shutil.copytree(REPO / folder, dest / folder, ignore=ignore)
    return dest


def _env() -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from components.karmada.crds import CRDS_DIR_ENV, workspace_crds_dir

    env = {**os.environ, "HUBCTL_PLAN_EPOCH": EPOCH, "PYTHONHASHSEED": "0"}
    crds = workspace_crds_dir(REPO)
    if CRDS_DIR_ENV not in env and crds is not None:
        env[CRDS_DIR_ENV] = str(crds)
    return env


def _run_child(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bench.fleet", "--child", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"child {args[0]} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


def measure(members: int, scratch: Path, env: dict[str, str]) -> dict[str, Any]:
    from bench import fleet_stack

    program = scratch / "program"
    name = fleet_stack.stack_name(members)
    (program / "stacks" / f"Pulumi.{name}.yaml").write_text(fleet_stack.render(members))
    record = scratch / f"{name}.replay.pickle"
    out = scratch / "plans"
    child_env = {**env, "PYTHONPATH": f"{program}{os.pathsep}{REPO}"}
    plan = _run_child(["plan", str(program), name, str(out), str(record)], child_env, program)
    replay = _run_child(["replay", str(record), "default"], child_env, program)
    replay_gc = _run_child(["replay", str(record), "hubctl"], child_env, program)
    record.unlink()
    return {"members": members, "plan": plan, "replay": replay, "replay_gc": replay_gc}


def _fmt(rows: list[dict[str, Any]]) -> str:
    """One row per size. Times are each whole process's CPU seconds (wall seconds in brackets): CPU time is what
    the work costs, wall time also counts waiting for a busy machine."""
    head = ("members", "resources", "plan s", "engine s", "ratio", "engine s (hubctl's settings)", "ratio",
            "plan MiB", "engine MiB", "memory ratio", "plan ms/resource", "engine ms/resource")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        n = r["plan"]["resources"]
        p, e, g = (r[k]["cpu"] for k in ("plan", "replay", "replay_gc"))
        pw, ew, gw = (r[k]["wall"] for k in ("plan", "replay", "replay_gc"))
        lines.append(" | ".join([
            str(r["members"]), f"{n:,}", f"{p:.1f} ({pw:.1f})", f"{e:.1f} ({ew:.1f})", f"{p / e:.2f}",
            f"{g:.1f} ({gw:.1f})", f"{p / g:.2f}",
            f"{r['plan']['rss_mib']:.0f}", f"{r['replay']['rss_mib']:.0f}",
            f"{r['plan']['rss_mib'] / r['replay']['rss_mib']:.2f}",
            f"{1000 * p / n:.2f}", f"{1000 * e / n:.2f}",
        ]))
    return "\n".join(lines)


def growth(rows: list[dict[str, Any]]) -> str:
    """Per-resource CPU cost of the largest size against the smallest above 3 members (fixed costs, imports and
    CRDs, dominate at 3): 1.00 is linear; a term growing faster than the resource count shows well above 1."""
    big = [r for r in rows if r["members"] > 3]
    if len(big) < 2:
        return "growth: needs two sizes above 3 members"
    lo, hi = big[0], big[-1]

    def per(r: dict[str, Any], key: str) -> float:
        return r[key]["cpu"] / r["plan"]["resources"]

    return (f"growth {lo['members']} -> {hi['members']} members (per-resource CPU cost, 1.00 = linear): "
            f"plan {per(hi, 'plan') / per(lo, 'plan'):.2f}, engine {per(hi, 'replay') / per(lo, 'replay'):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="member counts, comma-separated")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "plan":
            result = _child_plan(Path(rest[0]), rest[1], Path(rest[2]), Path(rest[3]))
        else:
            result = _child_replay(Path(rest[0]), rest[1])
        print(json.dumps(result))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    env = _env()
    rows = []
    with tempfile.TemporaryDirectory(prefix="karmada-hub-bench-") as tmp:
        scratch = Path(tmp)
        _program_copy(scratch / "program")
        for members in sizes:
            rows.append(measure(members, scratch, env))
            print(f"  {members} members done ({rows[-1]['plan']['resources']} resources)", file=sys.stderr)
    print(_fmt(rows))
    print(growth(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
