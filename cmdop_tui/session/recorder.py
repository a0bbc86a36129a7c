"""The session's transcript: the conversation and its events, written as they happen.

Durable or loud: the file is made durable (fsync) at each turn's end; a write that fails (a full
disk) is said at once through `SessionRecorder.listeners`, its records held in memory and written,
in order, when a later write succeeds (said too); what still cannot be written when the session
closes is counted in `records_lost`. A data directory that cannot hold transcripts (read-only, or
not a directory) makes a session without one, said once.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cmdop_tui import transcripts
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.history import summary_of
from cmdop_tui.agent.messages import Message
from cmdop_tui.agent.runner import Runner
from cmdop_tui.config.settings import Settings
from cmdop_tui.support.secrets import Redactor, configured_secrets

_log = logging.getLogger(__name__)
Transcript = transcripts.Transcript

SESSION_EVENTS = frozenset({"tool_start", "tool_end", "final", "error", "cancelled", "usage", "compaction"})
# Where a run ends; the file is also made durable after each change of the history (a turn's end).
RUN_ENDS = frozenset({"final", "error", "cancelled"})
_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


@dataclass(frozen=True)
class TranscriptNotice:
    """What a surface should tell the user about the transcript, at once."""

    text: str
    level: Literal["info", "warning", "error"] = "warning"


class SessionRecorder:
    """Keeps a runner's conversation and events flowing into the current session transcript.

    One recorder per runner; it can switch sessions (a new one after /clear, a resumed one).
    A transcript that cannot be written never stops a turn: what is wrong goes to `listeners`.
    """

    def __init__(self, runner: Runner, secrets: list[str] | None = None) -> None:
        self.runner = runner
        self.secrets = configured_secrets() if secrets is None else secrets
        self.transcript: Transcript | None = None
        self.listeners: list[Callable[[TranscriptNotice], None]] = []  # the surfaces say these at once
        # told of a session resumed, they take back what it kept (session/kept_state.py); their notes are said
        self.resume_listeners: list[Callable[[transcripts.LoadedSession], list[str]]] = []
        self.records_lost = 0  # records a closed transcript never got written
        self._failing: OSError | None = None  # the write failure being waited out
        self._dropped_seen = 0  # records the transcript let go that were already counted lost
        self._unwritable_said = False
        self._outputs: transcripts.KeptOutputs | None = None
        runner.conversation.listeners.append(self._on_record)
        runner.event_listeners.append(self._on_event)
        runner.archive = self

    @property
    def session_id(self) -> str | None:
        return self.transcript.id if self.transcript else None

    def start(self, settings: Settings) -> list[str]:
        """A new session, or the one `--resume ID` / `--continue` names. Returns notes for the user."""
        try:
            latest = transcripts.latest() if settings.run.continue_latest and not settings.run.resume else None
        except OSError as exc:  # the data directory is not one
            return [self._without_transcript(exc)]
        session = settings.run.resume or latest
        if session is not None:
            return self.resume(session)
        notes = self.new()
        if settings.run.continue_latest:
            notes.insert(0, "there is no earlier session to continue: this is a new one")
        return notes

    def new(self) -> list[str]:
        """Start a new transcript; notes for the user (none, or why this session has no transcript)."""
        self.close()
        try:
            self.transcript = transcripts.Transcript.create(
                model=self.runner.config.model, cwd=str(self.runner.cwd), extra_secrets=self.secrets
            )
        except OSError as exc:
            if self._unwritable_said:
                return []
            return [self._without_transcript(exc)]
        self.transcript.listeners.append(self._on_file_event)
        return []

    def resume(self, session: str) -> list[str]:
        """Continue a stored session: its (repaired) history replaces the runner's.

        Raises SessionError when there is no such session or it is in use; one that can be read
        but not written is continued without a transcript.
        """
        transcript: Transcript | None = None
        unwritable: list[str] = []
        try:
            transcript, loaded = transcripts.resume(session, extra_secrets=self.secrets)
        except transcripts.SessionError:
            raise
        except OSError as exc:  # e.g. a read-only data directory: read it, write nothing
            loaded = transcripts.load(session)
            unwritable.append(self._without_transcript(exc))
        else:
            transcript.listeners.append(self._on_file_event)
        self.close()
        self.runner.conversation.replace(loaded.messages)  # not recorded: the file already has it
        self.runner.forget_measurements()
        self.transcript = transcript
        shown = transcripts.messages_count(len(loaded.whole))
        if summary_of(loaded.messages) is not None:
            shown += f"; compacted: the model sees a summary and the last {len(loaded.messages) - 1}"
        restored = [note for listener in self.resume_listeners for note in listener(loaded)]
        return [f"resumed session {loaded.id} ({shown})", *restored, *loaded.notes, *unwritable]

    def whole_history(self) -> list[Message]:
        """Every message of this session, those a compaction summarised too (for /export)."""
        if self.transcript is None:
            return list(self.runner.conversation.messages)
        return transcripts.load(self.transcript.path).whole

    def output(self, call_id: str) -> str | None:
        """A tool output as the transcript keeps it, whole (`recall` of one capped, or one a
        compaction let go); None without a transcript or such a call."""
        return transcripts.tool_output(self.transcript.path, call_id) if self.transcript else None

    @property
    def transcript_path(self) -> Path | None:
        """The transcript's file (None: this session has none now)."""
        return self.transcript.path if self.transcript is not None else None

    @property
    def outputs(self) -> transcripts.KeptOutputs | None:
        """The tool outputs kept whole beside the transcript (the output view reads them); None
        without a transcript."""
        if self.transcript is None:
            return None
        directory = transcripts.outputs_dir(self.transcript.path)
        if self._outputs is None or self._outputs.directory != directory:
            self._outputs = transcripts.KeptOutputs(directory, Redactor(self.secrets))
        return self._outputs

    def stream(self, call_id: str, text: str, host: str | None = None) -> None:
        """More of a call's output (of one host's own stream of it), kept whole as it comes."""
        if (outputs := self.outputs) is not None:
            outputs.write(call_id, text, host)

    def stream_ended(self, call_id: str) -> None:
        """The call ended: the last of its output (a line without its break) goes in."""
        if (outputs := self.outputs) is not None:
            outputs.finish(call_id)

    def keep(self, call_id: str, text: str) -> bool:
        """Keep the whole output of a call whose result is capped, for `recall` (and for the
        output view, when the call streamed none); False when this session has no transcript to
        keep it in. A failed write holds it like any record."""
        if (outputs := self.outputs) is None:
            return False
        if not outputs.has(call_id):
            outputs.write(call_id, text)
        self._write(lambda transcript: transcript.event(transcripts.KEPT_OUTPUT_EVENT, call_id=call_id, text=text))
        return True

    def event(self, kind: str, **fields: Any) -> None:
        """Store an event of the session in its transcript (not history: see `transcripts.Transcript.event`)."""
        self._write(lambda transcript: transcript.event(kind, **fields))

    def close(self) -> None:
        """Close the transcript, made durable first; what it still holds is lost, and said."""
        transcript, self.transcript = self.transcript, None
        if transcript is None:
            return
        try:
            transcript.sync()
        except OSError:
            pass  # counted below: close tries the held records once more
        transcript.close()
        unwritten = transcript.held + transcript.dropped - self._dropped_seen
        if unwritten:
            self.records_lost += unwritten
            self.say(
                f"{unwritten} record(s) of this session could not be written to {transcript.path} "
                f"({_reason(self._failing)}): the transcript is incomplete",
                "error",
            )
        self._failing = None
        self._dropped_seen = 0

    def _on_record(self, record: dict[str, Any]) -> None:
        self._write(lambda transcript: transcript.append(record))
        self._write(lambda transcript: transcript.sync())

    def _on_event(self, event: Event) -> None:
        if event.kind in SESSION_EVENTS:
            fields = event.to_json()
            kind = fields.pop("type")
            fields.pop("summary", None)  # a compaction's summary is in its own record already
            self._write(lambda transcript: transcript.event(kind, **fields))
        if event.kind in RUN_ENDS:
            self._write(lambda transcript: transcript.sync())

    def _write(self, action: Callable[[Transcript], None]) -> None:
        transcript = self.transcript
        if transcript is None:
            return
        try:
            action(transcript)
        except OSError as exc:
            self._write_failed(transcript, exc)
            return
        except ValueError as exc:  # closed, or a record it cannot store: nothing more is written
            _log.error("session %s cannot be written any more: %s", transcript.id, exc)
            self.say(f"the transcript {transcript.path} cannot be written any more: {exc}", "error")
            self.close()
            return
        if self._failing is not None and not transcript.held:
            self._failing = None
            lost, self._dropped_seen = transcript.dropped - self._dropped_seen, transcript.dropped
            self.records_lost += lost
            if lost:
                self.say(f"the transcript {transcript.path} is written again; {lost} record(s) were lost", "error")
            else:
                self.say(f"the transcript {transcript.path} is written again: nothing was lost", "info")

    def _write_failed(self, transcript: Transcript, exc: OSError) -> None:
        """Said once per spell of failures, and once more when records start being let go: the
        next success says it is over."""
        if isinstance(exc, transcripts.HeldLimitError) and not isinstance(self._failing, transcripts.HeldLimitError):
            self._failing = exc
            self.say(f"the transcript {transcript.path} cannot be written and {exc.strerror}; more follow", "error")
            return
        if self._failing is not None:
            return
        self._failing = exc
        _log.info("session %s: transcript write failed: %s", transcript.id, exc)
        self.say(
            f"the transcript {transcript.path} cannot be written ({_reason(exc)}); the conversation "
            "goes on, its records kept in memory and written, in order, as soon as a write succeeds"
        )

    def _without_transcript(self, exc: OSError) -> str:
        self._unwritable_said = True
        return f"no transcript for this session: {_reason(exc)} ({exc.filename or transcripts.sessions_dir()})"

    def _on_file_event(self, text: str) -> None:
        self.say(text, "warning")

    def say(self, text: str, level: Literal["info", "warning", "error"] = "warning") -> None:
        """Tell the surfaces (`listeners`) something about the transcript, at once."""
        for listener in self.listeners:
            listener(TranscriptNotice(text, level))


def _reason(exc: OSError | None) -> str:
    """An OSError said in words: "the disk is full" for ENOSPC and a quota, else its message."""
    if exc is None:
        return "a write failed"
    if exc.errno in _DISK_FULL:
        return "the disk is full"
    return exc.strerror or str(exc)
