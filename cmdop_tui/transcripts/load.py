"""Reading a transcript back: replay, skip what is damaged, repair, and resume writing.

Loading never raises for damaged content: a torn last line (a kill mid-write) and unreadable or
malformed lines elsewhere are skipped, each with a note for the user.

Typical use (``--continue``)::

    session_id = latest()                                    # None: nothing to continue
    transcript, loaded = resume(session_id, extra_secrets=[api_key])  # repairs, and records the repair
    conversation = loaded.conversation()                     # show loaded.notes to the user
    conversation.listeners.append(transcript.append)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.agent.history import Conversation, is_summary_block, without_summaries
from cmdop_tui.agent.messages import Message, OperationRecord, blocks_of, result_for
from cmdop_tui.agent.reduction import result_text
from cmdop_tui.transcripts.paths import resolve
from cmdop_tui.transcripts.records import (
    KEPT_OUTPUT_EVENT,
    ROLES,
    UNSTORED_EVENT,
    VERSION,
    parse_record,
    valid_blocks,
    valid_message,
)
from cmdop_tui.transcripts.repair import repair_history
from cmdop_tui.transcripts.transcript import Transcript

_NumberedRecord = tuple[int, OperationRecord]  # (line number from 1, record)
RUN_END_EVENTS = ("final", "error", "cancelled")  # the events a run ends with, as the recorder stores them


@dataclass(frozen=True)
class LoadedSession:
    """A session read back: the history (repaired, ready for the next request) and what else was kept."""

    id: str
    path: Path
    header: OperationRecord
    messages: list[Message]  # repaired: `sanitize(messages) == messages`
    events: list[OperationRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was skipped or repaired, for the user
    replayed: list[Message] = field(default_factory=list)  # the history as stored, before repair
    repair_records: list[OperationRecord] = field(default_factory=list)  # ops turning replayed into messages
    whole: list[Message] = field(default_factory=list)  # every message, compacted ones too (for export)

    @property
    def repaired(self) -> bool:
        return bool(self.repair_records)

    def conversation(self) -> Conversation:
        """A `Conversation` holding (a copy of) the repaired history."""
        return Conversation(messages=[m.copy() for m in self.messages])


@dataclass(frozen=True)
class _Replay:
    header: OperationRecord
    messages: list[Message]
    events: list[OperationRecord]
    whole: list[Message]
    unstored: int  # records the writer said, after the last history record, it could not write
    ended: OperationRecord | None  # how the last run ended, when it ended after the last history record


def load(session: str | Path, directory: Path | str | None = None) -> LoadedSession:
    """Read a session (id, id prefix or path), replay its records and repair the result.

    Never raises for damaged content: what is skipped gets a note in `LoadedSession.notes`.
    """
    path = resolve(session, directory)
    records, notes = _read_records(path.read_bytes())
    replay = _replay(records, notes)
    if not replay.header:
        notes.append("no session header; the id is taken from the file name")
    repaired = repair_history(replay.messages, unstored=replay.unstored, ended=replay.ended)
    return LoadedSession(
        id=str(replay.header.get("id") or path.stem),
        path=path,
        header=replay.header,
        messages=repaired.messages,
        events=replay.events,
        notes=notes + repaired.notes,
        replayed=replay.messages,
        repair_records=repaired.records,
        whole=replay.whole,
    )


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


def _read_records(data: bytes) -> tuple[list[_NumberedRecord], list[str]]:
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline, as every complete file does
    records: list[_NumberedRecord] = []
    notes: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = parse_record(line)
        if record is None:
            notes.append(f"line {number}: unreadable record; skipped")
        else:
            records.append((number, record))
    if torn.strip():
        record = parse_record(torn)
        if record is None:
            notes.append(
                f"line {len(lines) + 1}: the last record was cut off (the app stopped while writing it); skipped"
            )
        else:
            records.append((len(lines) + 1, record))
    return records, notes


def _replay(records: list[_NumberedRecord], notes: list[str]) -> _Replay:
    """Rebuild the stored history and collect the header and events; what is skipped goes to `notes`."""
    header: OperationRecord = {}
    conversation = Conversation()
    events: list[OperationRecord] = []
    compacted: list[Message] = []  # what compactions took out of the conversation, with their summaries
    unstored = 0
    ended: OperationRecord | None = None
    for number, record in records:
        op = record["op"]
        if op == "session":
            if not header:
                header = record
                if isinstance(version := record.get("version"), int) and version > VERSION:
                    notes.append(f"written by a newer cmdop-tui (format version {version}); read as version {VERSION}")
        elif op == "event":
            if record.get("kind") != KEPT_OUTPUT_EVENT:  # only `tool_output` reads those, not replay
                events.append(record)
            if record.get("kind") in RUN_END_EVENTS:
                ended = record
            if record.get("kind") == UNSTORED_EVENT and isinstance(count := record.get("records"), int):
                unstored = count
        elif op in ("append", "replace", "clear", "compact", "retract"):
            if unstored:  # the session went on after it: the gap is behind
                notes.append(f"line {number}: {unstored} record(s) before it were never written (the disk was full)")
            unstored, ended = 0, None
            before = list(conversation.messages)
            problem = _apply(conversation, record)
            if problem:
                notes.append(f"line {number}: {problem}; skipped")
            elif op == "compact":
                compacted += _taken_by_compaction(before, record)
            elif op == "clear":
                compacted.clear()
        else:
            notes.append(f"line {number}: unknown record {op!r}; skipped")
    whole = compacted + without_summaries(conversation.messages)
    return _Replay(header, conversation.messages, events, whole, unstored, ended)


def _taken_by_compaction(before: list[Message], record: OperationRecord) -> list[Message]:
    """What a compaction (checked by `_apply`) took out of the conversation, then its summary."""
    summary, drop = record.get("summary"), record.get("drop")
    if not is_summary_block(summary) or not isinstance(drop, int):
        return []
    return [*without_summaries(before[:drop]), {"role": "user", "content": [summary]}]


def _apply(conversation: Conversation, record: OperationRecord) -> str | None:
    """Replay one operation record; a description of what is wrong with it, or None."""
    op = record["op"]
    if op == "append":
        if record.get("role") not in ROLES:
            return "append with no valid role"
        if not valid_blocks(record.get("blocks")):
            return "append with malformed blocks"
        if not record["blocks"]:
            return None  # nothing to add (Conversation never tells an empty append)
    elif op == "compact":
        summary, drop = record.get("summary"), record.get("drop")
        if not isinstance(summary, dict) or not is_summary_block(summary) or not isinstance(drop, int) or drop < 0:
            return "malformed compaction"
    elif op == "retract":
        if not isinstance(record.get("blocks"), int):
            return "malformed retract"
    elif op == "replace":
        messages = record.get("messages")
        if not isinstance(messages, list) or not all(valid_message(m) for m in messages):
            return "malformed replace"
        record = {"op": "replace", "messages": [{**m, "content": blocks_of(m)} for m in messages]}
    conversation.apply(record)
    return None


def tool_output(session: str | Path, call_id: str, directory: Path | str | None = None) -> str | None:
    """The whole output of tool call `call_id` as the transcript keeps it (for `recall`): the one
    kept beside a capped result when there is one, else the result itself (one a compaction took
    out of the conversation); None when it is not there."""
    try:
        data = resolve(session, directory).read_bytes()
    except OSError:
        return None
    needle = json.dumps(call_id).encode()
    found: str | None = None
    for line in data.split(b"\n"):
        if needle not in line:
            continue
        record = parse_record(line)
        if record is None:
            continue
        if _is_kept_output(record, call_id):
            return str(record["text"])
        if record.get("op") != "append" or not valid_blocks(blocks := record.get("blocks")):
            continue
        if found is None and (block := result_for(blocks, call_id)) is not None:
            found = result_text(block)
    return found


def _is_kept_output(record: OperationRecord, call_id: str) -> bool:
    return (
        record.get("op") == "event"
        and record.get("kind") == KEPT_OUTPUT_EVENT
        and record.get("call_id") == call_id
        and isinstance(record.get("text"), str)
    )
