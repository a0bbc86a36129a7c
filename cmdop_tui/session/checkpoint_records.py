"""What a session's checkpoints recorded, turn by turn: a JSON-lines file beside the session.

One line per fact, appended as it happens and flushed (a crash loses at most the line being
written; a torn last line is skipped when read): a turn began, a machine's tree was checkpointed
(before the turn's first change, after the turn, or as the present before a rewind), a
checkpoint failed, something was done that no checkpoint can undo, a file outside the working
tree was about to be written (its prior content kept beside).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from cmdop_tui.config.paths import data_dir

Phase = Literal["before", "after"]


@dataclass(frozen=True)
class TurnRecord:
    """A turn: its number in the session, the prompt, and how long the conversation was before
    it (the conversation goes back there)."""

    turn: int
    prompt: str
    messages: int
    at: float = field(default_factory=time.time)
    rewind_of: int | None = None  # a rewind's own turn: the turn it went back to


@dataclass(frozen=True)
class CheckpointRecord:
    turn: int
    machine: str
    phase: Phase
    commit: str
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoteRecord:
    """Something of a turn on a machine that no checkpoint undoes (or a checkpoint that failed)."""

    turn: int
    machine: str
    text: str
    failed: bool = False


@dataclass(frozen=True)
class OutsideRecord:
    """A file outside the working tree that a tool was about to write: what it was before."""

    turn: int
    machine: str
    path: str
    existed: bool
    mode: int = 0o644
    blob: str = ""  # the file beside the records that holds its prior content


Record = TurnRecord | CheckpointRecord | NoteRecord | OutsideRecord
_KINDS: dict[str, type[Record]] = {
    "turn": TurnRecord,
    "checkpoint": CheckpointRecord,
    "note": NoteRecord,
    "outside": OutsideRecord,
}


def checkpoints_dir() -> Path:
    """Where sessions' checkpoints live: the records per session, this machine's repositories."""
    return data_dir() / "checkpoints"


@dataclass
class CheckpointLog:
    """The records of one session, in memory and on disk."""

    folder: Path
    records: list[Record] = field(default_factory=list)

    @classmethod
    def open(cls, session: str) -> CheckpointLog:
        """The session's records (none yet: an empty log); a line that cannot be read is skipped."""
        log = cls(checkpoints_dir() / "sessions" / session)
        try:
            lines = (log.folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return log
        for line in lines:
            record = _parse(line)
            if record is not None:
                log.records.append(record)
        return log

    def add(self, record: Record) -> None:
        """Keep `record`, and write it down (an OSError is the caller's to say)."""
        self.records.append(record)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        kind = next(name for name, cls in _KINDS.items() if isinstance(record, cls))
        line = json.dumps({"kind": kind, **asdict(record)}, ensure_ascii=False)
        with open(self.folder / "records.jsonl", "a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()
            os.fsync(file.fileno())

    def keep_blob(self, name: str, data: bytes) -> None:
        """Keep a file's prior content beside the records."""
        blobs = self.folder / "files"
        blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        (blobs / name).write_bytes(data)

    def blob(self, name: str) -> bytes:
        return (self.folder / "files" / name).read_bytes()

    # --- reading ------------------------------------------------------------------------------

    def turns(self) -> list[TurnRecord]:
        return [record for record in self.records if isinstance(record, TurnRecord)]

    def next_turn(self) -> int:
        return max((turn.turn for turn in self.turns()), default=0) + 1

    def checkpoints(self, machine: str | None = None) -> list[CheckpointRecord]:
        return [r for r in self.records if isinstance(r, CheckpointRecord) and machine in (None, r.machine)]

    def notes(self, turn: int) -> list[NoteRecord]:
        return [r for r in self.records if isinstance(r, NoteRecord) and r.turn == turn]

    def outside(self, since: int) -> list[OutsideRecord]:
        return [r for r in self.records if isinstance(r, OutsideRecord) and r.turn >= since]


def _parse(line: str) -> Record | None:
    try:
        data: Any = json.loads(line)
        kind = _KINDS[data.pop("kind")]
        if "left_out" in data:
            data["left_out"] = tuple(data["left_out"])
        return kind(**data)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def prune(keep_days: int, now: float | None = None) -> list[str]:
    """Remove the checkpoints of sessions untouched for `keep_days`: their records, and their
    refs in this machine's shadow repositories (git then lets go of what only they kept).
    Returns the sessions removed; what cannot be removed is left for the next time."""
    cutoff = (now if now is not None else time.time()) - keep_days * 86_400
    sessions = checkpoints_dir() / "sessions"
    try:
        old = [entry for entry in sessions.iterdir() if entry.is_dir() and _last_written(entry) < cutoff]
    except OSError:
        return []
    for entry in old:
        shutil.rmtree(entry, ignore_errors=True)
    if old:
        _forget_refs([entry.name for entry in old])
    return [entry.name for entry in old]


def ref_name(session: str) -> str:
    """The ref a session's checkpoints are kept on (`refs/cmdop/NAME`) in every repository."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session)


def _last_written(folder: Path) -> float:
    records = folder / "records.jsonl"
    return max(folder.stat().st_mtime, records.stat().st_mtime if records.exists() else 0.0)


def _forget_refs(sessions: list[str]) -> None:
    try:
        repositories = [p for p in (checkpoints_dir() / "repositories").iterdir() if (p / "HEAD").is_file()]
    except OSError:
        return
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    for repository in repositories:
        git = ["git", f"--git-dir={repository}"]
        refs = "".join(f"delete refs/cmdop/{ref_name(name)}\n" for name in sessions)
        subprocess.run([*git, "update-ref", "--stdin"], input=refs.encode(), env=env, capture_output=True, check=False)
        subprocess.run([*git, "gc", "--quiet", "--prune=now"], env=env, capture_output=True, check=False)
