"""Where background jobs' output is written: a thread of its own, so that a disk holding writes
back (the kernel throttles a process that dirties pages faster than they are written) stalls
that thread, never the event loop the app's keys and frames run on.

Writes keep their order per file; a file is closed after everything queued for it is written,
and then its `done` callback runs (on the event loop that asked). What waits in the queue is
bounded: past MAX_QUEUED bytes the caller waits until the thread has caught up (losing nothing
matters more than a smooth screen then).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["MAX_QUEUED", "OutputWriter"]

MAX_QUEUED = 32 * 1024 * 1024
CATCH_UP_S = 0.001

# fd, then data and on_error(why), or None (close it) and done()
_Item = tuple[int, bytes | None, Callable[..., None]]


class OutputWriter:
    """One writer thread for a session's job files, started on the first write."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._queued = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def write(self, fd: int, data: bytes, on_error: Callable[[str], None]) -> None:
        """Queue `data` for `fd`; `on_error(why)` is called (in the thread) when it fails."""
        self._started()
        while self._queued > MAX_QUEUED:  # the disk is slower than the jobs: wait for it
            time.sleep(CATCH_UP_S)
        with self._lock:
            self._queued += len(data)
        self._queue.put((fd, data, on_error))

    def close(self, fd: int, done: Callable[[], None]) -> None:
        """Close `fd` once what was queued for it is written; then `done()` on this event loop."""
        self._started()
        loop = asyncio.get_running_loop()

        def closed() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: no one waits any more
                loop.call_soon_threadsafe(done)

        self._queue.put((fd, None, closed))

    def stop(self) -> None:
        """End the thread once the queue is empty (a later write starts a new one)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)

    def _started(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="cmdop job output", daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            fd, data, then = item
            if data is None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                then()
                continue
            try:
                _write_all(fd, data)
            except OSError as exc:  # a full disk: said in the job's state, the command goes on
                then(f"output file not written: {exc.strerror or exc}")
            finally:
                with self._lock:
                    self._queued -= len(data)


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd` (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
