"""Compaction: the head of the conversation summarised, the recent tail kept verbatim.

    before every request (never while a tool runs):
        size = estimate(request after the cheap reductions)
        if size > compact_at * window: compact()
    compact():
        head, tail = split(history)        # tail: the last `tail_tokens`, from a clean boundary
        summary    = one model call: previous summary + head, rendered as text -> new summary
        history    = [summary (+ the current prompt, bounded, when it fell in the head)] + tail

A compaction is applied only when it makes the next request smaller: before and after are
counted the same way (`count`, the meter's estimate of a request holding those messages), and
one that would not shrink it is reported as such and leaves the conversation as it was. A huge
current prompt (a paste of thousands of lines) is kept in the summary by its start and end, the
cut said; the transcript holds it whole and `recall` brings it back.

Summaries are incremental (the previous one is rewritten with the turns that just became old)
and capped, so they never grow from one compaction to the next. Every default scales with the
window, so a 16k-token model works too. The transcript keeps every message: a compaction is one
more record in it (see `Conversation.compact`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.context_usage import estimate_tokens, message_tokens
from cmdop_tui.agent.events import Compacted, CompactionFailed, CompactionStarted, Event, Retrying, Usage
from cmdop_tui.agent.history import (
    Conversation,
    merge_adjacent,
    previous_summary,
    summary_block,
    summary_of,
    without_summaries,
)
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.llm_errors import ContextOverflow, describe_error
from cmdop_tui.agent.messages import (
    ApiRequest,
    Message,
    blocks_of,
    is_text,
    is_tool_result,
    is_tool_use,
    text_of,
    tool_results,
)
from cmdop_tui.agent.reduction import result_text
from cmdop_tui.support.text import truncate_middle

EventSink = Callable[[Event], None]
Counter = Callable[[Sequence[Message]], int]  # a request's size, holding these messages
Keeper = Callable[[str, str], bool]  # keep a text whole under an id for `recall`; False: nowhere to
Trigger = Literal["auto", "manual", "too_long"]

FALLBACK_WINDOW = 200_000  # when nobody said what the model's window is

SUMMARISER_SYSTEM = """\
You compact the working memory of CMDOP Operator, an agent that runs commands and edits files on \
a user's machines. Your summary replaces the earlier conversation: the operator will see only the \
summary and the most recent messages, so keep everything it needs to go on without asking again.

