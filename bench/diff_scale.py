"""How long `hubctl diff` takes on fleet-sized plans: N members against N-1 (the first member removed).

    .venv/bin/python bench/diff_scale.py [N ...]      # default: 3 30 100 300

Plans are rendered offline (real program, generated stacks from tests/support/fleet.py) under one stack name into
a temporary directory; the diff is timed separately from planning, model (hubctl.diff) and Markdown
(hubctl.diff_render) apart in this process (whose heap still holds the plans), and as `hubctl diff` in a process
of its own (imports included: what CI and a reviewer wait for), and checked to show the removal as one entry per
list. It prints numbers; it asserts no speed.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hubctl.__main__ import main  # noqa: E402
from hubctl.diff import MISSING, diff_paths, iter_changes  # noqa: E402
from hubctl.diff_render import markdown  # noqa: E402
from tests.support.fleet import fleet_stack_text, member_names, touches_others  # noqa: E402
from tests.support.tools import copy_program  # noqa: E402


def plan(repo: Path, text: str, out: Path) -> float:
    (repo / "stacks" / "Pulumi.fleet.yaml").write_text(text)
    started = time.perf_counter()
    err = io.StringIO()
    if main(["plan", "fleet", "--out", str(out), "--quiet"], repo=repo, stdout=io.StringIO(), stderr=err) != 0:
        raise SystemExit(f"plan failed: {err.getvalue().strip()}")
    return time.perf_counter() - started


def run(n: int, work: Path) -> dict[str, float]:
    repo = work / "repo"
    if not repo.exists():
        copy_program(repo, REPO)
    first = member_names(n)[0]
    t_old = plan(repo, fleet_stack_text(n), work / f"old-{n}")
    t_new = plan(repo, fleet_stack_text(n, (first,)), work / f"new-{n}")
    started = time.perf_counter()
    result = diff_paths(work / f"old-{n}" / "fleet", work / f"new-{n}" / "fleet")
    t_model = time.perf_counter() - started
    started = time.perf_counter()
    text = markdown(result)
    t_md = time.perf_counter() - started
    started = time.perf_counter()  # what a reviewer or CI waits for: its own process, imports included
    subprocess.run([sys.executable, "-m", "hubctl", "diff", str(work / f"old-{n}" / "fleet"),
                    str(work / f"new-{n}" / "fleet")], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    t_cli = time.perf_counter() - started
    others = [c for r in iter_changes(result) for c in r.changes
              if touches_others(c.before, c.after, first, member_names(n)[1:])]
    removed = [r for r in result.resources if r.action == "delete"]
    list_removals = [c for r in iter_changes(result) for c in r.changes if c.after is MISSING]
    return {"members": n, "resources": result.old_resources, "plan_s": t_old + t_new, "diff_model_s": t_model,
            "markdown_s": t_md, "cli_s": t_cli, "markdown_chars": len(text), "removed_entries": len(removed),
            "list_removals": len(list_removals), "changes_naming_other_members": len(others)}


def main_bench(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="hubctl-diff-bench-") as tmp:
        rows = [run(n, Path(tmp)) for n in sizes]
    print("members  resources  plan both (s)  diff model (s)  markdown (s)  hubctl diff (s)  chars  removed  "
          "list removals  other members touched")
    for r in rows:
        print(f"{r['members']:>7}  {r['resources']:>9}  {r['plan_s']:>13.1f}  {r['diff_model_s']:>14.3f}  "
              f"{r['markdown_s']:>12.3f}  {r['cli_s']:>15.2f}  {r['markdown_chars']:>5}  {r['removed_entries']:>7}  "
              f"{r['list_removals']:>13}  {r['changes_naming_other_members']:>21}")
    base = rows[0]
    for r in rows[1:]:
        ratio = (r["diff_model_s"] + r["markdown_s"]) / max(base["diff_model_s"] + base["markdown_s"], 1e-9)
        print(f"diff time {r['members']} vs {base['members']} members: x{ratio:.1f} for x"
              f"{r['resources'] / base['resources']:.1f} resources")


if __name__ == "__main__":
    main_bench([int(a) for a in sys.argv[1:]] or [3, 30, 100, 300])
