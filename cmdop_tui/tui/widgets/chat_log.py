"""The conversation: prompts, streamed Markdown replies, thinking, tool cards, compactions and notices.

Anchored to the bottom while the user has not scrolled up (Textual's `anchor`), so a streaming
reply stays in view without fighting a user who is reading back.

It costs what is near the view, not the whole history: a resumed session draws its last
RESUME_PAGE messages at once (earlier ones come back a page at a time, on request), and a live
session keeps at most MAX_ITEMS entries, the oldest giving way (the transcript keeps them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget

from cmdop_tui.agent.budget import format_usd
from cmdop_tui.support.figures import duration
from cmdop_tui.tui.vocabulary.messages import Agent
from cmdop_tui.tui.widgets.earlier_messages import EarlierMessages
from cmdop_tui.tui.widgets.notice import Notice, NoticeKind
from cmdop_tui.tui.widgets.user_message import UserMessage

if TYPE_CHECKING:  # what a reply or a tool call draws loads with the first of them, not at start
    from cmdop_tui.agent.messages import Message
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
    from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
    from cmdop_tui.tui.widgets.compaction_item import CompactionItem
    from cmdop_tui.tui.widgets.thinking_block import ThinkingBlock
    from cmdop_tui.tui.widgets.tool_card import ToolCard

RESUME_PAGE = 40  # messages of a resumed session drawn at once, and per "show more"
MAX_ITEMS = 400  # entries a live chat keeps; past it the oldest PRUNE_BATCH give way
PRUNE_BATCH = 100
STOPPED = "■ Stopped."  # what a Stop says in the chat


@dataclass(frozen=True)
class StreamPace:
    """How a streaming reply reaches the screen: painted at most every `paint_s` seconds (a
    token's echo costs a frame; text arriving faster is painted in larger steps), and scrolled,
    while the chat follows it, by 1/`jump_share` of the view at a time."""

    paint_s: float
    jump_share: int


DEFAULT_PACE = StreamPace(paint_s=1 / 25, jump_share=4)
LOW_BANDWIDTH_PACE = StreamPace(paint_s=1 / 10, jump_share=2)


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

    BINDINGS = [
        Binding("end", "scroll_end", "Latest", tooltip="the chat: to the latest message"),
        Binding("home", "scroll_home", "First", tooltip="the chat: to the first message"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._reply: AssistantReply | None = None
        self._thinking: ThinkingBlock | None = None
        self._cards: dict[str, ToolCard] = {}
        self._compaction: CompactionItem | None = None  # the one running
        self._compaction_failure: str | None = None  # what the last failed compaction said
        self.last_reply = ""
        self._resumed: Sequence[Message] = ()  # a resumed conversation, drawn from `_shown_from` on
        self._shown_from = 0
        self._records: dict[str, ToolRecord] = {}
        self._earlier: EarlierMessages | None = None
        self._pruned = 0  # live entries that gave way
        self.pace = DEFAULT_PACE

    def on_mount(self) -> None:
        self.anchor()

    # --- entries -------------------------------------------------------------------------------

    async def add(self, widget: Widget) -> None:
        if self.is_attached:  # events may still arrive while the app shuts down
            await self.mount(widget)
            if len(self.children) > MAX_ITEMS:
                await self._prune()

    async def _prune(self) -> None:
        """The oldest entries give way, so a long session costs what a short one does."""
        oldest = [child for child in self.children if child is not self._earlier][:PRUNE_BATCH]
        oldest = [child for child in oldest if child is not self._reply and child is not self._compaction]
        from cmdop_tui.tui.widgets.tool_card import ToolCard

        for card in [child for child in oldest if isinstance(child, ToolCard)]:
            self._cards.pop(card.record.call_id, None)
        await self.remove_children(oldest)
        self._pruned += len(oldest)
        if self._earlier is None:
            self._earlier = EarlierMessages(self._pruned, RESUME_PAGE, can_show=False)
            await self.mount(self._earlier, before=0)
        self._earlier.set_counts(self._pruned + self._shown_from, RESUME_PAGE)

    async def add_user_message(self, text: str, *, steering: bool = False) -> None:
        await self._end_reply()
        await self.add(UserMessage(text, steering=steering))
        self.anchor()  # sending a prompt brings the view back to the newest text

    async def add_notice(self, text: str, kind: NoticeKind = "info") -> None:
        await self.add(Notice(text, kind))

    async def add_reply(self, text: str) -> None:
        """A finished reply (a resumed session's)."""
        from cmdop_tui.tui.widgets.assistant_reply import AssistantReply

        await self._end_reply()
        reply = AssistantReply(text)
        await self.add(reply)
        reply.finish()

    async def add_tool_card(self, record: ToolRecord) -> None:
        from cmdop_tui.tui.widgets.tool_card import ToolCard

        await self._end_reply()
        card = ToolCard(record)
        self._cards[record.call_id] = card
        await self.add(card)

    async def clear(self) -> None:
        await self._end_reply()
        self._cards.clear()
        self._compaction = self._compaction_failure = None
        self._resumed, self._shown_from, self._records = (), 0, {}
        self._earlier, self._pruned = None, 0
        await self.remove_children()

    # --- a resumed conversation ----------------------------------------------------------------

    async def show_messages(self, messages: Sequence[Message], records: dict[str, ToolRecord]) -> None:
        """Draw a resumed conversation at once: its last RESUME_PAGE messages (tool calls with
        their results: `records` gets one per call drawn), the summary it starts with if it was
        compacted (folded), and a line that brings back earlier messages on request."""
        from cmdop_tui.tui.widgets.stored_entries import compacted_summary  # with a resumed session

        self._resumed, self._records = messages, records
        self._shown_from = max(0, len(messages) - RESUME_PAGE)
        if (summary := compacted_summary(messages)) is not None:
            from cmdop_tui.tui.widgets.compaction_item import CompactionItem

            await self.add(CompactionItem.resumed(summary))
        if self._shown_from > 0:
            self._earlier = EarlierMessages(self._shown_from, RESUME_PAGE)
            await self.add(self._earlier)
        await self._draw(messages[self._shown_from :], after=None)

    async def on_earlier_messages_requested(self, message: EarlierMessages.Requested) -> None:
        message.stop()
        start = max(0, self._shown_from - RESUME_PAGE)
        page, self._shown_from = self._resumed[start : self._shown_from], start
        await self._draw(page, after=message.item)
        if start == 0 and not self._pruned:
            await message.item.remove()
            self._earlier = None
        else:
            message.item.set_counts(start + self._pruned, RESUME_PAGE)

    async def _draw(self, messages: Sequence[Message], *, after: Widget | None) -> None:
        """Mount the entries of `messages` in one go (at the end, or right after `after`)."""
        from cmdop_tui.tui.widgets.stored_entries import finish_replies, stored_entries

        entries = stored_entries(messages, self._records, self._cards)
        if not entries or not self.is_attached:
            return
        await self.mount_all(entries, after=after) if after is not None else await self.mount_all(entries)
        finish_replies(entries)

    # --- streaming -----------------------------------------------------------------------------

    async def _append_reply(self, text: str) -> None:
        self._compaction_passed()
        if self._reply is None:
            from cmdop_tui.tui.widgets.assistant_reply import AssistantReply

            self._thinking = None
            self._reply = AssistantReply()
            self._reply.paint_interval = self.pace.paint_s
            await self.add(self._reply)
        self._reply.jump_lines = self._jump_lines()
        self._reply.append(text)

    def _jump_lines(self) -> int:
        """How far a streamed reply scrolls at a time: a share of the view while the chat follows
        it past the bottom (each scroll rewrites the column), else nothing to jump."""
        view = self.scrollable_content_region.height
        following = self.is_anchored and self.scroll_y >= self.max_scroll_y and self.virtual_size.height > view
        return max(2, view // self.pace.jump_share) if following else 0

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
        self._compaction_passed()
        if self._thinking is None:
            from cmdop_tui.tui.widgets.thinking_block import ThinkingBlock

            await self._end_reply()
            self._thinking = ThinkingBlock()
            await self.add(self._thinking)
        self._thinking.append(message.batch.take())

    async def on_agent_retrying(self, message: Agent.Retrying) -> None:
        await self._end_reply(discard=True)
        event = message.event
        await self.add_notice(
            f"Retrying in {duration(event.delay_s)} (attempt {event.attempt + 1}): {event.reason}", "warning"
        )

    async def on_agent_waiting(self, message: Agent.Waiting) -> None:
        await self.add_notice(f"{message.event.describe()} Esc stops it.", "warning")

    async def on_agent_tool_started(self, message: Agent.ToolStarted) -> None:
        self._compaction_passed()
        await self.add_tool_card(message.record)

    def on_agent_tool_progressed(self, message: Agent.ToolProgressed) -> None:
        self._refresh_card(message.event.call_id)

    def on_agent_tool_ended(self, message: Agent.ToolEnded) -> None:
        self._refresh_card(message.event.call_id)

    def on_agent_tool_nested(self, message: Agent.ToolNested) -> None:
        self._refresh_card(message.event.call_id)

    async def on_agent_finished(self, message: Agent.Finished) -> None:
        self._compaction_passed()
        await self._end_reply()

    async def on_agent_failed(self, message: Agent.Failed) -> None:
        await self._end_reply()
        event = message.event
        said, self._compaction_failure = self._compaction_failure, None
        if (item := self._end_compaction()) is not None:  # /compact could not make its summary
            item.failed(event.message)
        elif event.message == said:  # the compaction's line said it already
            pass
        elif event.code == "nothing_to_compact":
            await self.add_notice(f"Nothing to compact: {event.message}.")
        else:
            await self.add_notice(f"Error: {event.message}", "error")

    async def on_agent_cancelled(self, message: Agent.Cancelled) -> None:
        await self._end_reply()
        event = message.event
        if (item := self._end_compaction()) is not None:
            item.stopped(event)
            return
        text = STOPPED if event.reason == "ui" else f"■ Stopped: {event.message}."
        await self.add_notice(text, "stopped")

    async def on_agent_compaction_started(self, message: Agent.CompactionStarted) -> None:
        await self._end_reply()
        event = message.event
        if event.trigger == "too_long":
            reason = f" {event.reason[:1].upper()}{event.reason[1:]}." if event.reason else ""
            await self.add_notice(f"The model's context was full: compacting and retrying.{reason}", "warning")
        from cmdop_tui.tui.widgets.compaction_item import CompactionItem

        self._compaction, self._compaction_failure = CompactionItem.started(event), None
        await self.add(self._compaction)

    async def on_agent_compacted(self, message: Agent.Compacted) -> None:
        item = self._end_compaction() or await self._new_compaction_item()
        item.done(message.event)

    async def on_agent_compaction_failed(self, message: Agent.CompactionFailed) -> None:
        item = self._end_compaction() or await self._new_compaction_item()
        item.failed(message.event.message)
        self._compaction_failure = message.event.message

    def _end_compaction(self) -> CompactionItem | None:
        item, self._compaction = self._compaction, None
        return item

    def _compaction_passed(self) -> None:
        """The run went on while a compaction was shown running: it made no summary."""
        if (item := self._end_compaction()) is not None:
            item.failed("no summary was made; the conversation was not compacted")

    async def _new_compaction_item(self) -> CompactionItem:
        """For an end whose start this chat did not see."""
        from cmdop_tui.tui.widgets.compaction_item import CompactionItem

        item = CompactionItem("Compacting the conversation…")
        await self.add(item)
        return item

    async def on_agent_budget_warned(self, message: Agent.BudgetWarned) -> None:
        event = message.event
        await self.add_notice(
            f"Budget: {format_usd(event.spent_usd)} of {format_usd(event.budget_usd)} spent; the session stops "
            "before it would cross the budget (/budget USD to change it).",
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
