"""Suite-wide fixtures: the dev stack's raw config and one offline run of the real program.

Most tests run the program, which needs the pinned Karmada CRDs (components/karmada/crds.py). When no copy
is on this machine and none can be downloaded, every failing test is reported as skipped with that one reason
(how to get them), instead of a hundred failures; with KARMADA_HUB_REQUIRE_TOOLS=1 (CI) they stay failures.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from tests.support.tools import REPO, load_dev_raw, require_tool, tools_required

__all__ = ["REPO", "require_tool"]

_CRDS_MISSING: list[str] = []


def crds_unavailable() -> str | None:
    """Why the pinned CRDs cannot be read offline (after one verified download attempt), or None."""
    from components.karmada import crds

    version = crds.WORKSPACE_VERSION

    def complete() -> bool:
        source = crds.crds_source_dir()
        return source is not None and all((source / rel).is_file() for rel in crds.CRD_SHA256[version])

    if complete():
        return None
    try:
        crds.load_crds(version, allow_download=os.environ.get("KARMADA_HUB_NO_DOWNLOAD") != "1")
    except crds.CrdIntegrityError as exc:
        return str(exc)
    return None if complete() else f"no complete copy of the Karmada {version} CRDs: {crds.layout_hint(version)}"


def pytest_sessionstart(session: pytest.Session) -> None:
    reason = crds_unavailable()
    if reason:
        _CRDS_MISSING.append(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if _CRDS_MISSING and report.failed and not tools_required():
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           "Skipped: the Karmada CRDs are not available offline (see the line at the end)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _CRDS_MISSING:
        verdict = "failures stay failures (KARMADA_HUB_REQUIRE_TOOLS=1)" if tools_required() else \
            "tests that failed without them are reported as skipped"
        terminalreporter.write_line(f"Karmada CRDs not available offline; {verdict}: {_CRDS_MISSING[0]}")


@pytest.fixture(scope="session")
def _dev_raw_pristine() -> tuple[dict[str, Any], frozenset[str]]:
    return load_dev_raw(REPO)


@pytest.fixture
def dev_raw(_dev_raw_pristine: tuple[dict[str, Any], frozenset[str]]) -> tuple[dict[str, Any], frozenset[str]]:
    """`(raw, secret_keys)` of stacks/Pulumi.dev.yaml; a fresh deep copy per test, safe to mutate."""
    raw, secrets = _dev_raw_pristine
    return copy.deepcopy(raw), secrets


@pytest.fixture(scope="module")
def pki() -> Any:
    """The readiness tests' throwaway PKI (tests/support/testpki.py), made once per module."""
    from tests.support.testpki import readiness_pki

    return readiness_pki()


@pytest.fixture(scope="session")
def rendered_dev() -> Any:
    """The dev stack run once under the recording mock monitor (`hubctl.plan.Plan`).

    `records[*].inputs` are unredacted with secret wrappers; use `hubctl.mocks.unwrap` to read them.
    """
    from hubctl.plan import run_program
    from hubctl.stackfile import read_stack

    return run_program(REPO, read_stack(REPO, "dev"))


def to_hetzner_mode(dns: dict[str, Any]) -> None:
    """A stack file's dns section as a stack in dns.mode hetzner writes it (external-dns, TTL 60)."""
    dns.pop("selfHosted", None)
    dns.update(mode="hetzner", ttl=60, txtOwnerId="karmada-hub-dev", intervalSeconds=60)


@pytest.fixture(scope="session")
def rendered_dev_hetzner() -> Any:
    """The dev stack in dns.mode hetzner (no example stack runs it any more; its path is still the program's)."""
    from hubctl.plan import run_program
    from tests.support.tools import edited_stack

    return run_program(REPO, edited_stack("dev", {"dns": to_hetzner_mode}))


@pytest.fixture(scope="session")
def rendered_prod_hub() -> Any:
    """prod-hub run once offline; region-stack tests read its outputs as their StackReference."""
    from hubctl.plan import run_program
    from hubctl.stackfile import read_stack

    return run_program(REPO, read_stack(REPO, "prod-hub"))


@pytest.fixture
def tool() -> Any:
    """`tool("openssl")` inside a test: the same as `require_tool`, as a fixture for convenience."""
    return require_tool


@pytest.fixture(scope="session")
def rendered_prod(rendered_prod_hub: Any) -> dict[str, Any]:
    """prod-hub, then each region stack planned with the hub plan's outputs as its StackReference."""
    from hubctl.commands import load_config
    from hubctl.plan import run_program

    plans = {"prod-hub": rendered_prod_hub}
    for stack in ("prod-fsn1", "prod-hel1", "prod-ash"):
        cfg, config = load_config(REPO, stack)
        assert config.hub_stack is not None
        plans[stack] = run_program(REPO, cfg, {config.hub_stack.stack: rendered_prod_hub.as_stack_reference()})
    return plans
