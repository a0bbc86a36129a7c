"""The tool executor: runs the model's tool calls of one turn.

Each call is checked (repeated, malformed, unknown, hidden), asked about (the approver, one
question at a time), run with its context (progress, nested events, recall, escalation out of the
sandbox) and recorded as a result, concurrently when the configuration allows. A cancelled call
still ends with a result, so the history stays valid and no display shows it running forever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from cmdop_tui.agent.agent_config import AgentConfig
from cmdop_tui.agent.approval import (
    Approval,
    Approver,
    ChangeHook,
    HostRules,
    ToolCall,
    escalation_denial,
    not_run,
)
from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.events import ToolEnd, ToolNested, ToolProgress, ToolStart
from cmdop_tui.agent.history import CANCELLED_RESULT, Conversation
from cmdop_tui.agent.hook_points import after_tool, before_tool
from cmdop_tui.agent.llm import EventSink, ModelReply
from cmdop_tui.agent.loop_mode import RepeatGuard
from cmdop_tui.agent.messages import ToolResultBlock, blocks_of, image_block, result_for, tool_result_block
from cmdop_tui.agent.reduction import result_text
from cmdop_tui.hooks import Hooks
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.machine import OutputStream, SandboxRefusal
from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.jobs import JobTable
from cmdop_tui.tools.outcome import OutcomeKind, ToolOutcome
from cmdop_tui.tools.placement import Placement
from cmdop_tui.tools.registry import ToolRegistry, preview_tool, run_tool

STOPPED = "stopped before it ended (Stop, Ctrl+C or a signal)"


def prompt_failed(exc: Exception) -> Approval:
    """A broken approval prompt's answer: no, since no one could be asked (the tool must not run)."""
    return Approval(False, f"the approval prompt failed ({exc})", denied_as=OutcomeKind.NO_ONE_TO_ASK)


class OutputArchive(Protocol):
    """Where a session keeps tool outputs whole (its transcript): those a result holds capped,
    those a compaction took out of the conversation, and what each call streams (a file per
    call beside the transcript, for the output view)."""

    def output(self, call_id: str) -> str | None: ...

    def keep(self, call_id: str, text: str) -> bool: ...

    def stream(self, call_id: str, text: str, host: str | None = None) -> None: ...

    def stream_ended(self, call_id: str) -> None: ...


class ToolHost(Protocol):
    """What the executor reads of the loop, live (a session may swap tools or machines)."""

    tools: ToolRegistry
    machines: Fleet | None
    cwd: Path
    approve: Approver | None
    host_rules: HostRules | None

    @property
    def config(self) -> AgentConfig: ...

    conversation: Conversation
    archive: OutputArchive | None
    changes: ChangeHook | None
    hooks: Hooks | None
    jobs: JobTable | None

    def placement(self, call: ToolCall) -> Placement: ...


