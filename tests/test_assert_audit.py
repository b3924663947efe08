"""tests/support/assert_audit.py finds the asserts a passing test never ran, and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.tools import REPO

SAMPLE = '''
import pytest


def check(x):
    assert x > 0


def unused_helper(x):
    assert x


def test_empty_loop():
    for value in []:
        assert value == "[secret]"


def test_guard_never_true():
    if "snapshot-count" in {}:
        assert False


def test_fine():
    assert 1 + 1 == 2
    for value in [1, 2]:
        assert value
    check(1)


@pytest.mark.parametrize("n", [1, 2])
def test_branch_taken_by_one_case(n):
    if n == 2:
        assert n == 2


def test_skipped():
    pytest.skip("not here")
    assert False


def test_raises_only():
    with pytest.raises(ZeroDivisionError):
        1 / 0
'''


def test_the_audit_lists_exactly_the_asserts_that_never_ran(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(SAMPLE)
    out = REPO / "build" / "assert-audit.json"
    result = subprocess.run([sys.executable, "-m", "tests.support.assert_audit", str(sample), "-q", "-p",
                             "no:randomly", "--rootdir", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    found = json.loads(out.read_text())
    assert [(f["function"], f["kind"], f["assert"]) for f in found] == [
        ("unused_helper", "helper", "assert x"),
        ("test_empty_loop", "test", "assert value == '[secret]'"),
        ("test_guard_never_true", "test", "assert False"),
    ]
    assert "3 found" in result.stdout and "6 passed, 1 skipped" in result.stdout
