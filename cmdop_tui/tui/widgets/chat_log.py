"""The conversation: prompts, streamed Markdown replies, thinking, tool cards and notices.

Anchored to the bottom while the user has not scrolled up (Textual's `anchor`), so a streaming
reply stays in view without fighting a user who is reading back.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget

from cmdop_tui.tui.vocabulary.messages import Agent
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
from cmdop_tui.tui.widgets.notice import Notice, NoticeKind
from cmdop_tui.tui.widgets.thinking_block import ThinkingBlock
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage


class ChatLog(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    ChatLog {
        padding: 0 1;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;

        &:focus {
            background-tint: $foreground 3%;
        }
    }
    """

    BINDINGS = [("end", "scroll_end", "Latest"), ("home", "scroll_home", "First")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._reply: AssistantReply | None = None
        self._thinking: ThinkingBlock | None = None
        self._cards: dict[str, ToolCard] = {}
        self.last_reply = ""

    def on_mount(self) -> None:
        self.anchor()

    # --- entries -------------------------------------------------------------------------------

    async def add(self, widget: Widget) -> None:
        if self.is_attached:  # events may still arrive while the app shuts down
            await self.mount(widget)

    async def add_user_message(self, text: str) -> None:
        await self._end_reply()
        await self.add(UserMessage(text))
        self.anchor()  # sending a prompt brings the view back to the newest text

    async def add_notice(self, text: str, kind: NoticeKind = "info") -> None:
        await self.add(Notice(text, kind))

    async def add_reply(self, text: str) -> None:
        """A finished reply (a resumed session's)."""
        await self._end_reply()
        reply = AssistantReply(text)
        await self.add(reply)
        reply.finish()

    async def add_tool_card(self, record: ToolRecord) -> None:
        await self._end_reply()
        card = ToolCard(record)
        self._cards[record.call_id] = card
        await self.add(card)

    async def clear(self) -> None:
        await self._end_reply()
        self._cards.clear()
        await self.remove_children()

    # --- streaming -----------------------------------------------------------------------------

    async def _append_reply(self, text: str) -> None:
        if self._reply is None:
            self._thinking = None
            self._reply = AssistantReply()
            await self.add(self._reply)
        self._reply.append(text)

    async def _end_reply(self, *, discard: bool = False) -> None:
        reply, self._reply = self._reply, None
        self._thinking = None
        if reply is None:
            return
        if discard:
            await reply.remove()
        else:
            reply.finish()
            self.last_reply = reply.source

    # --- agent events --------------------------------------------------------------------------

    async def on_agent_token_received(self, message: Agent.TokenReceived) -> None:
        await self._append_reply(message.batch.take())

    async def on_agent_thinking_received(self, message: Agent.ThinkingReceived) -> None:
        if self._thinking is None:
            await self._end_reply()
            self._thinking = ThinkingBlock()
            await self.add(self._thinking)
        self._thinking.append(message.batch.take())

    async def on_agent_retrying(self, message: Agent.Retrying) -> None:
        await self._end_reply(discard=True)
        event = message.event
        await self.add_notice(
            f"Retrying in {event.delay_s:.1f}s (attempt {event.attempt + 1}): {event.reason}", "warning"
        )

    async def on_agent_tool_started(self, message: Agent.ToolStarted) -> None:
        await self.add_tool_card(message.record)

    def on_agent_tool_progressed(self, message: Agent.ToolProgressed) -> None:
        self._refresh_card(message.event.call_id)

    def on_agent_tool_ended(self, message: Agent.ToolEnded) -> None:
        self._refresh_card(message.event.call_id)

    def on_agent_tool_nested(self, message: Agent.ToolNested) -> None:
        self._refresh_card(message.event.call_id)

    async def on_agent_finished(self, message: Agent.Finished) -> None:
        await self._end_reply()

    async def on_agent_failed(self, message: Agent.Failed) -> None:
        await self._end_reply()
        await self.add_notice(f"Error: {message.event.message}", "error")

    async def on_agent_cancelled(self, message: Agent.Cancelled) -> None:
        await self._end_reply()
        event = message.event
        text = "■ Stopped." if event.reason == "ui" else f"■ Stopped: {event.message}."
        await self.add_notice(text, "stopped")

    async def on_agent_budget_warned(self, message: Agent.BudgetWarned) -> None:
        event = message.event
        await self.add_notice(
            f"Budget: ${event.spent_usd:.4f} of ${event.budget_usd:.2f} spent; the session stops before it would "
            "cross the budget (/budget USD to change it).",
            "warning",
        )

    async def on_agent_loop_continued(self, message: Agent.LoopContinued) -> None:
        await self._end_reply()
        event = message.event
        await self.add_notice(f"Loop {event.loop}/{event.max_loops}: continuing", "info")

    def _refresh_card(self, call_id: str) -> None:
        card = self._cards.get(call_id)
        if card is not None:
            card.refresh(layout=True)
