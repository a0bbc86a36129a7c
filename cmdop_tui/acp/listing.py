"""`session/list`: our recorded sessions, for an editor's history — those worked in its folder
(any transcript: the app's, headless mode's, an editor's), newest first, a page at a time.
An editor loads one with `session/load`."""

from __future__ import annotations

import os

from acp.schema import ListSessionsResponse, SessionInfo

from cmdop_tui import transcripts

PAGE = 50  # sessions per answer; `next_cursor` names the next page


def listed_sessions(cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    """The sessions with a conversation, recorded in `cwd` (None: anywhere), from `cursor` on."""
    wanted = os.path.realpath(cwd) if cwd else None
    found = [
        s
        for s in transcripts.list_sessions()
        if s.messages and (wanted is None or (s.cwd and os.path.realpath(s.cwd) == wanted))
    ]
    start = int(cursor) if cursor and cursor.isdigit() else 0
    page = found[start : start + PAGE]
    more = str(start + PAGE) if start + PAGE < len(found) else None
    listed = [
        SessionInfo(session_id=s.id, cwd=s.cwd, title=s.title or None, updated_at=s.updated.isoformat()) for s in page
    ]
    return ListSessionsResponse(sessions=listed, next_cursor=more)
