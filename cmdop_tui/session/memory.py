"""The operator's standing instructions: the user's memory file and the project's AGENTS.md and CMDOP.md.

They go in the static system prefix (cached, read once a session): `memory.md` beside the
settings file holds what the user wants every session to know; `AGENTS.md` (the file many
coding agents read) and `CMDOP.md` (this app's own) in the working directory what this project
wants. Only the working directory's files are read, not those of its parents or subfolders.
When both project files exist both are read, in this order: the user's memory, then AGENTS.md,
then CMDOP.md, so that the app's own file, the more specific, comes last and has the last word.
`/memory` opens the user's file in $EDITOR.
"""

from __future__ import annotations

import logging
from pathlib import Path

from cmdop_tui.config.settings import config_path

PROJECT_FILE = "CMDOP.md"
AGENTS_FILE = "AGENTS.md"  # the cross-agent standard: read before CMDOP.md
USER_FILE = "memory.md"
MAX_CHARS = 20_000  # of each file; a longer one is cut, with a note

_log = logging.getLogger(__name__)


def user_memory_path() -> Path:
    return config_path().parent / USER_FILE


def standing_instructions(cwd: Path) -> str:
    """The files' text under headings, for the system prompt ('' when there are none): the
    user's memory, then the project's AGENTS.md, then its CMDOP.md (see the module's docstring)."""
    sections = [
        ("The user's standing instructions", user_memory_path()),
        *((f"This project's instructions ({name})", cwd / name) for name in (AGENTS_FILE, PROJECT_FILE)),
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
