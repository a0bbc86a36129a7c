"""Figures for the remote agent's start: `cmdop-tui -p` from spawn to its first model request.

Run: .venv/bin/python bench/bench_remote_agent.py [--local-only]   (part 2 needs openssh-server)

1. `cmdop-tui -p hi --output-format stream-json --yes` (the console script, as ask_machine runs it
   there), from spawn to the first POST /v1/messages at the fake API (tests/support/fake_anthropic.py,
   the real SDK): cold (no warm agent: CMDOP_TUI_NO_WARM=1) and warm (a warm agent running).
   Target: warm median and max <= 0.4 s.
2. ask_machines over 10 hosts through real sshd (tests/support/sshd.py), each host's agent being this
   install's cmdop-tui, four asks in a row: from the call to each host's first model request (p50
   and max over the hosts), and the whole call, cold and warm. The ten "hosts" are this machine,
   sharing two cores, each with a runtime dir of its own, so each has its own warm agent, as a
   real fleet does. Target: the second ask, warm, <= 4 s.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from fake_anthropic import FakeAnthropic, Reply, text_reply
from sshd import SshLab

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.support.warm import LOG_NAME
from cmdop_tui.tools.ask import ASK_MACHINES
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.registry import run_tool

CMDOP = str(Path(sys.executable).with_name("cmdop-tui"))
RUNS = 20
TARGET_S = 0.4


class Arrivals:
    """When each POST /v1/messages arrived (a reply callable stamps it)."""

    def __init__(self, server: FakeAnthropic) -> None:
        self.server = server
        self.times: list[float] = []
        self.event = threading.Condition()

    def expect(self, count: int) -> None:
        def stamp(body: object) -> Reply:
            with self.event:
                self.times.append(time.perf_counter())
                self.event.notify_all()
            return text_reply("ok")

        self.server.enqueue(*[stamp] * count)

    def wait(self, count: int, timeout: float = 60) -> None:
        with self.event:
            assert self.event.wait_for(lambda: len(self.times) >= count, timeout), "requests did not arrive"


def environment(server: FakeAnthropic, home: Path, runtime: Path, *, warm: bool) -> dict[str, str]:
    env = {
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "HOME": str(home),
        "CMDOP_TUI_CONFIG": str(home / "config.toml"),
        "CMDOP_TUI_RUNTIME_DIR": str(runtime),
    }
    return env if warm else {**env, "CMDOP_TUI_NO_WARM": "1"}


def one_start(env: dict[str, str], arrivals: Arrivals) -> float:
    arrivals.expect(1)
    before = len(arrivals.times)
    started = time.perf_counter()
    child = subprocess.Popen(
        [CMDOP, "-p", "hi", "--output-format", "stream-json", "--yes"],
        env=env,
        cwd=env["HOME"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    arrivals.wait(before + 1)
    elapsed = arrivals.times[before] - started
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    return elapsed


def wait_for_agent(runtime: Path) -> None:
    deadline = time.monotonic() + 30
    while "ready" not in _read(runtime / LOG_NAME):
        assert time.monotonic() < deadline, "the warm agent did not start"
        time.sleep(0.01)


def stop_agent(runtime: Path) -> None:
    for pid_file in runtime.glob("agent-*.pid"):
        try:
            os.kill(int(_read(pid_file)), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def local_starts(server: FakeAnthropic, arrivals: Arrivals, scratch: Path) -> tuple[list[float], list[float]]:
    home, runtime = scratch / "home", scratch / "rt"
    home.mkdir()
    cold = [one_start(environment(server, home, runtime, warm=False), arrivals) for _ in range(5)]
    warm_env = environment(server, home, runtime, warm=True)
    one_start(warm_env, arrivals)  # cold, and it starts the agent
    wait_for_agent(runtime)
    try:
        warm = [one_start(warm_env, arrivals) for _ in range(RUNS)]
    finally:
        stop_agent(runtime)
    print(f"(served by the warm agent: {served(runtime)} of {RUNS} warm runs)")
    return cold, warm


def served(runtime: Path) -> int:
    """Runs the agent took (it leaves, and the run is cold, when someone edits the code)."""
    return _read(runtime / LOG_NAME).count("serving a run")


async def fan_out(lab: SshLab, arrivals: Arrivals) -> tuple[list[float], float]:
    specs = [MachineSpec(f"{alias}-agent", alias, cmdop=CMDOP) for alias in lab.aliases]
    fleet = Fleet(Inventory.load(specs, lab.config), SshOptions(config_file=lab.config))
    for spec in specs:  # warm the connections, as a session's health probes do
        await fleet.probe(spec)
    arrivals.expect(len(specs))
    before = len(arrivals.times)
    context = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet, progress=lambda t, s: None)
    started = time.perf_counter()
    result = await run_tool(ASK_MACHINES, {"hostnames": [s.name for s in specs], "prompt": "hi"}, context)
    elapsed = time.perf_counter() - started
    await fleet.close()
    assert not result.is_error and result.content.count('"ok": true') == len(specs), result.content
    return [t - started for t in arrivals.times[before : before + len(specs)]], elapsed


async def remote(server: FakeAnthropic, arrivals: Arrivals, scratch: Path, *, warm: bool) -> list[str]:
    """Four asks in a row; each host has a runtime dir of its own (so an agent of its own, as each
    machine of a real fleet has). Warm: the first ask runs cold and starts the agents, and the
    second follows it at once, with nothing waited on in between."""
    kind = "warm" if warm else "cold"
    home = scratch / f"home-{kind}"
    home.mkdir()
    runtimes = {}

    def own_runtime(alias: str) -> dict[str, str]:
        runtimes[alias] = scratch / f"rt-{kind}-{alias}"
        return {"CMDOP_TUI_RUNTIME_DIR": str(runtimes[alias])}

    lines = []
    with SshLab(10, env=environment(server, home, scratch / "unused", warm=warm), host_env=own_runtime) as lab:
        for ask in range(1, 5):
            firsts, whole = await fan_out(lab, arrivals)
            target = "  [target <= 4 s]" if warm and ask == 2 else ""
            lines.append(
                f"  ask {ask}: first request per host p50 {statistics.median(firsts):.2f} s, "
                f"max {max(firsts):.2f} s; the whole call {whole:.2f} s{target}"
            )
        if warm:
            for runtime in runtimes.values():
                stop_agent(runtime)
            taken = sum(served(runtime) for runtime in runtimes.values())
            lines.append(
                f"  (served by the hosts' warm agents: {taken} of {len(lab.aliases) * 4} runs, the first 10 cold)"
            )
    return lines


def describe(samples: list[float]) -> str:
    return f"median {statistics.median(samples):.3f} s, max {max(samples):.3f} s (n={len(samples)})"


def main() -> None:
    server = FakeAnthropic().start()
    arrivals = Arrivals(server)
    try:
        with tempfile.TemporaryDirectory(prefix="bra", dir="/tmp") as scratch:
            cold, warm = local_starts(server, arrivals, Path(scratch))
            print(f"-p start -> first request, cold: {describe(cold)}")
            print(f"-p start -> first request, warm: {describe(warm)}  [target <= {TARGET_S} s]")
            for kind in ("cold", "warm") if "--local-only" not in sys.argv else ():
                print(f"ask_machines, 10 hosts over sshd, {kind}:")
                print("\n".join(asyncio.run(remote(server, arrivals, Path(scratch), warm=kind == "warm"))))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
