"""A command's timeout that the one who started it may lift while it runs.

A foreground command the person sends to the background (Ctrl+B, tools/job_move.py) runs on as
a job, and a job ends when its command does or is killed: the timeout it was started with, a
foreground call's, no longer holds. The command's coroutine was started long before, deep in a
machine's `run_command`, so the lift reaches it through a context variable: the mover sets a
`TimeoutHold` in the context the command's task runs in, `run_process` hands it the timer it
waits under, and `lift()` takes that timer's deadline away.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

__all__ = ["TIMEOUT_HOLD", "TimeoutHold"]


class TimeoutHold:
    """The timers of the commands run in one context; `lift()` takes their deadlines away
    (those met after it too)."""

    def __init__(self) -> None:
        self.lifted = False
        self._timers: list[asyncio.Timeout] = []

    def hold(self, timer: asyncio.Timeout) -> None:
        """A command waits under `timer`: lifted now if the hold is, or when it is."""
        if self.lifted:
            timer.reschedule(None)
        else:
            self._timers.append(timer)

    def lift(self) -> None:
        self.lifted = True
        for timer in self._timers:
            if not timer.expired():
                timer.reschedule(None)


TIMEOUT_HOLD: ContextVar[TimeoutHold | None] = ContextVar("cmdop_timeout_hold", default=None)
