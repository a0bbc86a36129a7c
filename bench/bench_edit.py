"""edit_file on a 10 MB file: one replacement in the middle, on this machine (limit: 200 ms median).

Run: .venv/bin/python bench/bench_edit.py [directory]

The file lives in a temporary directory (under `directory` when given, else the system's
temporary directory). Each run goes through the tool as a session calls it (input validated,
the sandbox's path checks, read, replace, atomic write with fsync, mode and owner kept),
alternating between two values so that every run changes the file. The preview (the file read
again and the diff a person is shown before allowing the call) is timed too.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cmdop_tui.config.settings import SandboxPolicy
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.edit import EDIT_FILE
from cmdop_tui.tools.registry import preview_tool, run_tool

SIZE = 10 * 1024 * 1024
RUNS = 15
LIMIT_MS = 200.0


def make_file(path: Path) -> None:
    line = "log line {:>8}: the quick brown fox jumps over the lazy dog, again and again.\n"
    count = SIZE // len(line.format(0))
    lines = [line.format(n) for n in range(count)]
    lines[count // 2] = "MARKER = 'alpha'\n"
    path.write_text("".join(lines))


async def measure(directory: Path) -> tuple[list[float], list[float], int]:
    target = directory / "big.log"
    make_file(target)
    fleet = Fleet(Inventory.load((), None), sandbox=Sandbox(SandboxPolicy(), bubblewrap()))
    ctx = ToolContext(call_id="bench", cwd=directory, machines=fleet)
    edits, previews = [], []
    values = ("'alpha'", "'beta'")
    for run in range(RUNS):
        old, new = values[run % 2], values[(run + 1) % 2]
        args = {"path": "big.log", "old_string": f"MARKER = {old}", "new_string": f"MARKER = {new}"}
        started = time.perf_counter()
        diff = await preview_tool(EDIT_FILE, args, ctx)
        previews.append(time.perf_counter() - started)
        assert diff is not None and f"+MARKER = {new}" in diff, diff
        started = time.perf_counter()
        result = await run_tool(EDIT_FILE, args, ctx)
        edits.append(time.perf_counter() - started)
        assert not result.is_error, result.content
    return edits, previews, target.stat().st_size


def main() -> None:
    parent = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory(prefix="cmdop-bench-edit-", dir=parent) as directory:
        edits, previews, size = asyncio.run(measure(Path(directory)))
    median = statistics.median(edits) * 1000
    verdict = "within" if median <= LIMIT_MS else "OVER"
    print(f"edit_file, one replacement in the middle of a {size / 1024 / 1024:.1f} MB file, local, {RUNS} runs")
    print(
        f"  median {median:.1f} ms (min {min(edits) * 1000:.1f}, max {max(edits) * 1000:.1f}): {verdict} {LIMIT_MS:.0f} ms"
    )
    print(f"  preview (read + diff): median {statistics.median(previews) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
