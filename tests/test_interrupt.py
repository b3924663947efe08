"""Ctrl-C ends every command in one line within a second or two (review-newcomer.md §1 #11): 16 SIGINTs during
`hubctl plan prod-hub` gave 2 floods of thousands of "Task was destroyed but it is pending!" lines and one hang of
over ten minutes (the interpreter joining engine threads that waited on a loop that no longer ran)."""

from __future__ import annotations

import asyncio
import gc
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.tools import REPO, program_env

DELAYS = (1.5, 2.5, 3.5, 5.0)
"""Seconds after start: importing, then registering resources under the mock engine (where the floods were)."""
ENDS_WITHIN = 10.0
"""A guard, not a speed target: the measured end is well under two seconds."""


def _default_sigint() -> None:
    """A child of a background job inherits SIGINT ignored; a terminal's Ctrl-C reaches a foreground command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_plan_is_one_line(tmp_path: Path) -> None:
    interrupted = 0
    for delay in DELAYS:
        proc = subprocess.Popen([sys.executable, "-m", "hubctl", "plan", "prod-hub", "--out", str(tmp_path / "out")],
                                cwd=REPO, env=program_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_default_sigint)
        try:
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            _, err = proc.communicate(timeout=ENDS_WITHIN)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        if proc.returncode == 0:
            continue  # finished before the signal (a fast machine): nothing to interrupt
        interrupted += 1
        lines = err.decode(errors="replace").splitlines()
        assert proc.returncode == 130, (delay, proc.returncode, lines[:5])
        assert lines == ["interrupted"], (delay, len(lines), lines[:5])
        assert took < ENDS_WITHIN
    assert interrupted >= 2, "the plan finished before most signals: use a bigger stack"


def test_an_abandoned_run_drops_its_pending_registrations_silently(capfd: pytest.CaptureFixture[str]) -> None:
    """What a Ctrl-C inside the program leaves: pending tasks on a loop that is closed, collected later."""
    from hubctl.plan import abandon

    loop = asyncio.new_event_loop()

    async def registration() -> None:
        await asyncio.sleep(3600)

    async def program() -> None:
        for _ in range(200):
            asyncio.get_running_loop().create_task(registration())
        await asyncio.sleep(0)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        try:
            loop.run_until_complete(program())
        except BaseException:
            abandon(loop)
            raise
    loop.close()
    del loop
    gc.collect()
    captured = capfd.readouterr()
    assert "Task was destroyed" not in captured.err and "never awaited" not in captured.err


def test_a_library_warning_about_the_interrupt_is_no_second_line() -> None:
    """pydantic-core turns a KeyboardInterrupt that lands inside a serializer into a UserWarning printed before
    `interrupted` (seen in test_ctrl_c_during_a_plan_is_one_line under load): after Ctrl-C, warnings are silent
    until the command ends, then the filters are what they were."""
    code = (
        "import os, signal, sys, warnings\n"
        "from hubctl.__main__ import _CtrlC\n"
        "before = list(warnings.filters)\n"
        "with _CtrlC() as ctrl_c:\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        for _ in range(10**7):\n"
        "            pass\n"
        "    except KeyboardInterrupt:\n"
        "        warnings.warn('PydanticSerializationUnexpectedValue: KeyboardInterrupt', UserWarning)\n"
        "assert ctrl_c.pressed\n"
        "print(warnings.filters == before)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=program_env(), capture_output=True, text=True,
                          timeout=60, preexec_fn=_default_sigint)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.strip() == "True"
