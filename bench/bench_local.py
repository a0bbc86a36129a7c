"""Figures for the local model (llama.cpp via xllamacpp, the bundled SmolLM2-135M).

Run: .venv/bin/python bench/bench_local.py

Load time: from starting the server to it serving. Time to first token and tokens per second:
one streamed reply through the agent loop (the real system prompt and tool definitions included,
so the first figure also pays for reading the prompt).
"""

from __future__ import annotations

import asyncio
import statistics
import time

import anthropic

from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.events import Token, Usage
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.session.local_model import LocalModelServer
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools


async def one_reply(url: str, prompt: str) -> tuple[float, float, int]:
    client = anthropic.AsyncAnthropic(api_key="local", base_url=url, max_retries=0)
    runner = Runner(
        model=ModelClient(client),
        tools=ToolRegistry(builtin_tools()),
        config=AgentConfig(model="local", max_tokens=200, max_turns=1),
        facts=SessionFacts.gather(platform_name="headless"),
    )
    started = time.perf_counter()
    first: list[float] = []
    output: list[int] = []

    def sink(event) -> None:
        if isinstance(event, Token) and not first:
            first.append(time.perf_counter())
        if isinstance(event, Usage):
            output.append(event.output_tokens)

    await runner.run(prompt, sink)
    ended = time.perf_counter()
    await client.close()
    return first[0] - started, ended - first[0], output[0] if output else 0


def main() -> None:
    started = time.perf_counter()
    server = LocalModelServer().start()
    load = time.perf_counter() - started
    try:
        samples = [
            asyncio.run(one_reply(server.url, f"Write two sentences about servers, version {i}.")) for i in range(3)
        ]
    finally:
        server.stop()
    ttft = [s[0] for s in samples]
    rates = [s[2] / s[1] for s in samples if s[1] > 0 and s[2]]
    print(f"local model load (start to serving): {load:.2f} s")
    print(f"time to first token: median {statistics.median(ttft):.2f} s (first, cold: {ttft[0]:.2f} s)")
    print(f"generation: median {statistics.median(rates):.0f} tokens/s")


if __name__ == "__main__":
    main()
