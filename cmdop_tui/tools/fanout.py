"""run_on_machines: one shell command on many machines at once, with no agent there (like pssh or
an Ansible ad-hoc command).

Each host runs it through its machine's `run_command` (over ssh for a remote one: its own process
group there, killed on timeout or Stop), at most `concurrency` at a time. A machine the last probe
found offline fails at once and holds no slot long. Hosts a rule scoped to them denies
(`ToolContext.denied_on`) are reported and not run; no one is asked per host. The result lists
the hosts in inventory order, identical outcomes grouped, so a hundred hosts read as a few groups.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.spec import MachineError, MachineSpec, MachineUnreachable
from cmdop_tui.machines.timeout_hold import TIMEOUT_HOLD, TimeoutHold

from .base import Subject, Tool, ToolContext, ToolResult, host_event
from .job_move import MOVED_KEEP
from .job_tools import BACKGROUND_PROPERTY, start_job
from .jobs import JobTable
from .outcome import OK, OutcomeKind, ToolOutcome
from .schema import object_schema, prop
from .shell import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS

__all__ = ["RUN_ON_MACHINES", "Outcome", "grouped_report", "host_ranges"]

MAX_CONCURRENCY = 256
DEFAULT_CONCURRENCY_CAP = 128  # hosts at once when the call does not say: a whole fleet of most sizes
FDS_PER_HOST = 4  # a running host's ssh client holds its pipes' ends here
FDS_KEPT = 128  # descriptors left for the rest of the app
TOTAL_OUTPUT = 64_000  # bytes of output shown for all hosts together; each gets its share
MIN_HOST_OUTPUT = 1_000
LIVE_EVERY_S = 0.25  # a running host's last line goes to the UI at most this often
LINE_CHARS = 200
PARTIAL_CHARS = 4 * LINE_CHARS  # of a line not yet ended, the tail kept
UNSENT_CHARS = 64 * 1024  # of a host's output between two of its events, the tail sent
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # a progress bar's \r ends a line as \n does


@dataclass(frozen=True)
class Outcome:
    """What one host did: `status` is the first line (`exit 0`, `error: ...`, `denied by rule ...`),
    `body` the output under it; `kind` how it ended, typed (ok: it ran and exited 0);
    `unreachable`: the machine could not be reached (offline, ssh failed to connect)."""

    host: str
    status: str
    body: str = ""
    kind: OutcomeKind = OutcomeKind.FAILED
    unreachable: bool = False

    @property
    def ok(self) -> bool:
        return self.kind is OutcomeKind.OK

    @classmethod
    def of(cls, host: str, result: MachineResult) -> Outcome:
        head, _, body = result.text.partition("\n")
        if result.exit_code is not None:
            status = "exit " + head.removeprefix("exit code: ")
        else:  # the ssh client failed, the command timed out...
            status = head if head.startswith("error") else f"error: {head}"
        return cls(host, status, body.strip("\n"), ToolResult.of(result).settled.kind, result.unreachable)

    @property
    def state(self) -> str:
        """For the fleet view: done, failed, timed out, offline or denied."""
        if self.ok:
            return "done"
        if self.kind is OutcomeKind.DENIED_BY_RULE:
            return "denied"
        if self.unreachable:
            return "offline"
        return "timed out" if self.kind is OutcomeKind.TIMED_OUT else "failed"

    @property
    def last_line(self) -> str:
        """The last line of its output (the status when it printed nothing)."""
        lines = [line for line in self.body.splitlines() if line.strip() and line not in ("stdout:", "stderr:")]
        return (lines[-1] if lines and lines[-1] != "(no output)" else self.status)[:LINE_CHARS]

    @classmethod
    def failed(cls, host: str, why: str, *, unreachable: bool = False) -> Outcome:
        head, _, body = why.partition("\n")
        status = head if head.startswith("error") else f"error: {head}"
        return cls(host, status, body.strip("\n"), unreachable=unreachable)


def call_outcome(outcomes: Sequence[Outcome]) -> ToolOutcome:
    """The whole call's outcome: ok when every host ran and exited 0; else failed, the reason
    counting the hosts by how they ended (`2 of 5 hosts did not succeed: 1 exit 1, 1 offline`)."""
    failing = [outcome for outcome in outcomes if not outcome.ok]
    if not failing:
        return OK
    counts: dict[str, int] = {}
    for outcome in failing:
        state = outcome.status if outcome.status.startswith("exit ") else outcome.state
        counts[state] = counts.get(state, 0) + 1
    said = ", ".join(f"{count} {state}" for state, count in counts.items())
    return ToolOutcome(OutcomeKind.FAILED, f"{len(failing)} of {len(outcomes)} hosts did not succeed: {said}")


def host_ranges(hosts: Sequence[str], order: Sequence[str]) -> str:
    """`hosts` named compactly: runs of three or more neighbours in `order` as `first..last`."""
    position = {name: index for index, name in enumerate(order)}
    ranked = sorted(hosts, key=lambda name: position.get(name, len(order)))
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        parts.append(f"{run[0]}..{run[-1]}" if len(run) >= 3 else ", ".join(run))

    for name in ranked:
        if run and position.get(name, -2) == position.get(run[-1], -5) + 1:
            run.append(name)
        else:
            if run:
                flush()
            run = [name]
    if run:
        flush()
    return ", ".join(parts)


def grouped_report(outcomes: Sequence[Outcome]) -> str:
    """The outcomes, identical ones together, groups in the order of their first host."""
    groups: dict[tuple[str, str], list[str]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.status, outcome.body), []).append(outcome.host)
    order = [outcome.host for outcome in outcomes]
    ok = sum(outcome.ok for outcome in outcomes)
    hosts_word = "host" if len(outcomes) == 1 else "hosts"
    outcomes_word = "outcome" if len(groups) == 1 else "distinct outcomes"
    lines = [f"{len(outcomes)} {hosts_word}: {ok} exit 0, {len(outcomes) - ok} other; {len(groups)} {outcomes_word}"]
    for (status, body), hosts in groups.items():
        label = hosts[0] if len(hosts) == 1 else f"{len(hosts)} hosts ({host_ranges(hosts, order)})"
        lines.append(f"{label}: {status}")
        lines.extend(f"  {line}" if line else "" for line in body.splitlines())
    return "\n".join(lines)


class _Host:
    """One host of the call: runs its command in a slot, and tells the UI how it is doing
    (`ctx.nested` events of type `host`: queued, running, done, failed, offline, denied; the last
    line of its output, at most every LIVE_EVERY_S while it runs, and the final one in the event
    that ends it; with each, as `text`, what it printed since the one before: its own stream)
    and the model's progress a line when it ends."""

    def __init__(self, spec: MachineSpec, ctx: ToolContext, context: contextvars.Context) -> None:
        self.spec = spec
        self.ctx = ctx
        self.context = context  # its command runs in it (with the call's TimeoutHold)
        self.started: float | None = None
        self.running: asyncio.Task[MachineResult] | None = None  # its command, once it has a slot
        self.seen = ""  # the tail of what it printed, for its job's file if the call moves
        self.to_file: Callable[[str], None] | None = None  # moved: where its output goes now
        self.last_line = ""
        self._partial: dict[str, str] = {}  # per stream: the line not yet ended
        self._unsent = ""  # output since the last event: the host's own stream, sent with the next
        self._reported = 0.0
        self.tell("queued")

    def tell(self, state: str, line: str = "") -> None:
        elapsed = round(time.monotonic() - self.started, 3) if self.started is not None else None
        self.ctx.nested({**host_event(self.spec.name, state, line, elapsed), "text": self._unsent})
        self._unsent = ""

    def live(self, text: str, stream: str) -> None:
        """A chunk of its output: the last line so far, whole (a chunk may end mid-line, and the
        rest of that line comes with the next one), to the UI at most every LIVE_EVERY_S."""
        if stream == "info":
            return
        if self.to_file is not None:  # moved to the background: the job's file has it now
            self.to_file(text)
            return
        self.seen = (self.seen + text)[-MOVED_KEEP:]
        self.ctx.keep_host_output(self.spec.name, text)  # whole, on disk: the view pages through it
        self._unsent = (self._unsent + text)[-UNSENT_CHARS:]
        *complete, partial = LINE_BREAK.split(self._partial.get(stream, "") + text)
        self._partial[stream] = partial[-PARTIAL_CHARS:]
        lines = [line for line in (*complete, partial) if line.strip()]
        if not lines:
            return
        self.last_line = lines[-1][:LINE_CHARS]
        if time.monotonic() - self._reported >= LIVE_EVERY_S:
            self._reported = time.monotonic()
            self.tell("running", self.last_line)

    def end(self, outcome: Outcome) -> Outcome:
        """Its outcome, to the model's progress and to the UI: the ended event carries the final
        last line (the last one it printed; the outcome's when it printed none or did not run),
        whatever the throttled running events showed before."""
        elapsed = f" ({time.monotonic() - self.started:.1f} s)" if self.started is not None else ""
        self.ctx.progress(f"{outcome.host}: {outcome.status}{elapsed}\n", "info")
        ran = self.started is not None and not outcome.unreachable
        self.tell(outcome.state, self.last_line if ran and self.last_line else outcome.last_line)
        return outcome

    async def run(self, command: str, args: dict[str, Any], slots: asyncio.Semaphore, output_limit: int) -> Outcome:
        denied = self.ctx.denied_on(self.spec.name)
        if denied is not None:
            status = denied if denied.startswith("denied") else f"denied: {denied}"
            return self.end(Outcome(self.spec.name, status, kind=OutcomeKind.DENIED_BY_RULE))
        try:
            machine = self.ctx.machine({"machine": self.spec.name})
        except MachineError as exc:  # offline, hidden: at once, without a slot
            return self.end(Outcome.failed(self.spec.name, str(exc), unreachable=isinstance(exc, MachineUnreachable)))
        async with slots:
            self.started = time.monotonic()
            self.tell("running")
            running = machine.run_command(
                command,
                cwd=args.get("cwd"),
                timeout_ms=args.get("timeout_ms", DEFAULT_TIMEOUT_MS),
                progress=self.live,
                output_limit=output_limit,
            )
            self.running = asyncio.get_running_loop().create_task(running, context=self.context)
            try:  # shielded: a command moved to the background (a job's now) outlives the call
                result = await asyncio.shield(self.running)
            except asyncio.CancelledError:
                if self.to_file is None:  # a Stop: the command ends with the call
                    self.running.cancel()
                    await asyncio.gather(self.running, return_exceptions=True)
                raise
            return self.end(Outcome.of(self.spec.name, result))


