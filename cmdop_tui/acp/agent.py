"""`OperatorAgent`: the ACP agent, one `Session` per editor session, driving the one loop.

    initialize        the protocol version, what we offer (loadSession, embedded context, MCP
                      over http and sse), how to authenticate (the API key: environment or settings)
    session/new       a Session in the editor's folder, the editor's MCP servers beside ours;
                      its id is the transcript's, so `--resume ID` takes it to the TUI
    session/list      our transcripts recorded in the editor's folder (listing.py)
    session/load      a transcript (the TUI's, headless mode's, an editor's) continued, its
                      history told again as notifications first (replay.py)
    session/prompt    `Session.run`, its events as notifications (updates.py); the stop reason
    session/cancel    `Session.stop()`: the UI cancel channel, instant
    session/set_mode  the permission mode (default, accept_edits, plan, auto, strict)

Approvals go to the editor (permission.py); slash commands are listed and run (commands.py);
the editor's files are read and written through it when it offers to (client_files.py).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp import Client, RequestError, run_agent, update_agent_message_text
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AuthenticateResponse,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SetSessionModeResponse,
    StopReason,
)
from acp.stdio import _WritePipeProtocol

from cmdop_tui.acp.editor_session import EditorSession
from cmdop_tui.acp.first_answer import AUTH_METHOD, FirstMessage, initialize_answer
from cmdop_tui.acp.listing import listed_sessions
from cmdop_tui.acp.mcp_servers import McpServer, with_editor_servers
from cmdop_tui.acp.prompts import PromptBlock, prompt_text
from cmdop_tui.acp.replay import replay
from cmdop_tui.agent.outcome import STOPPED_BY_USER, RunResult, Status
from cmdop_tui.config.settings import Settings
from cmdop_tui.session.errors import KEY_ENV, TOKEN_ENV

STOP_REASONS: dict[Status, StopReason] = {
    "final": "end_turn",
    "compacted": "end_turn",
    "cancelled": "cancelled",
    "cut": "max_tokens",
    "refused": "refusal",
    "max_turns": "max_turn_requests",
    "max_loops": "max_turn_requests",
    "repeated_tool_call": "max_turn_requests",
}


class OperatorAgent:
    """The ACP agent (the SDK's `Agent` protocol), over `run_agent`'s stdio connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sessions: dict[str, EditorSession] = {}
        self.client_capabilities = ClientCapabilities()
        self._client: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("no editor is connected")
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client_capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse.model_validate(initialize_answer(protocol_version))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        if method_id != AUTH_METHOD:
            raise RequestError.invalid_params({"message": f"unknown authentication method {method_id!r}"})
        if not self._has_credentials():
            raise RequestError.auth_required({"message": f"set {KEY_ENV} in the agent's environment"})
        return AuthenticateResponse()

    def _has_credentials(self) -> bool:
        return bool(os.environ.get(KEY_ENV) or os.environ.get(TOKEN_ENV) or self.settings.run.local)

    # --- sessions -------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, mcp_servers: Sequence[McpServer] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        editor = await self._open(cwd, mcp_servers or (), resume=None)
        return NewSessionResponse(session_id=editor.id, modes=editor.modes())

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[McpServer] | None = None, **kwargs: Any
    ) -> LoadSessionResponse | None:
        await self._close_session(session_id)  # loaded again: the editor starts over
        editor = await self._open(cwd, mcp_servers or (), resume=session_id)
        for update in replay(editor.open_session.recorder.whole_history(), editor.cwd):
            editor.updates.put(update)
        await editor.updates.flush()
        return LoadSessionResponse(modes=editor.modes())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        return await asyncio.to_thread(listed_sessions, cwd, cursor)  # reads every transcript's head

    async def _open(self, cwd: str, mcp_servers: Sequence[McpServer], *, resume: str | None) -> EditorSession:
        """A Session in `cwd` (absolute, as ACP has it), recorded; `resume`: the transcript to continue."""
        if not self._has_credentials():
            raise RequestError.auth_required({"message": f"no API key: set {KEY_ENV} in the agent's environment"})
        folder = Path(cwd)
        if not folder.is_absolute() or not folder.is_dir():
            raise RequestError.invalid_params({"message": f"cwd {cwd!r} is not an absolute path to a folder"})
        settings = with_editor_servers(self.settings, mcp_servers).with_run(resume=resume, continue_latest=False)
        await asyncio.to_thread(load_the_session_modules)  # begun at start: usually done by now
        from cmdop_tui.acp.opening import open_session

        editor = EditorSession(self.client, folder)
        await open_session(editor, settings, self.client_capabilities)
        self.sessions[editor.id] = editor
        editor.updates.put(update_available_commands(editor.slash_commands.available()))
        return editor

    async def _close_session(self, session_id: str) -> None:
        editor = self.sessions.pop(session_id, None)
        if editor is not None:
            editor.open_session.stop()
            await editor.closing.aclose()

    async def close(self) -> None:
        """Close every session (the editor went away)."""
        for session_id in list(self.sessions):
            await self._close_session(session_id)

    def _editor(self, session_id: str) -> EditorSession:
        editor = self.sessions.get(session_id)
        if editor is None:
            raise RequestError.invalid_params({"message": f"no open session {session_id!r}"})
        return editor

    # --- a session's work -----------------------------------------------------------------------

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse | None:
        editor = self._editor(session_id)
        try:
            editor.open_session.set_mode(mode_id)
        except ValueError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from exc
        editor.updates.put(update_current_mode(mode_id))
        await editor.updates.flush()
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        editor = self._editor(session_id)
        async with editor.prompting:
            work = editor.work = asyncio.create_task(self._run(editor, prompt_text(prompt, editor.cwd)))
            try:
                result = await work
            except asyncio.CancelledError:
                if (this := asyncio.current_task()) is not None and this.cancelling():
                    raise  # the connection is closing, not the editor's cancel
                result = RunResult(status="cancelled", code="cancelled", message=STOPPED_BY_USER)
            finally:
                editor.work = None
                await editor.updates.flush()
        if result.status in STOP_REASONS:
            return PromptResponse(stop_reason=STOP_REASONS[result.status])
        raise RequestError(-32603, f"{result.status}: {result.message or result.code}", {"code": result.code})

    async def _run(self, editor: EditorSession, text: str) -> RunResult:
        session = editor.open_session
        invocation = await editor.slash_commands.invoke(session, text)
        if invocation is None:
            return await session.run(text, editor.updates)
        if invocation.compact is not None:
            return await session.compact(editor.updates, invocation.compact)
        if invocation.prompt is not None:
            return await session.run(invocation.prompt, editor.updates, tools=invocation.tools)
        editor.updates.put(update_agent_message_text(invocation.text))
        return RunResult(status="final", text=invocation.text)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """The UI cancel channel: the turn running ends at once. Before the loop runs a turn (MCP
        servers still connecting, the model's facts asked) or after, nothing is bound to it: the
        prompt's own task is cancelled then, and the loop has nothing to repair."""
        editor = self.sessions.get(session_id)
        if editor is None or editor.session is None or editor.work is None:
            return  # nothing runs: nothing to stop (a Stop kept for later would end the next prompt)
        editor.session.stop()
        if not editor.session.ui_cancel.bound:
            editor.work.cancel()


