"""The deadline of a signal's exit (tui/exit_signals.py): an app that never gets out still leaves,
with the terminal restored by hand and the signal's exit code."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from cmdop_tui.tui.exit_signals import TERMINAL_RESTORE, signal_exit_code

pytestmark = pytest.mark.fault

WEDGED_APP = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from cmdop_tui.tui.exit_signals import SignalExit

    class WedgedApp:  # asked to exit, it never does
        running = False
        def exit(self, return_code=0):
            sys.stderr.write("asked to exit\\n")

    async def main():
        with SignalExit(WedgedApp(), grace_s=0.5, terminal_fd=1):
            for _ in range(3):
                os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)

    asyncio.run(main())
    """
)


def test_an_app_that_never_exits_is_left_with_the_terminal_restored():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", WEDGED_APP], capture_output=True, timeout=20)
    assert done.returncode == signal_exit_code(15) == 143
    assert done.stdout == TERMINAL_RESTORE.encode()
    assert done.stderr.decode().count("asked to exit") == 1  # the storm's later signals change nothing
    assert time.monotonic() - started < 10
