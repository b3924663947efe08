"""The house's one rule: imports only go down the floors of `components/` (its `__init__` lists them).

Every `import` in every module (function-level and TYPE_CHECKING ones included) is read with `ast`. A module
may import its own package or a floor above it, never a floor below; so no two packages can import each other.
`components/` never imports the tools built on it (hubctl, policy, tests), and `agents/` (programs that run
in pods from a ConfigMap) import only the standard library.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.tools import REPO

FLOORS = ("versions", "kube", "config", "hetzner", "karmada", "fleet", "traffic", "operations", "trust", "roles")
"""`components.<room>` top to bottom, as `components/__init__.py` draws them."""
TOOLS = ("hubctl", "policy", "tests", "agents", "upstream")


def room(module: str) -> str | None:
    """`components.karmada.flags` -> `karmada`; None outside components."""
    parts = module.split(".")
    return parts[1] if parts[0] == "components" and len(parts) > 1 else None


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in `source`; `from pkg import name` yields `pkg.name` too,
    since `name` may be a module."""
    out: list[tuple[int, str]] = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def violations(modules: Mapping[str, str]) -> list[str]:
    """Every import in `modules` ({dotted name: source}) that breaks the floor order, as one line each."""
    found: list[str] = []
    for module, source in sorted(modules.items()):
        here = room(module)
        if here is None:
            continue
        if here not in FLOORS:
            found.append(f"{module}: room '{here}' is not on a floor; add it to components/__init__.py and FLOORS")
            continue
        seen: set[tuple[int, str]] = set()
        for line, target in imported_modules(source, module):
            top = target.split(".")[0]
            if (line, room(target) or top) in seen:
                continue  # `from pkg import name` is one import, reported once
            seen.add((line, room(target) or top))
            if top in TOOLS:
                found.append(f"{module}:{line} imports {target}: components never import the tools built on them")
                continue
            there = room(target)
            if there is None or there == here or there not in FLOORS:
                continue
            if FLOORS.index(there) > FLOORS.index(here):
                found.append(f"{module}:{line} imports {target}: '{there}' is below '{here}' (imports only go down)")
    return found


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(folder: str) -> dict[str, str]:
    return {_dotted(p): p.read_text() for p in sorted((REPO / folder).rglob("*.py"))}


def _in_fresh_interpreter(expression: str) -> Any:
    """`expression` over this module (as `m`), evaluated in a new Python process; its JSON result.

    The whole tree is parsed there, not here: in a process where other tests have already run the program,
    CPython 3.11's `ast.parse` was seen failing with "SystemError: AST constructor recursion depth mismatch",
    depending on test order. A fresh interpreter makes the verdict depend on the sources alone."""
    code = f"import json; import tests.test_layout as m; print(json.dumps({expression}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_components_import_only_down_the_floors() -> None:
    assert _in_fresh_interpreter('m.violations(m._sources("components"))') == []


