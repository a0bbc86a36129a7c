"""Why a session cannot be used: the errors every part of the package raises."""

from __future__ import annotations


class SessionError(Exception):
    """A session cannot be used; the message names it."""


class SessionLockedError(SessionError):
    """Another process (or another Transcript in this one) is writing this session."""


class SessionNotFoundError(SessionError, FileNotFoundError):
    """No session by that id, id prefix or path."""


class HeldLimitError(OSError):
    """A transcript that cannot be written holds no more in memory: this record is let go."""
