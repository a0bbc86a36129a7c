"""Figures for MCP servers. Run: .venv/bin/python bench/bench_mcp.py

1. The overhead of one MCP tool call over stdio beyond the server's own work (median; limit
   5 ms): `echo` through the session's path (input validation, the registry, the SDK's client,
   the pipes, the result as text) to a minimal server whose own work per call is measured
   apart; the same call to a server written with the SDK, for comparison.
2. Twenty configured servers: the time a session takes to open (what stands between start-up
   and a usable prompt) with none and with twenty (within 10 %), the longest stall of the event
   loop while they start (what a keypress would wait), and the time until all twenty are
   connected (limit 3 s; the SDK's import included, as on the first start).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

SCRATCH = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
for _name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
    os.environ[_name] = str(SCRATCH / "home")  # nothing the session reads or writes is the user's
os.environ.pop("CMDOP_TUI_CONFIG", None)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import anthropic  # noqa: E402
from mcp_servers import tiny_server  # noqa: E402
from mcp_servers.harness import DEMO, TINY, settings_with  # noqa: E402

from cmdop_tui.mcp import McpServers  # noqa: E402
from cmdop_tui.mcp.server_tables import McpServerSpec  # noqa: E402
from cmdop_tui.session.session import Session  # noqa: E402
from cmdop_tui.tools.base import ToolContext  # noqa: E402
from cmdop_tui.tools.registry import ToolRegistry, run_tool  # noqa: E402

CALLS = 500
OPENS = 200
SERVERS = 20


def tiny(name: str) -> McpServerSpec:
    return McpServerSpec(name=name, command=sys.executable, args=("-S", str(TINY)))


def sdk(name: str) -> McpServerSpec:
    return McpServerSpec(name=name, command=sys.executable, args=(str(DEMO),))


def server_work_ms() -> float:
    """The minimal server's own work for one `echo` call: reading the request, answering it."""
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "ping"}}}
    )
    timings = []
    for _ in range(2000):
        started = time.perf_counter()
        json.dumps(tiny_server.answer(json.loads(line)))
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


async def call_median_ms(spec: McpServerSpec) -> float:
    servers = McpServers([spec], ToolRegistry(), cwd=SCRATCH)
    servers.start()
    assert await servers.wait(60), servers.states()
    tool = servers.registry.get(f"mcp__{spec.name}__echo")
    assert tool is not None, servers.states()
    context = ToolContext(call_id="bench", cwd=SCRATCH)
    timings = []
    try:
        for index in range(CALLS + 20):
            started = time.perf_counter()
            result = await run_tool(tool, {"text": f"ping {index}"}, context)
            if index >= 20:  # after warming up
                timings.append(time.perf_counter() - started)
            assert result.content == f"ping {index}", result
    finally:
        await servers.close()
    return statistics.median(timings) * 1000


class Stalls:
    """The longest time the event loop could not run a 1 ms ticker."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.longest = max(self.longest, time.perf_counter() - before - 0.001)

    def __enter__(self) -> Stalls:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def session(specs: list[McpServerSpec]) -> Session:
    client = anthropic.AsyncAnthropic(api_key="sk-bench", base_url="http://127.0.0.1:9")  # never called
    return Session(settings_with(*specs), platform="tui", client=client, cwd=SCRATCH, record=False)


async def twenty_connected(make: type | object, label: str) -> None:
    """Open a session with twenty servers; time the open, the loop's stalls, all connected."""
    specs = [make(f"s{n}") for n in range(SERVERS)]  # type: ignore[operator]
    opening = session(specs)
    with Stalls() as stalls:
        started = time.perf_counter()
        await opening.__aenter__()
        opened = time.perf_counter() - started
        assert opening.mcp is not None
        await opening.mcp.wait(60)
        connected = time.perf_counter() - started
    states = opening.mcp.states()
    await opening.close()
    ok = sum(state.status == "connected" for state in states)
    print(
        f"{SERVERS} {label}: session open {opened * 1000:.1f} ms, all {ok} connected after {connected:.2f} s, "
        f"longest event-loop stall meanwhile {stalls.longest * 1000:.1f} ms"
    )


async def open_medians_ms(*cases: list[McpServerSpec]) -> list[float]:
    """The median time to open a session, for each case: taken in turn, in alternating order (so
    drift and order hit all alike), with the heap frozen as the app freezes it after start-up."""
    gc.collect()
    gc.freeze()
    timings: list[list[float]] = [[] for _ in cases]
    for round_ in range(OPENS):
        order = list(zip(cases, timings, strict=True))
        for specs, times in order if round_ % 2 else reversed(order):
            opening = session(specs)
            started = time.perf_counter()
            await opening.__aenter__()
            times.append(time.perf_counter() - started)
            await opening.close()
    return [statistics.median(times) * 1000 for times in timings]


async def main() -> None:
    # 2 first: the SDK is imported as on a real first start.
    await twenty_connected(tiny, "minimal servers (the client's part)")
    await twenty_connected(sdk, "servers written with the SDK (each imports it: ~0.5 s of CPU)")
    none, twenty = await open_medians_ms([], [tiny(f"s{n}") for n in range(SERVERS)])
    print(
        f"session open (median of {OPENS}): no MCP server {none:.3f} ms, {SERVERS} servers {twenty:.3f} ms "
        f"({(twenty - none) * 1000:+.0f} µs, {(twenty - none) / none * 100:+.1f} %; limit +10 %)"
    )
    work = server_work_ms()
    minimal = await call_median_ms(tiny("tiny"))
    print(
        f"MCP call over stdio (median of {CALLS}): {minimal:.2f} ms to the minimal server, whose own work is "
        f"{work * 1000:.0f} µs: overhead {minimal - work:.2f} ms (limit 5 ms)"
    )
    with_sdk = await call_median_ms(sdk("demo"))
    print(f"the same call to the server written with the SDK: {with_sdk:.2f} ms (its own handling included)")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
