"""Figures for faults of the model endpoint. Run: .venv/bin/python bench/bench_faults.py

An endpoint that never answers (it accepts the connection and never sends a status line), with
the shipped policies (StreamPolicy(), RetryPolicy()) through the real SDK against the fake
Messages API:
1. the first visible notice (the Waiting event)             [target <= 10 s]
2. the run's error, retries included                         [target <= the deadline, 120 s by default]
3. an endpoint that dribbles a byte at a time forever (an endless header, then an endless SSE
   comment after the first event): the run's error                [target <= 120 s]
4. a stream paused by a stopped process (the loop frozen for three idle timeouts while the whole
   reply arrives) is read on waking: requests made           [target: 1]
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import anthropic
from agent_helpers import FACTS, Recorder
from fake_anthropic import FakeAnthropic, text_reply

from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.events import Error, Token, Waiting
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools


def runner(server: FakeAnthropic, stream: StreamPolicy) -> Runner:
    client = anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
    return Runner(
        model=ModelClient(client, RetryPolicy(), stream),
        tools=ToolRegistry(builtin_tools()),
        config=AgentConfig(model="claude-sonnet-5-5"),
        facts=FACTS,
        ui_cancel=UICancel(),
    )


async def silent_endpoint(server: FakeAnthropic) -> tuple[float, float, str]:
    server.enqueue(*[text_reply("never", hang_before_headers=True) for _ in range(RetryPolicy().attempts)])
    return await timed_run(server)


async def dribbling_endpoint(server: FakeAnthropic, where: str) -> tuple[float, float, str]:
    server.enqueue(*[text_reply("never", dribble=where, dribble_every_s=1.0) for _ in range(RetryPolicy().attempts)])
    return await timed_run(server)


async def timed_run(server: FakeAnthropic) -> tuple[float, float, str]:
    """A run with the shipped policies: (first Waiting, the end, the result's message), in s."""
    stream = StreamPolicy()
    seen: dict[str, float] = {}
    started = time.monotonic()
    events = Recorder()

    def sink(event: object) -> None:
        if isinstance(event, Waiting | Error):
            seen.setdefault(type(event).__name__, time.monotonic() - started)
        events(event)

    result = await runner(server, stream).run("hi", sink)
    return seen.get("Waiting", float("inf")), time.monotonic() - started, result.message


async def paused_stream(server: FakeAnthropic) -> int:
    before = len(server.requests)
    server.enqueue(text_reply("one two three four five six seven eight nine ten", chunk_size=4))
    stream = StreamPolicy()
    stalled: list[bool] = []

    def sink(event: object) -> None:
        if isinstance(event, Token) and not stalled:
            stalled.append(True)
            asyncio.get_running_loop().call_later(0.01, time.sleep, 3 * stream.idle_timeout_s)

    await runner(server, stream).run("hi", sink)
    return len(server.requests) - before


async def main() -> None:
    with FakeAnthropic() as silent, FakeAnthropic() as head, FakeAnthropic() as body:
        (notice, error, message), dribbled_head, dribbled_body = await asyncio.gather(
            silent_endpoint(silent), dribbling_endpoint(head, "head"), dribbling_endpoint(body, "body")
        )
    print(f"silent endpoint: first notice after {notice:.1f} s  [target <= 10 s]")
    print(f"silent endpoint: error after {error:.1f} s: {message}  [target <= 120 s]")
    for where, (_, ended, said) in (("headers", dribbled_head), ("body", dribbled_body)):
        print(f"endpoint dribbling its {where}: error after {ended:.1f} s: {said}  [target <= 120 s]")
    with FakeAnthropic() as server:  # a server of its own: the silent one's replies are still queued
        print(f"stream paused by a stopped process: {await paused_stream(server)} request(s)  [target: 1]")


if __name__ == "__main__":
    asyncio.run(main())
