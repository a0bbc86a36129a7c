"""The loop's events as ACP `session/update` notifications, sent in order.

The loop's sink is synchronous and the connection's `session_update` is a coroutine: `Updates`
turns each event into its notifications at once (`translate`) and queues them; one task sends
them, in order, for the whole ACP session. `flush()` waits until all queued ones are sent:
before a permission request (the editor must know the call it asks about) and before a prompt
answers (ACP wants every update of a turn before its response).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import start_tool_call, update_agent_message_text, update_agent_thought_text, update_plan, update_tool_call
from acp.helpers import SessionUpdate

from cmdop_tui.acp.tool_calls import (
    OUTPUT_CHARS,
    diff_content,
    nested_text,
    output_content,
    plan_entries,
    terminal_content,
    tool_kind,
    tool_locations,
    tool_title,
)
from cmdop_tui.agent.events import (
    Compacted,
    Event,
    Retrying,
    Thinking,
    Token,
    ToolEnd,
    ToolNested,
    ToolProgress,
    ToolStart,
)

Send = Callable[[SessionUpdate], Awaitable[None]]
# What waits to be sent: an update, or one made when its turn comes (a running call's output so
# far: however fast it arrives, at most one is waiting per call, and it carries the latest tail).
Pending = SessionUpdate | Callable[[], SessionUpdate | None]


@dataclass(frozen=True)
class OpenCall:
    """A tool call the editor was told of and whose end it waits for."""

    name: str
    input: dict[str, Any]
    machine: str


class Updates:
    """A session's notifications: an event sink for the loop, a queue, and the task sending it."""

    def __init__(self, send: Send, cwd: Path) -> None:
        self._send = send
        self.cwd = cwd
        self._queue: asyncio.Queue[Pending] = asyncio.Queue()
        self._calls: dict[str, OpenCall] = {}
        self._running: set[str] = set()  # calls the editor was told are in progress
        self._output: dict[str, str] = {}  # the tail of each running call's output so far
        self._output_waiting: set[str] = set()  # calls whose output update is queued
        self._terminals: dict[str, str] = {}  # call -> the editor's terminal running it
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._pump(), name="acp-updates")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def __call__(self, event: Event) -> None:
        """The loop's sink: what `event` tells the editor, queued."""
        for update in self.translate(event):
            self.put(update)

    def put(self, update: Pending) -> None:
        self._queue.put_nowait(update)

    async def flush(self) -> None:
        """Return once every notification queued so far has been sent."""
        await self._queue.join()

    async def _pump(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                update = pending() if callable(pending) else pending
                if update is not None:
                    await self._send(update)
            except Exception as exc:  # an editor that went away: the turn goes on, said on stderr
                sys.stderr.write(f"cmdop-tui acp: a session update was not sent: {exc}\n")
            finally:
                self._queue.task_done()

    def running(self, call_id: str) -> None:
        """Tell the editor the call runs now (approved, or its output started), once."""
        if call_id in self._calls and call_id not in self._running:
            self._running.add(call_id)
            self.put(update_tool_call(call_id, status="in_progress"))

    def terminal(self, call_id: str, terminal_id: str) -> None:
        """Show the editor's terminal `terminal_id` in the call: it runs there, live, and stays
        shown once the call ends."""
        self._terminals[call_id] = terminal_id
        self._running.add(call_id)
        self.put(update_tool_call(call_id, status="in_progress", content=[terminal_content(terminal_id)]))

    def translate(self, event: Event) -> list[SessionUpdate]:
        """The notifications one event makes (none for most bookkeeping events)."""
        if isinstance(event, Token):
            return [update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, Thinking):
            return [update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, ToolStart):
            return self._started(event)
        if isinstance(event, ToolProgress):
            self._progress(event.call_id, event.text)
            return []
        if isinstance(event, ToolNested):
            self._progress(event.call_id, nested_text(event.machine, event.event))
            return []
        if isinstance(event, ToolEnd):
            return self._ended(event)
        if isinstance(event, Retrying):
            return [update_agent_thought_text(f"\n(retrying in {event.delay_s:.1f} s: {event.reason})\n")]
        if isinstance(event, Compacted):
            said = f"\n(compacted the conversation: {event.tokens_before:,} → {event.tokens_after:,} tokens)\n"
            return [update_agent_thought_text(said)]
        return []

    def _started(self, event: ToolStart) -> list[SessionUpdate]:
        self._calls[event.call_id] = OpenCall(event.name, event.input, event.machine)
        start = start_tool_call(
            event.call_id,
            tool_title(event.name, event.input, event.machine),
            kind=tool_kind(event.name),
            status="pending",
            content=diff_content(event.name, event.input, event.machine, self.cwd) or None,
            locations=tool_locations(event.name, event.input, event.machine, self.cwd) or None,
            raw_input=event.input,
        )
        updates: list[SessionUpdate] = [start]
        if event.name == "todo" and (entries := plan_entries(event.input)) is not None:
            updates.append(update_plan(entries))
        return updates

    def _progress(self, call_id: str, text: str) -> None:
        """A running call's output (its own, or what its machines say): the editor gets the tail
        so far, one update at a time."""
        if call_id not in self._calls or not text:
            return
        self.running(call_id)
        self._output[call_id] = (self._output.get(call_id, "") + text)[-OUTPUT_CHARS:]
        if call_id not in self._output_waiting:
            self._output_waiting.add(call_id)
            self.put(lambda: self._output_so_far(call_id))

    def _output_so_far(self, call_id: str) -> SessionUpdate | None:
        self._output_waiting.discard(call_id)
        if call_id not in self._calls:  # it ended meanwhile: its end says it all
            return None
        return update_tool_call(call_id, content=output_content(self._output.get(call_id, "")))

    def _ended(self, event: ToolEnd) -> list[SessionUpdate]:
        call = self._calls.pop(event.call_id, None)
        self._running.discard(event.call_id)
        self._output.pop(event.call_id, None)
        diff = [] if call is None or event.is_error else diff_content(call.name, call.input, call.machine, self.cwd)
        terminal = self._terminals.pop(event.call_id, None)
        shown = output_content(event.output)
        if terminal is not None:  # the terminal shows the output; a failure says its first line too
            said = event.output.split("\n", 1)[0] if event.is_error else ""
            shown = [terminal_content(terminal), *output_content(said)]
        end = update_tool_call(
            event.call_id,
            status="failed" if event.is_error else "completed",
            content=[*diff, *shown],
            raw_output={"output": event.output, "is_error": event.is_error},
        )
        return [end]
