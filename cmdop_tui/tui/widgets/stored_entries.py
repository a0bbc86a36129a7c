"""A stored conversation (a resumed session's) as the chat's entries: each prompt, reply and tool
call with its result, read from the transcript's message blocks (widgets/chat_log.py mounts
them). Loaded with the first resumed conversation, not before the first paint."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.widget import Widget

from cmdop_tui.agent.history import is_summary_block, previous_summary
from cmdop_tui.agent.messages import (
    Block,
    Message,
    blocks_of,
    is_text,
    is_tool_result,
    is_tool_use,
    result_content_text,
)
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, stored_outcome
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage


def compacted_summary(messages: Sequence[Message]) -> str | None:
    """The summary a compacted conversation starts with; None when it was not compacted."""
    if messages and any(is_summary_block(block) for block in blocks_of(messages[0])):
        return previous_summary(messages)
    return None


def stored_entries(
    messages: Iterable[Message], records: dict[str, ToolRecord], cards: dict[str, ToolCard]
) -> list[Widget]:
    """The entries of `messages` (the summary blocks left out); each tool call drawn gets its
    record in `records` and its card in `cards`, and its result finishes it."""
    entries: list[Widget] = []
    for message in messages:
        for block in blocks_of(message):
            if not is_summary_block(block) and (entry := _entry(message["role"], block, records, cards)) is not None:
                entries.append(entry)
    return entries


def _entry(role: str, block: Block, records: dict[str, ToolRecord], cards: dict[str, ToolCard]) -> Widget | None:
    """The chat entry for one block of a stored message (a tool result finishes its call's card)."""
    if is_text(block) and role == "user":
        return UserMessage(block.get("text", ""))
    if is_text(block):
        return AssistantReply(block.get("text", ""))
    if is_tool_use(block):
        used = ToolRecord(block["id"], block["name"], block.get("input") or {}, "")
        used.status = "ok"
        records[used.call_id] = used
        card = cards[used.call_id] = ToolCard(used)
        return card
    if is_tool_result(block) and (answered := records.get(block.get("tool_use_id", ""))):
        answered.finish(result_content_text(block.get("content")), stored_outcome(bool(block.get("is_error"))), 0.0)
    return None


def finish_replies(entries: Iterable[Widget]) -> None:
    """The stored replies among `entries`, once mounted, drawn whole (not as streaming)."""
    for entry in entries:
        if isinstance(entry, AssistantReply):
            entry.finish()
