"""job_output, job_wait, job_kill: the model's hold on its background jobs (tools/jobs.py), and
`start_job`, how execute_command and run_on_machines start one.

The jobs are the session's (`ToolContext.jobs`); a session without a table has none, and the
tools say so. What a job printed is read from its file a bounded page at a time, by offset, so
a job that prints gigabytes costs the context no more than a page per call.
"""

from __future__ import annotations

from typing import Any

from cmdop_tui.machines.machine import Machine

from .base import Tool, ToolContext, ToolResult
from .jobs import PAGE_BYTES, JobInfo, JobTable
from .schema import object_schema, prop

__all__ = ["BACKGROUND_PROPERTY", "JOB_TOOLS", "job_line", "start_job"]

MAX_WAIT_S = 600
DEFAULT_WAIT_S = 30

BACKGROUND_PROPERTY = prop(
    "boolean",
    "Run it as a background job: the call returns at once with a job id, the command keeps "
    "running across turns (in the same sandbox, never outside it) until it ends, is killed "
    "(job_kill) or the session closes. Read its output with job_output, wait with job_wait. "
    "For long builds, deploys, `tail -f`, servers.",
)

NO_JOBS = "this session keeps no background jobs"


def job_line(info: JobInfo) -> str:
    """One line on a job for the model: id, machine, state, runtime, bytes printed."""
    return f"{info.id} on {info.machine}: {info.outcome()}, {info.runtime_s():.1f} s, {info.size:,} bytes of output"


def start_job(ctx: ToolContext, machine: Machine, args: dict[str, Any]) -> JobInfo | str:
    """Start `args["command"]` on `machine` as a job of the session: its info, or why not."""
    if ctx.jobs is None:
        return NO_JOBS
    try:
        return ctx.jobs.start(
            machine, args["command"], cwd=args.get("cwd"), timeout_ms=args.get("timeout_ms"), call_id=ctx.call_id
        )
    except (OSError, RuntimeError) as exc:
        return f"the job could not start: {exc}"


def _table(ctx: ToolContext) -> JobTable | ToolResult:
    return ctx.jobs if ctx.jobs is not None else ToolResult.error(NO_JOBS)


def _unknown(job_id: str, jobs: JobTable) -> ToolResult:
    known = ", ".join(info.id for info in jobs.jobs()) or "none"
    return ToolResult.error(f"no job {job_id!r} in this session (jobs: {known})")


async def _job_output(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    jobs = _table(ctx)
    if isinstance(jobs, ToolResult):
        return jobs
    try:
        info, page = jobs.read(args["id"], args.get("offset", 0), args.get("max_bytes", PAGE_BYTES))
    except KeyError:
        return _unknown(args["id"], jobs)
    except OSError as exc:
        return ToolResult.error(f"the output of {args['id']} cannot be read: {exc.strerror or exc}")
    if not info.running and not page.more:
        jobs.seen(info.id)
    more = "more is there: call again with that offset" if page.more else "that is all so far"
    head = f"[{job_line(info)}; bytes {page.offset:,}..{page.next_offset:,}; next_offset {page.next_offset}; {more}]"
    return ToolResult(f"{head}\n{page.text}" if page.text else f"{head}\n(no new output)")


async def _job_wait(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    jobs = _table(ctx)
    if isinstance(jobs, ToolResult):
        return jobs
    try:
        info = await jobs.wait(args["id"], args.get("timeout_s", DEFAULT_WAIT_S))
    except KeyError:
        return _unknown(args["id"], jobs)
    jobs.seen(info.id)
    still = "; still running (wait again, or read its output with job_output)" if info.running else ""
    return ToolResult(f"{job_line(info)}{still}")


async def _job_kill(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    jobs = _table(ctx)
    if isinstance(jobs, ToolResult):
        return jobs
    try:
        info = await jobs.kill(args["id"])
    except KeyError:
        return _unknown(args["id"], jobs)
    jobs.seen(info.id)
    return ToolResult(job_line(info))


_ID = prop("string", "The job id (`job-3`) the starting call gave.")

JOB_OUTPUT = Tool(
    name="job_output",
    description=(
        "Read what a background job printed (stdout and stderr together) from `offset` (bytes; "
        f"0 for the start), at most {PAGE_BYTES:,} bytes a call; the answer gives the job's state "
        "and `next_offset` to pass next time for only the new output."
    ),
    input_schema=object_schema(
        {
            "id": _ID,
            "offset": prop("integer", "Byte offset to read from (default 0).", minimum=0),
            "max_bytes": prop(
                "integer", f"At most this many bytes (default {PAGE_BYTES}).", minimum=1, maximum=PAGE_BYTES
            ),
        },
        required=["id"],
    ),
    run=_job_output,
    tags=frozenset({"shell"}),
)

JOB_WAIT = Tool(
    name="job_wait",
    description=(
        "Wait for a background job to end, at most `timeout_s` seconds; gives its state and exit "
        "code (or that it still runs)."
    ),
    input_schema=object_schema(
        {
            "id": _ID,
            "timeout_s": prop(
                "number", f"Wait at most this long (default {DEFAULT_WAIT_S}).", minimum=0, maximum=MAX_WAIT_S
            ),
        },
        required=["id"],
    ),
    run=_job_wait,
    tags=frozenset({"shell"}),
)

JOB_KILL = Tool(
    name="job_kill",
    description="Kill a background job of this session (its whole process group) and say how it ended.",
    input_schema=object_schema({"id": _ID}, required=["id"]),
    run=_job_kill,
    tags=frozenset({"shell"}),
)

JOB_TOOLS = (JOB_OUTPUT, JOB_WAIT, JOB_KILL)
