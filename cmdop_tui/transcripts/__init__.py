"""Durable session transcripts: one append-only JSON-lines file per session, written as things happen.

The package, a module per concern:

- `paths`: where transcripts live (``data_dir() / "sessions"``, 0700) and how ids resolve.
- `records`: the file format, one JSON object per line.
- `redaction`: secrets redacted from every record on its way to disk.
- `transcript`: `Transcript`, the one locked writer of a session (durability, locking).
- `writing`: a line written whole or not at all; a removed or replaced file written again.
- `repair` and `load`: reading a session back (the conversation as the model sees it, and the
  whole history a compaction summarised), repairing it, `resume`, and `tool_output` (recall).
- `listing`: `list_sessions`, `info` and `latest` (for ``--continue``).
- `outputs`: `KeptOutputs`, tool outputs kept whole beside the transcript, a file per call.
- `export`: `export_markdown`.
- `errors`: `SessionError` and its kinds.
"""

from cmdop_tui.transcripts.errors import HeldLimitError, SessionError, SessionLockedError, SessionNotFoundError
from cmdop_tui.transcripts.export import export_markdown
from cmdop_tui.transcripts.listing import SessionInfo, info, latest, list_sessions, messages_count
from cmdop_tui.transcripts.load import LoadedSession, load, resume, tool_output
from cmdop_tui.transcripts.outputs import KeptOutputs, outputs_dir
from cmdop_tui.transcripts.paths import resolve, sessions_dir
from cmdop_tui.transcripts.records import KEPT_OUTPUT_EVENT
from cmdop_tui.transcripts.repair import INTERRUPTED_RESULT, repair
from cmdop_tui.transcripts.transcript import Transcript

__all__ = [
    "INTERRUPTED_RESULT",
    "HeldLimitError",
    "KEPT_OUTPUT_EVENT",
    "KeptOutputs",
    "LoadedSession",
    "SessionError",
    "SessionInfo",
    "SessionLockedError",
    "SessionNotFoundError",
    "Transcript",
    "export_markdown",
    "info",
    "latest",
    "list_sessions",
    "messages_count",
    "load",
    "outputs_dir",
    "repair",
    "resolve",
    "resume",
    "sessions_dir",
    "tool_output",
]
