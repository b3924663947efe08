"""The hostile corpus: stack files built from the limits of YAML, Hetzner, Kubernetes and Karmada, each refused
with one line, exit 2, nothing written, within seconds, never echoing what it must not.

Each `tests/hostile/Pulumi.<case>.yaml` says in its header why it is hostile (`# hostile:`), what the one error
line must contain (`# expect:`) and, for cases that carry a secret, what must never appear (`# never-shows:`).

The `edit-*` cases are mistakes a newcomer makes, written the way review-newcomer.md's corpus was: a copy of one
example stack (`# edit-of:`) with one realistic edit. Each ends in one line naming the file, the key and the fix
(`# expect:` is that whole line after the file), or, where the edit is in fact fine, in a clean plan
(`# expect: a clean plan`) — never an internal error.
The cases run in-process through `hubctl.__main__.main` (the same entry point as the console script) against a
copy of the program with the corpus in its stacks/; one runs as a real subprocess under a memory limit. A case
that exceeds its time guard fails the test instead of hanging the suite.
"""

from __future__ import annotations

import codecs
import io
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hubctl.__main__ import main
from tests.support.tools import REPO, copy_program, program_env

CORPUS = Path(__file__).parent / "hostile"
CASES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in CORPUS.glob("Pulumi.*.yaml"))
CLEAN = "a clean plan"
GUARD_SECONDS = 20
"""Per-case guard against a hang (not a speed target: a refusal takes milliseconds)."""


def header(case: str) -> dict[str, str]:
    data = (CORPUS / f"Pulumi.{case}.yaml").read_bytes()
    text = data.decode("utf-16") if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else \
        data.decode("utf-8", errors="replace")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(": ")
        fields[key] = value
    return fields


@pytest.fixture(scope="module")
def hostile_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = copy_program(tmp_path_factory.mktemp("hostile") / "repo")
    for path in CORPUS.glob("Pulumi.*.yaml"):
        shutil.copy2(path, repo / "stacks" / path.name)
    return repo


@contextmanager
def guard(seconds: int) -> Iterator[None]:
    def expired(*_: object) -> None:
        raise TimeoutError(f"no answer within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


REFUSED = [c for c in CASES if header(c).get("expect") != CLEAN]
PLANNED = [c for c in CASES if header(c).get("expect") == CLEAN]
EDITS = [c for c in CASES if c.startswith("edit-")]


def test_the_corpus_is_big_and_says_what_it_tests() -> None:
    assert len(CASES) >= 40 and len(EDITS) >= 40
    for prefix in ("yaml-", "stack-", "hetzner-", "kubernetes-", "karmada-", "secret-", "edit-"):
        assert any(c.startswith(prefix) for c in CASES), prefix
    for case in CASES:
        fields = header(case)
        assert fields.get("hostile") and fields.get("expect"), case


@pytest.mark.parametrize("case", REFUSED)
def test_hostile_stack_is_one_line_exit_2_and_writes_nothing(hostile_repo: Path, case: str) -> None:
    fields = header(case)
    out_root = hostile_repo / "build" / "hostile-out"
    stdout, stderr = io.StringIO(), io.StringIO()
    with guard(GUARD_SECONDS):
        code = main(["plan", case, "--out", str(out_root)], repo=hostile_repo, stdout=stdout, stderr=stderr)
    lines = stderr.getvalue().splitlines()
    assert code == 2, (code, stderr.getvalue()[-500:])
    assert len(lines) == 1, stderr.getvalue()[-2000:]
    assert lines[0].startswith(f"error: stacks/Pulumi.{case}.yaml: "), lines[0]
    assert fields["expect"] in lines[0], lines[0]
    assert "Traceback" not in lines[0] and stdout.getvalue() == ""
    assert not (out_root / case).exists() and not (hostile_repo / "build" / "plan" / case).exists()
    if "never-shows" in fields:
        assert fields["never-shows"] not in lines[0]
    assert "PRIVATE KEY" not in lines[0] or "private key (not shown)" in lines[0]


@pytest.mark.parametrize("case", EDITS)
def test_an_edit_case_is_one_edit_of_an_example_stack(case: str) -> None:
    """The newcomer corpus is made like the review's: the example stack it names, with one change in one place,
    and its expected line names the key (or the YAML line) and is the whole line after the file."""
    import difflib

    fields = header(case)
    base = (REPO / fields["edit-of"]).read_text().splitlines()
    lines = (CORPUS / f"Pulumi.{case}.yaml").read_text().splitlines()
    assert [line.split(":", 1)[0] for line in lines[:3]] == ["# hostile", "# edit-of", "# expect"], case
    changed = [op for op in difflib.SequenceMatcher(None, base, lines[3:], autojunk=False).get_opcodes()
               if op[0] != "equal"]
    assert len(changed) == 1, (case, changed)
    assert fields["expect"] == CLEAN or fields["expect"].startswith(("karmada-hub:", "pulumi:", "line ",
                                                                     "not valid YAML: line ")), fields["expect"]


@pytest.mark.parametrize("case", PLANNED)
def test_an_edit_that_is_fine_plans_clean(hostile_repo: Path, case: str) -> None:
    out_root = hostile_repo / "build" / "planned"
    stdout, stderr = io.StringIO(), io.StringIO()
    with guard(300):
        code = main(["plan", case, "--out", str(out_root), "--quiet", "--policy"], repo=hostile_repo, stdout=stdout,
                    stderr=stderr)
    assert code == 0 and stderr.getvalue() == "", stderr.getvalue()[-2000:]
    assert (out_root / case / "plan.json").is_file()


def test_a_mutated_case_is_accepted(hostile_repo: Path) -> None:
    """The corpus cases differ from a good stack only in their hostile part: the same file without it plans."""
    good = (CORPUS / "Pulumi.hetzner-servers-even.yaml").read_text().replace("servers: 4", "servers: 3")
    (hostile_repo / "stacks" / "Pulumi.hostile-control.yaml").write_text(good)
    stdout, stderr = io.StringIO(), io.StringIO()
    with guard(300):
        code = main(["plan", "hostile-control", "--out", str(hostile_repo / "build" / "control"), "--quiet"],
                    repo=hostile_repo, stdout=stdout, stderr=stderr)
    assert code == 0, stderr.getvalue()[-2000:]


def test_an_oversized_file_is_refused_before_it_is_read(hostile_repo: Path) -> None:
    """Generated here rather than committed: 1.1 MB of comment after a valid stack."""
    path = hostile_repo / "stacks" / "Pulumi.yaml-oversized.yaml"
    path.write_text((CORPUS / "Pulumi.hetzner-servers-even.yaml").read_text() + "#" * (1 << 20) + "\n")
    stderr = io.StringIO()
    assert main(["plan", "yaml-oversized"], repo=hostile_repo, stdout=io.StringIO(), stderr=stderr) == 2
    assert stderr.getvalue().startswith("error: stacks/Pulumi.yaml-oversized.yaml: is 1,049,")
    assert "a stack file may be at most 1,048,576" in stderr.getvalue()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_the_alias_bomb_in_a_real_process_under_a_memory_limit(hostile_repo: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "yaml-billion-laughs"], cwd=hostile_repo,
                            capture_output=True, text=True, timeout=120, env=program_env(),
                            preexec_fn=_limit_memory)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "error: stacks/Pulumi.yaml-billion-laughs.yaml: expands to more than 200000 values through aliases (an alias "
        "bomb?); write the values out"]


def test_the_corpus_runs_in_ci() -> None:
    """CI runs `make test` (.ci/run), which collects this module: the corpus is not an optional extra."""
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert Path(__file__).name.startswith("test_")
