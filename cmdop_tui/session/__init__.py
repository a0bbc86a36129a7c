"""One session: the client, runner, permission gate, transcript, fleet and local model.

Importing this package is cheap; `session.session` imports the model SDK (about a second), so
the TUI loads it in a thread after its first paint, through `load_session_class`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session


def load_session_class() -> type[Session]:
    """Import the session machinery (the SDK with it) and return `Session`. Slow: call in a thread."""
    from cmdop_tui.session.session import Session

    return Session
