"""Figures for the sandbox. Run: .venv/bin/python bench/bench_sandbox.py

1. Overhead per command: the same command (`true`) run through the local machine bare and inside
   the sandbox (workspace and strict), 200 times each, interleaved; medians and the difference.
2. The project's attacker suite (tests/support/hostile_suite.py), run twice inside its outer jail: floor
   on, and floor off so that the sandbox stands alone. Per class, the cases tried and how many
   changed anything outside the writable roots, let a hidden secret reach the model, reached a
   socket of the user's, left a process alive after its command or the app, or kept a power.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from hostile_suite import ALL_CASES, jail_argv  # noqa: E402

from cmdop_tui.machines.local import LocalMachine  # noqa: E402
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy, bubblewrap  # noqa: E402

RUNS = 200


async def _time(machine: LocalMachine, sandboxed: bool) -> float:
    started = time.perf_counter()
    await machine.run_command(
        "true", cwd=None, timeout_ms=10_000, progress=lambda text, stream: None, output_limit=1000, sandboxed=sandboxed
    )
    return (time.perf_counter() - started) * 1000


async def overhead() -> None:
    work = Path(tempfile.mkdtemp())
    program = bubblewrap()
    if program is None:
        print("no sandbox on this machine (bubblewrap cannot run): nothing to measure")
        return
    bare = LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), None))
    kinds = {
        "bare": (bare, False),
        "workspace": (LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), program)), True),
        "strict": (LocalMachine(work, sandbox=Sandbox(SandboxPolicy(mode="strict"), program)), True),
    }
    timings: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(RUNS):
        for name, (machine, sandboxed) in kinds.items():
            timings[name].append(await _time(machine, sandboxed))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    print(f"a command (`true`), median of {RUNS}:")
    for name, median in medians.items():
        extra = "" if name == "bare" else f"  (+{median - medians['bare']:.1f} ms over bare; limit 15 ms)"
        print(f"  {name:10s} {median:6.1f} ms{extra}")


ESCAPES = ("changed", "leaked", "socket", "outlived", "power")


def hostile() -> None:
    if bubblewrap() is None:
        print("attacker suite: needs bubblewrap for its jail; not run")
        return
    for floor in ("on", "off"):
        done = subprocess.run(jail_argv(sys.executable, floor, {}), capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            print(f"attacker suite, floor {floor}: failed to run\n{done.stderr[-2000:]}")
            continue
        results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        print(f"attacker suite, floor {floor}: {len(results)} of {len(ALL_CASES)} cases tried")
        print(f"  {'class':12s} {'tried':>5s}  " + "  ".join(f"{name:>8s}" for name in ESCAPES))
        for kind in dict.fromkeys(r["kind"] for r in results):
            mine = [r for r in results if r["kind"] == kind]
            counts = [sum(1 for r in mine if r[name]) for name in ESCAPES]
            print(f"  {kind:12s} {len(mine):5d}  " + "  ".join(f"{count:8d}" for count in counts))
        escaped = [r["case"] for r in results if r["escaped"]]
        print(f"  escaped: {len(escaped)}" + (f" {escaped}" if escaped else ""))


if __name__ == "__main__":
    asyncio.run(overhead())
    hostile()
