"""Shared test helpers: the repo root, stack loading, and `require_tool` for external programs.

`require_tool(name)` skips a test when a binary (on PATH) or an importable module is missing, so a
laptop without cloud-init or openssl still runs the rest. CI sets `KARMADA_HUB_REQUIRE_TOOLS=1`; then
a missing tool fails the test instead, so a broken CI image can never turn into silently skipped checks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRE_TOOLS_ENV = "KARMADA_HUB_REQUIRE_TOOLS"
DEV_STACK_FILE = "stacks/Pulumi.dev.yaml"


def tools_required() -> bool:
    return os.environ.get(REQUIRE_TOOLS_ENV, "").strip() in ("1", "true", "yes")


def _tool_present(name: str) -> str | None:
    """Where the tool is (a path for binaries, a module origin for Python modules), or None."""
    path = shutil.which(name)
    if path:
        return path
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        return spec.origin or name
    return None


def require_tool(name: str, why: str = "") -> str:
    """Return where `name` is; skip the test if missing, or fail it when KARMADA_HUB_REQUIRE_TOOLS=1."""
    found = _tool_present(name)
    if found:
        return found
    message = f"required tool '{name}' is not installed" + (f" ({why})" if why else "")
    if tools_required():
        pytest.fail(f"{message}; {REQUIRE_TOOLS_ENV}=1 forbids skipping", pytrace=False)
    pytest.skip(message)
    raise AssertionError("unreachable")  # pragma: no cover - pytest.skip raises


def stack_values(stack: str = "dev", repo: Path = REPO) -> tuple[dict[str, Any], frozenset[str]]:
    """A stack's `karmada-hub:*` values (prefix stripped, decoded, `secure:` as placeholders) and its secret
    key names, read by the same code `hubctl plan` uses."""
    from hubctl.stackfile import read_stack

    return read_stack(repo, stack).project_values()


def load_dev_raw(repo: Path = REPO) -> tuple[dict[str, Any], frozenset[str]]:
    return stack_values("dev", repo)


def load_stack(stack: str = "dev", **overrides: Any) -> Any:
    """The stack's validated FleetConfig, as `pulumi up` would see it offline; `overrides` replace top-level keys."""
    from components.config import FleetConfig

    raw, secrets = stack_values(stack)
    return FleetConfig.from_mapping({**raw, **overrides}, f"stacks/Pulumi.{stack}.yaml", secrets)


def edited_stack(stack: str, edits: Mapping[str, Callable[[Any], None]], repo: Path = REPO) -> Any:
    """The stack as `hubctl plan` reads it, each named `karmada-hub:<key>` value (structured config, JSON)
    edited in place by its function; ready for `hubctl.plan.run_program`."""
    import dataclasses
    import json

    from hubctl.stackfile import read_stack

    stack_cfg = read_stack(repo, stack)
    config = dict(stack_cfg.config)
    for key, edit in edits.items():
        value = json.loads(config[f"karmada-hub:{key}"])
        edit(value)
        config[f"karmada-hub:{key}"] = json.dumps(value)
    return dataclasses.replace(stack_cfg, config=config)


PROGRAM_PARTS = ("agents", "components", "hubctl", "stacks")


def copy_program(dest: Path, repo: Path = REPO) -> Path:
    """The program (`__main__.py`, `Pulumi.yaml`, agents/, components/, hubctl/, stacks/) in `dest`, for CLI runs on
    edited stacks."""
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(repo / "__main__.py", dest / "__main__.py")
    shutil.copy2(repo / "Pulumi.yaml", dest / "Pulumi.yaml")  # its config declarations apply to every stack file
    for folder in PROGRAM_PARTS:
        shutil.copytree(repo / folder, dest / folder, ignore=ignore)
    return dest


def program_env(**extra: str) -> dict[str, str]:
    """Environment for a copied program: files it finds next to the real repo (the pinned Karmada CRDs)
    are pointed at explicitly, since the copy has no `../shared` of its own."""
    from components.karmada.crds import CRDS_DIR_ENV, workspace_crds_dir

    env = {**os.environ, **extra}
    crds = workspace_crds_dir(REPO)
    if CRDS_DIR_ENV not in env and crds is not None:
        env[CRDS_DIR_ENV] = str(crds)
    return env


def require_upstream(*names: str) -> dict[str, Path]:
    """The upstream binaries (`make upstream`) at the pinned versions, and root for network namespaces; skip the
    test with one reason when they are missing, or fail it where KARMADA_HUB_REQUIRE_TOOLS=1."""
    from tests.support.kubelet.network import unavailable_reason
    from upstream.build import binary

    found = {name: binary(name) for name in names}
    missing = sorted(name for name, path in found.items() if path is None)
    reason = (f"upstream binaries not built: {', '.join(missing)} (run `make upstream`)" if missing
              else unavailable_reason())
    if reason:
        if tools_required():
            pytest.fail(f"{reason}; {REQUIRE_TOOLS_ENV}=1 forbids skipping", pytrace=False)
        pytest.skip(reason)
    return {name: path for name, path in found.items() if path is not None}
