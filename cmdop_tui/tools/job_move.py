"""A foreground command the person sends to the background (Ctrl+B, as in Claude Code).

While `execute_command` waits for its command, the session's `JobTable` knows it as movable.
When the person moves it, the call returns to the model at once with a job id, and the very same
process runs on as that job: what it printed so far (the last MOVED_KEEP characters) and all it
prints from then on go to the job's file, and the job ends when the command does (its own end,
a kill, the session's close), as any job: the foreground timeout it was started with is lifted
(machines/timeout_hold.py). Its output then passes the event loop as a foreground
command's does (it was started as one); only a command started with `background: true` writes its
file by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable

from cmdop_tui.machines.machine import MachineResult, OutputStream, ProgressSink
from cmdop_tui.machines.timeout_hold import TIMEOUT_HOLD, TimeoutHold

from .base import ToolContext
from .jobs import JobTable

__all__ = ["MOVED_KEEP", "run_movable"]

MOVED_KEEP = 64 * 1024  # characters of what a command printed before it moved that its file gets


class _Relay:
    """The command's progress sink: to the turn's display, then (once moved) to its job's file."""

    def __init__(self, display: ProgressSink) -> None:
        self.display = display
        self.seen = ""  # what it printed before it moved (the last MOVED_KEEP characters)
        self.to_file: Callable[[str], None] | None = None

    def __call__(self, text: str, stream: OutputStream) -> None:
        if stream == "info":
            return self.display(text, stream) if self.to_file is None else None
        if self.to_file is not None:
            return self.to_file(text)
        self.seen = (self.seen + text)[-MOVED_KEEP:]
        return self.display(text, stream)


async def run_movable(
    ctx: ToolContext, machine: str, command: str, run: Callable[[ProgressSink], Awaitable[MachineResult]]
) -> MachineResult:
    """`run(progress)` as the call's foreground command, unless the person moves it to the
    background: then, at once, a result saying which job it became."""
    jobs = ctx.jobs
    if jobs is None or not ctx.call_id:
        return await run(ctx.progress)
    relay = _Relay(ctx.progress)
    hold = TimeoutHold()  # lifted when it moves: a job has no foreground timeout
    context = contextvars.copy_context()
    context.run(TIMEOUT_HOLD.set, hold)
    running = asyncio.get_running_loop().create_task(_result(run(relay)), context=context)
    moved = jobs.movable(ctx.call_id)
    asked = asyncio.ensure_future(moved.wait())
    try:
        await asyncio.wait({running, asked}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            return running.result()
        hold.lift()
        return _move(jobs, relay, machine, command, running, ctx.call_id)
    except BaseException:  # a Stop: the command ends with the call
        if not running.done():
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        raise
    finally:
        asked.cancel()
        jobs.unmovable(ctx.call_id)


async def _result(running: Awaitable[MachineResult]) -> MachineResult:
    return await running


def _move(
    jobs: JobTable, relay: _Relay, machine: str, command: str, running: asyncio.Future[MachineResult], call_id: str
) -> MachineResult:
    try:
        job = jobs.adopt(machine, command, running, call_id)
    except (OSError, RuntimeError) as exc:
        running.cancel()
        return MachineResult.error(f"the command could not move to the background and was stopped: {exc}")
    jobs.append(job, relay.seen)
    relay.to_file = lambda text: jobs.append(job, text)
    return MachineResult(
        f"The user moved this command to the background: it runs on as background job {job.info.id} "
        "(the same process; its output so far and from now on in the job's file). Read it with "
        f"job_output {{id: {job.info.id}}}, wait with job_wait, stop it with job_kill."
    )
