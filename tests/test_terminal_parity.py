"""A terminal shows the same facts as a pipe (review-newcomer.md §1 #4, #21): the what-if scenario table with its
DOWN rows, the model's limits, the budget's authoritative-answer subtotal, the restore line and the per-tenant RTO
table were piped-only; image tags ended in "…" at 120 columns.

Every word of a section's plain text must appear in its terminal rendering, as often (rules and the column
padding aside), for `hubctl plan` and `hubctl budget`."""

from __future__ import annotations

import io
import re
from collections import Counter
from typing import Any

import pytest

from hubctl import report
from hubctl.output import Output

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BOX = re.compile(r"^[-─━\s]+$")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def words(text: str) -> Counter[str]:
    return Counter(w for line in ANSI.sub("", text).splitlines() if not BOX.match(line) for w in line.split()
                   if not BOX.match(w))


def rendered(sections: list[report.Section], rich: bool) -> str:
    stream = Terminal() if rich else io.StringIO()
    out = Output(stream, io.StringIO())
    assert out.rich is rich
    report.render(out, "header", sections, ["manifests/host.yaml"])
    return stream.getvalue()


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # words stay whole; what is checked is which facts are shown
    monkeypatch.delenv("HUBCTL_PLAIN", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def _sections(plan: Any, stack: str) -> list[report.Section]:
    from tests.support.tools import load_stack

    return report.build(plan, load_stack(stack))


def _missing(sections: list[report.Section]) -> dict[str, Counter[str]]:
    gaps = {}
    for section in sections:
        if section.key not in report.TERMINAL_SECTIONS:
            continue
        plain, rich = words(rendered([section], False)), words(rendered([section], True))
        missing = plain - rich
        if missing:
            gaps[section.key] = missing
    return gaps


def test_every_fact_of_the_plain_plan_is_on_the_terminal(rendered_dev: Any) -> None:
    sections = _sections(rendered_dev, "dev")
    assert not _missing(sections)
    rich = ANSI.sub("", rendered(sections, True))
    for fact in ("authoritative answer without the dead region", "restore (not an RTO term)",
                 "RTO per tenant placement", "limits of this model:", "lose dev-fsn1-a"):
        assert fact in rich, fact


def test_a_region_loss_that_takes_a_tenant_down_is_red_on_the_terminal(rendered_prod: dict[str, Any]) -> None:
    sections = _sections(rendered_prod["prod-fsn1"], "prod-fsn1")
    assert not _missing(sections)
    plain, rich = rendered(sections, False), rendered(sections, True)
    assert plain.count("DOWN") == rich.count("DOWN") == 3
    down_lines = [line for line in rich.splitlines() if "DOWN" in line]
    assert all("\x1b[1;31m" in line for line in down_lines), down_lines


def test_the_budget_command_shows_the_same_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    from hubctl.__main__ import main

    piped, tty = io.StringIO(), Terminal()
    assert main(["budget", "dev"], stdout=piped, stderr=io.StringIO()) == 0
    assert main(["budget", "dev"], stdout=tty, stderr=io.StringIO()) == 0
    missing = words(piped.getvalue()) - words(tty.getvalue())
    assert not missing, missing
    assert "authoritative answer without the dead region" in ANSI.sub("", tty.getvalue())


def test_an_image_tag_is_never_cut_at_120_columns(rendered_dev: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    section = next(s for s in _sections(rendered_dev, "dev") if s.key == "controlPlane")
    rich = ANSI.sub("", rendered([section], True))
    assert "…" not in rich
    joined = "".join(line.strip() for line in rich.splitlines())
    for row in section.table.rows if section.table else []:
        assert row[2].split(":")[-1] in joined
