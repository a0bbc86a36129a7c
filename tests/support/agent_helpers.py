"""Helpers for driving the agent loop in-process against the fake Anthropic server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import anthropic

from cmdop_tui.agent.approval import Approver
from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools

FACTS = SessionFacts(hostname="testhost", os_name="Linux", timezone="UTC", user="tester", cwd="/tmp")
FAST_RETRY = RetryPolicy(attempts=6, initial_s=0.001, max_s=0.032, jitter_s=0.0)
TEST_STREAM = StreamPolicy(idle_timeout_s=0.5, first_event_timeout_s=10.0)


class Recorder:
    """An event sink that remembers events and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        for predicate, future in list(self._waiters):
            if not future.done() and predicate(event):
                future.set_result(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    async def wait_for(self, predicate: Callable[[Event], bool] | type, timeout: float = 10.0) -> Event:
        test = (lambda e: isinstance(e, predicate)) if isinstance(predicate, type) else predicate
        for event in self.events:
            if test(event):
                return event
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters.append((test, future))
        async with asyncio.timeout(timeout):
            return await future


def make_runner(
    fake_api,
    *,
    cwd: Path | None = None,
    approve: Approver | None = None,
    retry: RetryPolicy = FAST_RETRY,
    stream: StreamPolicy = TEST_STREAM,
    **config,
) -> Runner:
    client = anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)
    return Runner(
        model=ModelClient(client, retry, stream),
        tools=ToolRegistry(builtin_tools()),
        config=replace(AgentConfig(model="claude-sonnet-5-5"), **config),
        facts=FACTS,
        approve=approve,
        ui_cancel=UICancel(),
        cwd=cwd,
    )


def running(*argv: str) -> list[int]:
    """Pids of this machine's processes whose command line starts with `argv` (e.g. a `sleep`
    with a duration no one else uses: the way to find a command's processes from outside its
    sandbox, whose PID namespace hides their numbers)."""
    wanted = [part.encode() for part in argv]
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().split(b"\0")[: len(wanted)] == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def allow_all() -> object:
    """An approval function that allows every call."""
    from cmdop_tui.agent.approval import Approval, ToolCall

    async def approve(call: ToolCall) -> Approval:
        return Approval(True)

    return approve