def load_the_session_modules() -> None:
    """Import what opening a session needs (the model SDK among it: seconds on a slow disk)."""
    importlib.import_module("cmdop_tui.acp.opening")


async def serve(settings: Settings, first: FirstMessage) -> None:
    """Speak ACP on stdin/stdout until the editor closes the connection; then close every session.
    `first`: the editor's first line, answered already when it was `initialize` (first_answer.py).
    The session's modules load in a thread meanwhile, so `session/new` rarely waits for them."""
    threading.Thread(target=load_the_session_modules, name="acp-preload", daemon=True).start()
    agent = OperatorAgent(settings)
    if first.answered:
        agent.client_capabilities = offered(first.client_capabilities)
    reader, writer = await stdio_streams(first.leftover)
    try:
        await run_agent(agent, writer, reader)  # type: ignore[arg-type]  # the SDK routes to the methods an agent has
    finally:
        await agent.close()


def offered(capabilities: dict[str, Any] | None) -> ClientCapabilities:
    """The client capabilities of the `initialize` answered by hand; ones that do not parse are
    said on stderr and taken as none offered (our own tools then)."""
    try:
        parsed = ClientCapabilities.model_validate(capabilities or {})
    except ValueError as exc:  # pydantic's ValidationError
        sys.stderr.write(f"cmdop-tui acp: the editor's capabilities were not understood: {exc}\n")
        return ClientCapabilities()
    fs: object = parsed.fs  # the schema salvages a bad `fs` as a plain dict, not as its type
    if fs is not None and not isinstance(fs, FileSystemCapabilities):
        parsed = parsed.model_copy(update={"fs": None})
    return parsed


async def stdio_streams(leftover: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The SDK's stdio streams (acp.stdio), the reader holding `leftover` first: what was read
    of stdin by hand and not answered goes to the SDK before what follows it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    reader.feed_data(leftover)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WritePipeProtocol()  # the SDK's own: what its writer drains on
    transport, _ = await loop.connect_write_pipe(lambda: protocol, sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
