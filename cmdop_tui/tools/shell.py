"""The execute_command tool: run a shell command on a machine, stream its output, report the result.

The machine runs it (machines/process.py says how: its own process group, no terminal, bounded
output, the whole group killed on timeout or Stop); this module is what the model is told and
asks.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from cmdop_tui.machines.machine import MachineResult, ProgressSink
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT

from .base import Subject, Tool, ToolContext, ToolResult
from .escalation import with_escalation
from .job_move import run_movable
from .job_tools import BACKGROUND_PROPERTY, job_line, start_job
from .schema import MACHINE_PROPERTY, object_schema, prop

__all__ = ["DEFAULT_OUTPUT_LIMIT", "DEFAULT_TIMEOUT_MS", "EXECUTE_COMMAND", "MAX_TIMEOUT_MS", "make_execute_command"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000


def make_execute_command(output_limit: int = DEFAULT_OUTPUT_LIMIT) -> Tool:
    """The execute_command tool, showing the model at most about `output_limit` bytes of output."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        machine = ctx.machine(args)
        if args.get("background"):
            started = start_job(ctx, machine, args)
            if isinstance(started, str):
                return ToolResult.error(started)
            return ToolResult(f"started background job {started.id}: {job_line(started)}")

        def attempt(sandboxed: bool) -> Awaitable[MachineResult]:
            def run(progress: ProgressSink) -> Awaitable[MachineResult]:
                return machine.run_command(
                    args["command"],
                    cwd=args.get("cwd"),
                    timeout_ms=args.get("timeout_ms", DEFAULT_TIMEOUT_MS),
                    progress=progress,
                    output_limit=output_limit,
                    sandboxed=sandboxed,
                )

            return run_movable(ctx, machine.name, args["command"], run)  # Ctrl+B: tools/job_move.py

        return await with_escalation(ctx, attempt)

    return Tool(
        name="execute_command",
        description=(
            "Run a shell command with `/bin/bash -c` on a machine (this one unless `machine` says "
            "otherwise) and return its exit "
            "code, stdout and stderr (long output is cut in the middle). There is no stdin and "
            "no terminal, so interactive prompts fail. Default timeout "
            f"{DEFAULT_TIMEOUT_MS:,} ms, at most {MAX_TIMEOUT_MS:,}. For long work (builds, "
            "deploys, `tail -f`, servers) set `background: true`: the call returns a job id at "
            "once and the command runs on across turns (no timeout unless `timeout_ms` says)."
        ),
        input_schema=object_schema(
            {
                "command": prop("string", "The bash command line."),
                "cwd": prop("string", "Working directory; relative to the session's directory."),
                "timeout_ms": prop(
                    "integer",
                    f"Kill the command after this long (default {DEFAULT_TIMEOUT_MS}).",
                    minimum=1,
                    maximum=MAX_TIMEOUT_MS,
                ),
                "machine": MACHINE_PROPERTY,
                "background": BACKGROUND_PROPERTY,
            },
            required=["command"],
        ),
        run=run,
        tags=frozenset({"shell", "local"}),
        core=True,
        mutating=True,
        subject=Subject("command", "command"),
    )


EXECUTE_COMMAND = make_execute_command()
