"""Build one Messages API request.

Prompt caching: the cached prefix runs tools -> system -> messages. Breakpoints go at the end of the
static system prefix (which also covers the tool definitions before it) and at the last two user
turns of the history, so each request reads what the previous one wrote. Never more than 4.

The history is not copied: only the few messages that carry a breakpoint are replaced by shallow
copies, which keeps the per-turn cost flat for long sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cmdop_tui.agent.context import split_at_boundary
from cmdop_tui.agent.messages import ApiRequest, CacheControl, Message, TextBlock, text_block
from cmdop_tui.tools.base import Tool

MAX_CACHE_BREAKPOINTS = 4
HISTORY_BREAKPOINTS = 2
EPHEMERAL: CacheControl = {"type": "ephemeral"}
MIN_ANSWER_TOKENS = 1024  # room left for the answer when a thinking budget is set
COMPACTION_BETA = "compact-2026-01-12"  # server-side compaction: the `compact_20260112` edit


@dataclass(frozen=True)
class RequestOptions:
    model: str
    max_tokens: int = 8192
    temperature: float = 0.3
    thinking_budget: int = 0  # > 0 turns extended thinking on, which forbids a temperature
    server_compaction_at: int | None = None  # input tokens past which the endpoint compacts (beta)


def system_blocks(system_prompt: str) -> list[TextBlock]:
    """The system prompt as text blocks, with a breakpoint closing the static prefix."""
    static, rest = split_at_boundary(system_prompt)
    blocks: list[TextBlock] = [{"type": "text", "text": static, "cache_control": EPHEMERAL}]
    if rest:
        blocks.append(text_block(rest))
    return blocks


def _with_breakpoint(message: Message) -> Message:
    content = list(message["content"])
    marked = content[-1].copy()
    marked["cache_control"] = EPHEMERAL
    content[-1] = marked
    return {**message, "content": content}


def with_history_breakpoints(messages: Sequence[Message], count: int = HISTORY_BREAKPOINTS) -> list[Message]:
    """`messages` with breakpoints on the last `count` user turns."""
    marked = list(messages)
    placed = 0
    for index in range(len(marked) - 1, -1, -1):
        if placed == count:
            break
        if marked[index]["role"] == "user" and marked[index]["content"]:
            marked[index] = _with_breakpoint(marked[index])
            placed += 1
    return marked


def build_request(
    options: RequestOptions, system_prompt: str, messages: Sequence[Message], tools: Sequence[Tool]
) -> ApiRequest:
    """Keyword arguments for `client.messages.create`."""
    system = system_blocks(system_prompt)
    history_budget = min(HISTORY_BREAKPOINTS, MAX_CACHE_BREAKPOINTS - 1)
    request: ApiRequest = {
        "model": options.model,
        "max_tokens": options.max_tokens,
        "system": system,
        "messages": with_history_breakpoints(messages, history_budget),
    }
    if tools:
        request["tools"] = [tool.definition() for tool in tools]
        request["tool_choice"] = {"type": "auto"}
    if options.server_compaction_at is not None:
        request["betas"] = [COMPACTION_BETA]
        trigger = {"type": "input_tokens", "value": options.server_compaction_at}
        request["context_management"] = {"edits": [{"type": "compact_20260112", "trigger": trigger}]}
    if options.thinking_budget > 0:
        request["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
        request["max_tokens"] = max(options.max_tokens, options.thinking_budget + MIN_ANSWER_TOKENS)
    else:
        # The SDK has no keyword for temperature; it goes in the body.
        request["extra_body"] = {"temperature": options.temperature}
    return request
