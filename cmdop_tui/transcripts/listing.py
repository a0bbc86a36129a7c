"""Listing sessions: a quick summary of each transcript, and the latest one worth continuing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cmdop_tui.agent.messages import OperationRecord, is_text
from cmdop_tui.transcripts.paths import session_directory, session_files
from cmdop_tui.transcripts.records import (
    APPEND_ASSISTANT_PREFIX,
    APPEND_PREFIX,
    APPEND_USER_PREFIX,
    CLEAR_PREFIX,
    EMPTY_APPEND_SUFFIX,
    EVENT_PREFIX,
    REPLACE_PREFIX,
    ROLES,
    parse_record,
    valid_blocks,
    valid_message,
)

TITLE_LENGTH = 60


@dataclass(frozen=True)
class SessionInfo:
    """One line of the session list: what a transcript is, read without replaying it."""

    id: str
    path: Path
    created: datetime | None  # from the header (UTC); None when the header is missing
    updated: datetime  # the file's modification time (UTC): the last record written
    title: str  # the first user prompt, on one line, shortened ("" before the first prompt)
    messages: int  # messages in the stored history (before any repair)
    model: str = ""
    cwd: str = ""


def info(path: Path) -> SessionInfo:
    """Summary of one transcript, read quickly (~4 ms for a 1.3 MB, 1,000-turn file): only the
    header, the first prompt and `replace` records are parsed; other lines are recognised by the
    fixed prefix `Transcript` writes. A torn last line is ignored, as `load` does; a corrupt line
    elsewhere that still starts like an append would be counted (load skips it)."""
    data = path.read_bytes()
    stat_mtime = path.stat().st_mtime
    lines = data.split(b"\n")
    if lines and lines[-1] and parse_record(lines[-1]) is None:
        lines.pop()
    summary = _Summary()
    for line in lines:
        summary.add(line)
    header = summary.header
    return SessionInfo(
        id=str(header.get("id") or path.stem),
        path=path,
        created=_created(header),
        updated=datetime.fromtimestamp(stat_mtime, UTC),
        title=_shorten(summary.title or ""),
        messages=summary.count,
        model=str(header.get("model") or ""),
        cwd=str(header.get("cwd") or ""),
    )


def messages_count(count: int) -> str:
    """`1 message`, `2 messages`."""
    return f"{count:,} message" if count == 1 else f"{count:,} messages"


def list_sessions(directory: Path | str | None = None) -> list[SessionInfo]:
    """Every session in `directory` (default `sessions_dir()`), most recently updated first."""
    infos = []
    for path in session_files(session_directory(directory)):
        try:
            infos.append(info(path))
        except OSError:
            continue  # removed or unreadable meanwhile
    infos.sort(key=lambda i: (i.updated, i.id), reverse=True)
    return infos


def latest(directory: Path | str | None = None) -> str | None:
    """The id of the most recently updated session that has any history (for ``--continue``)."""
    stamped = []
    for path in session_files(session_directory(directory)):
        try:
            stamped.append((path.stat().st_mtime_ns, path.stem, path))
        except OSError:
            continue
    for _mtime, stem, path in sorted(stamped, reverse=True):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if APPEND_PREFIX in data or REPLACE_PREFIX in data:
            return stem
    return None


@dataclass
class _Summary:
    """What `info` gathers line by line: the header, the first prompt and the message count.

    Consecutive appends of one role merge into one message (as `Conversation` does), so the
    count goes up only when the role changes.
    """

    header: OperationRecord = field(default_factory=dict)
    title: str | None = None
    count: int = 0
    last_role: str | None = None

    def add(self, line: bytes) -> None:
        if line.startswith(APPEND_USER_PREFIX):
            self._written_append("user", line)
        elif line.startswith(APPEND_ASSISTANT_PREFIX):
            self._written_append("assistant", line)
        elif line.startswith(CLEAR_PREFIX):
            self.count, self.last_role = 0, None
        elif line.strip() and not line.startswith(EVENT_PREFIX):
            record = parse_record(line)
            if record is not None:
                self._other(record)

    def _written_append(self, role: str, line: bytes) -> None:
        """An append as `Transcript` writes it, recognised by its prefix; parsed only for the title."""
        if line.endswith(EMPTY_APPEND_SUFFIX):
            return
        self._message(role)
        if self.title is None and role == "user":
            record = parse_record(line)
            if record is not None:
                self.title = _prompt_text({"content": record.get("blocks")}) or None

    def _other(self, record: OperationRecord) -> None:
        op = record["op"]
        if op == "session" and not self.header:
            self.header = record
        elif op == "replace" and isinstance(messages := record.get("messages"), list):
            self._replace(messages)
        elif op == "append" and isinstance(role := record.get("role"), str) and role in ROLES:
            if valid_blocks(blocks := record.get("blocks")) and blocks:
                self._message(role)

    def _replace(self, messages: list[Any]) -> None:
        if not all(valid_message(m) for m in messages):
            return
        self.count = len(messages)
        self.last_role = messages[-1]["role"] if messages else None
        if self.title is None:
            self.title = next((t for m in messages if m["role"] == "user" and (t := _prompt_text(m))), None)

    def _message(self, role: str) -> None:
        if role != self.last_role:
            self.count, self.last_role = self.count + 1, role


def _created(header: Mapping[str, Any]) -> datetime | None:
    created = header.get("created")
    if not isinstance(created, str):
        return None
    try:
        return datetime.fromisoformat(created)
    except ValueError:
        return None


def _prompt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if is_text(b) and isinstance(b.get("text"), str))


def _shorten(text: str, limit: int = TITLE_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
