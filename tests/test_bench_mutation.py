"""bench/mutation (the mutation run) without running it: its operators, which sites count, its targets, the
spot check's named mutants, and the equivalents table it reads from docs/testing.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mutation import engine, operators, report
from bench.mutation.targets import NAMED, TARGETS, Target
from tests.support.tools import REPO


@pytest.mark.parametrize("name", operators.OWN_OPERATORS)
def test_own_operators_do_what_their_examples_say(name: str) -> None:
    from cosmic_ray.mutating import mutate_code

    op = operators.get(name)
    for example in type(op).examples():
        assert mutate_code(example.pre_mutation_code, op, example.occurrence) == example.post_mutation_code


def test_every_operator_resolves_through_cosmic_ray() -> None:
    from cosmic_ray import plugins

    operators.register()
    for name in operators.ALL_OPERATORS:
        assert plugins.get_operator(name) is not None, name


SAMPLE = '''"""Module docstring."""
MODE = "0600"
"""Attribute docstring."""


@functools.cache
def f(a: str | None = None) -> int | None:
    """Function docstring."""
    if a in ("x", "y"):
        raise ValueError(f"bad {a!r}")
    log.info("said %s", a)
    parser.add_argument("--n", help="some help")
    return 1 + 2  # pragma: no mutate


@dataclass(frozen=True)
class C:
    x: int = 3
'''


def _sites(tmp_path: Path, scope: dict[str, tuple[str, ...]] | None = None) -> list[engine.Site]:
    (tmp_path / "m.py").write_text(SAMPLE)
    return engine.sites(tmp_path, Target("t", "t", ("m.py",), (), scope or {}))


def test_sites_skip_docstrings_annotations_messages_help_pragmas_and_caches(tmp_path: Path) -> None:
    found = _sites(tmp_path)
    strings = [s for s in found if s.operator == "hub/StringLiteral"]
    assert sorted(s.original.strip() for s in strings) == [
        'MODE = "0600"', 'if a in ("x", "y"):', 'if a in ("x", "y"):', 'parser.add_argument("--n", help="some help")']
    assert not [s for s in found if s.line == 7 and s.column > 5], "annotations are not mutated"
    assert not [s for s in found if "return 1 + 2" in s.original], "pragma: no mutate"
    decorators = [s.original.strip() for s in found if s.operator == "core/RemoveDecorator"]
    assert decorators == ["@dataclass(frozen=True)"], "removing a cache changes speed only"
    assert {"hub/InNotIn", "core/AddNot", "core/NumberReplacer"} <= {s.operator for s in found}
    assert len({s.key for s in found}) == len(found)


def test_scope_limits_sites_to_named_definitions(tmp_path: Path) -> None:
    found = _sites(tmp_path, {"m.py": ("C",)})
    assert found and {s.definition for s in found} <= {"C", "C.x"}
    with pytest.raises(SystemExit, match="has no gone"):
        _sites(tmp_path, {"m.py": ("gone",)})


def test_keys_do_not_depend_on_line_numbers(tmp_path: Path) -> None:
    before = {(s.operator, s.original.strip(), s.column): s.key for s in _sites(tmp_path)}
    (tmp_path / "m.py").write_text("\n\nimport os\n" + SAMPLE)
    after = {(s.operator, s.original.strip(), s.column): s.key
             for s in engine.sites(tmp_path, Target("t", "t", ("m.py",), ()))}
    assert before == after


def test_targets_name_existing_files_scopes_and_tests() -> None:
    for target in TARGETS:
        assert engine.sites(REPO, target), target.name
        for test in target.tests:
            assert (REPO / test.split("::")[0]).is_file(), (target.name, test)


@pytest.mark.parametrize("mutant", NAMED, ids=[m.name for m in NAMED])
def test_named_mutants_still_match_the_code_exactly_once(mutant: object) -> None:
    assert mutant.target in {t.name for t in TARGETS}  # type: ignore[attr-defined]
    source = (REPO / mutant.path).read_text()  # type: ignore[attr-defined]
    assert source.count(mutant.old) == 1, mutant  # type: ignore[attr-defined]


def test_equivalents_table_is_read_from_its_section(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "testing.md"
    doc.parent.mkdir()
    doc.write_text("# T\n\n| `0123456789` | config | x | not this section |\n\n## Equivalent mutants\n\n"
                   "| key | target | where | change | why |\n|---|---|---|---|---|\n"
                   "| `abcdef0123` | budget | budget.py:3 | `a` → `b` | same value either way |\n\n## Next\n")
    assert report.equivalents(tmp_path) == {
        "abcdef0123": {"target": "budget", "where": "budget.py:3", "reason": "same value either way"}}


def test_the_equivalents_documented_today_parse() -> None:
    listed = report.equivalents(REPO)
    assert all(v["reason"] and v["target"] in {t.name for t in TARGETS} for v in listed.values())


def test_report_counts_equivalents_out_of_the_rate() -> None:
    def outcome(key: str, status: str) -> dict[str, object]:
        return {"key": key, "status": status, "path": "p.py", "line": 1, "definition": "f", "operator": "op",
                "original": "x", "diff": ""}

    run = {"tests": [], "baseline_seconds": 1, "timeout": 30, "named": [],
           "outcomes": [outcome("k1", "killed"), outcome("k2", "survived"), outcome("k3", "timeout"),
                        outcome("k4", "survived")]}
    built = report.build({TARGETS[0].name: run}, Path("/nonexistent"), "cosmic-ray")
    t = built["targets"][TARGETS[0].name]
    assert t["counts"]["survived"] == 2 and t["kill_rate"] == 0.5
    assert [s["key"] for s in t["survivors"]] == ["k2", "k4"]
