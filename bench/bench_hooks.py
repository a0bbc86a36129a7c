"""A hook's overhead per tool call, with a trivial command hook: median <= 10 ms.

Run: .venv/bin/python bench/bench_hooks.py [CALLS]

What the loop adds to one tool call when a PreToolUse hook matches it (agent/hook_points.py
`before_tool`: the event's JSON built, `/bin/sh -c COMMAND` started outside the sandbox with the
event on its stdin, its output read and judged), for `true` (reads nothing) and `cat >/dev/null`
(reads the event whole), CALLS times each (default 200) after a few warm-up calls; then the same
with a PostToolUse hook too (two hooks per call), and with no hook (the baseline: nothing runs).
The figure is the median of the PreToolUse hook; p95 and worst are for information.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cmdop_tui.agent.approval import ToolCall
from cmdop_tui.agent.hook_points import after_tool, before_tool
from cmdop_tui.hooks import Hooks
from cmdop_tui.hooks.shape import HookTable, from_settings
from cmdop_tui.tools.base import ToolResult
from cmdop_tui.tools.placement import LOCAL, Placement
from cmdop_tui.tools.shell import EXECUTE_COMMAND

GOAL_MS = 10.0
WARM_UP = 5


def placed(call: ToolCall) -> Placement:
    return LOCAL


async def per_call(hooks: Hooks, calls: int, post: bool) -> list[float]:
    """Milliseconds the hook points add to each of `calls` tool calls."""
    times = []
    for number in range(WARM_UP + calls):
        call = ToolCall(f"toolu_{number}", "execute_command", {"command": f"echo {number}"}, EXECUTE_COMMAND)
        started = time.perf_counter()
        call, refusal = await before_tool(hooks, call, placed)
        if post:
            await after_tool(hooks, call, ToolResult(f"{number}\n"))
        assert refusal is None
        if number >= WARM_UP:
            times.append((time.perf_counter() - started) * 1000)
    return times


def table(command: str | None, post: bool) -> HookTable:
    if command is None:
        return HookTable()
    events = ("PreToolUse", "PostToolUse") if post else ("PreToolUse",)
    return from_settings({event: [{"matcher": "Bash", "command": command}] for event in events}, "bench")


def line(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"  {name:<34} median {statistics.median(times):6.2f} ms   p95 {p95:6.2f} ms   worst {ordered[-1]:6.2f} ms"


async def main(calls: int) -> int:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        print(f"A hook's overhead per tool call ({calls} calls each; goal: median <= {GOAL_MS:g} ms)")
        figures = {}
        for command in ("true", "cat >/dev/null", None):
            for post in (False, True):
                if command is None and post:
                    continue
                times = await per_call(Hooks(table(command, post), cwd), calls, post)
                name = "no hook" if command is None else f"{'Pre+Post' if post else 'PreToolUse'}: {command}"
                figures[name] = statistics.median(times)
                print(line(name, times))
    worst = max(figures["PreToolUse: true"], figures["PreToolUse: cat >/dev/null"])
    verdict = "met" if worst <= GOAL_MS else "MISSED"
    print(f"figure: one trivial hook adds {worst:.2f} ms per tool call (median; goal <= {GOAL_MS:g} ms): {verdict}")
    return 0 if worst <= GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)))
