"""Figures for a host that freezes behind a live ControlMaster, against real sshd servers.

Run: .venv/bin/python bench/bench_frozen_host.py   (needs openssh-server; .ci/run installs it)

The host is frozen by SIGSTOP of the sshd processes serving its connection while a command runs
there: the link stays up (nothing is closed), nothing answers, and the kill the app sends there
cannot arrive. With the shipped SshOptions:
1. `execute_command` with `timeout_ms` 3000: the call's end after its start   [target <= timeout + 1 s]
2. Stop (the call's task cancelled) while frozen: to the call's end             [target <= 1 s]
3. `run_on_machines` over three hosts, one of them frozen, `timeout_ms` 3000: the two others'
   finished results come back and the frozen one is marked                     [target <= timeout + 1 s]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from sshd import SshLab, process_table

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

TIMEOUT_MS = 3000
SLEEPER = "echo started; sleep 60"
ROUNDS = 5


def fleet_of(lab: SshLab) -> Fleet:
    return Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))


def connections_of(lab: SshLab, alias: str) -> list[int]:
    """The sshd processes serving connections to `alias` (its server's children)."""
    server = lab.server(alias).pid
    return [pid for pid, parent in process_table().items() if parent == server]


@contextlib.contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    """These processes stopped for the duration, then gone (the next round opens a new master)."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)


async def started(task: asyncio.Task, printed: list[str], hosts: int = 1) -> None:
    """Until `hosts` hosts have printed that their command started (or the call ended)."""
    while "".join(printed).count("started") < hosts and not task.done():
        await asyncio.sleep(0.01)


async def timeout_on_frozen(lab: SshLab) -> float:
    """Seconds from the call's start to its end, the host frozen once the command runs."""
    fleet, printed = fleet_of(lab), []
    ctx = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet, progress=lambda t, s: printed.append(t))
    began = time.monotonic()
    args = {"command": SLEEPER, "machine": "alpha", "timeout_ms": TIMEOUT_MS}
    task = asyncio.create_task(run_tool(EXECUTE_COMMAND, args, ctx))
    await started(task, printed)
    try:
        with frozen(connections_of(lab, "alpha")):
            result = await asyncio.wait_for(task, 60)
            elapsed = time.monotonic() - began
    finally:
        await fleet.close()
    assert f"timed out after {TIMEOUT_MS} ms" in result.content, result.content
    return elapsed


async def stop_on_frozen(lab: SshLab) -> float:
    """Seconds from Stop to the call's end, the host frozen."""
    fleet, printed = fleet_of(lab), []
    ctx = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet, progress=lambda t, s: printed.append(t))
    task = asyncio.create_task(run_tool(EXECUTE_COMMAND, {"command": SLEEPER, "machine": "alpha"}, ctx))
    await started(task, printed)
    try:
        with frozen(connections_of(lab, "alpha")):
            stopped = time.monotonic()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            elapsed = time.monotonic() - stopped
    finally:
        await fleet.close()
    return elapsed


async def fan_out_with_one_frozen(lab: SshLab) -> float:
    """Seconds from a run_on_machines call's start to its end, one of three hosts frozen behind
    its live master (each master opened by a first command, then alpha frozen)."""
    fleet = fleet_of(lab)
    ctx = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet)
    hosts = ["alpha", "bravo", "charlie"]
    for host in hosts:
        warm = await run_tool(EXECUTE_COMMAND, {"command": "true", "machine": host}, ctx)
        assert not warm.is_error, warm.content
    args = {"command": "sleep 1; echo finished", "machines": hosts, "timeout_ms": TIMEOUT_MS}
    try:
        with frozen(connections_of(lab, "alpha")):
            began = time.monotonic()
            result = await asyncio.wait_for(run_tool(RUN_ON_MACHINES, args, ctx), 60)
            elapsed = time.monotonic() - began
    finally:
        await fleet.close()
    assert "finished" in result.content and "bravo" in result.content, result.content  # the others' results
    assert "alpha" in result.content and ("timed out" in result.content or "lost" in result.content), result.content
    return elapsed


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"median {statistics.median(ordered):.2f} s, max {ordered[-1]:.2f} s (n={len(ordered)})"


async def main() -> None:
    limit = TIMEOUT_MS / 1000 + 1
    with SshLab(3) as lab:
        timeouts = [await timeout_on_frozen(lab) for _ in range(ROUNDS)]
        print(f"frozen host, timeout_ms {TIMEOUT_MS}: tool_end after {describe(timeouts)}  [target <= {limit:.0f} s]")
        stops = [await stop_on_frozen(lab) for _ in range(ROUNDS)]
        print(f"frozen host, Stop: call ended after {describe(stops)}  [target <= 1 s]")
        fans = [await fan_out_with_one_frozen(lab) for _ in range(ROUNDS)]
        print(
            f"run_on_machines, 1 of 3 frozen: ended after {describe(fans)}, the others' results kept  [target <= {limit:.0f} s]"
        )
    print(json.dumps({"timeout_max_s": max(timeouts), "stop_max_s": max(stops), "fan_out_max_s": max(fans)}))


if __name__ == "__main__":
    asyncio.run(main())
