"""What fills the context: the system prompt and tools, a summary, the conversation, tool outputs.

Token counts are estimates, about four characters a token (the SDK has no local tokenizer); the
real count of the last request comes with its usage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cmdop_tui.agent.messages import Message, blocks_of, is_tool_result

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A rough token count for `text` (the SDK has no local tokenizer)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass(frozen=True)
class ContextUsage:
    """Tokens by what they are; `summary` is what earlier turns were summarised into."""

    system_and_tools: int = 0
    summary: int = 0
    conversation: int = 0
    tool_outputs: int = 0

    @property
    def total(self) -> int:
        return self.system_and_tools + self.summary + self.conversation + self.tool_outputs


def measure(
    system: str, tools: Sequence[Mapping[str, object]], messages: list[Message], summary: str = ""
) -> ContextUsage:
    """Estimate what a request made of these parts holds."""
    outputs = 0
    rest = 0
    for message in messages:
        for block in blocks_of(message):
            size = estimate_tokens(json.dumps(block, ensure_ascii=False))
            if is_tool_result(block):
                outputs += size
            else:
                rest += size
    return ContextUsage(
        system_and_tools=estimate_tokens(system) + estimate_tokens(json.dumps(tools, ensure_ascii=False)),
        summary=estimate_tokens(summary),
        conversation=rest,
        tool_outputs=outputs,
    )
