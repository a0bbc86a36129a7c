"""Opening an editor session: the modules that load the model SDK and build a `Session`.

`agent.serve` starts loading this module in a thread as the process starts, so `initialize` is
answered at once while it loads; `session/new` and `session/load` wait for it (it is usually
there by the time an editor asks).
"""

from __future__ import annotations

import sys

from acp import RequestError
from acp.schema import ClientCapabilities

from cmdop_tui.acp.client_files import EditorFiles, use_editor_files
from cmdop_tui.acp.client_terminal import EditorTerminal, use_editor_terminal
from cmdop_tui.acp.commands import Commands
from cmdop_tui.acp.editor_session import EditorSession
from cmdop_tui.acp.permission import EditorApprovals
from cmdop_tui.config.settings import Settings
from cmdop_tui.session.session import Session


async def open_session(editor: EditorSession, settings: Settings, offered: ClientCapabilities) -> Session:
    """Open `editor`'s Session (recorded; `settings.run.resume` names a transcript to continue),
    its approvals asked in the editor, its files and commands through the editor where it offers
    them (`offered`) and our rules let them (client_files.py, client_terminal.py).
    A session that cannot open is said in one line (RequestError); nothing is left open."""
    editor.commands = Commands(editor.cwd)
    approvals = EditorApprovals(editor.ask, editor.updates, editor.permissions)
    session = Session(settings, platform="editor", ask=approvals, cwd=editor.cwd)
    try:
        editor.session = await editor.closing.enter_async_context(session)
    except Exception as exc:  # a key, a machine, a rules file, a session in use...: one line
        await editor.closing.aclose()
        raise RequestError.internal_error({"message": f"the session could not open: {exc}"}) from exc
    editor.id = session.recorder.session_id or f"unrecorded-{id(editor):x}"
    editor.updates.start()
    editor.closing.push_async_callback(editor.updates.close)
    if offered.fs is not None:
        use_editor_files(session, EditorFiles(editor.client, lambda: editor.id, offered.fs))
    if offered.terminal:
        use_editor_terminal(session, EditorTerminal(editor.client, lambda: editor.id, editor.updates))
    for note in (*session.notes, *editor.commands.notes):
        sys.stderr.write(f"cmdop-tui acp: {note}\n")
    return session
