"""The session's transcript: the conversation and its events, written as they happen."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cmdop_tui import transcripts
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.history import summary_of
from cmdop_tui.agent.messages import Message
from cmdop_tui.agent.runner import Runner
from cmdop_tui.config.settings import Settings
from cmdop_tui.support.secrets import configured_secrets

_log = logging.getLogger(__name__)
Transcript = transcripts.Transcript

SESSION_EVENTS = frozenset({"tool_start", "tool_end", "final", "error", "cancelled", "usage", "compaction"})


class SessionRecorder:
    """Keeps a runner's conversation and events flowing into the current session transcript.

    One recorder per runner; it can switch sessions (a new one after /clear, a resumed one).
    A transcript that cannot be written (a full disk) is reported once and dropped: it never
    stops a turn.
    """

    def __init__(self, runner: Runner, secrets: list[str] | None = None) -> None:
        self.runner = runner
        self.secrets = configured_secrets() if secrets is None else secrets
        self.transcript: Transcript | None = None
        runner.conversation.listeners.append(self._on_record)
        runner.event_listeners.append(self._on_event)
        runner.recall_fallback = self.tool_output

    @property
    def session_id(self) -> str | None:
        return self.transcript.id if self.transcript else None

    def start(self, settings: Settings) -> list[str]:
        """A new session, or the one `--resume ID` / `--continue` names. Returns notes for the user."""
        session = settings.run.resume or (transcripts.latest() if settings.run.continue_latest else None)
        if session is not None:
            return self.resume(session)
        self.new()
        return ["there is no earlier session to continue: this is a new one"] if settings.run.continue_latest else []

    def new(self) -> None:
        self.close()
        self.transcript = transcripts.Transcript.create(
            model=self.runner.config.model, cwd=str(self.runner.cwd), extra_secrets=self.secrets
        )

    def resume(self, session: str) -> list[str]:
        """Continue a stored session: its (repaired) history replaces the runner's."""
        transcript, loaded = transcripts.resume(session, extra_secrets=self.secrets)
        self.close()
        self.runner.conversation.replace(loaded.messages)  # not recorded: the file already has it
        self.runner.forget_measurements()
        self.transcript = transcript
        shown = f"{len(loaded.whole)} messages"
        if summary_of(loaded.messages) is not None:
            shown += f"; compacted: the model sees a summary and the last {len(loaded.messages) - 1}"
        return [f"resumed session {loaded.id} ({shown})", *loaded.notes]

    def whole_history(self) -> list[Message]:
        """Every message of this session, those a compaction summarised too (for /export)."""
        if self.transcript is None:
            return list(self.runner.conversation.messages)
        return transcripts.load(self.transcript.path).whole

    def tool_output(self, call_id: str) -> str | None:
        """A tool output as the transcript keeps it (`recall` of one a compaction let go)."""
        return transcripts.tool_output(self.transcript.path, call_id) if self.transcript else None

    def close(self) -> None:
        transcript, self.transcript = self.transcript, None
        if transcript is not None:
            transcript.close()

    def _on_record(self, record: dict[str, Any]) -> None:
        self._write(lambda transcript: transcript.append(record))

    def _on_event(self, event: Event) -> None:
        if event.kind in SESSION_EVENTS:
            fields = event.to_json()
            kind = fields.pop("type")
            fields.pop("summary", None)  # a compaction's summary is in its own record already
            self._write(lambda transcript: transcript.event(kind, **fields))

    def _write(self, action: Callable[[Transcript], None]) -> None:
        if self.transcript is None:
            return
        try:
            action(self.transcript)
        except (OSError, ValueError) as exc:
            _log.error("session %s cannot be written any more: %s", self.transcript.id, exc)
            self.close()
