"""Figures for machines over OpenSSH, against real sshd servers on 127.0.0.1.

Run: .venv/bin/python bench/bench_machines.py   (needs openssh-server; .ci/run installs it)

1. A repeated command on a warm connection (ControlMaster): median, target <= 30 ms; beside it a
   cold connection's figure (a new ssh connection each time).
2. ask_machines over 10 hosts, each running a 1 s command: target <= 1.5 s. Each host's `cmdop`
   is a stand-in that sleeps 1 s and answers in the stream-json format, so the figure is the
   fan-out's own cost (connections, concurrency, streaming back). A real headless agent on each
   host adds its own start-up (loading the model SDK) on top.
3. Stop to remote process gone: target <= 500 ms.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from sshd import SshLab

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.ask import ASK_MACHINES
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

STAND_IN_AGENT = 'sleep 1; printf \'%s\\n\' \'{"type": "final", "text": "done"}\'; true'


def context(fleet: Fleet, events: list | None = None) -> ToolContext:
    sink = events if events is not None else []
    return ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet, progress=lambda t, s: sink.append(t))


async def timed_command(fleet: Fleet, machine: str) -> float:
    started = time.perf_counter()
    result = await run_tool(EXECUTE_COMMAND, {"command": "true", "machine": machine}, context(fleet))
    assert not result.is_error, result.content
    return (time.perf_counter() - started) * 1000


async def warm_and_cold(lab: SshLab) -> tuple[list[float], list[float]]:
    warm_fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    await timed_command(warm_fleet, "alpha")  # opens the master
    warm = [await timed_command(warm_fleet, "alpha") for _ in range(30)]
    await warm_fleet.close()
    cold = []
    for _ in range(10):
        fleet = Fleet(
            Inventory.load([], lab.config),
            SshOptions(config_file=lab.config, control_dir=Path(tempfile.mkdtemp(prefix="cm", dir="/tmp"))),
        )
        cold.append(await timed_command(fleet, "alpha"))
        await fleet.close()
    return warm, cold


async def fan_out(lab: SshLab) -> float:
    stand_ins = [MachineSpec(f"{alias}-agent", alias, cmdop=STAND_IN_AGENT) for alias in lab.aliases]
    fleet = Fleet(Inventory.load(stand_ins, lab.config), SshOptions(config_file=lab.config))
    for spec in stand_ins:  # warm the connections, as a session's health probes do
        await fleet.probe(spec)
    started = time.perf_counter()
    result = await run_tool(ASK_MACHINES, {"hostnames": [s.name for s in stand_ins], "prompt": "go"}, context(fleet))
    elapsed = time.perf_counter() - started
    await fleet.close()
    assert not result.is_error and result.content.count('"ok": true') == len(stand_ins), result.content
    return elapsed


async def stop_to_gone(lab: SshLab) -> float:
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    events: list[str] = []
    task = asyncio.create_task(
        run_tool(EXECUTE_COMMAND, {"command": "echo pid=$$; exec sleep 30", "machine": "alpha"}, context(fleet, events))
    )
    while not any("pid=" in e for e in events):
        await asyncio.sleep(0.005)
    pid = int("".join(events).split("pid=")[1].split()[0])
    started = time.perf_counter()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    while _alive(pid):  # the "remote" host is this one, so its processes are visible here
        await asyncio.sleep(0.002)
    elapsed = (time.perf_counter() - started) * 1000
    await fleet.close()
    return elapsed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def describe(samples: list[float], unit: str = "ms") -> str:
    ordered = sorted(samples)
    return f"median {statistics.median(ordered):.1f} {unit}, max {ordered[-1]:.1f} {unit} (n={len(ordered)})"


async def main() -> None:
    with SshLab(10) as lab:
        warm, cold = await warm_and_cold(lab)
        print(f"repeated command, warm connection: {describe(warm)}  [target median <= 30 ms]")
        print(f"command on a cold connection:      {describe(cold)}")
        fans = [await fan_out(lab) for _ in range(3)]
        print(f"ask_machines, 10 hosts x 1 s:      {describe(fans, 's')}  [target <= 1.5 s]")
        stops = [await stop_to_gone(lab) for _ in range(10)]
        print(f"Stop to remote process gone:       {describe(stops)}  [target <= 500 ms]")


if __name__ == "__main__":
    asyncio.run(main())
