"""Loop mode (after Open Interpreter) and the guards that stop runaway runs.

After a final answer that contains none of the loop breakers, earlier loop messages are removed
from history, neighbouring assistant messages merged, and the loop message appended as a user turn.
Breakers are exact, case-sensitive substrings, as in the reference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cmdop_tui.agent.history import Conversation, merge_adjacent
from cmdop_tui.agent.messages import Block, Message, blocks_of, is_text

DEFAULT_LOOP_MESSAGE = (
    "Proceed. You CAN run code on my machine. If the entire task I asked for is done, say exactly "
    "'The task is done.' If you need some specific information (like username or password) say "
    "EXACTLY 'Please provide more information.' If it's impossible, say 'The task is impossible.' "
    "(If I haven't provided a task, say exactly 'Let me know what you'd like to do next.') "
    "Otherwise keep going."
)
DEFAULT_LOOP_BREAKERS: tuple[str, ...] = (
    "The task is done.",
    "The task is impossible.",
    "Let me know what you'd like to do next.",
    "Please provide more information.",
)


@dataclass(frozen=True)
class LoopSettings:
    enabled: bool = False
    message: str = DEFAULT_LOOP_MESSAGE
    breakers: tuple[str, ...] = DEFAULT_LOOP_BREAKERS
    max_loops: int = 20


def contains_breaker(text: str, breakers: Sequence[str]) -> bool:
    """True when the reply says one of the breaker phrases (exact, case-sensitive substring)."""
    return any(breaker in text for breaker in breakers)


def _is_loop_block(block: Block, loop_message: str) -> bool:
    return is_text(block) and block.get("text") == loop_message


def remove_loop_messages(messages: Sequence[Message], loop_message: str) -> list[Message]:
    """History without earlier loop messages, and with the assistant replies around them merged."""
    kept: list[Message] = [
        {**m, "content": [b for b in blocks_of(m) if not _is_loop_block(b, loop_message)]} if m["role"] == "user" else m
        for m in messages
    ]
    return merge_adjacent(kept)


def prepare_next_loop(conversation: Conversation, loop_message: str) -> None:
    """Clean up history and append the loop message as the next user turn."""
    conversation.replace(remove_loop_messages(conversation.messages, loop_message))
    conversation.append_user(loop_message)


@dataclass
class RepeatGuard:
    """Trips when the same tool call (name and input) comes `limit` times in a row."""

    limit: int = 3
    _last: str | None = field(default=None, init=False)
    _count: int = field(default=0, init=False)

    def observe(self, name: str, tool_input: Any) -> bool:
        signature = name + "\0" + json.dumps(tool_input, sort_keys=True, default=str)
        self._count = self._count + 1 if signature == self._last else 1
        self._last = signature
        return self._count >= self.limit

    def reset(self) -> None:
        self._last, self._count = None, 0