Rewrite the previous summary (if any) together with the new turns into one summary. Keep, with \
exact names, paths, hosts, versions, ids and numbers:
- Standing instructions: what the user asked for in general, preferences, limits, things not to do.
- Machines: which were touched and what is known about each (OS, role, state).
- Changes made: commands run and files written, and what they changed; what was rolled back.
- Findings: facts established, measurements, causes found.
- Open problems and the current task: what is unfinished, what is next, what the user is waiting for.
Tool call ids (like toolu_...) of outputs worth reading again may be kept: recall(id) brings one back.
Drop chatter, repetition and raw output already reduced to findings. Use short Markdown sections \
with terse bullets. Stay within the length you are given; when space is short, drop the oldest \
details that no longer matter first. Reply with the summary only."""


@dataclass(frozen=True)
class CompactionPolicy:
    """When to compact and how much to keep; `[context]` in the settings."""

    compact_at: float = 0.75  # share of the window a request may reach before compacting
    tail_tokens: int = 20_000  # the recent tail kept verbatim (at most 10 % of the window)
    summary_tokens: int = 4_000  # a summary's cap (at most 4 % of the window)
    output_chars: int = 2_000  # of each tool output, in what the summariser reads

    def limits(self, window: int) -> tuple[int, int]:
        """(tail tokens, summary tokens) for a model with this context window."""
        tail = max(256, min(self.tail_tokens, window // 10))
        summary = max(256, min(self.summary_tokens, window * 4 // 100))
        return tail, summary


@dataclass(frozen=True)
class Split:
    """Where a conversation is cut: `messages[:at]` is summarised, `messages[at:]` kept."""

    at: int
    tail_tokens: int


def _clean_start(message: Message) -> bool:
    """Whether a tail may start here: an assistant turn, or a user turn with no tool results."""
    if message["role"] == "assistant":
        return True
    return not tool_results(blocks_of(message))


def split_point(messages: Sequence[Message], tail_tokens: int) -> Split:
    """The earliest clean start whose tail fits in `tail_tokens`, else the latest clean start.

    `at == 0` (or 1 when only the previous summary precedes it) means nothing to summarise.
    """
    size = 0
    best: Split | None = None
    for index in range(len(messages) - 1, 0, -1):
        size += message_tokens(messages[index])
        if not _clean_start(messages[index]):
            continue
        if size > tail_tokens and best is not None:
            break
        best = Split(index, size)
    return best or Split(0, 0)


def render_head(messages: Sequence[Message], output_chars: int, budget_chars: int) -> str:
    """The turns to summarise as plain text: tool outputs clipped, thinking left out."""
    lines: list[str] = []
    for message in without_summaries(messages):
        speaker = "User" if message["role"] == "user" else "Operator"
        for block in blocks_of(message):
            if is_text(block) and text_of(block).strip():
                lines.append(f"{speaker}: {text_of(block).strip()}")
            elif is_tool_use(block):
                arguments = truncate_middle(json.dumps(block.get("input") or {}, ensure_ascii=False), 600)
                lines.append(f"Operator called {block.get('name')} {arguments} [id {block.get('id')}]")
            elif is_tool_result(block):
                label = "Error from" if block.get("is_error") else "Output of"
                output = truncate_middle(result_text(block).strip(), output_chars)
                lines.append(f"{label} {block.get('tool_use_id')}:\n{output}")
    return truncate_middle("\n\n".join(lines), budget_chars)


def summary_request(model: str, previous: str, head: str, summary_tokens: int, instructions: str = "") -> ApiRequest:
    """The one request that writes the new summary."""
    words = summary_tokens * 3 // 4
    parts = []
    if previous:
        parts.append(f"<previous-summary>\n{previous}\n</previous-summary>")
    parts.append(f"<new-turns>\n{head}\n</new-turns>")
    if instructions.strip():
        parts.append(f"The user asks that this summary: {instructions.strip()}")
    parts.append(f"Write the new summary, at most {words} words.")
    return {
        "model": model,
        "max_tokens": summary_tokens,
        "system": SUMMARISER_SYSTEM,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "\n\n".join(parts)}]}],
        "extra_body": {"temperature": 0.3},
    }


def capped(summary: str, summary_tokens: int) -> str:
    """`summary` cut to its cap at a line boundary (a model may overrun what it was told)."""
    limit = summary_tokens * 4  # characters, as the estimate counts them
    text = summary.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit("\n", 1)[0] if "\n" in text[:limit] else text[:limit]
    return cut.rstrip() + "\n…"


def _tail_has_prompt(messages: Sequence[Message], prompt: str | None) -> bool:
    return prompt is None or any(
        is_text(block) and block.get("text") == prompt
        for message in messages
        if message["role"] == "user"
        for block in blocks_of(message)
    )


def request_id(prompt: str) -> str:
    """The id under which a cut request is kept whole for `recall` (the same prompt, the same id)."""
    return "request_" + hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def bounded_request(prompt: str, limit_chars: int, keep: Keeper | None = None) -> str:
    """`prompt` as the summary carries it: whole when it fits in `limit_chars`, else its start and
    its end around a line that says what was cut and where the whole is (kept for `recall`)."""
    if len(prompt) <= limit_chars:
        return prompt
    half = max(1, limit_chars // 2)
    head, tail = prompt[:half], prompt[-half:]
    if "\n" in head:
        head = head.rsplit("\n", 1)[0]  # whole lines
    if "\n" in tail:
        tail = tail.split("\n", 1)[1]
    cut = prompt[len(head) : len(prompt) - len(tail)]
    call_id = request_id(prompt)
    where = (
        f'the whole request is in the session transcript: recall("{call_id}") brings it back, a page at a time'
        if keep is not None and keep(call_id, prompt)
        else "this session has no transcript, so the cut part is not kept"
    )
    lines = max(0, cut.count("\n") - 1)
    return f"{head}\n[... {len(cut):,} characters ({lines:,} lines) of the request cut here; {where} ...]\n{tail}"


class NothingToCompact(Exception):
    """The conversation is already as short as a compaction could make it."""


def overflow_reason(overflow: ContextOverflow) -> str:
    """What the endpoint said, for the notice that a compaction and a retry follow."""
    if overflow.tokens and overflow.maximum:
        return f"the endpoint refused the request as too long ({overflow.tokens:,} tokens > {overflow.maximum:,})"
    return "the endpoint refused the request as too long"


@dataclass
class Compactor:
    """Summarises a conversation's head with one model call and applies the result."""

    model: ModelClient
    policy: CompactionPolicy
    account: Callable[[Usage, EventSink], None]  # what the summary cost
    count: Counter  # before and after are counted by it alike
    keep: Keeper | None = None  # where a cut request is kept whole

    async def compact(
        self,
        conversation: Conversation,
        *,
        window: int,
        models: Sequence[str],
        trigger: Trigger,
        emit: EventSink,
        operation: Operation,
        current_prompt: str | None = None,
        instructions: str = "",
        reason: str = "",
    ) -> Compacted:
        """Compact `conversation` in place; raises NothingToCompact, or the model call's error
        (the conversation is then as it was, as it is after a cancel)."""
        tail_tokens, summary_tokens = self.policy.limits(window)
        messages = conversation.messages
        split = split_point(messages, 0 if trigger == "manual" else tail_tokens)
        previous = previous_summary(messages)
        if split.at == 0 or (split.at == 1 and summary_of(messages) is not None):
            raise NothingToCompact("the conversation is already as short as compaction can make it")
        tokens_before = self.count(messages)
        emit(CompactionStarted(trigger=trigger, tokens_before=tokens_before, reason=reason))
        started = time.monotonic()
        head = render_head(messages[: split.at], self.policy.output_chars, budget_chars=window * 2)
        text = await self._summarise(models, previous, head, summary_tokens, instructions, emit, operation)
        summary = capped(text, summary_tokens)
        if not summary:
            raise NothingToCompact("the model wrote an empty summary; nothing was compacted")
        prompt = None if _tail_has_prompt(messages[split.at :], current_prompt) else current_prompt
        block = summary_block(
            summary, current_request=prompt and bounded_request(prompt, summary_tokens * 4, self.keep)
        )
        tokens_after = self.count(merge_adjacent([{"role": "user", "content": [block]}, *messages[split.at :]]))
        if tokens_after >= tokens_before:
            raise self._no_smaller(trigger, tokens_before, tokens_after, emit)
        conversation.compact(
            block, split.at, trigger=trigger, tokens_before=tokens_before, summarised_messages=split.at
        )
        event = Compacted(
            trigger=trigger,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary=summary,
            summary_tokens=estimate_tokens(summary),
            messages=split.at,
            duration_s=round(time.monotonic() - started, 3),
        )
        emit(event)
        return event

    @staticmethod
    def _no_smaller(trigger: Trigger, before: int, after: int, emit: EventSink) -> NothingToCompact:
        """Said, not applied: the summary and the tail would cost as much as the conversation."""
        message = (
            f"not compacted: the summary would not make the conversation smaller (about {before:,} → "
            f"{after:,} tokens); it was left as it was"
        )
        emit(CompactionFailed(trigger=trigger, message=message))
        return NothingToCompact(message)

    async def _summarise(
        self,
        models: Sequence[str],
        previous: str,
        head: str,
        summary_tokens: int,
        instructions: str,
        emit: EventSink,
        operation: Operation,
    ) -> str:
        """The new summary's text, from the first of `models` the endpoint knows (the `@fast`
        alias, when one is configured, then the session's model)."""
        for index, model in enumerate(models):
            request = summary_request(model, previous, head, summary_tokens, instructions)
            try:
                reply = await self.model.complete(request, _retries_only(emit), operation)
            except Exception as exc:
                if index + 1 < len(models) and summary_model_failed(exc):
                    continue
                raise
            self.account(reply.usage, emit)
            return reply.text
        raise NothingToCompact("no model to summarise with")


def _retries_only(emit: EventSink) -> EventSink:
    """The summary's tokens are not the reply: only its retries are shown."""

    def sink(event: Event) -> None:
        if isinstance(event, Retrying):
            emit(event)

    return sink


def summary_model_failed(exc: BaseException) -> bool:
    """Whether a summary call failed because of its model (unknown to the endpoint)."""
    return describe_error(exc)[0] == "not_found"