class ToolExecutor:
    """Runs a turn's tool calls; their results land in `finished` (call id: result block)."""

    def __init__(self, host: ToolHost) -> None:
        self.host = host
        self.finished: dict[str, ToolResultBlock] = {}
        self._stopped: dict[str, ToolResult] = {}  # what stopped calls had done (`ToolContext.stopped_with`)
        self._approval_lock = asyncio.Lock()

    async def execute(
        self,
        reply: ModelReply,
        allowed: dict[str, Tool],
        emit: EventSink,
        guard: RepeatGuard,
        operation: Operation,
        boundary: Callable[[Operation], None],
    ) -> str | None:
        """Run the reply's tool calls (`boundary` raises between sequential calls to stop).

        Returns the name of a tool whose call repeated too often (the run then stops), else None.
        """
        self.finished = {}
        calls: list[ToolCall] = []
        repeated: str | None = None
        for block in reply.tool_calls:
            call = ToolCall(block["id"], block["name"], block.get("input") or {}, allowed.get(block["name"]))
            call = replace(call, placement=self.host.placement(call))
            if repeated is not None or guard.observe(call.name, call.input):
                repeated = repeated or call.name
                self._record(call, ToolResult.error("Not run: this exact call repeated too many times in a row."))
                continue
            if call.id in reply.input_errors:
                self._record(call, ToolResult.error(f"Not run: {reply.input_errors[call.id]}. Send valid JSON."))
                continue
            calls.append(call)
        if self.host.config.parallel_tools and len(calls) > 1:
            async with asyncio.TaskGroup() as group:
                for call in calls:
                    group.create_task(self._execute_one(call, emit, operation))
        else:
            for call in calls:
                boundary(operation)
                await self._execute_one(call, emit, operation)
        return repeated

    def output_of(self, call_id: str) -> str | None:
        """The whole output of an earlier tool call of this session (for `recall`): the archive's
        (the transcript's, where there is one), which has it uncapped and also those a compaction
        took out of the conversation; else the conversation's."""
        if self.host.archive is not None and (kept := self.host.archive.output(call_id)) is not None:
            return kept
        for message in self.host.conversation.messages:
            if (block := result_for(blocks_of(message), call_id)) is not None:
                return result_text(block)
        return None

    async def _execute_one(self, call: ToolCall, emit: EventSink, operation: Operation) -> None:
        # The PreToolUse hooks first: the card shows the call as it runs (a hook may change it)
        call, blocked = await before_tool(self.host.hooks, call, self.host.placement)
        if call.tool is not None:  # what a write or an edit would change, for the question and the card
            preview_context = ToolContext(call_id=call.id, cwd=self.host.cwd, machines=self.host.machines)
            call = replace(call, preview=await preview_tool(call.tool, call.input, preview_context))
        emit(ToolStart(call_id=call.id, name=call.name, input=call.input, machine=call.machine, preview=call.preview))
        started = time.monotonic()
        result = ToolResult.error(CANCELLED_RESULT, OutcomeKind.CANCELLED, STOPPED)
        try:
            refusal = blocked or await self._refusal(call)
            if refusal is not None:
                result = refusal
            else:
                await self._before_change(call)
                started = time.monotonic()  # the duration is the tool's, not the approval wait
                result = await after_tool(self.host.hooks, call, await self._run(call, emit))
        finally:  # a cancelled tool still ends, so no display shows it running forever
            result = self._stopped.pop(call.id, result).bounded()  # the card says what the model gets
            if self.host.archive is not None:
                self.host.archive.stream_ended(call.id)
            self._record(call, result)
            duration = round(time.monotonic() - started, 3)
            emit(ToolEnd(call.id, call.name, result.content, result.is_error, duration, result.settled))

    async def _before_change(self, call: ToolCall) -> None:
        """Let the session keep what a mutating call may change (a checkpoint), first."""
        hook = self.host.changes
        if hook is not None and call.tool is not None and call.tool.mutating:
            await hook.before_change(call)

    async def _refusal(self, call: ToolCall) -> ToolResult | None:
        """Why this call must not run (unknown, hidden, denied), or None to run it."""
        if call.tool is None:
            known = "is not available now" if call.name in self.host.tools else "does not exist"
            return ToolResult.error(f"Tool '{call.name}' {known}. Use only the tools you were given.")
        approve = self.host.approve
        if approve is None:
            return None
        async with self._approval_lock:
            try:
                approval = await approve(call)
            except Exception as exc:  # a broken approval prompt must not run the tool
                approval = prompt_failed(exc)
        return None if approval.allowed else not_run(approval)

    async def _run(self, call: ToolCall, emit: EventSink) -> ToolResult:
        assert call.tool is not None
        context = ToolContext(
            call_id=call.id,
            cwd=self.host.cwd,
            progress=lambda text, stream: self._progress(call.id, text, stream, emit),
            machines=self.host.machines,
            nested=lambda event: emit(ToolNested(call.id, str(event.get("hostname", "")), event)),
            recall=self.output_of,
            keep=lambda text: self.host.archive is not None and self.host.archive.keep(call.id, text),
            keep_host_output=lambda host, text: self._stream(call.id, text, host),
            escalate=lambda needs: self._escalate(call, needs),
            denied_on=lambda machine: self.host.host_rules(call, machine) if self.host.host_rules else None,
            stopped_with=lambda result: self._record_stopped(call, result),
            jobs=self.host.jobs,
        )
        return await run_tool(call.tool, call.input, context)

    def _progress(self, call_id: str, text: str, stream: OutputStream, emit: EventSink) -> None:
        """A call's live output: kept whole (the archive's file; a tool's own status lines,
        `info`, are not its output), and shown."""
        if stream != "info":
            self._stream(call_id, text)
        emit(ToolProgress(call_id=call_id, text=text, stream=stream))

    def _stream(self, call_id: str, text: str, host: str | None = None) -> None:
        if self.host.archive is not None:
            self.host.archive.stream(call_id, text, host)

    async def _escalate(self, call: ToolCall, needs: SandboxRefusal) -> ToolOutcome | None:
        """None when the user lets this call do, outside the sandbox, what it refused (`needs`);
        else how the asking ended, and why not."""
        approve = self.host.approve
        if approve is None:  # a sandbox is never left by default
            return ToolOutcome(OutcomeKind.NO_ONE_TO_ASK, "no one can be asked here")
        async with self._approval_lock:
            try:
                approval = await approve(replace(call, escalation=needs))
            except Exception as exc:
                approval = prompt_failed(exc)
        if approval.allowed and self.host.changes is not None:
            self.host.changes.left_sandbox(call, needs)
        return escalation_denial(approval)

    def _record_stopped(self, call: ToolCall, result: ToolResult) -> None:
        """What a stopped call had done, as its result (else the history says only "cancelled")."""
        self._stopped[call.id] = ToolResult.error(
            f"{CANCELLED_RESULT}\n{result.content}", OutcomeKind.CANCELLED, STOPPED
        )

    def _record(self, call: ToolCall, result: ToolResult) -> None:
        result = result.bounded()
        images = [image_block(image.media_type, image.data) for image in result.images]
        self.finished[call.id] = tool_result_block(call.id, result.content, result.is_error, images)
