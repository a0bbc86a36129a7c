"""The context meter: how full the model's window is, and when the conversation is compacted.

It builds each request with the cheap reductions applied and estimates its size from the last
measured one (agent/context_usage.py counts), decides when a compaction is due (the policy's
threshold, the endpoint's own compaction first when it has one), runs it (agent/compaction.py
writes the summary) and adopts the endpoint's. What the endpoint says of the window holds from
then on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from cmdop_tui.agent.agent_config import AgentConfig, LoopConfig
from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.compaction import (
    FALLBACK_WINDOW,
    Compactor,
    NothingToCompact,
    Trigger,
    bounded_request,
    overflow_reason,
)
from cmdop_tui.agent.context import SessionFacts, build_system_prompt
from cmdop_tui.agent.context_usage import ContextUsage, estimate_tokens, measure
from cmdop_tui.agent.events import Compacted, CompactionFailed, Usage
from cmdop_tui.agent.executor import OutputArchive
from cmdop_tui.agent.history import Conversation, sanitize, summary_block, summary_of, without_summaries
from cmdop_tui.agent.hook_points import before_compaction
from cmdop_tui.agent.ledger import Ledger
from cmdop_tui.agent.llm import EventSink, ModelClient, ModelReply
from cmdop_tui.agent.llm_errors import (
    ContextOverflow,
    context_overflow,
    describe_error,
    request_too_large,
    server_compaction_refused,
)
from cmdop_tui.agent.messages import ApiRequest, Message, is_compaction
from cmdop_tui.agent.reduction import OutputReducer
from cmdop_tui.agent.reminders import with_reminders
from cmdop_tui.agent.request import RequestOptions, build_request
from cmdop_tui.agent.routing import resolve_tools
from cmdop_tui.hooks import Hooks
from cmdop_tui.tools.base import Tool
from cmdop_tui.tools.registry import ToolRegistry


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """The code and message of a model failure that ends a run (a too-long request ends it only
    when compacting could not make it fit, or there was nothing to compact)."""
    if request_too_large(exc):
        return "request_too_large", (
            f"the request is larger than the endpoint accepts ({describe_error(exc)[1]}): a message or a "
            "tool output in it is too big; /clear, or send less"
        )
    if (overflow := context_overflow(exc)) is not None:
        return "context_full", (
            f"the conversation does not fit in the model's context window ({overflow_reason(overflow)}), "
            "and compacting it could not make it fit; /clear, or send less"
        )
    return describe_error(exc)


class MeterHost(Protocol):
    """What the meter reads of the loop, live (a session may replace the conversation)."""

    model: ModelClient
    tools: ToolRegistry
    facts: SessionFacts
    conversation: Conversation
    hooks: Hooks | None
    archive: OutputArchive | None  # where a request cut in a summary is kept whole


class ContextMeter:
    """The size of what the next request holds, and the compactions that keep it in the window."""

    def __init__(self, host: MeterHost, config: LoopConfig, ledger: Ledger) -> None:
        self.host = host
        self._config = config
        self._ledger = ledger
        self._baseline: tuple[int, int] | None = None  # (tokens, messages) of what was last measured
        self._last_compaction: Compacted | None = None
        self.prompt: str | None = None  # the user's prompt of the current run
        self.reducer = OutputReducer()  # what requests send of old tool outputs (never stored)

    @property
    def config(self) -> AgentConfig:
        return self._config.current

    @property
    def conversation(self) -> Conversation:
        return self.host.conversation

    # --- measuring -----------------------------------------------------------------------------

    def context_usage(self, messages: Sequence[Message] | None = None) -> ContextUsage:
        """What the next request would hold, by part (estimated: see agent/context_usage.py), with
        the conversation's messages or these; a summary is counted once, as the summary."""
        tools = resolve_tools(self.host.tools, turn=2, policy=self.config.tool_policy)  # past turn 1's allowlist
        messages = self.conversation.messages if messages is None else messages
        summary = summary_of(messages) or ""
        rest = without_summaries(messages)
        return measure(self.system_prompt(tools), [tool.definition() for tool in tools], rest, summary)

    def _count(self, messages: Sequence[Message]) -> int:
        return self.context_usage(messages).total

    def _keep(self, call_id: str, text: str) -> bool:
        archive = self.host.archive
        return archive is not None and archive.keep(call_id, text)

    @property
    def last_context_tokens(self) -> int | None:
        """What the next request starts from: the last reply's context and the reply, or the size
        of the conversation a compaction left (None before either)."""
        return None if self._baseline is None else self._baseline[0]

    def measured(self, usage: Usage) -> None:
        """A reply came: its real count is the base of the next estimate."""
        self._baseline = (usage.total_input_tokens + usage.output_tokens, len(self.conversation.messages) + 1)

    def system_prompt(self, tools: list[Tool]) -> str:
        return build_system_prompt(
            self.host.facts, tools_available=bool(tools), extra_instructions=self.config.extra_instructions
        )

    def build_request(self, tools: list[Tool]) -> tuple[ApiRequest, int]:
        """The next request, with the cheap reductions applied, and its estimated size."""
        system = self.system_prompt(tools)
        options = RequestOptions(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            thinking_budget=self.config.thinking_budget,
            server_compaction_at=self._server_compaction_at(),
        )
        messages = sanitize(self.conversation.messages)
        estimate = self._request_estimate(system, tools, messages)
        reduced = self.reducer.reduce(
            messages, window=self.config.context_window, estimate=estimate, images=self.config.image_input
        )
        if self._baseline is None and self.config.context_window is not None:
            size = measure(system, [tool.definition() for tool in tools], reduced).total  # once, then real counts
        else:
            size = estimate - self.reducer.freed
        return build_request(options, system, with_reminders(reduced), tools), size

    def _request_estimate(self, system: str, tools: list[Tool], messages: list[Message]) -> int:
        """The next request's size before this request's reductions: the last measured size
        plus what came since, so a turn does not serialise the history; with nothing measured
        yet, an estimate of the whole."""
        if self.config.context_window is None:
            return 0  # nothing to weigh it against
        if self._baseline is not None and self._baseline[1] > len(messages):
            self._baseline = None  # the history was rewritten (loop-mode cleanup): measure afresh
        if self._baseline is None:
            return measure(system, [tool.definition() for tool in tools], messages).total
        tokens, counted = self._baseline
        return tokens + measure("", [], messages[counted:]).total

    def forget_measurements(self) -> None:
        """The conversation was replaced (a new one, a resumed one): measure it afresh."""
        self._baseline = None
        self._last_compaction = None
        self.reducer = OutputReducer(self.reducer.policy)

    def prompt_too_big(self, tools: list[Tool]) -> str | None:
        """Why the current prompt cannot be sent at all (it alone passes the window), or None.

        Such a prompt is taken back out of the history, so the next one starts clean.
        """
        window, prompt = self.config.context_window, self.prompt
        if window is None or prompt is None or len(prompt) < window:  # ~4 characters a token
            return None
        prefix = measure(self.system_prompt(tools), [tool.definition() for tool in tools], [])
        size = prefix.total + estimate_tokens(prompt)
        if size <= window:
            return None
        self.conversation.retract(1)
        self.prompt = None
        return (
            f"the prompt is too long for the model's context window (about {size:,} tokens with the "
            f"system prompt and tools; the window is {window:,}): it was not sent"
        )

    def learn_window(self, overflow: ContextOverflow) -> None:
        """The endpoint said what the model's limit is: believe it from now on."""
        window = self.config.context_window
        if overflow.maximum and (window is None or overflow.maximum < window):
            self._config.reconfigure(context_window=overflow.maximum)

    # --- when to compact -----------------------------------------------------------------------

    async def prepare_request(self, tools: list[Tool], emit: EventSink, operation: Operation) -> ApiRequest:
        """The next request; the conversation is compacted first when it would pass the threshold.

        A compaction that cannot be made is reported and the request goes as it is: it may
        still fit, and if it does not, the endpoint's refusal leads to one more try.
        """
        request, size = self.build_request(tools)
        if self._should_compact(size) and await self.try_compact(emit, operation, "auto"):
            request, _ = self.build_request(tools)
        return request

    async def try_compact(self, emit: EventSink, operation: Operation, trigger: Trigger, **options: Any) -> bool:
        """Compact; whether it was done (a failure is reported as an event, never raised)."""
        try:
            await self.compact(emit, operation, trigger, **options)
        except NothingToCompact:
            return False
        except Exception as exc:  # the summary call failed after its retries
            emit(CompactionFailed(trigger=trigger, message=f"compaction failed: {describe_error(exc)[1]}"))
            return False
        return True

    def _server_compaction_at(self) -> int | None:
        window = self.config.context_window
        if not self.config.server_compaction or window is None:
            return None
        return int(self.config.compaction.compact_at * window)

    def _should_compact(self, size: int) -> bool:
        window = self.config.context_window
        compact_at = self.config.compaction.compact_at
        if self.config.server_compaction:  # the endpoint compacts first; ours is the safety net
            compact_at = min(0.9, compact_at + 0.1)
        if window is None or size <= compact_at * window:
            return False
        last = self._last_compaction
        # A tail too big to get under the threshold is not compacted again every turn.
        return last is None or size > last.tokens_after + window // 10

    async def complete(
        self, request: ApiRequest, tools: list[Tool], emit: EventSink, operation: Operation
    ) -> ModelReply:
        """The model's reply; a request refused as too long leads to one compaction and a retry,
        one refused for its server-side compaction to a retry without it."""
        try:
            return await self.host.model.complete(request, emit, operation)
        except Exception as exc:
            if self.config.server_compaction and server_compaction_refused(exc):
                self._config.reconfigure(server_compaction=False)  # ours from now on
                return await self.complete(self.build_request(tools)[0], tools, emit, operation)
            overflow = context_overflow(exc)
            if overflow is None:
                raise
            self.learn_window(overflow)
            if not await self.try_compact(emit, operation, "too_long", reason=overflow_reason(overflow)):
                raise
        request, _ = self.build_request(tools)
        return await self.host.model.complete(request, emit, operation)

    # --- compacting ----------------------------------------------------------------------------

    async def compact(
        self,
        emit: EventSink,
        operation: Operation,
        trigger: Trigger,
        *,
        instructions: str = "",
        reason: str = "",
    ) -> Compacted:
        """Summarise the head of the conversation (one model call); the history changes only
        when the summary has come (a cancel or a failure leaves it as it was)."""
        await before_compaction(self.host.hooks, trigger, instructions)
        compactor = Compactor(
            self.host.model, self.config.compaction, self._ledger.account_summary, self._count, self._keep
        )
        event = await compactor.compact(
            self.conversation,
            window=self.config.context_window or FALLBACK_WINDOW,
            models=list(dict.fromkeys(m for m in (self.config.summary_model, self.config.model) if m)),
            trigger=trigger,
            emit=emit,
            operation=operation,
            current_prompt=self.prompt,
            instructions=instructions,
            reason=reason,
        )
        self._last_compaction = event
        self._baseline = (event.tokens_after, len(self.conversation.messages))
        return event

    def adopt_server_compaction(self, reply: ModelReply, emit: EventSink) -> None:
        """The endpoint compacted everything before this reply: its summary becomes ours (so the
        transcript, resume and export treat it like any compaction) and leaves the reply."""
        compactions = [block for block in reply.content if is_compaction(block)]
        if not compactions:
            return
        reply.content = [block for block in reply.content if not is_compaction(block)]
        summary = str(compactions[-1].get("content") or "").strip()
        if not summary:
            return  # a compaction that failed: the endpoint treats it as nothing
        dropped = len(self.conversation.messages)
        before = reply.usage.total_input_tokens
        limit = self.config.compaction.limits(self.config.context_window or FALLBACK_WINDOW)[1] * 4
        request = self.prompt and bounded_request(self.prompt, limit, self._keep)
        self.conversation.compact(
            summary_block(summary, current_request=request), dropped, trigger="auto", tokens_before=before
        )
        after = self.context_usage().total
        event = Compacted("auto", before, after, summary, estimate_tokens(summary), dropped, server=True)
        self._last_compaction = event
        self._baseline = (after, len(self.conversation.messages))
        emit(event)
