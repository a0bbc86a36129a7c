"""The agent loop.

    for turn in 1..max_turns:
        tools    = resolve_tools(turn)                 # router, turn-1 allowlist, hide map
        messages = sanitize(history)                   # no orphan tool calls
        request  = build_request(model, system reminders, messages, tools)
        reply    = call_model(request)                 # streamed, retried
        history += reply
        if reply has no tool calls: return final answer
        history += execute(tool calls)                 # concurrently when enabled

Loop mode wraps this: a final answer without a breaker phrase re-prompts with the loop message.
Both cancel channels are checked at every boundary; the UI channel also interrupts whatever is in
flight. Whatever happens, the history stays valid for the next request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from cmdop_tui.agent.approval import Approval, Approver, HostRules, ToolCall
from cmdop_tui.agent.budget import WARN_AT, Prices, estimate_cost, estimate_request_cost, format_usd
from cmdop_tui.agent.cancel import CancelReason, Operation, UICancel
from cmdop_tui.agent.compaction import (
    FALLBACK_WINDOW,
    CompactionPolicy,
    Compactor,
    NothingToCompact,
    Trigger,
    overflow_reason,
)
from cmdop_tui.agent.context import SessionFacts, build_system_prompt
from cmdop_tui.agent.context_usage import ContextUsage, estimate_tokens, measure
from cmdop_tui.agent.events import (
    BudgetWarning,
    Cancelled,
    Compacted,
    CompactionFailed,
    Error,
    Event,
    Final,
    LoopContinued,
    ToolEnd,
    ToolNested,
    ToolProgress,
    ToolStart,
    TurnStarted,
    Usage,
    UsageTotals,
)
from cmdop_tui.agent.history import (
    CANCELLED_RESULT,
    Block,
    Conversation,
    Message,
    blocks_of,
    message_text,
    sanitize,
    summary_block,
    summary_of,
    tool_result_block,
)
from cmdop_tui.agent.llm import (
    ContextOverflow,
    ModelClient,
    ModelReply,
    context_overflow,
    describe_error,
    server_compaction_refused,
)
from cmdop_tui.agent.loop_mode import LoopSettings, RepeatGuard, contains_breaker, prepare_next_loop
from cmdop_tui.agent.reduction import OutputReducer, result_text
from cmdop_tui.agent.reminders import with_reminders
from cmdop_tui.agent.request import RequestOptions, build_request
from cmdop_tui.agent.routing import INTENT_SYSTEM_PROMPT, Route, ToolPolicy, parse_route, resolve_tools
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.registry import ToolRegistry, preview_tool, run_tool

EventSink = Callable[[Event], None]
Status = Literal["final", "compacted", "cancelled", "error", "max_turns", "max_loops", "repeated_tool_call", "budget"]


@dataclass(frozen=True)
class AgentConfig:
    """How the loop behaves. Settings and agent profiles produce one of these."""

    model: str
    max_turns: int = 30
    max_tokens: int = 8192
    temperature: float = 0.3
    thinking_budget: int = 0
    parallel_tools: bool = True
    tool_policy: ToolPolicy = ToolPolicy()
    loop: LoopSettings = LoopSettings()
    extra_instructions: str = ""
    intent_router: bool = False
    router_model: str | None = None
    repeat_limit: int = 3
    max_budget_usd: float | None = None  # per session (a runner's lifetime)
    context_window: int | None = None  # the model's, in tokens (None: unknown, nothing is reduced)
    compaction: CompactionPolicy = CompactionPolicy()
    summary_model: str | None = None  # writes compaction summaries (None: the session's model)
    server_compaction: bool = False  # the endpoint compacts for us (beta context_management)
    prices: Prices = field(default_factory=dict)


@dataclass
class RunResult:
    status: Status
    text: str = ""
    code: str = ""
    message: str = ""
    turns: int = 0
    loops: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)


class _Stop(Exception):
    """Raised at a boundary when the operation must end (not a model or tool failure)."""

    def __init__(self, reason: CancelReason) -> None:
        self.reason = reason


class _Progress:
    """Counters of one run, kept apart so the loop functions stay small."""

    def __init__(self) -> None:
        self.turns = 0
        self.loops = 0
        self.usage = UsageTotals()


class Runner:
    """Runs prompts through the agent loop, keeping the conversation between runs."""

    def __init__(
        self,
        *,
        model: ModelClient,
        tools: ToolRegistry,
        config: AgentConfig,
        facts: SessionFacts,
        approve: Approver | None = None,
        ui_cancel: UICancel | None = None,
        cwd: Path | None = None,
        conversation: Conversation | None = None,
        machines: Fleet | None = None,
        host_rules: HostRules | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.config = config
        self.facts = facts
        self.approve = approve
        self.ui_cancel = ui_cancel or UICancel()
        self.cwd = cwd or Path.cwd()
        self.conversation = conversation or Conversation()
        self.machines = machines
        self.host_rules = host_rules  # per-host rule checks for a call that fans out (run_on_machines)
        self.event_listeners: list[EventSink] = []  # see every event of every run (transcripts)
        self.spent_usd = 0.0  # the session's estimated cost so far
        self._last_usage: Usage | None = None
        self._baseline: tuple[int, int] | None = None  # (tokens, messages) of what was last measured
        self._last_compaction: Compacted | None = None
        self._prompt: str | None = None
        self.recall_fallback: Callable[[str], str | None] | None = None  # outputs compaction let go
        self._budget_warned = False
        self._finished_results: dict[str, Block] = {}
        self._approval_lock = asyncio.Lock()
        self.reducer = OutputReducer()  # what requests send of old tool outputs (never stored)

    # --- the run -----------------------------------------------------------------------------

    async def run(self, prompt: str, emit: EventSink, operation: Operation | None = None) -> RunResult:
        """Run one user prompt to a final answer, a limit, an error or a cancel."""
        operation = operation or Operation()
        emit = self._with_listeners(emit)
        progress = _Progress()
        self._prompt = prompt
        self.conversation.append_user(prompt)
        return await self._stoppable(self._run_loops(emit, operation, progress), emit, operation, progress)

    async def compact(self, emit: EventSink, instructions: str = "", operation: Operation | None = None) -> RunResult:
        """Compact the conversation now (/compact); a Stop cancels it and leaves the history as it was."""
        operation = operation or Operation()
        emit = self._with_listeners(emit)
        progress = _Progress()
        return await self._stoppable(
            self._compact_now(emit, operation, progress, instructions), emit, operation, progress
        )

    async def _stoppable(
        self, work: Coroutine[Any, Any, RunResult], emit: EventSink, operation: Operation, progress: _Progress
    ) -> RunResult:
        """Run `work` as a child task that the UI cancel signal cancels.

        A Stop can never leak into the caller, even one that lands after the work's last await.
        Cancelling the caller cancels the child too (history repaired, Cancelled emitted) and
        propagates.
        """
        self._finished_results = {}
        self.ui_cancel.reset()
        outcome: list[RunResult] = []
        body = asyncio.create_task(self._run_body(work, emit, operation, progress, outcome))
        with self.ui_cancel.bind(body):
            try:
                return await body
            except asyncio.CancelledError:
                caller = asyncio.current_task()
                if self.ui_cancel.fired and caller is not None and caller.cancelling() == 0:
                    # Stop landed after the body's last await: the run had ended by itself.
                    return outcome[0] if outcome else self._cancelled("ui", emit, progress)
                raise

    async def _run_body(
        self,
        work: Coroutine[Any, Any, RunResult],
        emit: EventSink,
        operation: Operation,
        progress: _Progress,
        outcome: list[RunResult],
    ) -> RunResult:
        try:
            async with asyncio.timeout(operation.remaining()):
                result = await work
        except _Stop as stop:
            result = self._cancelled(stop.reason, emit, progress)
        except TimeoutError:
            result = self._cancelled("deadline", emit, progress)
        except asyncio.CancelledError:
            result = self._cancelled("ui" if self.ui_cancel.fired else "operation", emit, progress)
            if not self.ui_cancel.fired:
                raise  # the caller was cancelled: repaired and reported, now let it go
        outcome.append(result)
        return result

    def _with_listeners(self, emit: EventSink) -> EventSink:
        if not self.event_listeners:
            return emit
        listeners = list(self.event_listeners)

        def tee(event: Event) -> None:
            emit(event)
            for listener in listeners:
                listener(event)

        return tee

    async def _run_loops(self, emit: EventSink, operation: Operation, progress: _Progress) -> RunResult:
        loop = self.config.loop
        guard = RepeatGuard(self.config.repeat_limit)
        while True:
            result = await self._run_turns(emit, operation, progress, guard)
            if result.status != "final" or not loop.enabled or contains_breaker(result.text, loop.breakers):
                return self._finish(result, emit)
            if progress.loops >= loop.max_loops:
                message = f"loop mode stopped after {loop.max_loops} loops without a loop-breaker phrase"
                return self._finish(self._result("max_loops", progress, message=message), emit)
            progress.loops += 1
            prepare_next_loop(self.conversation, loop.message)
            emit(LoopContinued(loop=progress.loops, max_loops=loop.max_loops))

    async def _run_turns(
        self, emit: EventSink, operation: Operation, progress: _Progress, guard: RepeatGuard
    ) -> RunResult:
        route = await self._route(operation) if progress.turns == 0 else "agent"
        for turn in range(1, self.config.max_turns + 1):
            self._check_boundary(operation)
            progress.turns += 1
            tools = resolve_tools(self.tools, turn=progress.turns, policy=self.config.tool_policy, route=route)
            if progress.turns == 1 and (too_big := self._prompt_too_big(tools)) is not None:
                return self._result("error", progress, code="prompt_too_long", message=too_big)
            request = await self._prepare_request(tools, emit, operation)
            over = self._over_budget(request, emit)
            if over is not None:
                return self._result("budget", progress, code="budget", message=over)
            emit(self._turn_started(turn, progress))
            try:
                reply = await self._call_model(request, tools, emit, operation)
            except Exception as exc:  # a model failure after retries ends the run, not the app
                code, message = self._describe_failure(exc)
                return self._result("error", progress, code=code, message=message)
            progress.usage.add(reply.usage)
            self._account(reply.usage, emit)
            self._adopt_server_compaction(reply, emit)
            self.conversation.append_assistant(reply.content)
            if not reply.tool_calls:
                return self._result("final", progress, text=reply.text)
            self._finished_results = {}
            repeated = await self._execute_tool_calls(reply, {t.name: t for t in tools}, emit, guard, operation)
            self.conversation.close_open_tool_calls(self._finished_results)
            if repeated:
                message = f"stopped: the same tool call ({repeated}) came {self.config.repeat_limit} times in a row"
                return self._result("repeated_tool_call", progress, message=message)
        message = f"stopped after {self.config.max_turns} turns without a final answer (the turn limit)"
        return self._result("max_turns", progress, message=message)

    # --- steps of a turn ---------------------------------------------------------------------

    def _check_boundary(self, operation: Operation) -> None:
        if self.ui_cancel.fired:
            raise _Stop("ui")
        reason = operation.stop_reason()
        if reason is not None:
            raise _Stop(reason)

    async def _route(self, operation: Operation) -> Route:
        """The intent router: one cheap classifier call. Any failure routes to AGENT."""
        if not self.config.intent_router:
            return "agent"
        last = self.conversation.messages[-1] if self.conversation.messages else {}
        request = {
            "model": self.config.router_model or self.config.model,
            "max_tokens": 8,
            "system": INTENT_SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": message_text(last) or "(empty)"}],
            "extra_body": {"temperature": 0.0},
        }
        try:
            return parse_route(await self.model.classify(request, operation))
        except Exception:
            return "agent"

    def context_usage(self) -> ContextUsage:
        """What the next request would hold, by part (estimated: see agent/context_usage.py)."""
        tools = resolve_tools(self.tools, turn=2, policy=self.config.tool_policy)  # past turn 1's allowlist
        messages = self.conversation.messages
        summary = summary_of(messages) or ""
        return measure(self._system_prompt(tools), [tool.definition() for tool in tools], messages, summary)

    @property
    def last_context_tokens(self) -> int | None:
        """What the next request starts from: the last reply's context and the reply, or the size
        of the conversation a compaction left (None before either)."""
        return None if self._baseline is None else self._baseline[0]

    def _system_prompt(self, tools: list[Tool]) -> str:
        return build_system_prompt(
            self.facts, tools_available=bool(tools), extra_instructions=self.config.extra_instructions
        )

    def _build_request(self, tools: list[Tool]) -> tuple[dict[str, Any], int]:
        """The next request, with the cheap reductions applied, and its estimated size."""
        system = self._system_prompt(tools)
        options = RequestOptions(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            thinking_budget=self.config.thinking_budget,
            server_compaction_at=self._server_compaction_at(),
        )
        messages = sanitize(self.conversation.messages)
        estimate = self._request_estimate(system, tools, messages)
        reduced = self.reducer.reduce(messages, window=self.config.context_window, estimate=estimate)
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

    # --- compaction ----------------------------------------------------------------------------

    def _prompt_too_big(self, tools: list[Tool]) -> str | None:
        """Why the current prompt cannot be sent at all (it alone passes the window), or None.

        Such a prompt is taken back out of the history, so the next one starts clean.
        """
        window, prompt = self.config.context_window, self._prompt
        if window is None or prompt is None or len(prompt) < window:  # ~4 characters a token
            return None
        prefix = measure(self._system_prompt(tools), [tool.definition() for tool in tools], [])
        size = prefix.total + estimate_tokens(prompt)
        if size <= window:
            return None
        self.conversation.retract(1)
        self._prompt = None
        return (
            f"the prompt is too long for the model's context window (about {size:,} tokens with the "
            f"system prompt and tools; the window is {window:,}): it was not sent"
        )

    async def _prepare_request(self, tools: list[Tool], emit: EventSink, operation: Operation) -> dict[str, Any]:
        """The next request; the conversation is compacted first when it would pass the threshold.

        A compaction that cannot be made is reported and the request goes as it is: it may
        still fit, and if it does not, the endpoint's refusal leads to one more try.
        """
        request, size = self._build_request(tools)
        if self._should_compact(size) and await self._try_compact(emit, operation, "auto", tokens_before=size):
            request, _ = self._build_request(tools)
        return request

    async def _try_compact(self, emit: EventSink, operation: Operation, trigger: Trigger, **options: Any) -> bool:
        """Compact; whether it was done (a failure is reported as an event, never raised)."""
        try:
            await self._compact(emit, operation, trigger, **options)
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

    async def _call_model(
        self, request: dict[str, Any], tools: list[Tool], emit: EventSink, operation: Operation
    ) -> ModelReply:
        """The model's reply; a request refused as too long leads to one compaction and a retry."""
        try:
            return await self.model.complete(request, emit, operation)
        except Exception as exc:
            if self.config.server_compaction and server_compaction_refused(exc):
                self.config = replace(self.config, server_compaction=False)  # ours from now on
                return await self._call_model(self._build_request(tools)[0], tools, emit, operation)
            overflow = context_overflow(exc)
            if overflow is None:
                raise
            self._learn_window(overflow)
            if not await self._try_compact(emit, operation, "too_long", reason=overflow_reason(overflow)):
                raise
        request, _ = self._build_request(tools)
        return await self.model.complete(request, emit, operation)

    def _learn_window(self, overflow: ContextOverflow) -> None:
        """The endpoint said what the model's limit is: believe it from now on."""
        window = self.config.context_window
        if overflow.maximum and (window is None or overflow.maximum < window):
            self.config = replace(self.config, context_window=overflow.maximum)

    def _describe_failure(self, exc: BaseException) -> tuple[str, str]:
        if context_overflow(exc) is not None:
            return "context_full", (
                "the conversation does not fit in the model's context window even after compaction; "
                "/compact or /clear, then go on"
            )
        return describe_error(exc)

    async def _compact(
        self,
        emit: EventSink,
        operation: Operation,
        trigger: Trigger,
        *,
        tokens_before: int | None = None,
        instructions: str = "",
        reason: str = "",
    ) -> Compacted:
        """Summarise the head of the conversation (one model call); the history changes only
        when the summary has come (a cancel or a failure leaves it as it was)."""
        compactor = Compactor(self.model, self.config.compaction, account=self._account_summary)
        event = await compactor.compact(
            self.conversation,
            window=self.config.context_window or FALLBACK_WINDOW,
            models=list(dict.fromkeys(m for m in (self.config.summary_model, self.config.model) if m)),
            trigger=trigger,
            tokens_before=tokens_before or self.context_usage().total,
            emit=emit,
            operation=operation,
            measure_after=lambda: self.context_usage().total,
            current_prompt=self._prompt,
            instructions=instructions,
            reason=reason,
        )
        self._last_compaction = event
        self._baseline = (event.tokens_after, len(self.conversation.messages))
        return event

    def _adopt_server_compaction(self, reply: ModelReply, emit: EventSink) -> None:
        """The endpoint compacted everything before this reply: its summary becomes ours (so the
        transcript, resume and export treat it like any compaction) and leaves the reply."""
        compactions = [block for block in reply.content if block.get("type") == "compaction"]
        if not compactions:
            return
        reply.content = [block for block in reply.content if block.get("type") != "compaction"]
        summary = str(compactions[-1].get("content") or "").strip()
        if not summary:
            return  # a compaction that failed: the endpoint treats it as nothing
        dropped = len(self.conversation.messages)
        before = reply.usage.total_input_tokens
        self.conversation.compact(
            summary_block(summary, current_request=self._prompt), dropped, trigger="auto", tokens_before=before
        )
        after = self.context_usage().total
        event = Compacted("auto", before, after, summary, estimate_tokens(summary), dropped, server=True)
        self._last_compaction = event
        self._baseline = (after, len(self.conversation.messages))
        emit(event)

    async def _compact_now(
        self, emit: EventSink, operation: Operation, progress: _Progress, instructions: str
    ) -> RunResult:
        try:
            event = await self._compact(emit, operation, "manual", instructions=instructions)
        except NothingToCompact as exc:
            result = self._result("error", progress, code="nothing_to_compact", message=str(exc))
        except Exception as exc:  # the summary call failed: the history is as it was
            code, message = describe_error(exc)
            result = self._result("error", progress, code=code, message=f"compaction failed: {message}")
        else:
            return self._result("compacted", progress, text=event.summary)
        return self._finish(result, emit)

    def output_of(self, call_id: str) -> str | None:
        """The whole output of an earlier tool call of this session (for `recall`), also one a
        compaction took out of the conversation (from the transcript, where there is one)."""
        for message in self.conversation.messages:
            for block in blocks_of(message):
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    return result_text(block)
        return self.recall_fallback(call_id) if self.recall_fallback is not None else None

    def _turn_started(self, turn: int, progress: _Progress) -> TurnStarted:
        loop = self.config.loop
        return TurnStarted(
            turn=turn,
            max_turns=self.config.max_turns,
            loop=progress.loops if loop.enabled else 0,
            max_loops=loop.max_loops if loop.enabled else 0,
        )

    # --- budget ------------------------------------------------------------------------------

    def _over_budget(self, request: dict[str, Any], emit: EventSink) -> str | None:
        """Why the next request must not be sent (it would take the session past its budget).

        The warning comes when the session is about to pass 80 % of it; not when this request
        is the one that stops the run: the stop says it all, in one line.
        """
        budget = self.config.max_budget_usd
        if budget is None:
            return None
        estimate = estimate_request_cost(self.config.model, request, self._last_usage, self.config.prices)
        if estimate is None:
            return None
        if self.spent_usd + estimate <= budget:
            self._warn_budget(self.spent_usd + estimate, budget, emit)
            return None
        return (
            f"stopped before a request that would cross the budget: {format_usd(self.spent_usd)} of "
            f"{format_usd(budget)} spent, the next request would cost about {format_usd(estimate)}"
        )

    def _account(self, usage: Usage, emit: EventSink) -> None:
        self._spend(usage, emit)
        self._last_usage = usage
        self._baseline = (usage.total_input_tokens + usage.output_tokens, len(self.conversation.messages) + 1)

    def _account_summary(self, usage: Usage, emit: EventSink) -> None:
        self._spend(replace(usage, purpose="summary"), emit)

    def _spend(self, usage: Usage, emit: EventSink) -> None:
        cost = estimate_cost(usage.model or self.config.model, usage, self.config.prices)
        self.spent_usd += cost or 0.0
        emit(replace(usage, cost_usd=cost, session_cost_usd=self.spent_usd if cost is not None else None))
        if self.config.max_budget_usd is not None:
            self._warn_budget(self.spent_usd, self.config.max_budget_usd, emit)

    def _warn_budget(self, projected: float, budget: float, emit: EventSink) -> None:
        if not self._budget_warned and projected >= WARN_AT * budget:
            self._budget_warned = True
            spent = float(f"{self.spent_usd:.6g}")  # six significant digits: a tiny amount stays above 0
            emit(BudgetWarning(spent_usd=spent, budget_usd=budget))

    # --- tool execution ----------------------------------------------------------------------

    async def _execute_tool_calls(
        self,
        reply: ModelReply,
        allowed: dict[str, Tool],
        emit: EventSink,
        guard: RepeatGuard,
        operation: Operation,
    ) -> str | None:
        """Run the reply's tool calls; their results land in `self._finished_results`.

        Returns the name of a tool whose call repeated too often (the run then stops), else None.
        """
        calls: list[ToolCall] = []
        repeated: str | None = None
        for block in reply.tool_calls:
            call = ToolCall(block["id"], block["name"], block.get("input") or {}, allowed.get(block["name"]))
            call = replace(call, machine=self.machine_label(call))
            if repeated is not None or guard.observe(call.name, call.input):
                repeated = repeated or call.name
                self._record(call, ToolResult.error("Not run: this exact call repeated too many times in a row."))
                continue
            if call.id in reply.input_errors:
                self._record(call, ToolResult.error(f"Not run: {reply.input_errors[call.id]}. Send valid JSON."))
                continue
            calls.append(call)
        if self.config.parallel_tools and len(calls) > 1:
            async with asyncio.TaskGroup() as group:
                for call in calls:
                    group.create_task(self._execute_one(call, emit, operation))
        else:
            for call in calls:
                self._check_boundary(operation)
                await self._execute_one(call, emit, operation)
        return repeated

    def machine_label(self, call: ToolCall) -> str:
        """Where a call runs, for display: its machine argument, else the session's target."""
        named = call.input.get("machine") or call.input.get("hostname")
        if isinstance(named, str) and named:
            return self.machines.canonical(named) if self.machines is not None else named
        hostnames = call.input.get("hostnames") or call.input.get("machines")
        if isinstance(hostnames, list) and hostnames:
            return self._fleet_label([str(name) for name in hostnames])
        target = self.machines.target_name if self.machines is not None else None
        return target or "local"

    def _fleet_label(self, selectors: list[str]) -> str:
        """The machines a fan-out names, counted after tags and groups are resolved."""
        try:
            chosen = [spec.name for spec in self.machines.inventory.select(selectors)] if self.machines else selectors
        except MachineError:
            chosen = selectors  # the tool itself will say which selector is unknown
        if len(chosen) == 1:
            return chosen[0]
        return f"{len(chosen)} machines"

    async def _execute_one(self, call: ToolCall, emit: EventSink, operation: Operation) -> None:
        if call.tool is not None:  # what a write or an edit would change, for the question and the card
            preview_context = ToolContext(call_id=call.id, cwd=self.cwd, machines=self.machines)
            call = replace(call, preview=await preview_tool(call.tool, call.input, preview_context))
        emit(ToolStart(call_id=call.id, name=call.name, input=call.input, machine=call.machine, preview=call.preview))
        started = time.monotonic()
        result = ToolResult.error(CANCELLED_RESULT)
        try:
            refusal = await self._refusal(call)
            if refusal is not None:
                result = refusal
            else:
                started = time.monotonic()  # the duration is the tool's, not the approval wait
                result = await self._run(call, emit)
        finally:  # a cancelled tool still ends, so no display shows it running forever
            self._record(call, result)
            duration = round(time.monotonic() - started, 3)
            emit(ToolEnd(call.id, call.name, result.content, result.is_error, duration))

    async def _refusal(self, call: ToolCall) -> ToolResult | None:
        """Why this call must not run (unknown, hidden, denied), or None to run it."""
        if call.tool is None:
            known = "is not available now" if call.name in self.tools else "does not exist"
            return ToolResult.error(f"Tool '{call.name}' {known}. Use only the tools you were given.")
        if self.approve is None:
            return None
        async with self._approval_lock:
            try:
                approval = await self.approve(call)
            except Exception as exc:  # a broken approval prompt must not run the tool
                approval = Approval(False, f"the approval prompt failed ({exc})")
        if approval.allowed:
            return None
        why = f" Reason: {approval.reason}" if approval.reason else ""
        return ToolResult.error(f"The user denied this tool call; it was not run.{why}")

    async def _run(self, call: ToolCall, emit: EventSink) -> ToolResult:
        assert call.tool is not None
        context = ToolContext(
            call_id=call.id,
            cwd=self.cwd,
            progress=lambda text, stream: emit(ToolProgress(call_id=call.id, text=text, stream=stream)),
            machines=self.machines,
            nested=lambda event: emit(ToolNested(call.id, str(event.get("hostname", "")), event)),
            recall=self.output_of,
            escalate=lambda needs: self._escalate(call, needs),
            denied_on=lambda machine: self.host_rules(call, machine) if self.host_rules else None,
        )
        return await run_tool(call.tool, call.input, context)

    async def _escalate(self, call: ToolCall, needs: SandboxRefusal) -> tuple[bool, str]:
        """Whether the user lets this call do, outside the sandbox, what it refused (`needs`),
        and why not."""
        if self.approve is None:
            return False, "no one can be asked here"  # a sandbox is never left by default
        async with self._approval_lock:
            try:
                approval = await self.approve(replace(call, escalation=needs))
            except Exception as exc:
                return False, f"the approval prompt failed ({exc})"
        return approval.allowed, approval.reason

    def _record(self, call: ToolCall, result: ToolResult) -> None:
        self._finished_results[call.id] = tool_result_block(call.id, result.content, result.is_error)

    # --- endings -----------------------------------------------------------------------------

    def _result(
        self, status: Status, progress: _Progress, *, text: str = "", code: str = "", message: str = ""
    ) -> RunResult:
        return RunResult(
            status=status,
            text=text,
            code=code or status,
            message=message,
            turns=progress.turns,
            loops=progress.loops,
            usage=progress.usage,
        )

    def _finish(self, result: RunResult, emit: EventSink) -> RunResult:
        if result.status == "final":
            emit(Final(text=result.text, turns=result.turns, loops=result.loops))
        else:
            emit(Error(code=result.code, message=result.message))
        return result

    def _cancelled(self, reason: CancelReason, emit: EventSink, progress: _Progress) -> RunResult:
        """Repair history (answer open tool calls) and report the cancel."""
        self.conversation.close_open_tool_calls(self._finished_results)
        message = {
            "ui": "stopped by the user",
            "operation": "the operation was cancelled",
            "deadline": "the operation ran out of time",
        }[reason]
        emit(Cancelled(reason=reason, message=message))
        return self._result("cancelled", progress, message=message)
