"""Exit codes and the one-line error every hubctl command ends with (never a traceback).

| code | meaning |
|---|---|
| 0 | ok (for `diff`: the diff was written, whatever it contains) |
| 1 | findings: policy violations, a rollout stack that failed, the secret guard refusing to write a file |
| 2 | user error: anything a user can type or commit (stack files, flags, paths, a missing Pulumi CLI) |
| 3 | internal error: a bug in hubctl or the program; `HUBCTL_DEBUG=1` prints the traceback |

The codes follow the Pulumi CLI's own 0/1/2 (pkg/cmd/pulumi/cmd/exit_codes.go: 2 is "configuration
error: invalid flags, config or invocation"), and deliberately not Terraform's `-detailed-exitcode`, where
2 means "there is a diff".
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import traceback
from typing import TextIO

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USER = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEBUG_ENV = "HUBCTL_DEBUG"
INTERRUPTED = threading.Event()
"""Set when Ctrl-C reached the running command (hubctl.__main__): what it leaves behind is no further error."""


class UserError(Exception):
    """A user-fixable problem; `str()` is the one line to print (naming the file or flag and the fix)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix (argparse itself prints usage + message)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USER)


_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(-----END [A-Z0-9 ]+-----|$)", re.S)
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{48,}")


def scrub(text: str, limit: int = 300, tokens: bool = True) -> str:
    """One line without PEM blocks (and, for messages hubctl did not write, without long tokens: keys, base64)."""
    text = _PEM.sub("[PEM block not shown]", text)
    if tokens:
        text = _LONG_TOKEN.sub("[long value not shown]", text)
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def classify(exc: BaseException) -> tuple[int, str]:
    """(exit code, the one line to print) for any exception that reached the top of a command."""
    def loaded(module: str, name: str) -> tuple[type, ...]:
        """The class if its module was imported (an exception of a module never imported cannot be here): the
        error path stays as quick as the command that failed, instead of importing pulumi to name the error."""
        found = getattr(sys.modules.get(module), name, None)
        return (found,) if isinstance(found, type) else ()

    user = (UserError, *loaded("components.config", "ConfigError"), *loaded("hubctl.rollout", "RolloutError"),
            *loaded("components.karmada.crds", "CrdIntegrityError"))
    if isinstance(exc, user):
        return EXIT_USER, f"error: {scrub(str(exc), 2000, tokens=False)}"
    if isinstance(exc, loaded("hubctl.plan", "SecretLeak")):
        return EXIT_FINDINGS, f"error: {scrub(str(exc), tokens=False)}"
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_USER, f"error: not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        where = f"{exc.filename}: " if exc.filename else ""
        return EXIT_USER, f"error: {where}{exc.strerror or scrub(str(exc), tokens=False)}"
    kind = type(exc).__name__
    detail = scrub(str(exc)) or "(no message)"
    return EXIT_INTERNAL, (f"internal error: {kind}: {detail} — a bug in hubctl or the program, not in your input; "
                           f"rerun with {DEBUG_ENV}=1 for the traceback and report it")


def report(exc: BaseException, stderr: TextIO) -> int:
    """Print the one line for `exc` (and the traceback when HUBCTL_DEBUG=1); return the exit code."""
    code, line = classify(exc)
    if os.environ.get(DEBUG_ENV, "").strip() in ("1", "true", "yes"):
        traceback.print_exception(exc, file=stderr)
    print(line, file=stderr)
    return code
