"""Reminders added to the last user message of one request, never stored in the history.

Today: the model's own checklist (the latest `todo` call), so the plan stays in view every turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

from cmdop_tui.agent.messages import Message, blocks_of, is_tool_use, text_block
from cmdop_tui.tools.todo import STATUSES, render_checklist

CHECKLIST_TOOL = "todo"


def latest_checklist(messages: list[Message]) -> str | None:
    """The checklist of the latest valid `todo` call of the conversation, rendered (None: none)."""
    for message in reversed(messages):
        for block in reversed(blocks_of(message)):
            if is_tool_use(block) and block.get("name") == CHECKLIST_TOOL:
                items = (block.get("input") or {}).get("items")
                if _valid(items):
                    return render_checklist(items)
    return None


def _valid(items: object) -> TypeGuard[list[Mapping[str, object]]]:
    """A list the todo tool accepted (a refused call leaves no checklist behind)."""
    return isinstance(items, list) and all(
        isinstance(item, dict) and isinstance(item.get("text"), str) and item.get("status") in STATUSES
        for item in items
    )


def with_reminders(messages: list[Message]) -> list[Message]:
    """`messages` with this turn's reminders on the last user message (a copy; none: as is)."""
    checklist = latest_checklist(messages)
    if checklist is None or not messages or messages[-1]["role"] != "user":
        return messages
    reminder = text_block(f"<system-reminder>\nYour checklist for this task:\n{checklist}\n</system-reminder>")
    last = messages[-1]
    return [*messages[:-1], {**last, "content": [*blocks_of(last), reminder]}]
