"""The operator's standing instructions: the user's memory file and the project's CMDOP.md.

Both go in the static system prefix (cached, read once a session): `memory.md` beside the
settings file holds what the user wants every session to know; `CMDOP.md` in the working
directory what this project wants. `/memory` opens the user's file in $EDITOR.
"""

from __future__ import annotations

import logging
from pathlib import Path

from cmdop_tui.config.settings import config_path

PROJECT_FILE = "CMDOP.md"
USER_FILE = "memory.md"
MAX_CHARS = 20_000  # of each file; a longer one is cut, with a note

_log = logging.getLogger(__name__)


def user_memory_path() -> Path:
    return config_path().parent / USER_FILE


def standing_instructions(cwd: Path) -> str:
    """The two files' text under headings, for the system prompt ('' when there are none)."""
    sections = [
        ("The user's standing instructions", user_memory_path()),
        (f"This project's instructions ({PROJECT_FILE})", cwd / PROJECT_FILE),
    ]
    parts = [f"## {title}\n{text}" for title, path in sections if (text := _read(path))]
    return "\n\n".join(parts)


def _read(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        _log.warning("cannot read %s: %s", path, exc)
        return ""
    if len(text) > MAX_CHARS:
        return text[:MAX_CHARS] + f"\n[{path.name} is longer: only its first {MAX_CHARS:,} characters are read]"
    return text
