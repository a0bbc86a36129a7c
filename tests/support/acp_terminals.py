"""The editor's terminals for the test editor (acp_client.py): `terminal/create` runs the command
for real (its own process group, stdout and stderr as one stream, the tail kept within the byte
limit asked), and the other terminal methods read, wait for, kill and release it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field

from acp.schema import (
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)


@dataclass
class Terminal:
    """One command the editor runs, and what it printed."""

    command: str
    args: list[str]
    cwd: str | None
    process: asyncio.subprocess.Process
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None
    killed: bool = False
    released: bool = False
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # set once released

    async def read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True

    def kill(self) -> None:
        if self.process.returncode is None:
            self.killed = True
            # Reaped by asyncio's watcher, its exit not yet delivered to the loop: already gone
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def status(self) -> TerminalExitStatus:
        code = self.process.returncode
        if code is not None and code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)


class Terminals:
    """The terminals an editor made, by id; every one kept to be looked at after."""

    def __init__(self) -> None:
        self.made: dict[str, Terminal] = {}
        self.started = asyncio.Event()  # set once a terminal runs

    async def create(
        self, command: str, args: list[str] | None, env: list[EnvVariable] | None, cwd: str | None, limit: int | None
    ) -> CreateTerminalResponse:
        environ = {**os.environ, **{variable.name: variable.value for variable in env or []}}
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=environ, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        terminal = Terminal(command, list(args or []), cwd, process, limit)
        terminal.reader = asyncio.create_task(terminal.read())
        terminal_id = f"term-{len(self.made) + 1}"
        self.made[terminal_id] = terminal
        self.started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def output(self, terminal_id: str) -> TerminalOutputResponse:
        terminal = self.made[terminal_id]
        if terminal.process.returncode is not None and terminal.reader is not None:
            await terminal.reader  # all of it, once it ended
        text = terminal.output.decode("utf-8", "replace")
        exited = terminal.status() if terminal.process.returncode is not None else None
        return TerminalOutputResponse(output=text, truncated=terminal.truncated, exit_status=exited)

    async def wait_for_exit(self, terminal_id: str) -> WaitForTerminalExitResponse:
        terminal = self.made[terminal_id]
        await terminal.process.wait()
        status = terminal.status()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill(self, terminal_id: str) -> KillTerminalResponse:
        self.made[terminal_id].kill()
        return KillTerminalResponse()

    async def release(self, terminal_id: str) -> ReleaseTerminalResponse:
        terminal = self.made[terminal_id]
        terminal.kill()
        await terminal.process.wait()
        terminal.released = True
        terminal.gone.set()
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        """End whatever still runs (a test that failed midway leaves no process behind)."""
        for terminal in self.made.values():
            terminal.kill()
            await terminal.process.wait()
            if terminal.reader is not None:
                await terminal.reader
