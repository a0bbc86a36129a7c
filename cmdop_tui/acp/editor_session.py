"""`EditorSession`: one editor session as the agent keeps it — our Session (once open), its
notifications, its slash commands, its running prompt — and how it asks the editor.

Importable without the model SDK: the agent answers `initialize` before the session's modules
have loaded (agent.py, opening.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from acp import Client, RequestError
from acp.helpers import SessionUpdate
from acp.schema import PermissionOption, RequestPermissionResponse, SessionMode, SessionModeState, ToolCallUpdate

from cmdop_tui.acp.updates import Updates
from cmdop_tui.agent.outcome import RunResult
from cmdop_tui.config.model import PERMISSION_MODES

if TYPE_CHECKING:  # types only: these load the model SDK, after `initialize` (opening.py)
    from cmdop_tui.acp.commands import Commands
    from cmdop_tui.permissions import Permissions
    from cmdop_tui.session.session import Session

MODE_TEXT = {
    "default": ("Default", "Ask before commands and edits the rules do not allow"),
    "accept_edits": ("Accept edits", "Edits in the working tree go through; commands are asked"),
    "plan": ("Plan", "Nothing that changes anything: the model plans and asks to go on"),
    "auto": ("Auto", "Every call the safety floor allows runs without asking"),
    "strict": ("Strict", "Only what a rule allows runs; nothing is asked"),
}


class EditorSession:
    """One editor session: our Session, its notifications, its commands, its running prompt."""

    def __init__(self, client: Client, cwd: Path) -> None:
        self.id = ""  # the transcript's, once the session is open
        self.cwd = cwd
        self.client = client
        self.session: Session | None = None
        self.commands: Commands | None = None
        self.updates = Updates(self._send, cwd)
        self.closing = contextlib.AsyncExitStack()  # what closing the session undoes
        self.prompting = asyncio.Lock()  # one prompt at a time, as the protocol has it
        self.work: asyncio.Task[RunResult] | None = None  # the running prompt's

    async def _send(self, update: SessionUpdate) -> None:
        await self.client.session_update(session_id=self.id, update=update)

    async def ask(self, call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        return await self.client.request_permission(session_id=self.id, tool_call=call, options=options)

    def permissions(self) -> Permissions | None:
        return self.session.permissions if self.session is not None else None

    @property
    def open_session(self) -> Session:
        if self.session is None:
            raise RequestError.invalid_request({"message": "the session is not open"})
        return self.session

    @property
    def slash_commands(self) -> Commands:
        if self.commands is None:
            raise RequestError.invalid_request({"message": "the session is not open"})
        return self.commands

    def modes(self) -> SessionModeState:
        current = self.session.status().mode if self.session is not None else "default"
        listed = [SessionMode(id=m, name=MODE_TEXT[m][0], description=MODE_TEXT[m][1]) for m in PERMISSION_MODES]
        return SessionModeState(current_mode_id=current, available_modes=listed)