def default_concurrency(hosts: int) -> int:
    """Hosts at once when the call does not say: every host (waiting on remote commands costs
    little here, and a fleet is only as quick as its slowest slot), bounded by a cap and by the
    file descriptors this process may still open."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    by_descriptors = (soft - FDS_KEPT) // FDS_PER_HOST if soft != resource.RLIM_INFINITY else DEFAULT_CONCURRENCY_CAP
    return max(1, min(hosts, DEFAULT_CONCURRENCY_CAP, by_descriptors))


async def _run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.machines is None:
        return ToolResult.error("this session has no other machines: use execute_command")
    try:
        specs = ctx.machines.inventory.select(args["machines"])
    except MachineError as exc:
        return ToolResult.error(f"{exc}; nothing was run")
    if not specs:
        return ToolResult.error("no machines named; nothing was run")
    if args.get("background"):
        return _start_jobs(specs, args, ctx)
    slots = asyncio.Semaphore(args.get("concurrency") or default_concurrency(len(specs)))
    output_limit = max(MIN_HOST_OUTPUT, TOTAL_OUTPUT // len(specs))
    hold = TimeoutHold()  # lifted if the person moves the call to the background (Ctrl+B)
    hosts = [_Host(spec, ctx, _holding(hold)) for spec in specs]
    tasks = [asyncio.create_task(host.run(args["command"], args, slots, output_limit)) for host in hosts]
    jobs = ctx.jobs if ctx.call_id else None  # the person may move the call to the background
    asked = asyncio.ensure_future(jobs.movable(ctx.call_id).wait()) if jobs is not None else None
    try:
        if jobs is not None and asked is not None and not await _all_done(tasks, asked):
            hold.lift()
            return _move_hosts(hosts, tasks, args, ctx, jobs)
        await asyncio.wait(tasks)
    except asyncio.CancelledError:  # Stop: the hosts that finished are kept, the rest marked
        ctx.stopped_with(
            ToolResult(grouped_report(_so_far(specs, tasks)), is_error=True)
        )  # the executor marks it cancelled
        raise
    finally:  # every host's command is cancelled (its remote group killed; a moved one goes on) and awaited
        if jobs is not None and asked is not None:
            asked.cancel()
            jobs.unmovable(ctx.call_id)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    outcomes = [
        task.result() if task.exception() is None else Outcome.failed(spec.name, str(task.exception()))
        for spec, task in zip(specs, tasks, strict=True)
    ]
    return ToolResult(
        grouped_report(outcomes), is_error=not any(outcome.ok for outcome in outcomes), outcome=call_outcome(outcomes)
    )


def _holding(hold: TimeoutHold) -> contextvars.Context:
    """A context for one host's command, with the call's TimeoutHold in it."""
    context = contextvars.copy_context()
    context.run(TIMEOUT_HOLD.set, hold)
    return context


async def _all_done(tasks: Sequence[asyncio.Task[Outcome]], asked: asyncio.Future[Any]) -> bool:
    """Wait for every host, or for the person to move the call: whether every host ended first."""
    waiting: set[asyncio.Future[Any]] = {*tasks, asked}
    while not all(task.done() for task in tasks):
        if asked.done():
            return False
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        waiting = {future for future in waiting if not future.done()}
    return True


def _move_hosts(
    hosts: Sequence[_Host],
    tasks: Sequence[asyncio.Task[Outcome]],
    args: dict[str, Any],
    ctx: ToolContext,
    jobs: JobTable,
) -> ToolResult:
    """The person moved the call to the background (Ctrl+B): each host's command that runs goes
    on as a job of its own (the same process; what it printed so far and all it prints after in
    the job's file), a host still waiting for a slot starts its command as a job now (jobs are
    not bounded by `concurrency`), and a host that ended is reported as it ended."""
    lines, moved = [], 0
    for host, task in zip(hosts, tasks, strict=True):
        name = host.spec.name
        if task.done() or (host.running is not None and host.running.done()):
            lines.append(f"{name}: {_ended_line(task, host)}")
            continue
        if host.running is None:  # waiting for a slot: started as a job now, with no foreground timeout
            task.cancel()
            try:
                job_info = start_job(ctx, ctx.machine({"machine": name}), {**args, "timeout_ms": None})
            except MachineError as exc:
                job_info = f"{str(exc).splitlines()[0]}; not started"
            lines.append(f"{name}: {job_info if isinstance(job_info, str) else f'job {job_info.id}'}")
            moved += not isinstance(job_info, str)
            continue
        try:
            job = jobs.adopt(name, args["command"], host.running, ctx.call_id)
        except (OSError, RuntimeError) as exc:
            lines.append(f"{name}: could not move to the background and was stopped: {exc}")
            continue  # its task is cancelled with the call's, and the command with it
        jobs.append(job, host.seen)
        host.to_file = lambda text, job=job: jobs.append(job, text)
        ctx.nested(host_event(name, "done", f"background job {job.info.id}"))
        lines.append(f"{name}: job {job.info.id}")
        moved += 1
    head = (
        f"The user moved this command to the background: {moved} of {len(hosts)} hosts run on as background "
        "jobs (the same processes; read each with job_output, wait with job_wait, stop with job_kill):"
    )
    return ToolResult("\n".join([head, *lines]), is_error=False)


def _ended_line(task: asyncio.Task[Outcome], host: _Host) -> str:
    """How a host that ended before the move ended, in a word."""
    if task.done() and not task.cancelled() and task.exception() is None:
        return f"{task.result().status} (ended before the move)"
    running = host.running
    if running is not None and running.done() and not running.cancelled() and running.exception() is None:
        return f"{running.result().text.partition(chr(10))[0]} (ended before the move)"
    return "ended before the move"


def _start_jobs(specs: Sequence[MachineSpec], args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """The command as a background job on each host a rule does not deny: a job id per host
    (all at once: `concurrency` bounds a call that waits, not jobs)."""
    lines, started = [], 0
    for spec in specs:
        denied = ctx.denied_on(spec.name)
        if denied is not None:
            lines.append(f"{spec.name}: {denied if denied.startswith('denied') else f'denied: {denied}'}; not started")
            continue
        try:
            job = start_job(ctx, ctx.machine({"machine": spec.name}), args)
        except MachineError as exc:
            job = f"{str(exc).splitlines()[0]}; not started"
        if isinstance(job, str):
            lines.append(f"{spec.name}: {job}")
            continue
        started += 1
        ctx.nested(host_event(spec.name, "done", f"background job {job.id}"))
        lines.append(f"{spec.name}: job {job.id}")
    head = f"{started} of {len(specs)} hosts started as background jobs (read each with job_output, job_wait):"
    return ToolResult("\n".join([head, *lines]), is_error=started == 0)


def _so_far(specs: Sequence[MachineSpec], tasks: Sequence[asyncio.Task[Outcome]]) -> list[Outcome]:
    """Each host's outcome when the call is stopped: what finished, else that it was stopped."""
    stopped = "stopped before it ended: it may have run in part there"
    return [
        task.result()
        if task.done() and not task.cancelled() and task.exception() is None
        else Outcome.failed(spec.name, stopped)
        for spec, task in zip(specs, tasks, strict=True)
    ]


