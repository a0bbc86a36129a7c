"""Where transcripts live and how a session is named.

``sessions_dir()`` = ``settings.data_dir() / "sessions"`` (mode 0700); one file per session,
``<id>.jsonl`` (mode 0600). An id looks like ``20250102-130405-a1b2c3`` (local start time + random).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from cmdop_tui.config.settings import data_dir
from cmdop_tui.transcripts.errors import SessionError, SessionNotFoundError

SUFFIX = ".jsonl"
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_AMBIGUOUS_NAMES_SHOWN = 5


def sessions_dir() -> Path:
    """Where transcripts live: ``data_dir() / "sessions"`` (not created here)."""
    return data_dir() / "sessions"


def session_directory(directory: Path | str | None) -> Path:
    """`directory` as given (``~`` expanded), or `sessions_dir()` when none is."""
    return Path(directory).expanduser() if directory else sessions_dir()


def new_session_id() -> str:
    """A fresh id: local start time (sorts by age) and 24 random bits."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}"


def session_files(directory: Path) -> list[Path]:
    """Every transcript file in `directory`; none when it does not exist (yet), or cannot (a file
    stands where a directory above it should be)."""
    try:
        return [p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def ensure_private_dir(directory: Path) -> None:
    """Create `directory` (and its parents) and make it 0700 when it is ours to change."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if directory.stat().st_mode & 0o777 != 0o700:
            directory.chmod(0o700)
    except OSError:
        pass  # not ours to change (e.g. a shared directory given explicitly); the files are 0600


def resolve(session: str | Path, directory: Path | str | None = None) -> Path:
    """The transcript file for `session`: a path, an id, or an unambiguous id prefix.

    Raises `SessionNotFoundError` (nothing matches) or `SessionError` (a prefix matches several).
    """
    if isinstance(session, Path) or "/" in session or os.sep in session or session.endswith(SUFFIX):
        path = Path(session).expanduser()
        if not path.is_file():
            raise SessionNotFoundError(f"no session file {path}")
        return path
    directory = session_directory(directory)
    if not SESSION_ID.fullmatch(session):
        raise SessionNotFoundError(f"{session!r} is not a session id")
    path = directory / f"{session}{SUFFIX}"
    if path.is_file():
        return path
    matches = sorted(p for p in session_files(directory) if p.name.startswith(session))
    if not matches:
        raise SessionNotFoundError(f"no session {session!r} in {directory}")
    if len(matches) > 1:
        shown = ", ".join(p.stem for p in matches[:_AMBIGUOUS_NAMES_SHOWN])
        more = ", ..." if len(matches) > _AMBIGUOUS_NAMES_SHOWN else ""
        raise SessionError(f"{session!r} matches {len(matches)} sessions: {shown}{more}")
    return matches[0]
