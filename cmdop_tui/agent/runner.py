"""The agent loop: the turns of a run and their cancellation.

    for turn in 1..max_turns:
        tools    = resolve_tools(turn)                 # router, turn-1 allowlist, hide map
        messages = sanitize(history)                   # no orphan tool calls
        request  = build_request(model, system reminders, messages, tools)
        reply    = call_model(request)                 # streamed, retried
        history += reply
        if reply has no tool calls: return final answer  # unless steering waits: it goes in, on
        history += execute(tool calls) + steering      # concurrently when enabled; steering.py

Loop mode wraps this: a final answer without a breaker phrase re-prompts with the loop message.
Both cancel channels are checked at every boundary; the UI channel also interrupts whatever is in
flight. Whatever happens, the history stays valid for the next request.

The rooms it calls: the context meter builds and sizes each request and compacts when due
(context_meter.py), the tool executor runs the calls (executor.py), the ledger keeps the cost and
the budget (ledger.py), the steering inbox holds what the user sent meanwhile (steering.py, any
thread). The configuration has one writer (LoopConfig): `Runner.reconfigure`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from cmdop_tui.agent.agent_config import AgentConfig, LoopConfig
from cmdop_tui.agent.approval import Approver, ChangeHook, HostRules, ToolCall
from cmdop_tui.agent.cancel import CancelReason, Operation, UICancel
from cmdop_tui.agent.compaction import NothingToCompact
from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.context_meter import ContextMeter, describe_failure
from cmdop_tui.agent.context_usage import ContextUsage
from cmdop_tui.agent.events import Cancelled, Error, Event, Final, LoopContinued, TurnStarted
from cmdop_tui.agent.executor import OutputArchive, ToolExecutor
from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.hook_points import before_stop
from cmdop_tui.agent.intent import route_prompt
from cmdop_tui.agent.ledger import Ledger
from cmdop_tui.agent.llm import EventSink, ModelClient, ModelReply
from cmdop_tui.agent.llm_errors import describe_error
from cmdop_tui.agent.loop_mode import RepeatGuard, contains_breaker, prepare_next_loop
from cmdop_tui.agent.outcome import STOPPED_BY_USER, UNFINISHED_ANSWERS, Progress, RunResult, Status
from cmdop_tui.agent.routing import resolve_tools
from cmdop_tui.agent.steering import SteeringInbox
from cmdop_tui.hooks import Hooks
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.tools.base import Tool
from cmdop_tui.tools.jobs import JobTable
from cmdop_tui.tools.placement import Placement, place
from cmdop_tui.tools.registry import ToolRegistry

__all__ = ["AgentConfig", "EventSink", "RunResult", "Runner", "Status"]


class _Stop(Exception):
    """Raised at a boundary when the operation must end (not a model or tool failure)."""

    def __init__(self, reason: CancelReason) -> None:
        self.reason = reason


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
        self._config = LoopConfig(config)
        self.facts = facts
        self.approve = approve
        self.ui_cancel = ui_cancel or UICancel()
        self.cwd = cwd or Path.cwd()
        self.conversation = conversation or Conversation()
        self.machines = machines
        self.host_rules = host_rules  # per-host rule checks for a call that fans out (run_on_machines)
        self.event_listeners: list[EventSink] = []  # see every event of every run (transcripts)
        self.archive: OutputArchive | None = None  # whole outputs beyond the history (the transcript)
        self.changes: ChangeHook | None = None  # told before a call changes a machine (checkpoints)
        self.hooks: Hooks | None = None  # the user's programs at the loop's points (agent/hook_points.py)
        self.jobs: JobTable | None = None  # the session's background jobs (tools/jobs.py)
        self.ledger = Ledger(self._config)
        self.meter = ContextMeter(self, self._config, self.ledger)
        self.executor = ToolExecutor(self)
        self.steering = SteeringInbox()  # `steer(text)` from any thread; delivered at the next step

    @property
    def config(self) -> AgentConfig:
        """The loop's configuration; change it with `reconfigure`."""
        return self._config.current

    def reconfigure(self, base: AgentConfig | None = None, /, **changes: Any) -> AgentConfig:
        """The one way to change the configuration (from the next request): `base` (default: the
        current one) with `changes`; an unknown field raises TypeError and changes nothing."""
        return self._config.reconfigure(base, **changes)

    @property
    def spent_usd(self) -> float:
        """The session's estimated cost so far."""
        return self.ledger.spent_usd

    # --- the run -----------------------------------------------------------------------------

    async def run(self, prompt: str, emit: EventSink, operation: Operation | None = None) -> RunResult:
        """Run one user prompt to a final answer, a limit, an error or a cancel."""
        operation = operation or Operation()
        emit = self._with_listeners(emit)
        progress = Progress()
        self.meter.prompt = prompt
        self.conversation.append_user(prompt)
        self.steering.deliver(self.conversation, emit)  # what an earlier run left goes with the prompt
        return await self._stoppable(self._run_loops(emit, operation, progress), emit, operation, progress)

    async def compact(self, emit: EventSink, instructions: str = "", operation: Operation | None = None) -> RunResult:
        """Compact the conversation now (/compact); a Stop cancels it and leaves the history as it was."""
        operation = operation or Operation()
        emit = self._with_listeners(emit)
        progress = Progress()
        return await self._stoppable(
            self._compact_now(emit, operation, progress, instructions), emit, operation, progress
        )

    async def _stoppable(
        self, work: Coroutine[Any, Any, RunResult], emit: EventSink, operation: Operation, progress: Progress
    ) -> RunResult:
        """Run `work` as a child task that the UI cancel signal cancels.

        A Stop can never leak into the caller, even one that lands after the work's last await.
        Cancelling the caller cancels the child too (history repaired, Cancelled emitted) and
        propagates.
        """
        self.executor.finished = {}
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
        progress: Progress,
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

    async def _run_loops(self, emit: EventSink, operation: Operation, progress: Progress) -> RunResult:
        loop = self.config.loop
        guard = RepeatGuard(self.config.repeat_limit)
        stop_rounds = 0  # how many times in a row a Stop hook made the run go on
        while True:
            result = await self._run_turns(emit, operation, progress, guard)
            if result.status == "final" and (more := await before_stop(self.hooks, stop_rounds)) is not None:
                stop_rounds += 1
                self.conversation.append_user(more)  # the hook's reason is the next message
                continue
            if result.status != "final" or not loop.enabled or contains_breaker(result.text, loop.breakers):
                return self._finish(result, emit)
            if progress.loops >= loop.max_loops:
                message = f"loop mode stopped after {loop.max_loops} loops without a loop-breaker phrase"
                return self._finish(progress.result("max_loops", message=message), emit)
            progress.loops += 1
            prepare_next_loop(self.conversation, loop.message)
            emit(LoopContinued(loop=progress.loops, max_loops=loop.max_loops))

    async def _run_turns(
        self, emit: EventSink, operation: Operation, progress: Progress, guard: RepeatGuard
    ) -> RunResult:
        first = progress.turns == 0
        route = await route_prompt(self.model, self.config, self.conversation, operation) if first else "agent"
        for turn in range(1, self.config.max_turns + 1):
            self._check_boundary(operation)
            progress.turns += 1
            tools = resolve_tools(self.tools, turn=progress.turns, policy=self.config.tool_policy, route=route)
            if progress.turns == 1 and (too_big := self.meter.prompt_too_big(tools)) is not None:
                return progress.result("error", code="prompt_too_long", message=too_big)
            request = await self.meter.prepare_request(tools, emit, operation)
            over = self.ledger.over_budget(request, emit)
            if over is not None:
                return progress.result("budget", code="budget", message=over)
            emit(self._turn_started(turn, progress))
            try:
                reply = await self.meter.complete(request, tools, emit, operation)
            except Exception as exc:  # a model failure after retries ends the run, not the app
                code, message = describe_failure(exc)
                return progress.result("error", code=code, message=message)
            progress.usage.add(reply.usage)
            self.ledger.account(reply.usage, emit)
            self.meter.measured(reply.usage)
            self.meter.adopt_server_compaction(reply, emit)
            reply.content = self.conversation.adopt_ids(reply.content)  # ids the API takes back
            self.conversation.append_assistant(reply.content)
            if reply.stop_reason == "pause_turn":  # the API paused a long turn: sent back, it goes on
                continue
            # A final reply ends the run, unless the user steered meanwhile: then it goes on.
            if not reply.tool_calls and not self.steering.deliver(self.conversation, emit):
                return self._answer(reply, progress)
            if reply.tool_calls and (repeated := await self._execute(reply, tools, emit, guard, operation)):
                message = f"stopped: the same tool call ({repeated}) came {self.config.repeat_limit} times in a row"
                return progress.result("repeated_tool_call", message=message)
        message = f"stopped after {self.config.max_turns} turns without a final answer (the turn limit)"
        return progress.result("max_turns", message=message)

    # --- steps of a turn ---------------------------------------------------------------------

    def _answer(self, reply: ModelReply, progress: Progress) -> RunResult:
        """A reply without tool calls: the final answer, or a cut or refused one, said as such."""
        unfinished = UNFINISHED_ANSWERS.get(reply.stop_reason or "")
        if unfinished is None:
            return progress.result("final", text=reply.text)
        status, message = unfinished
        return progress.result(
            status,
            text=reply.text,
            code=reply.stop_reason or status,
            message=message.format(max_tokens=self.config.max_tokens),
        )

    def _check_boundary(self, operation: Operation) -> None:
        reason = "ui" if self.ui_cancel.fired else operation.stop_reason()
        if reason is not None:
            raise _Stop(reason)

    def context_usage(self) -> ContextUsage:
        """What the next request would hold, by part (estimated: see agent/context_usage.py)."""
        return self.meter.context_usage()

    @property
    def last_context_tokens(self) -> int | None:
        """What the next request starts from (see ContextMeter.last_context_tokens)."""
        return self.meter.last_context_tokens

    def forget_measurements(self) -> None:
        """The conversation was replaced (a new one, a resumed one): measure it afresh."""
        self.meter.forget_measurements()

    async def _compact_now(
        self, emit: EventSink, operation: Operation, progress: Progress, instructions: str
    ) -> RunResult:
        try:
            event = await self.meter.compact(emit, operation, "manual", instructions=instructions)
        except NothingToCompact as exc:
            result = progress.result("error", code="nothing_to_compact", message=str(exc))
        except Exception as exc:  # the summary call failed: the history is as it was
            code, message = describe_error(exc)
            result = progress.result("error", code=code, message=f"compaction failed: {message}")
        else:
            return progress.result("compacted", text=event.summary)
        return self._finish(result, emit)

    def _turn_started(self, turn: int, progress: Progress) -> TurnStarted:
        loop = self.config.loop
        return TurnStarted(
            turn=turn,
            max_turns=self.config.max_turns,
            loop=progress.loops if loop.enabled else 0,
            max_loops=loop.max_loops if loop.enabled else 0,
        )

    # --- tool execution ----------------------------------------------------------------------

    async def _execute(
        self, reply: ModelReply, tools: list[Tool], emit: EventSink, guard: RepeatGuard, operation: Operation
    ) -> str | None:
        """Run the reply's tool calls and answer each in the history; a tool that repeated too
        often, else None."""
        allowed = {t.name: t for t in tools}
        repeated = await self.executor.execute(reply, allowed, emit, guard, operation, self._check_boundary)
        self.conversation.close_open_tool_calls(self.executor.finished)
        self.steering.deliver(self.conversation, emit)  # after the results, in their message
        return repeated

    def placement(self, call: ToolCall) -> Placement:
        """Where a call runs: its machine argument, else the machines it fans out to (tags and
        groups resolved in the inventory), else the session's target."""
        return place(call.input, self.machines)

    # --- endings -----------------------------------------------------------------------------

    def _finish(self, result: RunResult, emit: EventSink) -> RunResult:
        if result.status == "final":
            emit(Final(text=result.text, turns=result.turns, loops=result.loops))
        else:
            emit(Error(code=result.code, message=result.message))
        return result

    def _cancelled(self, reason: CancelReason, emit: EventSink, progress: Progress) -> RunResult:
        """Repair history (answer open tool calls) and report the cancel."""
        self.conversation.close_open_tool_calls(self.executor.finished)
        message = {
            "ui": STOPPED_BY_USER,
            "operation": "the operation was cancelled",
            "deadline": "the operation ran out of time",
        }[reason]
        emit(Cancelled(reason=reason, message=message))
        return progress.result("cancelled", message=message)
