"""Signals that end the app end it cleanly, with the terminal as it was.

SIGTERM, SIGHUP (the terminal went away: an SSH link dropped), SIGQUIT and SIGINT (from another
process: at the keyboard ctrl+c and ctrl+\\ are keys, the terminal sends no signal in raw mode)
would kill the app where it stands, leaving the alternate screen and mouse reporting on. Here the
first of them stops a running turn (its command is killed, the history repaired and recorded),
then asks the app to exit: the session closes (transcript, machines, local model) and Textual
restores the terminal. Later signals, a storm of them, change nothing. If that takes longer than
`SHUTDOWN_GRACE_S` (a wedged write to a terminal that is gone), the restore sequences are written
directly and the process leaves; its children end by their parent-death signal.

The exit code is 128 + the signal's number: 129 (HUP), 130 (INT), 131 (QUIT), 143 (TERM).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from contextlib import suppress
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cmdop_tui.tui.app import CmdopApp

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT)
TURN_STOP_S = 1.5  # a running turn's wait to stop and record it, before the app exits anyway
SHUTDOWN_GRACE_S = 4.0  # from the signal to leaving, whatever the app is doing
WRITE_WAIT_S = 0.5  # the direct restore's write, to a terminal that may never take it
TERMINAL_RESTORE = (
    "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l"  # mouse reporting off
    "\x1b[?1004l"  # focus reports off
    "\x1b[?2004l"  # bracketed paste off
    "\x1b[?1049l"  # the alternate screen left
    "\x1b[?25h"  # the cursor shown
)


def signal_exit_code(signum: int) -> int:
    return 128 + signum


class SignalExit:
    """Held around `CmdopApp.run()`: the handlers for `EXIT_SIGNALS`, and `code` once one came."""

    def __init__(self, app: CmdopApp, *, grace_s: float = SHUTDOWN_GRACE_S, terminal_fd: int | None = None) -> None:
        self.app = app
        self.grace_s = grace_s
        self.terminal_fd = sys.__stderr__.fileno() if terminal_fd is None and sys.__stderr__ else terminal_fd
        self.received: int | None = None
        self._finished = threading.Event()
        self._previous: dict[int, Any] = {}
        self._leaving: asyncio.Task[None] | None = None

    @property
    def code(self) -> int | None:
        return None if self.received is None else signal_exit_code(self.received)

    def __enter__(self) -> SignalExit:
        for signum in EXIT_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._received)
        return self

    def __exit__(self, *exc: object) -> None:
        self._finished.set()
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _received(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is not None:
            return  # one signal decides; the rest of a storm must not interrupt the exit
        self.received = signum
        threading.Thread(target=self._deadline, name="signal-exit-deadline", daemon=True).start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app's loop is not running (yet): nothing to close
            self._leave_now()
            return
        loop.call_soon_threadsafe(self._start_leaving)

    def _start_leaving(self) -> None:
        self._leaving = asyncio.get_running_loop().create_task(self._leave())

    async def _leave(self) -> None:
        app = self.app
        if app.running:
            app.ui_cancel.fire()
            turn = [worker for worker in app.workers if worker.group == "agent"]
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(app.workers.wait_for_complete(turn), TURN_STOP_S)
        app.exit(return_code=self.code or 0)

    def _deadline(self) -> None:
        if not self._finished.wait(self.grace_s):
            self._leave_now()

    def _leave_now(self) -> None:
        """Restore the terminal by hand and leave, without waiting for anything that may hang."""
        if self.terminal_fd is not None:
            writer = threading.Thread(target=self._write_restore, name="signal-exit-restore", daemon=True)
            writer.start()
            writer.join(WRITE_WAIT_S)
        os._exit(self.code or 1)

    def _write_restore(self) -> None:
        assert self.terminal_fd is not None
        with suppress(OSError):
            os.write(self.terminal_fd, TERMINAL_RESTORE.encode())
