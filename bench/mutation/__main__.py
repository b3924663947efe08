"""`python -m bench.mutation [TARGET ...]`: the mutation run (docs/testing.md). See bench/mutation/__init__.py."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.mutation import engine, report
from bench.mutation.targets import NAMED, TARGETS, Target, by_name

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "mutation"
MIN_RATE = 0.9


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__)
    p.add_argument("targets", nargs="*", help=f"targets to run (default: all): {', '.join(t.name for t in TARGETS)}")
    p.add_argument("--list", action="store_true", help="count each target's mutants and stop (no tests run)")
    p.add_argument("--resume", action="store_true",
                   help="keep the last run's killed mutants whose key is unchanged; run the rest (while writing tests)")
    p.add_argument("--report-only", action="store_true", help="rebuild the report from build/mutation/results")
    p.add_argument("--min-rate", type=float, default=MIN_RATE,
                   help="exit 1 below this kill rate over the targets run, or if a named mutant survives")
    return p.parse_args(argv)


def _results_path(target: str) -> Path:
    return OUT / "results" / f"{target}.json"


def _load_results() -> dict[str, dict[str, Any]]:
    runs = {}
    for t in TARGETS:
        path = _results_path(t.name)
        if path.is_file():
            runs[t.name] = json.loads(path.read_text())
    return runs


def _save(run: engine.TargetRun, finished: bool) -> None:
    path = _results_path(run.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = run.to_json()
    data["finished"] = finished
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def _progress(target: str) -> Any:
    tty = sys.stdout.isatty()
    counts: dict[str, int] = {}

    def show(n: int, total: int, o: engine.Outcome) -> None:
        counts[o.status] = counts.get(o.status, 0) + 1
        summary = " ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        if o.status not in ("killed",):
            line = f"  {o.status:8} {o.site.path}:{o.site.line} {o.site.operator} [{o.site.key}]"
            print(("\r" if tty else "") + line + (" " * 20 if tty else ""), flush=True)
        if tty:
            print(f"\r{target}: {n}/{total} ({summary})", end="", flush=True)
        elif n % 25 == 0 or n == total:
            print(f"{target}: {n}/{total} ({summary})", flush=True)

    return show


def _named(work: Path, target: Target, timeout: float) -> list[dict[str, Any]]:
    from cosmic_ray.testing import run_tests
    from cosmic_ray.util import restore_contents

    out = []
    for m in (n for n in NAMED if n.target == target.name):
        path = work / m.path
        source = path.read_text()
        if source.count(m.old) != 1:
            out.append({"name": m.name, "path": m.path, "status": "stale (the text to replace is not in the code "
                        "exactly once; update bench/mutation/targets.py)"})
            continue
        with restore_contents(path):
            path.write_text(source.replace(m.old, m.new))
            outcome, output = run_tests(engine.test_command(target.pytest_args), timeout)
        status = "killed" if outcome == "killed" else "survived" if outcome == "survived" else "error"
        if status == "killed" and output == "timeout":
            status = "timeout"
        out.append({"name": m.name, "path": m.path, "old": m.old, "new": m.new, "status": status})
        print(f"  named    {status:8} {m.name}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    targets = by_name(args.targets)
    tool = f"cosmic-ray {metadata.version('cosmic-ray')}"
    if not args.report_only:
        for t in targets:
            missing = [x for x in t.tests if not (REPO / x.split("::")[0]).exists()]
            if missing:
                raise SystemExit(f"bench/mutation/targets.py: target {t.name}: no {', '.join(missing)}")
        work = engine.scratch_copy(REPO, OUT / "work")
        os.environ.update(engine.test_env(REPO))
        os.chdir(work)
        for t in targets:
            found = engine.sites(work, t)
            if args.list:
                per_op: dict[str, int] = {}
                for s in found:
                    per_op[s.operator] = per_op.get(s.operator, 0) + 1
                print(f"{t.name}: {len(found)} mutants in {', '.join(t.files(work))}")
                for op, n in sorted(per_op.items(), key=lambda kv: -kv[1]):
                    print(f"  {n:5} {op}")
                continue
            _run_target(work, t, found, args.resume)
        if args.list:
            return 0
    data = report.build(_load_results(), REPO, tool)
    json_path, md_path = report.write(data, OUT)
    print(report.markdown(data).split("\n## ")[0].rstrip())
    print(f"\nreport: {md_path.relative_to(REPO)}, {json_path.relative_to(REPO)}")
    below = data["total"]["kill_rate"] is not None and data["total"]["kill_rate"] < args.min_rate
    survived = [n for n in data["named"] if n["status"] != "killed"]
    return 1 if below or survived else 0


def _run_target(work: Path, t: Target, found: list[engine.Site], resume: bool) -> None:
    print(f"{t.name}: {len(found)} mutants; baseline {' '.join(t.pytest_args)}", flush=True)
    seconds = engine.baseline(work, t.pytest_args, {})
    timeout = max(30.0, 10 * seconds)
    run = engine.TargetRun(t.name, list(t.pytest_args), seconds, timeout, sites_total=len(found))
    previous: dict[str, dict[str, Any]] = {}
    if resume and _results_path(t.name).is_file():
        old = json.loads(_results_path(t.name).read_text())
        previous = {o["key"]: o for o in old["outcomes"] if o["status"] in ("killed", "timeout")}
    todo = []
    for site in found:
        kept = previous.get(site.key)
        if kept is not None:
            run.outcomes.append(engine.Outcome(site, kept["status"], kept["seconds"], kept.get("diff", ""),
                                               kept.get("output", "")))
        else:
            todo.append(site)
    print(f"{t.name}: baseline {seconds:.1f} s, timeout {timeout:.0f} s; running {len(todo)} "
          f"({len(found) - len(todo)} kept from the last run)", flush=True)
    start, last_save = time.monotonic(), time.monotonic()
    for outcome in engine.run_sites(work, todo, t.pytest_args, timeout, _progress(t.name)):
        run.outcomes.append(outcome)
        if time.monotonic() - last_save > 30:
            _save(run, finished=False)
            last_save = time.monotonic()
    run.named = _named(work, t, timeout)
    order = {s.key: i for i, s in enumerate(found)}
    run.outcomes.sort(key=lambda o: order[o.site.key])
    _save(run, finished=True)
    print(f"\n{t.name}: done in {time.monotonic() - start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
