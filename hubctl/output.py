"""How hubctl writes: rich tables and a live progress line on a terminal, plain text when piped, JSON on request.

Piped output (CI logs, `| grep`, files) is plain fixed-width text with no escape codes, so it diffs and
greps; a terminal gets rich tables. `HUBCTL_PLAIN=1` (or `TERM=dumb`) forces plain text on a terminal,
and `NO_COLOR` keeps the tables but drops colour (rich honours it).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO


def is_terminal(stream: TextIO) -> bool:
    if os.environ.get("HUBCTL_PLAIN", "").strip() in ("1", "true", "yes") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


@dataclass
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    title: str = ""
    footer: Sequence[str] = field(default_factory=list)
    """Lines printed under the table (totals, verdicts)."""
    styles: Sequence[str | None] = field(default_factory=list)
    """A terminal style per row (`red` for a DOWN row), by row index; plain text has none."""
    ends_section: Sequence[int] = field(default_factory=list)
    """Row indexes after which the terminal draws a rule (a subtotal's line in plain text)."""

    def plain(self) -> str:
        """Fixed-width columns, two spaces apart, a dashed rule under the header (the format hubctl always had)."""
        cells = [list(self.headers)] + [[str(c) for c in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.headers))]
        lines = [self.title] if self.title else []
        lines.append("  ".join(h.ljust(w) for h, w in zip(self.headers, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells[1:]]
        return "\n".join(lines + list(self.footer))


class Output:
    """One command's stdout (results) and stderr (progress, errors)."""

    def __init__(self, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.rich = is_terminal(self.stdout)

    def text(self, text: str) -> None:
        print(text, file=self.stdout)

    def json(self, value: Any) -> None:
        print(json.dumps(value, indent=2, sort_keys=False, default=str), file=self.stdout)

    def table(self, table: Table) -> None:
        if not self.rich:
            self.text(table.plain())
            return
        from rich import box
        from rich.console import Console
        from rich.table import Table as RichTable
        from rich.text import Text

        console = Console(file=self.stdout, highlight=False, soft_wrap=False)
        # Text, not markup: a cell like "[lab] Unbound ..." is a fact to show, not a style tag to swallow
        rt = RichTable(title=Text(table.title) if table.title else None, title_justify="left", box=box.SIMPLE_HEAD,
                       title_style="bold", header_style="bold")
        for header in table.headers:
            rt.add_column(header, overflow="fold",  # an image tag or a member name wraps, never ends in "…"
                          justify="right" if header == "seconds" else "left")
        for i, row in enumerate(table.rows):
            style = table.styles[i] if i < len(table.styles) else None
            rt.add_row(*(Text(str(c)) for c in row), style=style, end_section=i in table.ends_section)
        console.print(rt)
        for line in table.footer:
            console.print(line, markup=False)

    @contextmanager
    def progress(self, label: str) -> Iterator[Progress]:
        """A live `label… phase (Ns)` line on a terminal's stderr, erased when done; nothing when piped."""
        bar = Progress(self.stderr, label, live=is_terminal(self.stderr))
        bar.start()
        try:
            yield bar
        finally:
            bar.stop()


class Progress:
    def __init__(self, stream: TextIO, label: str, live: bool) -> None:
        self.stream, self.label, self.live = stream, label, live
        self.phase = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set(self, phase: str) -> None:
        self.phase = phase
        self._draw()

    def _draw(self) -> None:
        if not self.live:
            return
        elapsed = time.monotonic() - self._started
        self.stream.write(f"\r\033[K{self.label}… {self.phase} ({elapsed:.0f}s)")
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def start(self) -> None:
        if self.live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
