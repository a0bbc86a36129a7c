"""Figures for Stop during an MCP call. Run: .venv/bin/python bench/bench_mcp_stop.py

A call to a server that ignores the cancellation (tests/support/mcp_servers/stubborn_server.py:
it keeps working, and its process stays while it does) is stopped once the server has it:
1. Stop to the end of the call (median; limit 50 ms): the caller's task is cancelled, the SDK
   sends notifications/cancelled and does not wait for the server.
2. The connection's close after that (median; limit 1 s): what holds a headless run's exit, or
   the app's, after the Stop. The SDK alone gives such a server 2 s to leave by itself.
The same with the official `mcp-server-everything` (its `trigger-long-running-operation`), when
it is installed (.tools/).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from mcp_servers.harness import STUBBORN  # noqa: E402

from cmdop_tui.mcp.client import Connection  # noqa: E402
from cmdop_tui.mcp.server_tables import McpServerSpec  # noqa: E402

ROUNDS = 5
EVERYTHING = ROOT / ".tools" / "node" / "node_modules" / ".bin" / "mcp-server-everything"


async def one_round(
    spec: McpServerSpec, tool: str, args: dict[str, object], working: asyncio.Event
) -> tuple[float, float]:
    """(Stop to the call's end, then the close), in seconds, once the server is `working`."""
    connection = Connection(spec, Path.cwd(), on_tools=lambda tools: None, on_lost=lambda why: None)
    await connection.open()
    call = asyncio.create_task(connection.call(tool, args, lambda text, stream: working.set()))
    await asyncio.wait_for(working.wait(), 30)
    stopped = time.monotonic()
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    ended = time.monotonic()
    await connection.close()
    return ended - stopped, time.monotonic() - ended


async def stubborn_round(mark: Path) -> tuple[float, float]:
    mark.unlink(missing_ok=True)
    spec = McpServerSpec(
        name="stub", command=sys.executable, args=(str(STUBBORN),), env={"STUBBORN_MARK_FILE": str(mark)}
    )
    working = asyncio.Event()

    async def watch() -> None:
        while not mark.exists():
            await asyncio.sleep(0.005)
        working.set()

    watcher = asyncio.create_task(watch())
    try:
        return await one_round(spec, "stall", {"seconds": 60}, working)
    finally:
        watcher.cancel()


async def everything_round() -> tuple[float, float]:
    spec = McpServerSpec(name="everything", command=str(EVERYTHING))
    working = asyncio.Event()  # its first progress notification: it is working on the call
    return await one_round(spec, "trigger-long-running-operation", {"duration": 60, "steps": 60}, working)


def report(name: str, rounds: list[tuple[float, float]]) -> None:
    stop = statistics.median(r[0] for r in rounds) * 1000
    close = statistics.median(r[1] for r in rounds)
    print(
        f"{name} (median of {len(rounds)}): Stop to the call's end {stop:.1f} ms (limit 50 ms); "
        f"the close after it {close:.2f} s (limit 1 s; the SDK alone waits 2 s)"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        report(
            "a server that ignores the cancellation",
            [await stubborn_round(Path(scratch) / "mark") for _ in range(ROUNDS)],
        )
    if EVERYTHING.exists():
        report("mcp-server-everything, a long operation", [await everything_round() for _ in range(ROUNDS)])
    else:
        print("mcp-server-everything is not installed (bash .ci/tools): its figures are left out")


if __name__ == "__main__":
    asyncio.run(main())
