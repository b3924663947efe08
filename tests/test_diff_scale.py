"""Fleet-scale diffs: removing the first member of a fleet is one removal — its component as one entry, one entry
per list that named it — and no other member's entry shows as changed (lists are matched by key or content, not
by index). bench/diff_scale.py runs the same at 300 members and prints the times."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hubctl.__main__ import main
from hubctl.diff import MISSING, diff_paths, diff_values, iter_changes
from hubctl.diff_render import markdown
from tests.support.fleet import fleet_stack_text, member_names, touches_others
from tests.support.tools import copy_program

N = 6


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("fleet")
    repo = copy_program(work / "repo")
    dirs = []
    for side, drop in (("old", ()), ("new", (member_names(N)[0],))):
        (repo / "stacks" / "Pulumi.fleet.yaml").write_text(fleet_stack_text(N, drop))
        err = io.StringIO()
        assert main(["plan", "fleet", "--out", str(work / side), "--quiet"], repo=repo, stdout=io.StringIO(),
                    stderr=err) == 0, err.getvalue()
        dirs.append(work / side / "fleet")
    return dirs[0], dirs[1]


def test_removing_the_first_member_is_one_removal(plans: tuple[Path, Path]) -> None:
    result = diff_paths(*plans)
    first, others = member_names(N)[0], member_names(N)[1:]
    deleted = [r for r in result.resources if r.action == "delete"]
    member = [r for r in deleted if r.label == f"MemberCluster member-{first}"]
    assert len(member) == 1 and len(member[0].children) >= 8
    assert all(first in r.label or first in r.name for r in deleted), [r.label for r in deleted]
    list_entries = [(r.label, c.path) for r in iter_changes(result) for c in r.changes if c.after is MISSING]
    assert list_entries and all(path.endswith(("]",)) for _, path in list_entries)
    # placement names members, so one object may lose the member from several of its lists (each affinity group)
    lists = {(label, path.rsplit("[", 1)[0]) for label, path in list_entries}
    assert len(lists) == len(list_entries), "one removed entry per list"
    touched = [(r.label, c.path) for r in iter_changes(result) for c in r.changes
               if touches_others(c.before, c.after, first, others)]
    assert touched == [], "another member's entry shows as changed: the lists were matched by index"
    text = markdown(result)
    assert f"**remove** `MemberCluster member-{first}` and its " in text


def test_index_matching_would_have_shifted_every_entry() -> None:
    """The control for the test above: the same removal diffed by index touches every later entry."""
    names = member_names(N)
    before = [{"clusterName": n, "hard": {"cpu": "1"}} for n in names]
    after = before[1:]
    by_index = [(f"[{i}]", a, b) for i, (a, b) in enumerate(zip(before, [*after, None], strict=True)) if a != b]
    assert len(by_index) == N
    assert len(diff_values(before, after)) == 1
