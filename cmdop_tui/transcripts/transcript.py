"""The writer of one session's transcript, appended to as things happen.

Durability: each record is one line written whole on an ``O_APPEND`` descriptor, no buffering in
the process. Once `Transcript.append` returns, the line is in the kernel's page cache, which
survives the process being killed at any moment (``kill -9``, a crash, the terminal closing): nothing
completed is lost. A kill *during* the write can leave a torn last line; loading skips it (with a
note) and `Transcript.open` cuts it off before appending. What the page cache does not survive is
power loss or a kernel crash; `sync` (at each turn's end, by the session) or ``fsync=True`` (every
record) closes that gap at the cost of a disk flush (milliseconds on most disks).

A write that fails (a full disk, a quota, an I/O error) leaves no fragment: what it wrote is cut
off again, the record is held in memory with those after it, and the next `append` or `flush`
writes them all, in order, before anything new; `held` counts them. Memory is bounded: past
HELD_LIMIT_BYTES held, a new record is let go (`HeldLimitError`, counted in `dropped`), and a
marker where it would have been says how many are missing there. A file removed or replaced
while the app runs is written anew at the next write, with everything written so far (the
descriptor still reads the old one), and `listeners` are told.

One writer per session: the file is locked with ``flock(LOCK_EX | LOCK_NB)`` for the life of its
`Transcript`; a second writer gets `SessionLockedError`. The descriptor is close-on-exec, so commands
the agent runs do not inherit the file or its lock.

Typical use::

    transcript = Transcript.create(model=model, cwd=str(cwd), extra_secrets=[api_key])
    conversation.listeners.append(transcript.append)         # every change, as it happens
    transcript.event("tool_end", name="execute_command", ok=True)   # optional UI events
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from cmdop_tui.agent.messages import OperationRecord
from cmdop_tui.support.secrets import Redactor
from cmdop_tui.transcripts.errors import HeldLimitError, SessionError, SessionLockedError
from cmdop_tui.transcripts.paths import (
    SESSION_ID,
    SUFFIX,
    ensure_private_dir,
    new_session_id,
    resolve,
    session_directory,
)
from cmdop_tui.transcripts.records import UNSTORED_EVENT, VERSION, encode_record, parse_record
from cmdop_tui.transcripts.redaction import RecordRedactor
from cmdop_tui.transcripts.writing import TornTailError, recreate, same_file, sync_directory, write_line

_CREATE_ATTEMPTS = 100  # fresh ids tried before giving up on a directory
_TAIL_CHUNK = 65536  # bytes read at a time when looking backwards for the last line
_HEADER_LIMIT = 1 << 20  # bytes read at most when looking for the end of the header line
HELD_LIMIT_BYTES = 64 << 20  # records held in memory while the file cannot be written


class Transcript:
    """The writer of one session's transcript. Create with `create` or `open`, not directly.

    `append(record)` is the `Conversation` listener: ``conversation.listeners.append(t.append)``.
    Call from one thread at a time. Usable as a context manager (closes on exit).
    """

    def __init__(self, fd: int, path: Path, session_id: str, redactor: RecordRedactor, fsync: bool) -> None:
        self.path = path
        self.id = session_id
        self.fsync = fsync
        self.notes: list[str] = []  # what `open` had to fix (a torn last line cut off)
        self.listeners: list[Callable[[str], None]] = []  # told what happened to the file (re-created)
        self._fd = fd
        self._redactor = redactor
        self._sync = getattr(os, "fdatasync", os.fsync)
        self._closer = weakref.finalize(self, os.close, fd)  # closing also releases the lock
        self._held: deque[bytes] = deque()  # lines a failed write left to write, oldest first
        self._held_bytes = 0
        self.dropped = 0  # records let go because too much was held (the file misses them)
        self._gap = 0  # of those, the ones no marker in the file names yet
        self._after_fragment = False  # the file ends on a fragment a failed write could not cut off

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
        directory = session_directory(directory)
        ensure_private_dir(directory)
        if session_id is not None and not SESSION_ID.fullmatch(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        fd, sid, path = _create_file(directory, session_id)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            _lock(fd, sid, path)
            transcript = cls(fd, path, sid, RecordRedactor(Redactor(extra_secrets)), fsync)
        except BaseException:
            os.close(fd)
            raise
        transcript.append(_header(sid, cwd=cwd or _getcwd(), model=model))
        if fsync:
            sync_directory(directory)
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
            sid = str(header.get("id") or path.stem)
            transcript = cls(fd, path, sid, RecordRedactor(Redactor(extra_secrets)), fsync)
        except BaseException:
            os.close(fd)
            raise
        if cut:
            transcript.notes.append(
                f"the last record was cut off (the app stopped while writing it); {cut} byte(s) removed"
            )
        if not header:  # the header itself was torn: write one so the file stands on its own again
            transcript.append(_header(path.stem))
        return transcript

    # writing

    def append(self, record: Mapping[str, Any]) -> None:
        """Redact `record`, and write it as one whole line, after any lines still `held`.

        Accepts the `Conversation` operation records (append, replace, clear), ``event`` records
        and anything else with a string ``op`` (stored; `load` skips it with a note). The record is
        not modified. Raises ValueError for a record without ``op`` or a malformed append/replace,
        ValueError when closed, and OSError when the write fails (disk full, ...): the record is
        then held, not lost, and written by the next `append` or `flush` that succeeds.
        """
        if self._fd < 0:
            raise ValueError(f"session {self.id}: transcript is closed")
        redacted = self._redactor.record(record)
        if redacted is None:
            return
        line = encode_record(redacted)
        if self._held and self._held_bytes + len(line) > HELD_LIMIT_BYTES:
            self._let_go_unless_written()
        if self._gap:
            self._hold(encode_record(_unstored_marker(self._gap)))
            self._gap = 0
        self._hold(line)
        self.flush()
        if self.fsync:
            self._sync(self._fd)

    def _hold(self, line: bytes) -> None:
        self._held.append(line)
        self._held_bytes += len(line)

    def _let_go_unless_written(self) -> None:
        """With too much held: write it now, or let the new record go (raises HeldLimitError)."""
        try:
            self.flush()
        except OSError as exc:
            self.dropped += 1
            self._gap += 1
            raise HeldLimitError(
                exc.errno, f"{HELD_LIMIT_BYTES >> 20} MB of records wait to be written; this one is let go"
            ) from exc

    @property
    def held(self) -> int:
        """How many records wait in memory for a write to succeed (0: the file has them all)."""
        return len(self._held)

    def flush(self) -> None:
        """Write the `held` records, oldest first; raises OSError (and keeps the rest) when one fails.

        Puts the file back first when it was removed or replaced since the last write.
        """
        if self._fd < 0:
            return
        if not same_file(self.path, self._fd):
            self._recreate()
        while self._held:
            line = self._held[0]
            try:
                write_line(self._fd, self._after_any_fragment(line))
            except TornTailError:
                self._after_fragment = True
                raise
            self._after_fragment = False
            self._held_bytes -= len(self._held.popleft())

    def sync(self) -> None:
        """`flush`, then make the file durable against power loss (a turn's end). Raises OSError."""
        self.flush()
        if self._fd >= 0:
            self._sync(self._fd)

    def _say_unstored(self) -> None:
        """Leave a last small record saying how many were never written: it may fit where they
        did not (the slack of the file's last block), and then loading knows why the end is cut."""
        line = encode_record(_unstored_marker(len(self._held) + self._gap))
        with contextlib.suppress(OSError):
            write_line(self._fd, self._after_any_fragment(line))

    def _after_any_fragment(self, line: bytes) -> bytes:
        """`line`, on a line of its own after a fragment a failed write could not cut off."""
        return b"\n" + line if self._after_fragment else line

    def _recreate(self) -> None:
        fd, what = recreate(self.path, self._fd)
        try:
            _lock(fd, self.id, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._closer()  # the old file, and its lock
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        for listener in self.listeners:
            listener(f"the transcript {self.path} {what}; it is written again, with the whole session so far")

    def event(self, kind: str, **fields: Any) -> None:
        """Store a UI event (tool_start, tool_end, final, error, ...) for export; not history."""
        self.append({"op": "event", "kind": kind, "ts": round(time.time(), 3), **fields})

    def close(self) -> None:
        """Close the file and release the lock. Idempotent.

        Records still `held` are tried once more first; `held` then says how many never made it.
        """
        if self._fd >= 0:
            if self._held:
                with contextlib.suppress(OSError):
                    self.flush()
            if self._held or self._gap:
                self._say_unstored()
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


def _unstored_marker(records: int) -> OperationRecord:
    """The event saying `records` records are missing from the file at this place."""
    return {"op": "event", "kind": UNSTORED_EVENT, "ts": round(time.time(), 3), "records": records}


def _header(session_id: str, **fields: str) -> OperationRecord:
    """The ``session`` record that starts a file; `fields` are cwd and model when known."""
    created = datetime.now(UTC).isoformat(timespec="milliseconds")
    return {"op": "session", "version": VERSION, "id": session_id, "created": created, **fields}


def _create_file(directory: Path, session_id: str | None) -> tuple[int, str, Path]:
    """Create a new, empty session file: (descriptor, id, path). A fresh id unless one is given."""
    # Read-write: a file removed while the app runs is re-created from what this descriptor reads.
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
    for _attempt in range(_CREATE_ATTEMPTS):
        sid = session_id or new_session_id()
        path = directory / f"{sid}{SUFFIX}"
        try:
            return os.open(path, flags, 0o600), sid, path
        except FileExistsError:
            if session_id is not None:
                raise SessionError(f"session {sid} already exists ({path})") from None
    # Reached only after 100 collisions of 24 random bits within one second.
    raise SessionError(f"cannot create a new session file in {directory}")  # pragma: no cover


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


def _fix_torn_tail(fd: int) -> int:
    """Cut off a torn last line; the number of bytes removed."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    tail = _last_line(fd, size)
    if parse_record(tail) is not None:
        os.write(fd, b"\n")  # complete record, only its newline missing
        return 0
    os.ftruncate(fd, size - len(tail))
    return len(tail)


def _last_line(fd: int, size: int) -> bytes:
    """The bytes after the last newline of a file `size` bytes long, read backwards in chunks."""
    end = size
    tail = b""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        piece = os.pread(fd, end - start, start)
        newline = piece.rfind(b"\n")
        if newline >= 0:
            return piece[newline + 1 :] + tail
        tail = piece + tail
        end = start
    return tail


def _read_header(fd: int) -> OperationRecord | None:
    first = b""
    offset = 0
    while b"\n" not in first and offset < _HEADER_LIMIT:
        piece = os.pread(fd, 4096, offset)
        if not piece:
            break
        first += piece
        offset += len(piece)
    record = parse_record(first.split(b"\n", 1)[0])
    return record if record is not None and record.get("op") == "session" else None