RUN_ON_MACHINES = Tool(
    name="run_on_machines",
    description=(
        "Run one shell command (`/bin/bash -c`) on many machines at once, directly over ssh (no "
        "agent there), and get each host's exit code and output, identical outputs grouped. "
        "`machines` takes names, `tag:T` (every machine tagged T) and group names. Hosts run "
        "in parallel, at most `concurrency` at a time; an offline host fails at once. No stdin, no "
        "terminal. Use it for the same check or change across a fleet; use execute_command for "
        "one machine and ask_machines for multi-step work. With `background: true` each host's "
        "command becomes a background job and the call returns a job id per host at once."
    ),
    input_schema=object_schema(
        {
            "command": prop("string", "The bash command line, run as is on every host."),
            "machines": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Machine names, `tag:T` and group names.",
            },
            "cwd": prop("string", "Working directory on each host."),
            "timeout_ms": prop(
                "integer",
                f"Per host: kill the command after this long (default {DEFAULT_TIMEOUT_MS}).",
                minimum=1,
                maximum=MAX_TIMEOUT_MS,
            ),
            "concurrency": prop(
                "integer",
                f"Hosts at once (default: all of them, up to {DEFAULT_CONCURRENCY_CAP}).",
                minimum=1,
                maximum=MAX_CONCURRENCY,
            ),
            "background": BACKGROUND_PROPERTY,
        },
        required=["command", "machines"],
    ),
    run=_run,
    tags=frozenset({"remote", "shell"}),
    mutating=True,
    subject=Subject("command", "command"),
)
