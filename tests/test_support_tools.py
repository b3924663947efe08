"""`require_tool`: skip locally when a tool is missing, fail in CI (KARMADA_HUB_REQUIRE_TOOLS=1)."""

from __future__ import annotations

import pytest

from tests.support.tools import REQUIRE_TOOLS_ENV, require_tool

MISSING = "karmada-hub-no-such-tool-7f3a"


def test_present_binary_and_module_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_TOOLS_ENV, "1")
    assert require_tool("sh").endswith("sh")
    assert require_tool("yaml")


def test_missing_tool_skips_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_TOOLS_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match=MISSING):
        require_tool(MISSING)


def test_missing_tool_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_TOOLS_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=MISSING):
        require_tool(MISSING)
