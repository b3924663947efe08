"""Finding the mutants of a target and running its focused tests against each, with cosmic-ray doing the work.

cosmic-ray's own pieces do the mutating and the testing: its operators enumerate mutation sites on the parso tree,
`cosmic_ray.mutating.mutate_and_test` writes one mutant to disk, runs the test command in a subprocess with a
timeout (a timeout counts as killed) and puts the original back. What is ours: which sites count (the target's
scope; never a type annotation, a docstring, the arguments of a `raise` or of a log or print call, a help text,
a cache decorator, or a `# pragma: no mutate` line), the scratch
copy the mutants are written into (never the checkout), the baseline run, and the results file.

Everything runs in a scratch copy of the checkout (tracked and untracked files, not ignored ones) under
`build/mutation/work`, byte-compiled with checked-hash pycs so an unmutated module is never recompiled and a
mutated one always is, whatever the file times.
"""

from __future__ import annotations

import ast
import compileall
import hashlib
import os
import py_compile
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.mutation import operators
from bench.mutation.targets import Target

PRAGMA = "pragma: no mutate"
HELP_KEYWORDS = ("help", "description", "metavar", "usage", "epilog", "prog")
"""Keyword arguments that are text for people (argparse, Field descriptions): out of scope like messages."""
CACHE_DECORATORS = ("cache", "lru_cache", "functools.cache", "functools.lru_cache")
"""Removing one of these changes speed only: not a mutant."""


@dataclass(frozen=True)
class Site:
    """One mutant: an operator applied at its `occurrence` in `path` (cosmic-ray's MutationSpec, plus what we
    report)."""

    path: str
    operator: str
    occurrence: int
    line: int
    column: int
    end: tuple[int, int]
    definition: str
    original: str
    """The source line the mutation starts on."""
    key: str = ""
    """Stable identity across runs and unrelated edits: path, enclosing definition, operator, the touched line
    without its indentation and the column within it (never the line number), plus a counter among identical
    ones."""


@dataclass
class Outcome:
    site: Site
    status: str
    """killed, timeout, survived or error (equivalent is decided at report time, from docs/testing.md)."""
    seconds: float
    diff: str = ""
    output: str = ""


@dataclass
class TargetRun:
    target: str
    tests: list[str]
    baseline_seconds: float
    timeout: float
    outcomes: list[Outcome] = field(default_factory=list)
    named: list[dict[str, Any]] = field(default_factory=list)
    sites_total: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target, "tests": self.tests, "baseline_seconds": round(self.baseline_seconds, 2),
            "timeout": round(self.timeout, 1), "sites_total": self.sites_total,
            "outcomes": [{**asdict(o.site), "status": o.status, "seconds": round(o.seconds, 2), "diff": o.diff,
                          "output": o.output} for o in self.outcomes],
            "named": self.named,
        }


# ------------------------------------------------------------------------------------------ scratch copy


def scratch_copy(repo: Path, work: Path) -> Path:
    """`work` holds the checkout's tracked and untracked files (not ignored ones), byte-compiled."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    if work.exists():
        shutil.rmtree(work)
    for rel in filter(None, listed):
        src = repo / rel
        if not src.is_file():
            continue  # deleted in the working tree, still in the index
        dest = work / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    compileall.compile_dir(str(work), quiet=2, workers=1,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    return work


def test_env(repo: Path) -> dict[str, str]:
    """The tests' environment in the scratch copy: the pinned CRDs from where the checkout finds them (the copy has
    no `../shared` beside it), never a download."""
    env = {"KARMADA_HUB_NO_DOWNLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    sys.path.insert(0, str(repo))
    try:
        from components.karmada import crds

        source = crds.crds_source_dir()
    finally:
        sys.path.remove(str(repo))
    if source is not None:
        env[crds.CRDS_DIR_ENV] = str(source)
    return env


def test_command(tests: Sequence[str]) -> str:
    return shlex.join([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-W", "ignore",
                       *tests])


# ---------------------------------------------------------------------------------------------- sites


def _definition_spans(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Qualified name (`f`, `Class`, `Class.method`, `CONSTANT`) -> (first line, last line), decorators included."""
    spans: dict[str, tuple[int, int]] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                spans[prefix + node.name] = (first, node.end_lineno or node.lineno)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, prefix + node.name + ".")
            elif isinstance(node, ast.Assign | ast.AnnAssign) and not prefix:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        spans[t.id] = (node.lineno, node.end_lineno or node.lineno)

    walk(tree.body, "")
    return spans


def _char_col(lines: list[str], line: int, byte_col: int) -> int:
    return len(lines[line - 1].encode()[:byte_col].decode(errors="ignore"))


Span = tuple[tuple[int, int], tuple[int, int]]


