"""The loop's events, delivered to the widgets as Textual messages.

The loop runs in the app's worker and calls `EventRouter.deliver` for every event. Each event is
wrapped in the message the widgets know (`Agent.TokenReceived`, `Agent.ToolStarted`...) and
posted to the widgets it concerns. Two things keep a fast stream cheap: consecutive text deltas
join one batch until a widget takes it, so a stream costs a message per frame, not per token;
and a tool's live output is redrawn at most every PROGRESS_REFRESH_S per call (always the last).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App

from cmdop_tui.agent import events as ev
from cmdop_tui.tui.vocabulary.messages import Agent, AgentMessage, BatchedMessage, TextBatch, ToolMessage
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

if TYPE_CHECKING:
    from cmdop_tui.agent.messages import Message

PROGRESS_REFRESH_S = 0.1  # live tool output is redrawn at most this often per call

MESSAGE_FOR_EVENT: dict[type[ev.Event], type[AgentMessage[Any]]] = {
    ev.TurnStarted: Agent.TurnStarted,
    ev.Retrying: Agent.Retrying,
    ev.Waiting: Agent.Waiting,
    ev.Usage: Agent.UsageReported,
    ev.LoopContinued: Agent.LoopContinued,
    ev.BudgetWarning: Agent.BudgetWarned,
    ev.CompactionStarted: Agent.CompactionStarted,
    ev.Compacted: Agent.Compacted,
    ev.CompactionFailed: Agent.CompactionFailed,
    ev.Final: Agent.Finished,
    ev.Error: Agent.Failed,
    ev.Cancelled: Agent.Cancelled,
}
TOOL_MESSAGE_FOR_EVENT: dict[type[ev.Event], type[ToolMessage[Any]]] = {
    ev.ToolStart: Agent.ToolStarted,
    ev.ToolProgress: Agent.ToolProgressed,
    ev.ToolEnd: Agent.ToolEnded,
    ev.ToolNested: Agent.ToolNested,
}
BATCHED_MESSAGE_FOR_EVENT: dict[type[ev.Event], type[BatchedMessage[Any]]] = {
    ev.Token: Agent.TokenReceived,
    ev.Thinking: Agent.ThinkingReceived,
}


class EventRouter:
    """Routes the loop's events to the chat, the status line and the tool-activity panel.

    `records` holds every tool call of the conversation shown, by call id.
    """

    def __init__(self, app: App[Any], *, chat: ChatLog, status: StatusLine, tool_panel: ToolPanel) -> None:
        self.app = app
        self.chat = chat
        self.status = status
        self.tool_panel = tool_panel
        self.records: dict[str, ToolRecord] = {}
        self._batch: tuple[type, TextBatch] | None = None
        self._progress_posted: dict[str, float] = {}
        self._progress_scheduled: set[str] = set()

    async def reset(self) -> None:
        """Forget what is shown: the chat, the tool calls, the turn counters."""
        self.records.clear()
        self.tool_panel.clear()
        await self.chat.clear()
        self.status.update_facts(turn=0, loop=0)

    async def show_conversation(self, messages: Sequence[Message]) -> None:
        """Show `messages` in place of what is shown: prompts, replies and tool calls with their
        results (and the summary it starts with, folded, when it was compacted)."""
        await self.reset()
        await self.chat.show_messages(messages, self.records)

    def deliver(self, event: ev.Event) -> None:
        """The loop's event sink: wrap each event in a message for the widgets it concerns."""
        if isinstance(event, ev.Token | ev.Thinking):
            self._deliver_text(event)
            return
        self._batch = None
        if isinstance(event, ev.ToolStart | ev.ToolProgress | ev.ToolEnd | ev.ToolNested):
            self._deliver_tool_event(event)
            return
        if isinstance(event, ev.HookRan):  # a row of the Tools panel
            self.tool_panel.post_message(Agent.HookRan(event))
            return
        if isinstance(event, ev.SteeringDelivered):  # to the app: the chat shows it, the queue lets it go
            self.app.post_message(Agent.Steered(event))
            return
        message_type = MESSAGE_FOR_EVENT[type(event)]
        for target in (self.chat, self.status):
            target.post_message(message_type(event))

    def _deliver_text(self, event: ev.Token | ev.Thinking) -> None:
        kind = type(event)
        if self._batch is not None and self._batch[0] is kind and not self._batch[1].taken:
            self._batch[1].parts.append(event.text)
            return
        batch = TextBatch(event.text)
        self._batch = (kind, batch)
        message_type: type[BatchedMessage[Any]] = BATCHED_MESSAGE_FOR_EVENT[kind]
        self.chat.post_message(message_type(event, batch))

    def _deliver_tool_event(self, event: ev.ToolStart | ev.ToolProgress | ev.ToolEnd | ev.ToolNested) -> None:
        if isinstance(event, ev.ToolStart):
            self.records[event.call_id] = ToolRecord(
                event.call_id, event.name, event.input, event.machine, diff=event.preview
            )
        record = self.records.get(event.call_id)
        if record is None:
            return
        if isinstance(event, ev.ToolProgress | ev.ToolNested):
            if isinstance(event, ev.ToolProgress):
                record.add_progress(event.text)
            else:
                record.add_nested(event.event)
            self._post_progress(event, record)
            return
        if isinstance(event, ev.ToolEnd):
            record.finish(event.output, event.outcome, event.duration_s)
            self.app.post_message(Agent.ToolEnded(event, record))  # a long one is told (tui/attention.py)
        self._post_tool_message(event, record)

    def _post_tool_message(self, event: ev.Event, record: ToolRecord) -> None:
        message_type = TOOL_MESSAGE_FOR_EVENT[type(event)]
        for target in (self.chat, self.tool_panel):
            target.post_message(message_type(event, record))

    def _post_progress(self, event: ev.ToolProgress | ev.ToolNested, record: ToolRecord) -> None:
        """Redraw live output at most every PROGRESS_REFRESH_S per call, and always the last."""
        call_id = event.call_id
        if call_id in self._progress_scheduled:
            return
        wait = self._progress_posted.get(call_id, 0.0) + PROGRESS_REFRESH_S - time.monotonic()
        if wait <= 0:
            self._progress_posted[call_id] = time.monotonic()
            self._post_tool_message(event, record)
            return
        self._progress_scheduled.add(call_id)

        def post_later() -> None:
            self._progress_scheduled.discard(call_id)
            self._progress_posted[call_id] = time.monotonic()
            if record.status == "running":
                self._post_tool_message(event, record)

        self.app.set_timer(wait, post_later)
