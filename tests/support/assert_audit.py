"""Asserts the suite never executes: a test that passes without running its assert cannot fail.

    python -m tests.support.assert_audit [pytest args]            # the whole suite by default
    python -m tests.support.assert_audit tests/test_plan.py -x     # some of it

Runs pytest with its `pytest_assertion_pass` hook on (every passing assert is reported to this plugin, with a
fresh pycache so every test module is rewritten for it), then lists each `assert` statement of a test file that
never ran although every test it belongs to passed: a loop over matches that was empty, a guard that was never
true, an `if` around the only assert. Asserts of helpers (functions that are not tests) are listed when no test
ran them and every test of their file ran. Skipped and failed tests are left out (their asserts did not get their
chance). Writes the findings to build/assert-audit.json as well. Exit status: pytest's, or 1 when it passed but
something was found.

What it cannot see: an assert that ran with an always-true condition. It is a one-off audit, not part of `make
test` (the hook makes every assert a little slower); docs/testing.md says when to run it.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "assert-audit.json"
_MACHINERY = (f"{os.sep}_pytest{os.sep}", f"{os.sep}pluggy{os.sep}")


class AssertAudit:
    def __init__(self) -> None:
        self.executed: set[tuple[str, int]] = set()
        self.outcomes: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.findings: list[dict[str, Any]] = []
        self.items: dict[str, tuple[str, str]] = {}
        """nodeid -> (file, test function)"""
        self.sources: dict[str, str] = {}
        """Each test file as it was when collected: what ran, even if the file is edited during the run."""

    # ------------------------------------------------------------------------------------------ hooks

    def pytest_assertion_pass(self, item: pytest.Item, lineno: int, orig: str, expl: str) -> None:
        frame = sys._getframe(1)
        while frame is not None:  # up past pluggy and pytest's assertion helper to the asserting frame
            filename = frame.f_code.co_filename
            if not (filename == __file__ or any(part in filename for part in _MACHINERY)):
                self.executed.add((filename, lineno))
                return
            frame = frame.f_back  # type: ignore[assignment]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            path = str(item.path)
            function = getattr(item, "originalname", None) or item.name.split("[")[0]
            self.items[item.nodeid] = (path, function)
            if path not in self.sources:
                self.sources[path] = item.path.read_text()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if (report.when == "call" or report.outcome != "passed") and report.nodeid in self.items:
            self.outcomes[self.items[report.nodeid]].add(report.outcome)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        ran_files = {path for path, _ in self.outcomes}
        for path in sorted(ran_files):
            if path in self.sources:
                self.findings += _never_run(Path(path), self.sources[path], self.executed, self.outcomes)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(self.findings, indent=1) + "\n")
        if self.findings and session.exitstatus == 0:
            session.exitstatus = 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.section("asserts that never ran")
        for f in self.findings:
            terminalreporter.write_line(f"{f['file']}:{f['line']} in {f['function']} ({f['kind']}): {f['assert']}")
        terminalreporter.write_line(f"{len(self.findings)} found; {os.path.relpath(OUT, REPO)}")


def _never_run(path: Path, source: str, executed: set[tuple[str, int]],
               outcomes: dict[tuple[str, str], set[str]]) -> list[dict[str, Any]]:
    """Assert statements in `path` (as `source`) that no passing test executed."""
    tree = ast.parse(source)
    found: list[dict[str, Any]] = []
    executed_lines = {line for file, line in executed if file == str(path)}
    tests = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
             and n.name.startswith("test")}
    every_test_ran = tests <= {test for file, test in outcomes if file == str(path)}

    def visit(node: ast.AST, function: str | None, test: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                is_test = test is None and child.name.startswith("test")
                visit(child, child.name, child.name if is_test else test)
            elif isinstance(child, ast.Assert):
                if child.lineno in executed_lines:
                    continue
                if test is not None:
                    results = outcomes.get((str(path), test), set())
                    if results != {"passed"}:
                        continue  # did not run here, or skipped / failed: not this audit's business
                    kind = "test"
                elif not every_test_ran:
                    continue  # some tests were deselected or skipped: their helpers had no chance
                else:
                    kind = "helper"
                found.append({"file": os.path.relpath(path, REPO), "line": child.lineno,
                              "function": test or function or "<module>", "kind": kind,
                              "assert": ast.unparse(child)[:160]})
            else:
                visit(child, function, test)

    visit(tree, None, None)
    return found


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv) or ["tests"]
    # every test module must be rewritten with the hook compiled in: never reuse a cached rewrite
    sys.pycache_prefix = tempfile.mkdtemp(prefix="assert-audit-")
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
    return int(pytest.main(["-o", "enable_assertion_pass_hook=true", "-p", "no:cacheprovider", *args],
                           plugins=[AssertAudit()]))


if __name__ == "__main__":
    sys.exit(main())