def _excluded_spans(tree: ast.Module, lines: list[str]) -> tuple[list[Span], list[Span], list[Span]]:
    """(annotations, what is raised or logged, cache decorators) as ((line, col), (line, col)) spans.

    What a message says is out of scope, whether it is raised is not: a `raise` keeps its statement (AddNot on
    the `if` above it, a removed decorator, a zero-iteration loop still apply) and loses only its arguments."""

    def span(node: ast.AST) -> Span:
        return ((node.lineno, _char_col(lines, node.lineno, node.col_offset)),
                (node.end_lineno, _char_col(lines, node.end_lineno, node.end_col_offset)))

    annotations: list[Span] = []
    messages: list[Span] = []
    caches: list[Span] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(span(node.annotation))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None:
                annotations.append(span(node.returns))
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(target) in CACHE_DECORATORS:
                    (line, _), end = span(dec)
                    caches.append(((line, 0), end))  # the `@` before the expression
        elif isinstance(node, ast.AnnAssign):
            annotations.append(span(node.annotation))
        elif isinstance(node, ast.Raise) and node.exc is not None:
            messages.append(span(node.exc))
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("print", "log", "warn", "warnings.warn") or name.endswith(
                    (".debug", ".info", ".warning", ".warn", ".error", ".exception", "log.warn")):
                messages.append(span(node))
            messages += [span(k.value) for k in node.keywords if k.arg in HELP_KEYWORDS]
    return annotations, messages, caches


def _inside(pos: tuple[int, int], spans: Iterable[Span]) -> bool:
    return any(start <= pos < end for start, end in spans)


def _scope_lines(target: Target, rel: str, tree: ast.Module) -> set[int] | None:
    names = target.scope.get(rel)
    if not names:
        return None
    spans = _definition_spans(tree)
    missing = [n for n in names if n not in spans]
    if missing:
        raise SystemExit(f"bench/mutation/targets.py: target {target.name}: {rel} has no {', '.join(missing)}; "
                         "update the target's scope")
    return {line for n in names for line in range(spans[n][0], spans[n][1] + 1)}


def sites(root: Path, target: Target, operator_names: Sequence[str] = operators.ALL_OPERATORS) -> list[Site]:
    """Every mutant of `target` in the checkout at `root`, in file order (cosmic-ray's occurrence numbering: the
    n-th position the operator finds in the module, counted before any filtering)."""
    from cosmic_ray.ast import ast_nodes, get_ast

    found: list[Site] = []
    for rel in target.files(root):
        source = (root / rel).read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        scope = _scope_lines(target, rel, tree)
        annotations, messages, caches = _excluded_spans(tree, lines)
        module = get_ast(source)
        nodes = list(ast_nodes(module))
        markers = {leaf.start_pos for leaf in nodes if leaf.type == "operator" and leaf.parent is not None
                   and leaf.parent.type == "parameters"}  # a bare `*` or `/` in a signature is no arithmetic
        for name in operator_names:
            op = operators.get(name)
            positions = [(start, end) for node in nodes for start, end in op.mutation_positions(node)]
            for occurrence, ((line, col), end) in enumerate(positions):
                if scope is not None and line not in scope:
                    continue
                if PRAGMA in lines[line - 1] or _inside((line, col), annotations) or (line, col) in markers:
                    continue
                if _inside((line, col), messages):
                    continue
                if name == "core/RemoveDecorator" and _inside((line, col), caches):
                    continue
                found.append(Site(rel, name, occurrence, line, col, tuple(end), _definition_at(tree, line),
                                  lines[line - 1]))
    return _keyed(found)


def _definition_at(tree: ast.Module, line: int) -> str:
    best = "<module>"
    for name, (first, last) in _definition_spans(tree).items():
        if first <= line <= last and (best == "<module>" or name.startswith(best + ".")):
            best = name
    return best


def _keyed(found: list[Site]) -> list[Site]:
    seen: dict[str, int] = {}
    out = []
    for s in found:
        indent = len(s.original) - len(s.original.lstrip())
        basis = "\0".join([s.path, s.definition, s.operator, s.original.strip(), str(s.column - indent)])
        n = seen.get(basis, 0)
        seen[basis] = n + 1
        digest = hashlib.sha256(f"{basis}\0{n}".encode()).hexdigest()[:10]
        out.append(Site(**{**asdict(s), "key": digest}))
    return out


# ------------------------------------------------------------------------------------------------ run


def baseline(work: Path, tests: Sequence[str], env: dict[str, str]) -> float:
    start = time.monotonic()
    proc = subprocess.run(shlex.split(test_command(tests)), cwd=work, env={**os.environ, **env},
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise SystemExit(f"the focused tests fail without any mutant ({test_command(tests)}):\n{tail}")
    return seconds


def run_sites(work: Path, found: Sequence[Site], tests: Sequence[str], timeout: float,
              progress: Callable[[int, int, Outcome], None]) -> Iterator[Outcome]:
    """Each site mutated in `work` (the scratch copy; cwd and paths relative to it), its focused tests run."""
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_item import MutationSpec, TestOutcome, WorkerOutcome

    operators.register()
    command = test_command(tests)
    for n, site in enumerate(found, 1):
        start = time.monotonic()
        spec = MutationSpec(module_path=work / site.path, operator_name=site.operator, occurrence=site.occurrence,
                            start_pos=(site.line, site.column), end_pos=site.end)
        result = mutate_and_test([spec], command, timeout)
        seconds = time.monotonic() - start
        if result.worker_outcome != WorkerOutcome.NORMAL:
            status = "error"
        elif result.test_outcome == TestOutcome.KILLED:
            status = "timeout" if result.output == "timeout" else "killed"
        elif result.test_outcome == TestOutcome.SURVIVED:
            status = "survived"
        else:
            status = "error"
        diff = "" if status == "killed" else (result.diff or "").replace(str(work) + "/", "")
        output = "" if status in ("killed", "survived") else (result.output or "")[-2000:]
        outcome = Outcome(site, status, seconds, diff, output)
        progress(n, len(found), outcome)
        yield outcome
