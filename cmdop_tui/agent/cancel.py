"""The two cancel channels.

* `Operation` — the caller's cancellation, deadline-aware. It is honoured at loop boundaries and
  bounds every wait by the time left, so work in flight is allowed to finish if there is time.
* `UICancel` — the Stop button. Honoured at once, whatever is in flight: the task running the agent
  is cancelled, which raises `CancelledError` at its next await (mid-stream, in a retry backoff, or
  while a command runs, which is then killed).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

CancelReason = Literal["ui", "operation", "deadline"]
T = TypeVar("T")


class Stopped(Exception):
    """The Stop cancelled the work `UICancel.stoppable` ran."""


@dataclass
class Operation:
    """A unit of work with an optional deadline (monotonic seconds) and a cancel flag."""

    deadline: float | None = None
    _cancelled: bool = field(default=False, init=False)

    @classmethod
    def with_timeout(cls, seconds: float | None) -> Operation:
        return cls(deadline=None if seconds is None else time.monotonic() + seconds)

    def cancel(self) -> None:
        self._cancelled = True

    def remaining(self) -> float | None:
        """Seconds left before the deadline, never negative; None when there is no deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def bound(self, seconds: float) -> float:
        """`seconds`, shortened to the time left."""
        left = self.remaining()
        return seconds if left is None else min(seconds, left)

    def stop_reason(self) -> CancelReason | None:
        """Why this operation must stop now, or None to go on."""
        if self._cancelled:
            return "operation"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "deadline"
        return None


class UICancel:
    """The instant cancel signal. `fire()` may be called from any thread.

    The runner binds the task it runs in; firing cancels that task. Firing before a run starts
    (or between runs) is remembered until `reset()` so the next boundary check sees it.
    """

    def __init__(self) -> None:
        self._fired = False
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    @property
    def fired(self) -> bool:
        return self._fired

    @property
    def bound(self) -> bool:
        """Whether a run's task is bound now (`fire()` cancels it); False before a run starts
        its turns and after they end."""
        with self._lock:
            return self._task is not None and not self._task.done()

    def reset(self) -> None:
        self._fired = False

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            task, loop = self._task, self._loop
        if task is None or loop is None or task.done():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)

    @contextmanager
    def bind(self, task: asyncio.Task[object]) -> Iterator[None]:
        """Make `fire()` cancel `task` while the block runs."""
        with self._lock:
            self._task, self._loop = task, task.get_loop()
        try:
            yield
        finally:
            with self._lock:
                self._task = self._loop = None

    async def stoppable(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` as a child task that `fire()` cancels at once: its result, or `Stopped` when
        a Stop came before it was handed back (what the caller does next is what it stops).
        Cancelling the caller cancels the work too, and propagates (that is not a Stop)."""
        task = asyncio.create_task(work)
        with self.bind(task):
            try:
                result = await task
            except asyncio.CancelledError:
                caller = asyncio.current_task()
                if self._fired and caller is not None and caller.cancelling() == 0:
                    raise Stopped from None
                raise
        if self._fired:
            raise Stopped
        return result
