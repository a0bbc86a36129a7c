"""A command run under a supervisor (support/supervisor.py), seen from the event loop.

The supervisor, not the app, is the command's parent; it tells the command's pid and exit code on
a status pipe, and kills the command's whole tree when the app closes the control pipe or dies.
`spawn_contained` gives None on a system without supervisors (not Linux): the caller then starts
the command itself. On Linux a supervisor that cannot start refuses the command
(`containment.ContainmentUnavailable`, an OSError): it is never run uncontained.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from cmdop_tui.support import containment
from cmdop_tui.support.processes import kill_process_group

__all__ = ["ContainedChild", "spawn_contained"]

READ_CHUNK = 64 * 1024


class ContainedChild:
    """A running command: its pid (= its process group), output readers, exit code and events.

    `exited` is set when the command has exited (or its supervisor is gone), `done` when the
    supervisor has exited (so everything the command started is gone too).
    """

    def __init__(
        self,
        pid: int,
        readers: tuple[asyncio.StreamReader, asyncio.StreamReader, asyncio.StreamReader],
        transports: list[asyncio.BaseTransport],
        status_fd: int,
        control_fd: int,
    ) -> None:
        self.pid = pid
        self.stdout, self.stderr, self._status = readers
        self._transports = transports
        self._status_fd = status_fd  # a duplicate, kept with `control` while jobs run
        self._control: int | None = control_fd
        self.returncode: int | None = None
        self.exited = asyncio.Event()
        self.done = asyncio.Event()
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        try:
            while line := await self._status.readline():
                kind, _, value = line.decode(errors="replace").partition(" ")
                if kind == "exit":
                    self.returncode = int(value)
                    self.exited.set()
            if not self.exited.is_set():  # the supervisor was killed (not by us): end the command
                kill_process_group(self.pid)
        finally:
            self.exited.set()
            self.done.set()

    def kill(self) -> None:
        """SIGKILL the process group now, and have the supervisor kill every other descendant."""
        kill_process_group(self.pid)
        if self._control is not None:
            os.close(self._control)
            self._control = None

    def close(self) -> None:
        """Release the pipes. A supervisor still minding background jobs is handed to
        `containment.keep`: the jobs live on while the app does (or until the session ends)."""
        self._watcher.cancel()
        for transport in self._transports:
            transport.close()
        if self._control is not None and not self.done.is_set():
            containment.keep(self._status_fd, self._control)
        else:
            if self._control is not None:
                os.close(self._control)
            os.close(self._status_fd)
        self._control = None


async def _reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", buffering=0)
    )
    return reader, transport


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


async def spawn_contained(
    argv: list[str],
    cwd: Path | None,
    env: Mapping[str, str] | None = None,
    opens: Sequence[Path] = (),
    output_fd: int | None = None,
) -> ContainedChild | None:
    """Start `argv` under a supervisor (with `env`, and `opens` open for reading as fds 3, 4...);
    None on a system without supervisors. OSError when it cannot start (a missing program, a bad
    directory, no supervisor on Linux), ValueError for a NUL byte. `output_fd`: the command's
    stdout and stderr go straight there (its readers then end at once: nothing passes the app)."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    status_read, status_write = os.pipe()
    control_read, control_write = os.pipe()
    ours = [out_read, err_read, status_read, control_write]
    outputs = (out_write, err_write) if output_fd is None else (output_fd, output_fd)
    try:
        sent = containment.launch(argv, cwd, (*outputs, status_write, control_read), env, opens)
    except BaseException:
        _close_all(ours)
        raise
    finally:
        _close_all([out_write, err_write, status_write, control_read])  # the supervisor has its own
    if not sent:
        _close_all(ours)
        return None
    return await _connect(out_read, err_read, status_read, control_write)


async def _connect(out_read: int, err_read: int, status_read: int, control_write: int) -> ContainedChild:
    """Read the supervisor's first word (the pid, or why the command did not start)."""
    transports: list[asyncio.BaseTransport] = []
    status_copy = os.dup(status_read)
    pending = [out_read, err_read, status_read]
    try:
        readers = []
        while pending:
            reader, transport = await _reader(pending.pop(0))
            readers.append(reader)
            transports.append(transport)
        kind, _, value = (await readers[2].readline()).decode(errors="replace").strip().partition(" ")
        if kind == "pid":
            stdout, stderr, status = readers
            return ContainedChild(int(value), (stdout, stderr, status), transports, status_copy, control_write)
        errno, _, reason = value.partition(" ")
        raise OSError(int(errno or 0), reason or "the supervisor exited")
    except BaseException:  # a Stop while starting kills whatever started (the control pipe closes)
        _close_all([*pending, status_copy, control_write])
        for transport in transports:
            transport.close()
        raise
