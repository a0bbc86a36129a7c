"""An editor for tests and benchmarks: the official ACP SDK's client side, recording what the
agent says, answering its permission requests as told, and serving its file requests from a
dict of "unsaved buffers" (or the disk), and running its commands in "terminals" (acp_terminals.py).

    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=...)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        editor.kinds()  # ["available_commands_update", "agent_message_chunk", ...]

`cmdop-tui acp` runs as a child process (`python -m cmdop_tui acp`) over its stdin and stdout.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp_terminals import Terminals


class RecordingEditor:
    """The client side: every notification kept, in order; `wait_for` waits on them (events,
    not time); permission requests answered with `answer` (an option id, or None: cancelled)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []  # (session id, update)
        self.permission_requests: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answer: str | None = "allow_once"
        self.buffers: dict[str, str] = {}  # path -> text the editor holds (unsaved)
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.asked = asyncio.Event()  # set at each permission request
        self.process: Any = None  # the agent's process, once started
        self.terminals = Terminals()  # commands run for the agent (terminal/create), when offered
        self._changed = asyncio.Condition()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self._changed:
            self.updates.append((session_id, update))
            self._changed.notify_all()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append((tool_call, options))
        self.asked.set()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        text = self.buffers[path] if path in self.buffers else Path(path).read_text()
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        chosen = lines[start : start + limit] if limit is not None else lines[start:]
        return ReadTextFileResponse(content="".join(chosen))

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        command: str,
        session_id: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        env: list[EnvVariable] | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        return await self.terminals.create(command, args, env, cwd, output_byte_limit)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        return await self.terminals.output(terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return await self.terminals.wait_for_exit(terminal_id)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        return await self.terminals.kill(terminal_id)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        return await self.terminals.release(terminal_id)

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def of_kind(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for update in self.of_kind(kind))

    async def wait_for(self, ready: Callable[[], bool], timeout: float = 30) -> None:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(ready)


@asynccontextmanager
async def editor_session(
    env: Mapping[str, str], *, cwd: Path, editor: RecordingEditor | None = None, args: Sequence[str] = ()
) -> AsyncIterator[tuple[RecordingEditor, ClientSideConnection]]:
    """`cmdop-tui acp ARGS` started in `cwd` with `env`, and the editor connected to it; the process
    is ended (its stdin closed, then waited for) when the block ends."""
    editor = editor or RecordingEditor()
    command = (sys.executable, "-m", "cmdop_tui", "acp", *args)
    # stderr inherited: what the agent says for people shows in a failing test's output; the agent
    # is given time to close its sessions and leave by itself once its stdin is closed (the SDK's
    # 2 s before SIGTERM is short on a loaded machine)
    transport = {"stderr": None, "shutdown_timeout": 30.0}
    spawned = spawn_agent_process(editor, *command, env=dict(env), cwd=cwd, transport_kwargs=transport)
    try:
        async with spawned as (conn, process):
            editor.process = process
            yield editor, conn
    finally:
        await editor.terminals.close()
