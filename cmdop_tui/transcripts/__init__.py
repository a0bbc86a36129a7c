"""Durable session transcripts: one append-only JSON-lines file per session, written as things happen.

Where: ``sessions_dir()`` = ``settings.data_dir() / "sessions"`` (mode 0700); one file per session,
``<id>.jsonl`` (mode 0600). An id looks like ``20250102-130405-a1b2c3`` (local start time + random).

File format (version 1), one JSON object per line, UTF-8, written with ``separators=(",", ":")``::

    {"op":"session","version":1,"id":"...","created":"2025-01-02T13:04:05.123+00:00","cwd":"...","model":"..."}
    {"op":"append","role":"user","blocks":[{"type":"text","text":"list my files"}]}
    {"op":"append","role":"assistant","blocks":[{"type":"tool_use","id":"toolu_1","name":"list_dir","input":{}}]}
    {"op":"event","kind":"tool_end","ts":1735823045.5,...}
    {"op":"append","role":"user","blocks":[{"type":"tool_result","tool_use_id":"toolu_1","content":"..."}]}
    {"op":"replace","messages":[...]}
    {"op":"clear"}

``append``/``replace``/``clear`` are `Conversation`'s operation records (see
``cmdop_tui.agent.history.Conversation.apply``), stored as they were told: replaying them through a
`Conversation` rebuilds the history exactly, merges included. ``event`` lines are UI events kept for
export and never touch the history. Every record is redacted (`cmdop_tui.support.secrets`) before it is
written, so a resumed session sees ``[REDACTED]`` where a secret was. A ``thinking`` block whose text
would change under redaction is dropped rather than stored with a signature that no longer matches.

Durability: each record is one ``os.write`` of one line on an ``O_APPEND`` descriptor, no buffering
in the process. Once `Transcript.append` returns, the line is in the kernel's page cache, which
survives the process being killed at any moment (``kill -9``, a crash, the terminal closing): nothing
completed is lost. A kill *during* the write can leave a torn last line; loading skips it (with a
note) and `Transcript.open` cuts it off before appending. What the page cache does not survive is
power loss or a kernel crash; ``fsync=True`` closes that gap at the cost of a disk flush per record
(milliseconds on most disks, instead of microseconds).

One writer per session: the file is locked with ``flock(LOCK_EX | LOCK_NB)`` for the life of its
`Transcript`; a second writer gets `SessionLockedError`. The descriptor is close-on-exec, so commands
the agent runs do not inherit the file or its lock.

Typical use (the lead's wiring)::

    transcript = Transcript.create(model=model, cwd=str(cwd), extra_secrets=[api_key])
    conversation.listeners.append(transcript.append)         # every change, as it happens
    transcript.event("tool_end", name="execute_command", ok=True)   # optional UI events

    session_id = latest()                                    # --continue (None: nothing to continue)
    transcript, loaded = resume(session_id, extra_secrets=[api_key])  # repairs, and records the repair
    conversation = loaded.conversation()                     # show loaded.notes to the user
    conversation.listeners.append(transcript.append)
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from cmdop_tui.agent.history import (
    Conversation,
    Message,
    blocks_of,
    sanitize,
    tool_result_block,
    tool_result_ids,
    tool_use_ids,
)
from cmdop_tui.support.secrets import Redactor

__all__ = [
    "INTERRUPTED_RESULT",
    "VERSION",
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
    "load",
    "new_session_id",
    "repair",
    "resolve",
    "resume",
    "sessions_dir",
]

VERSION = 1
SUFFIX = ".jsonl"
INTERRUPTED_RESULT = (
    "The session was interrupted before this tool call finished (the app stopped); "
    "it may or may not have run, and its output is lost."
)
TITLE_LENGTH = 60
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ROLES = ("user", "assistant")


class SessionError(Exception):
    """A session cannot be used; the message names it."""


class SessionLockedError(SessionError):
    """Another process (or another Transcript in this one) is writing this session."""


class SessionNotFoundError(SessionError, FileNotFoundError):
    """No session by that id, id prefix or path."""


def sessions_dir() -> Path:
    """Where transcripts live: ``data_dir() / "sessions"`` (not created here)."""
    from cmdop_tui.config.settings import data_dir

    return data_dir() / "sessions"


def new_session_id() -> str:
    """A fresh id: local start time (sorts by age) and 24 random bits."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def resolve(session: str | Path, directory: Path | str | None = None) -> Path:
    """The transcript file for `session`: a path, an id, or an unambiguous id prefix.

    Raises `SessionNotFoundError` (nothing matches) or `SessionError` (a prefix matches several).
    """
    if isinstance(session, Path) or "/" in session or os.sep in session or session.endswith(SUFFIX):
        path = Path(session).expanduser()
        if not path.is_file():
            raise SessionNotFoundError(f"no session file {path}")
        return path
    directory = _directory(directory)
    if not _ID.fullmatch(session):
        raise SessionNotFoundError(f"{session!r} is not a session id")
    path = directory / f"{session}{SUFFIX}"
    if path.is_file():
        return path
    matches = sorted(p for p in _session_files(directory) if p.name.startswith(session))
    if not matches:
        raise SessionNotFoundError(f"no session {session!r} in {directory}")
    if len(matches) > 1:
        names = ", ".join(p.stem for p in matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise SessionError(f"{session!r} matches {len(matches)} sessions: {names}")
    return matches[0]


def _directory(directory: Path | str | None) -> Path:
    return Path(directory).expanduser() if directory else sessions_dir()


def _session_files(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
    except FileNotFoundError:
        return []


def _ensure_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if directory.stat().st_mode & 0o777 != 0o700:
            directory.chmod(0o700)
    except OSError:
        pass  # not ours to change (e.g. a shared directory given explicitly); the files are 0600


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # SDK (pydantic) objects
    if callable(dump):
        return dump(exclude_none=True)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _encode(record: Mapping[str, Any]) -> bytes:
    """One line: compact JSON + newline. Lone surrogates fall back to \\u escapes (still valid)."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":"), default=_json_default) + "\n").encode("ascii")


# --- writing ---------------------------------------------------------------------------------


class Transcript:
    """The writer of one session's transcript. Create with `create` or `open`, not directly.

    `append(record)` is the `Conversation` listener: ``conversation.listeners.append(t.append)``.
    Call from one thread at a time. Usable as a context manager (closes on exit).
    """

    def __init__(self, fd: int, path: Path, header: dict[str, Any], redactor: Redactor, fsync: bool) -> None:
        self.path = path
        self.header = header
        self.id: str = str(header.get("id") or path.stem)
        self.fsync = fsync
        self.notes: list[str] = []  # what `open` had to fix (a torn last line cut off)
        self._fd = fd
        self._redactor = redactor
        self._sync = getattr(os, "fdatasync", os.fsync)
        self._closer = weakref.finalize(self, os.close, fd)  # closing also releases the lock

    # construction

    @classmethod
    def create(
        cls,
        directory: Path | str | None = None,
        *,
        model: str = "",
        cwd: str = "",
        extra_secrets: Iterable[str | None] = (),
        fsync: bool = False,
        session_id: str | None = None,
    ) -> Transcript:
        """Start a new session file (0600, directory 0700) and write its header line.

        `directory` defaults to `sessions_dir()`; `cwd` to the current directory; `extra_secrets`
        (e.g. the API key) are redacted from everything written, on top of the patterns.
        """
        directory = _directory(directory)
        _ensure_dir(directory)
        if session_id is not None and not _ID.fullmatch(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        for _attempt in range(100):
            sid = session_id or new_session_id()
            path = directory / f"{sid}{SUFFIX}"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                if session_id is not None:
                    raise SessionError(f"session {sid} already exists ({path})") from None
                continue
            break
        else:  # pragma: no cover - 100 collisions of 24 random bits within one second
            raise SessionError(f"cannot create a new session file in {directory}")
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            _lock(fd, sid, path)
            header = {
                "op": "session",
                "version": VERSION,
                "id": sid,
                "created": _now_iso(),
                "cwd": cwd or _getcwd(),
                "model": model,
            }
            transcript = cls(fd, path, header, Redactor(extra_secrets), fsync)
        except BaseException:
            os.close(fd)
            raise
        transcript.append(header)
        if fsync:
            _fsync_dir(directory)
        return transcript

    @classmethod
    def open(
        cls,
        session: str | Path,
        directory: Path | str | None = None,
        *,
        extra_secrets: Iterable[str | None] = (),
        fsync: bool = False,
    ) -> Transcript:
        """Continue appending to an existing session (an id, id prefix or path).

        Takes the lock, then cuts off a torn last line left by a kill mid-write (a last line that
        is complete JSON but lacks its newline gets the newline instead). Does not repair the
        history: `resume` does that, and is what `--continue` wants.
        """
        path = resolve(session, directory)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        try:
            _lock(fd, path.stem, path)
            cut = _fix_torn_tail(fd)
            header = _read_header(fd) or {}
            transcript = cls(fd, path, {**header, "id": header.get("id") or path.stem}, Redactor(extra_secrets), fsync)
        except BaseException:
            os.close(fd)
            raise
        if cut:
            transcript.notes.append(
                f"the last record was cut off (the app stopped while writing it); {cut} byte(s) removed"
            )
        if not header:  # the header itself was torn: write one so the file stands on its own again
            transcript.append({"op": "session", "version": VERSION, "id": path.stem, "created": _now_iso()})
        return transcript

    # writing

    def append(self, record: Mapping[str, Any]) -> None:
        """Redact `record`, and write it as one line with one ``os.write``.

        Accepts the `Conversation` operation records (append, replace, clear), ``event`` records
        and anything else with a string ``op`` (stored; `load` skips it with a note). The record is
        not modified. Raises ValueError for a record without ``op`` or a malformed append/replace,
        ValueError when closed, and OSError when the write fails (disk full, ...).
        """
        if self._fd < 0:
            raise ValueError(f"session {self.id}: transcript is closed")
        redacted = self._redacted(record)
        if redacted is None:
            return
        data = _encode(redacted)
        written = os.write(self._fd, data)
        while written < len(data):  # a regular file does not do short writes short of ENOSPC
            written += os.write(self._fd, data[written:])
        if self.fsync:
            self._sync(self._fd)

    def event(self, kind: str, **fields: Any) -> None:
        """Store a UI event (tool_start, tool_end, final, error, ...) for export; not history."""
        self.append({"op": "event", "kind": kind, "ts": round(time.time(), 3), **fields})

    def close(self) -> None:
        """Close the file and release the lock. Idempotent."""
        if self._fd >= 0:
            self._fd = -1
            self._closer()

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Transcript({self.id!r}, path={str(self.path)!r}{', closed' if self.closed else ''})"

    # redaction, aware of the record shapes

    def _redacted(self, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """The record to store; None for an append left with no blocks (nothing to replay)."""
        op = record.get("op") if isinstance(record, Mapping) else None
        if not isinstance(op, str) or not op:
            raise ValueError(f"a transcript record needs an 'op': {record!r:.200}")
        if op == "append":
            role, blocks = record.get("role"), record.get("blocks")
            if role not in _ROLES or not isinstance(blocks, list):
                raise ValueError(f"malformed append record: {record!r:.200}")
            kept = self._blocks(blocks)
            if not kept:
                return None
            extra = {k: self._json(v) for k, v in record.items() if k not in ("op", "role", "blocks")}
            return {"op": op, "role": role, "blocks": kept, **extra}
        if op == "replace":
            messages = record.get("messages")
            if not isinstance(messages, list):
                raise ValueError(f"malformed replace record: {record!r:.200}")
            redacted = [self._message(m) if isinstance(m, Mapping) else self._json(m) for m in messages]
            extra = {k: self._json(v) for k, v in record.items() if k not in ("op", "messages")}
            return {"op": op, "messages": redacted, **extra}
        return {"op": op, **self._json({k: v for k, v in record.items() if k != "op"})}

    def _json(self, value: Any) -> Any:
        return self._redactor.json(value, _json_default)

    def _message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        others = self._json({k: v for k, v in message.items() if k != "content"})
        return {**others, "content": self._blocks(blocks_of(message))}

    def _blocks(self, blocks: Sequence[Any]) -> list[Any]:
        out = []
        for block in blocks:
            if not isinstance(block, Mapping):
                block = _json_default(block)  # an SDK block object: its dict
            if isinstance(block, Mapping) and block.get("type") == "thinking":
                text = block.get("thinking")
                if isinstance(text, str) and self._redactor.text(text) != text:
                    continue  # redacted thinking would no longer match its signature: drop it
                out.append(dict(block))
            else:
                out.append(self._json(block))
        return out


def _getcwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the directory was removed under us
        return ""


def _lock(fd: int, session_id: str, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLockedError(
                f"session {session_id} is in use by another cmdop-tui process (locked: {path})"
            ) from None
        raise


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fix_torn_tail(fd: int) -> int:
    """Cut off a torn last line; the number of bytes removed."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    end = size  # find the start of the last line, reading backwards
    chunk = 65536
    tail = b""
    while end > 0:
        start = max(0, end - chunk)
        piece = os.pread(fd, end - start, start)
        newline = piece.rfind(b"\n")
        if newline >= 0:
            tail = piece[newline + 1 :] + tail
            break
        tail = piece + tail
        end = start
    if _parse(tail) is not None:
        os.write(fd, b"\n")  # complete record, only its newline missing
        return 0
    os.ftruncate(fd, size - len(tail))
    return len(tail)


def _read_header(fd: int) -> dict[str, Any] | None:
    first = b""
    offset = 0
    while b"\n" not in first and offset < 1 << 20:
        piece = os.pread(fd, 4096, offset)
        if not piece:
            break
        first += piece
        offset += len(piece)
    record = _parse(first.split(b"\n", 1)[0])
    return record if record is not None and record.get("op") == "session" else None


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return None
    return record if isinstance(record, dict) and isinstance(record.get("op"), str) else None


# --- reading ---------------------------------------------------------------------------------


@dataclass
class LoadedSession:
    """A session read back: the history (repaired, ready for the next request) and what else was kept."""

    id: str
    path: Path
    header: dict[str, Any]
    messages: list[Message]  # repaired: `sanitize(messages) == messages`
    events: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was skipped or repaired, for the user
    replayed: list[Message] = field(default_factory=list)  # the history as stored, before repair
    repair_records: list[dict[str, Any]] = field(default_factory=list)  # ops turning replayed into messages

    @property
    def repaired(self) -> bool:
        return bool(self.repair_records)

    def conversation(self) -> Conversation:
        """A `Conversation` holding (a copy of) the repaired history."""
        return Conversation(messages=[dict(m) for m in self.messages])


def load(session: str | Path, directory: Path | str | None = None) -> LoadedSession:
    """Read a session (id, id prefix or path), replay its records and repair the result.

    Never raises for damaged content: a torn last line (a kill mid-write) and unreadable or
    malformed lines elsewhere are skipped, each with a note in `LoadedSession.notes`.
    """
    path = resolve(session, directory)
    records, notes = _read_records(path.read_bytes())
    header: dict[str, Any] = {}
    conversation = Conversation()
    events: list[dict[str, Any]] = []
    for number, record in records:
        op = record["op"]
        if op == "session":
            if not header:
                header = record
                if isinstance(record.get("version"), int) and record["version"] > VERSION:
                    notes.append(
                        f"written by a newer cmdop-tui (format version {record['version']}); read as version {VERSION}"
                    )
        elif op == "event":
            events.append(record)
        elif op in ("append", "replace", "clear"):
            problem = _apply(conversation, record)
            if problem:
                notes.append(f"line {number}: {problem}; skipped")
        else:
            notes.append(f"line {number}: unknown record {op!r}; skipped")
    if not header:
        notes.append("no session header; the id is taken from the file name")
    replayed = conversation.messages
    messages, repair_records, repair_notes = _repair(replayed)
    return LoadedSession(
        id=str(header.get("id") or path.stem),
        path=path,
        header=header,
        messages=messages,
        events=events,
        notes=notes + repair_notes,
        replayed=replayed,
        repair_records=repair_records,
    )


def _read_records(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline, as every complete file does
    records: list[tuple[int, dict[str, Any]]] = []
    notes: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = _parse(line)
        if record is None:
            notes.append(f"line {number}: unreadable record; skipped")
        else:
            records.append((number, record))
    if torn.strip():
        record = _parse(torn)
        if record is None:
            notes.append(
                f"line {len(lines) + 1}: the last record was cut off (the app stopped while writing it); skipped"
            )
        else:
            records.append((len(lines) + 1, record))
    return records, notes


def _valid_blocks(blocks: Any) -> bool:
    return isinstance(blocks, list) and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks)


def _valid_message(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("role") in _ROLES
        and (isinstance(message.get("content"), str) or _valid_blocks(message.get("content")))
    )


def _apply(conversation: Conversation, record: dict[str, Any]) -> str | None:
    """Replay one operation record; a description of what is wrong with it, or None."""
    op = record["op"]
    if op == "append":
        if record.get("role") not in _ROLES:
            return "append with no valid role"
        if not _valid_blocks(record.get("blocks")):
            return "append with malformed blocks"
        if not record["blocks"]:
            return None  # nothing to add (Conversation never tells an empty append)
    elif op == "replace":
        messages = record.get("messages")
        if not isinstance(messages, list) or not all(_valid_message(m) for m in messages):
            return "malformed replace"
        record = {"op": "replace", "messages": [{**m, "content": blocks_of(m)} for m in messages]}
    conversation.apply(record)
    return None


def repair(messages: Sequence[Message]) -> list[Message]:
    """`messages` made valid for the next request, as `load` does it: open tool calls at the end get
    an ``is_error`` `INTERRUPTED_RESULT`, then `sanitize` drops whatever else is unpaired. The
    result is a fixed point of `sanitize`. The input is not modified."""
    return _repair(messages)[0]


def _repair(messages: Sequence[Message]) -> tuple[list[Message], list[dict[str, Any]], list[str]]:
    """Close the tool calls a dead process left open, then `sanitize` whatever else is off.

    Open calls are those of the last assistant message with no result after it: the app died
    while they ran (or while their results were coming in). Each gets an ``is_error`` result
    saying the session was interrupted. Returns (history, the operation records that did it, notes).
    """
    conversation = Conversation(messages=[dict(m) for m in messages])
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    conversation.listeners.append(records.append)
    last = conversation.messages[-1] if conversation.messages else None
    asked: list[str] = []
    answered: set[str] = set()
    if last is not None and last.get("role") == "assistant":
        asked = tool_use_ids(last)
    elif last is not None and len(conversation.messages) >= 2:
        asked = tool_use_ids(conversation.messages[-2])
        answered = set(tool_result_ids(last))
    missing = list(dict.fromkeys(i for i in asked if i not in answered))
    if missing:
        conversation.append_tool_results([tool_result_block(i, INTERRUPTED_RESULT, is_error=True) for i in missing])
        notes.append(f"the session stopped while {len(missing)} tool call(s) ran; they are marked as interrupted")
    cleaned = sanitize(conversation.messages)
    if cleaned != conversation.messages:
        conversation.replace(cleaned)
        notes.append("unpaired tool calls or results were dropped to make the history valid again")
    if not missing and conversation.messages and conversation.messages[-1]["role"] == "user":
        # Valid as it is (the next prompt joins this user turn), but worth telling.
        if any(b.get("type") == "text" for b in blocks_of(conversation.messages[-1])):
            notes.append("the last prompt has no answer (the session stopped before the reply was stored)")
        else:
            notes.append("the session stopped before the model answered the last tool results")
    return conversation.messages, records, notes


def resume(
    session: str | Path,
    directory: Path | str | None = None,
    *,
    extra_secrets: Iterable[str | None] = (),
    fsync: bool = False,
) -> tuple[Transcript, LoadedSession]:
    """Open a session for appending and load it (`--continue`, `--resume ID`).

    The lock is taken first, so what is loaded is what will be continued. When the history needed
    repair, the repair records are appended too: the file then replays to exactly
    `LoadedSession.messages`, and the next prompt continues from there.
    """
    transcript = Transcript.open(session, directory, extra_secrets=extra_secrets, fsync=fsync)
    try:
        loaded = load(transcript.path)
        loaded.notes[:0] = transcript.notes
        for record in loaded.repair_records:
            transcript.append(record)
    except BaseException:
        transcript.close()
        raise
    return transcript, loaded


# --- listing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionInfo:
    id: str
    path: Path
    created: datetime | None  # from the header (UTC); None when the header is missing
    updated: datetime  # the file's modification time (UTC): the last record written
    title: str  # the first user prompt, on one line, shortened ("" before the first prompt)
    messages: int  # messages in the stored history (before any repair)
    model: str = ""
    cwd: str = ""


_APPEND_USER = b'{"op":"append","role":"user",'
_APPEND_ASSISTANT = b'{"op":"append","role":"assistant",'
_CLEAR = b'{"op":"clear"'
_EVENT = b'{"op":"event"'


def info(path: Path) -> SessionInfo:
    """Summary of one transcript, read quickly (~4 ms for a 1.3 MB, 1,000-turn file): only the
    header, the first prompt and `replace` records are parsed; other lines are recognised by the
    fixed prefix `Transcript` writes. A torn last line is ignored, as `load` does; a corrupt line
    elsewhere that still starts like an append would be counted (load skips it)."""
    data = path.read_bytes()
    stat_mtime = path.stat().st_mtime
    lines = data.split(b"\n")
    if lines and lines[-1] and _parse(lines[-1]) is None:
        lines.pop()
    header: dict[str, Any] = {}
    title: str | None = None
    count = 0
    last_role: str | None = None
    for line in lines:
        if line.startswith(_APPEND_USER):
            role = "user"
        elif line.startswith(_APPEND_ASSISTANT):
            role = "assistant"
        elif line.startswith(_EVENT) or not line.strip():
            continue
        elif line.startswith(_CLEAR):
            count, last_role = 0, None
            continue
        else:
            record = _parse(line)
            if record is None:
                continue
            op = record["op"]
            if op == "session" and not header:
                header = record
            elif op == "replace" and isinstance(record.get("messages"), list):
                messages = record["messages"]
                if not all(_valid_message(m) for m in messages):
                    continue
                count = len(messages)
                last_role = messages[-1]["role"] if messages else None
                if title is None:
                    title = next((t for m in messages if m["role"] == "user" and (t := _prompt_text(m))), None)
            elif (
                op == "append"
                and record.get("role") in _ROLES
                and _valid_blocks(record.get("blocks"))
                and record["blocks"]
                and record["role"] != last_role
            ):
                count, last_role = count + 1, record["role"]
            continue
        if line.endswith(b'"blocks":[]}'):
            continue
        if role != last_role:
            count, last_role = count + 1, role
        if title is None and role == "user":
            record = _parse(line)
            if record is not None:
                title = _prompt_text({"content": record.get("blocks")}) or None
    created = None
    if isinstance(header.get("created"), str):
        try:
            created = datetime.fromisoformat(header["created"])
        except ValueError:
            created = None
    return SessionInfo(
        id=str(header.get("id") or path.stem),
        path=path,
        created=created,
        updated=datetime.fromtimestamp(stat_mtime, UTC),
        title=_shorten(title or ""),
        messages=count,
        model=str(header.get("model") or ""),
        cwd=str(header.get("cwd") or ""),
    )


def _prompt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(
        b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _shorten(text: str, limit: int = TITLE_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def list_sessions(directory: Path | str | None = None) -> list[SessionInfo]:
    """Every session in `directory` (default `sessions_dir()`), most recently updated first."""
    infos = []
    for path in _session_files(_directory(directory)):
        try:
            infos.append(info(path))
        except OSError:
            continue  # removed or unreadable meanwhile
    infos.sort(key=lambda i: (i.updated, i.id), reverse=True)
    return infos


def latest(directory: Path | str | None = None) -> str | None:
    """The id of the most recently updated session that has any history (for ``--continue``)."""
    stamped = []
    for path in _session_files(_directory(directory)):
        try:
            stamped.append((path.stat().st_mtime_ns, path.stem, path))
        except OSError:
            continue
    for _mtime, stem, path in sorted(stamped, reverse=True):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b'{"op":"append"' in data or b'{"op":"replace"' in data:
            return stem
    return None


# --- export ----------------------------------------------------------------------------------


def export_markdown(
    messages: Sequence[Message],
    *,
    title: str = "cmdop-tui session",
    meta: Mapping[str, Any] | None = None,
    extra_secrets: Iterable[str | None] = (),
) -> str:
    """A readable Markdown transcript: user and assistant turns, tool calls with their input as a
    JSON code block, tool results fenced (errors marked). Thinking is omitted. Every piece of text
    is redacted (patterns + `extra_secrets`) before it is placed. `meta` (e.g. the session
    header's id/created/model/cwd) becomes a short list under the title."""
    redactor = Redactor(extra_secrets)
    out: list[str] = [f"# {_one_line(redactor.text(title)) or 'Session'}", ""]
    if meta:
        out += [
            f"- {key}: {_one_line(redactor.text(str(value)))}"
            for key, value in meta.items()
            if key != "op" and value not in (None, "")
        ]
        out.append("")
    names: dict[str, str] = {}
    speaker: str | None = None
    for message in messages:
        role = message.get("role")
        for block in blocks_of(message):
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                continue
            if kind == "tool_result":
                name = names.get(str(block.get("tool_use_id")), "tool")
                label = "Error" if block.get("is_error") else "Result"
                body = redactor.text(_result_text(block.get("content")))
                out += [f"**{label}** of `{name}`:", "", *_fence(body, ""), ""]
                continue
            if role != speaker:
                out += ["## User" if role == "user" else "## Assistant", ""]
                speaker = role
            if kind == "text":
                text = redactor.text(str(block.get("text", ""))).strip()
                if text:
                    out += [text, ""]
            elif kind == "tool_use":
                name = str(block.get("name", "tool"))
                names[str(block.get("id"))] = name
                body = json.dumps(redactor.json(block.get("input", {})), indent=2, ensure_ascii=False, default=str)
                out += [f"**Tool call** `{name}`", "", *_fence(body, "json"), ""]
            elif kind in ("image", "document"):
                out += [f"*[{kind}]*", ""]
            else:
                body = json.dumps(redactor.json(block), indent=2, ensure_ascii=False, default=str)
                out += [f"*[{kind}]*", "", *_fence(body, "json"), ""]
    return "\n".join(out).rstrip() + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, dict):
                parts.append(f"[{item.get('type', 'content')}]")
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


_BACKTICKS = re.compile(r"`{3,}+")


def _fence(body: str, info_string: str) -> list[str]:
    """`body` in a code fence longer than any backtick run inside it (CommonMark)."""
    longest = max((len(m) for m in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info_string, body.rstrip("\n"), fence]