def test_every_room_is_on_a_floor() -> None:
    rooms = {p.stem if p.is_file() else p.name for p in (REPO / "components").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert rooms <= set(FLOORS), f"rooms without a floor: {sorted(rooms - set(FLOORS))}"
    listed = (REPO / "components" / "__init__.py").read_text()
    for name in rooms:
        assert f"    {name}" in listed, f"components/__init__.py does not list '{name}'"


def agent_helpers() -> set[str]:
    """The helper modules of agents/ (`_incluster`, ...): shipped beside the agents that import them."""
    return {p.stem for p in (REPO / "agents").glob("_*.py") if p.stem != "__init__"}


def agent_imports_outside_stdlib(sources: Mapping[str, str], helpers: Iterable[str] = ()) -> list[str]:
    """Every import of an agent that a pod cannot satisfy: not the standard library, not a helper of agents/
    (imported as the top-level module it is in the pod), or through the `agents` package (a pod has none)."""
    allowed = set(sys.stdlib_module_names) | {"__future__"} | set(helpers)
    found = []
    for module, source in sources.items():
        seen: set[tuple[int, str]] = set()
        for line, target in imported_modules(source, module):
            top = target.split(".")[0]
            if (line, top) in seen:
                continue  # `from pkg import name` is one import, reported once
            seen.add((line, top))
            if top == "agents":
                found.append(f"{module}:{line} imports {target} (a pod has no agents package: import the helper "
                             "as a top-level module)")
            elif top not in allowed:
                found.append(f"{module}:{line} imports {target} (agents are stdlib only)")
    return found


def test_agents_use_only_the_standard_library() -> None:
    assert _in_fresh_interpreter('m.agent_imports_outside_stdlib(m._sources("agents"), m.agent_helpers())') == []
    assert agent_imports_outside_stdlib({"agents.x": "import yaml\n"}) == ["agents.x:1 imports yaml (agents are "
                                                                             "stdlib only)"]
    assert agent_imports_outside_stdlib({"agents.x": "import _incluster\n"}, {"_incluster"}) == []
    assert agent_imports_outside_stdlib({"agents.x": "import _elsewhere\n"}, {"_incluster"}) == [
        "agents.x:1 imports _elsewhere (agents are stdlib only)"]
    (found,) = agent_imports_outside_stdlib({"agents.x": "from agents import _incluster\n"}, {"_incluster"})
    assert "a pod has no agents package" in found


def unshipped_helper_imports(sources: Mapping[str, str], helpers: Iterable[str]) -> list[str]:
    """Every import of a helper that the agent's ConfigMap would not carry: components/kube/agent_script.py
    ships the helpers a script imports at the top of the file (`import _x` / `from _x import ...`, one module
    per statement); an import anywhere else would be missing in the pod."""
    from components.kube import agent_script

    names = set(helpers)
    found = []
    for module, source in sorted(sources.items()):
        shipped = set(agent_script.program(module.rsplit(".", 1)[-1] + ".py", source))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module.split(".")[0]]
            else:
                continue
            for target in targets:
                if target in names and (f"{target}.py" not in shipped or node.col_offset != 0):
                    found.append(f"{module}:{node.lineno} imports {target} where the ConfigMap does not ship it "
                                 "(import it alone, at the top of the file)")
    return found


def test_every_helper_an_agent_imports_is_shipped_with_it() -> None:
    assert _in_fresh_interpreter('m.unshipped_helper_imports(m._sources("agents"), m.agent_helpers())') == []
    assert _in_fresh_interpreter('m.unshipped_helper_imports({"agents.x": "import _incluster\\n"}, '
                                 'm.agent_helpers())') == []
    for source in ("def f():\n    import _incluster\n", "import os, _incluster\n",
                   "try:\n    import _incluster\nexcept ImportError:\n    pass\n"):
        found = _in_fresh_interpreter(f'm.unshipped_helper_imports({{"agents.x": {source!r}}}, m.agent_helpers())')
        assert len(found) == 1 and "does not ship it" in found[0], (source, found)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("components.config", "from components.karmada import flags\n", "'karmada' is below 'config'"),
        ("components.kube.objects", "def f():\n    from components.fleet import member\n", "'fleet' is below 'kube'"),
        ("components.traffic.dns", "from ..operations import budget\n", "'operations' is below 'traffic'"),
        ("components.karmada.flags", "import hubctl.plan\n", "never import the tools"),
        ("components.attic.x", "import os\n", "is not on a floor"),
    ],
)
def test_an_upward_import_is_caught(module: str, source: str, expected: str) -> None:
    (found,) = violations({module: source})
    assert expected in found


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("components.fleet.member", "from components.karmada import flags\nfrom components.kube import tls\n"),
        ("components.fleet.member", "from . import member_docs\nfrom .policy_docs import x\n"),
        ("components.versions", "import re\n"),
    ],
)
def test_downward_and_same_room_imports_pass(module: str, source: str) -> None:
    assert violations({module: source}) == []



def test_docs_architecture_names_every_module() -> None:
    """docs/architecture.md is the map of the house; a module it does not name is a room nobody can find."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    for path in sorted((REPO / "components").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        rel = path.relative_to(REPO / "components")
        folder = len(rel.parts) > 2 and f"`{rel.parent}/`" in doc  # a sub-package named as a whole (karmada/flags/)
        named = f"`components/{rel}`" in doc or f"`{path.name}`" in doc or folder
        assert named, f"docs/architecture.md does not name components/{rel}"
