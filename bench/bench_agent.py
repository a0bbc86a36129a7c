"""Figures for the agent loop. Run: .venv/bin/python bench/bench_agent.py

1. Loop overhead per turn, model and tools excluded, with a 1,000-message history (target <= 1 ms):
   the model is an in-memory stand-in that answers at once with a call to a no-op tool, so what is
   timed is the loop's own work: reminders, tool resolution, sanitation, request building, history
   appends, tool dispatch and events.
2. UI cancel signal to the runner having returned Cancelled (target <= 50 ms), mid-stream (real SDK
   against the fake Messages API, the stream held open) and mid `sleep 30` (the child must be gone).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import anthropic
from agent_helpers import FACTS, Recorder
from fake_anthropic import FakeAnthropic, text_reply, tool_reply

from cmdop_tui.agent.events import Token, ToolProgress, Usage
from cmdop_tui.agent.llm import ModelClient, ModelReply
from cmdop_tui.agent.policies import StreamPolicy
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.tools.base import Tool, ToolResult
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools

HISTORY = 1000
TURNS = 200


class InstantModel(ModelClient):
    """Answers every request at once: a no-op tool call, then a final answer on the last turn."""

    def __init__(self, turns: int) -> None:
        self.left = turns

    async def complete(self, request, emit, operation) -> ModelReply:
        self.left -= 1
        if self.left <= 0:
            return ModelReply([{"type": "text", "text": "done"}], "end_turn", Usage(1, 1))
        call = {"type": "tool_use", "id": f"toolu_{self.left:06d}", "name": "noop", "input": {"n": self.left}}
        return ModelReply([call], "tool_use", Usage(1, 1))


async def _noop(args, ctx) -> ToolResult:
    return ToolResult("ok")


def seeded_history(runner: Runner, messages: int) -> None:
    for i in range(messages // 2):
        runner.conversation.append_user(f"question {i} " + "x" * 200)
        runner.conversation.append_assistant([{"type": "text", "text": f"answer {i} " + "y" * 400}])


async def loop_overhead() -> float:
    noop = Tool("noop", "does nothing", {"type": "object", "properties": {"n": {"type": "integer"}}}, _noop, core=True)
    runner = Runner(
        model=InstantModel(TURNS),
        tools=ToolRegistry([*builtin_tools(), noop]),
        config=AgentConfig(model="m", max_turns=TURNS + 1, repeat_limit=10**9),
        facts=FACTS,
    )
    seeded_history(runner, HISTORY)
    started = time.perf_counter()
    result = await runner.run("go", lambda event: None)
    elapsed = time.perf_counter() - started
    assert result.status == "final" and result.turns == TURNS, result
    return elapsed / TURNS * 1000


async def cancel_latency(server: FakeAnthropic, mode: str) -> float:
    client = anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
    runner = Runner(
        model=ModelClient(client, stream=StreamPolicy(idle_timeout_s=60)),
        tools=ToolRegistry(builtin_tools()),
        config=AgentConfig(model="m"),
        facts=FACTS,
    )
    events = Recorder()
    gate = threading.Event()
    if mode == "stream":
        server.enqueue(text_reply("streaming forever " * 20, stall_after=6, gate=gate))
        ready = Token
    else:
        server.enqueue(tool_reply("execute_command", {"command": "echo pid=$$; exec sleep 30"}))
        ready = lambda e: isinstance(e, ToolProgress) and "pid=" in e.text  # noqa: E731
    task = asyncio.create_task(runner.run("go", events))
    event = await events.wait_for(ready)
    fired = time.perf_counter()
    runner.ui_cancel.fire()
    result = await task
    latency = (time.perf_counter() - fired) * 1000
    assert result.status == "cancelled"
    if mode == "command":
        pid = int(event.text.split("pid=")[1].split()[0])
        try:
            os.kill(pid, 0)
            raise AssertionError("the command survived the cancel")
        except ProcessLookupError:
            pass
    gate.set()
    await client.close()
    return latency


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms, max {ordered[-1]:.2f} ms (n={len(ordered)})"


async def main() -> None:
    overhead = [await loop_overhead() for _ in range(5)]
    print(f"loop overhead per turn, {HISTORY}-message history: {describe(overhead)}  [target <= 1 ms]")
    with FakeAnthropic() as server:
        for mode, label in (("stream", "mid-stream"), ("command", "mid `sleep 30`")):
            samples = [await cancel_latency(server, mode) for _ in range(20)]
            print(f"UI cancel -> Cancelled returned, {label}: {describe(samples)}  [target <= 50 ms]")


if __name__ == "__main__":
    asyncio.run(main())
