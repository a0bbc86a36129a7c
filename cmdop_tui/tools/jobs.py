"""Background jobs: commands the model started with `background: true`, running across turns.

A job is the very call a foreground command is: the machine's `run_command` (machines/local.py
under the sandbox and its supervisor, machines/remote.py over ssh), only run as a task of the
session instead of inside the turn. So it is held by the same sandbox and containment, and it
ends the same ways: its own exit, its timeout, a kill (`job_kill`, `k` in /jobs), or the
session's close (the task is cancelled, which kills its process group, and on another machine
its remote group). When the app dies, its supervisor kills it.

Its output (stdout and stderr in the order they came) is written by the command itself to a
file of its own under the session's data directory (private, 0600): the bytes never pass the
app's event loop while it runs, so twenty jobs printing fast cost the keys nothing. What is read
of it is cleaned then (`clean`: decoded, made inert, credentials masked): a page for the model
(`read`), the tail the /jobs view follows, the last line. Memory holds only that last line.

`JobTable.listeners` are told of each start, each piece of output (looked for every
OUTPUT_EVERY_S per job, only its tail read) and each end, as `JobChange`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from cmdop_tui.machines.machine import Machine, MachineResult
from cmdop_tui.support.secrets import MARKER, Redactor, configured_secrets
from cmdop_tui.support.text import strip_terminal_sequences

__all__ = [
    "JOB_MEMORY",
    "JobChange",
    "JobInfo",
    "JobPage",
    "JobState",
    "JobTable",
    "clean",
    "ended_note",
    "read_page",
]

JobState = Literal["running", "exited", "failed", "killed"]
JOB_MEMORY = 4_096  # bytes per stream the machine keeps of a job's output (the file has it all)
DEFAULT_JOB_TIMEOUT_MS = 24 * 3600 * 1000  # a job with no timeout of its own still ends one day
PAGE_BYTES = 16_000  # what one job_output call gives at most
OUTPUT_EVERY_S = 0.25  # a job's output is told to listeners at most this often
OUTPUT_TAIL = 4_096  # characters of output one change carries at most
LINE_CHARS = 200
LAST_LINE_WINDOW = 4 * LINE_CHARS  # of new output, the tail its last line is looked for in
_EXIT = re.compile(r"exit code: (-?\d+)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class JobInfo:
    """A job as it is now: what runs where, its state, how much it printed and its last line.

    `exit_code` is the command's (None while it runs, or when it did not exit by itself);
    `reason` says why a failed job failed (a timeout, the sandbox, could not start)."""

    id: str
    machine: str
    command: str
    state: JobState
    started: float  # time.monotonic()
    ended: float | None = None
    exit_code: int | None = None
    reason: str = ""
    size: int = 0  # bytes in its output file
    last_line: str = ""
    output_file: str = ""
    call_id: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"

    def runtime_s(self, now: float | None = None) -> float:
        """How long it ran (so far)."""
        return (self.ended if self.ended is not None else (now or time.monotonic())) - self.started

    def outcome(self) -> str:
        """One line: `running`, `exit 0`, `killed`, `failed: timed out ...`."""
        if self.state == "exited":
            return f"exit {self.exit_code}"
        if self.state == "failed":
            return f"failed: {self.reason}" if self.reason else "failed"
        return self.state


@dataclass(frozen=True)
class JobChange:
    """What listeners are told: a job started, printed `text` (`skipped` characters before it
    left out), or ended."""

    kind: Literal["start", "output", "end"]
    job: JobInfo
    text: str = ""
    skipped: int = 0


@dataclass(frozen=True)
class JobPage:
    """A page of a job's output file: the text from `offset`, where the next page starts, and
    whether more is there already."""

    text: str
    offset: int
    next_offset: int
    more: bool


def clean(data: bytes) -> str:
    """A job's raw output as it may be shown or given to the model: decoded, every escape
    sequence and control character made inert, the app's credentials masked."""
    text = strip_terminal_sequences(data.decode("utf-8", errors="replace"))
    for secret in Redactor(configured_secrets()).literals:
        text = text.replace(secret, MARKER)
    return text


def read_page(path: Path, offset: int, limit: int = PAGE_BYTES) -> JobPage:
    """At most `limit` bytes of `path` from `offset`, ended on a whole UTF-8 character, cleaned
    (`clean`); the offsets count the file's bytes."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(limit + 1)
    more = len(data) > limit
    data = data[:limit]
    if more:  # back off a split character so the next page starts on a whole one
        cut = len(data)
        while cut > 0 and cut > len(data) - 4 and (data[cut - 1] & 0xC0) == 0x80:
            cut -= 1
        if cut > 0 and data[cut - 1] >= 0xC0:
            cut -= 1
        data = data[: cut or len(data)]
    return JobPage(clean(data), offset, offset + len(data), more)


@dataclass
class _Job:
    """A job's moving parts: its info (replaced as it changes), task, file and the model's view."""

    info: JobInfo
    path: Path
    fd: int
    task: asyncio.Task[None] | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    kill_asked: bool = False
    end_seen: bool = False  # the model read its end (job_wait, job_output): no note needed
    noted: bool = False
    seen_size: int = 0  # how much of its file listeners were told of


class JobTable:
    """The session's background jobs. `directory()` is where their output files go (asked at
    each start: the session's transcript may change); ids are `job-1`, `job-2`, ..."""

    def __init__(self, directory: Callable[[], Path]) -> None:
        self._directory = directory
        self._jobs: dict[str, _Job] = {}
        self._count = 0
        self.listeners: list[Callable[[JobChange], None]] = []
        self.closed = False
        self._movable: dict[str, asyncio.Event] = {}  # call id -> asked to move (newest last)

    # --- starting -------------------------------------------------------------------------

    def start(
        self, machine: Machine, command: str, *, cwd: str | None, timeout_ms: int | None, call_id: str = ""
    ) -> JobInfo:
        """Start `command` on `machine` in the background (sandboxed, as a foreground call is);
        returns at once. Raises OSError when its output file cannot be made, RuntimeError once
        the table is closed."""
        job = self._new_job(machine.name, command, call_id)
        running = machine.run_command(
            command,
            cwd=cwd,
            timeout_ms=timeout_ms or DEFAULT_JOB_TIMEOUT_MS,
            progress=lambda text, stream: None,  # the file has it all: read from there
            output_limit=JOB_MEMORY,
            output_fd=job.fd,
        )
        return self._launch(job, running)

    def adopt(self, machine: str, command: str, running: asyncio.Future[MachineResult], call_id: str) -> _Job:
        """A command already running in the foreground (`running`), from now on a job of the
        table: the caller sends its output on with `append`. OSError, RuntimeError: as `start`."""
        job = self._new_job(machine, command, call_id)
        self._launch(job, running)
        return job

    def append(self, job: _Job, text: str) -> None:
        """Output of an adopted job (already inert), added to its file."""
        if not job.ended.is_set():
            os.write(job.fd, text.encode("utf-8", errors="replace"))

    def _new_job(self, machine: str, command: str, call_id: str) -> _Job:
        if self.closed:
            raise RuntimeError("the session is closing: no job starts")
        directory = self._directory()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._count += 1
        while (directory / f"job-{self._count}.log").exists():  # a resumed session's earlier jobs stay
            self._count += 1
        job_id = f"job-{self._count}"
        path = directory / f"{job_id}.log"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        info = JobInfo(job_id, machine, command, "running", time.monotonic(), output_file=str(path), call_id=call_id)
        job = _Job(info, path, fd)
        self._jobs[job_id] = job
        return job

    def _launch(self, job: _Job, running: Awaitable[MachineResult]) -> JobInfo:
        job.task = asyncio.get_running_loop().create_task(self._run(job, running), name=f"cmdop {job.info.id}")
        job.task.add_done_callback(lambda _: _close_unstarted(running))
        self._tell(JobChange("start", job.info))
        return job.info

    async def _run(self, job: _Job, running: Awaitable[MachineResult]) -> None:
        watcher = asyncio.get_running_loop().create_task(self._watch(job), name=f"cmdop {job.info.id} output")
        try:
            result = await running
        except asyncio.CancelledError:
            self._finish(job, watcher, state="killed", reason="killed" if job.kill_asked else "session closed")
            raise
        except Exception as exc:  # a machine that raised: the job failed, the session goes on
            self._finish(job, watcher, state="failed", reason=str(exc).splitlines()[0] if str(exc) else "error")
            return
        self._finish(job, watcher, result=result)

    # --- foreground commands that may move to the background (Ctrl+B) ----------------------

    def movable(self, call_id: str) -> asyncio.Event:
        """A foreground command of call `call_id` that the person may send to the background:
        the event they set (`move`). `unmovable` when it is over."""
        return self._movable.setdefault(call_id, asyncio.Event())

    def unmovable(self, call_id: str) -> None:
        self._movable.pop(call_id, None)

    def move(self, call_id: str | None = None) -> bool:
        """Send the foreground command of `call_id` (else the newest) to the background;
        whether there was one."""
        waiting = [key for key, event in self._movable.items() if not event.is_set()]
        chosen = call_id if call_id in waiting else (waiting[-1] if waiting else None)
        if chosen is None:
            return False
        self._movable[chosen].set()
        return True

    async def _watch(self, job: _Job) -> None:
        """Tell listeners of the job's new output, every OUTPUT_EVERY_S, while it runs."""
        while True:
            await asyncio.sleep(OUTPUT_EVERY_S)
            text, skipped = self._look(job)
            if text:
                self._tell(JobChange("output", job.info, text, skipped))

    def _look(self, job: _Job) -> tuple[str, int]:
        """What the job printed since the last look (its last OUTPUT_TAIL bytes, cleaned) and how
        many bytes before them are left out; its size and last line brought up to date."""
        size = os.fstat(job.fd).st_size
        if size <= job.seen_size:
            return "", 0
        start = max(job.seen_size, size - OUTPUT_TAIL)
        text = clean(os.pread(job.fd, size - start, start))
        lines = [line for line in _LINE_BREAK.split(text[-LAST_LINE_WINDOW:]) if line.strip()]
        last = lines[-1][:LINE_CHARS] if lines else job.info.last_line
        skipped, job.seen_size = start - job.seen_size, size
        job.info = replace(job.info, size=size, last_line=last)
        return text, skipped

    def _finish(
        self,
        job: _Job,
        watcher: asyncio.Task[None] | None,
        *,
        result: MachineResult | None = None,
        state: JobState = "failed",
        reason: str = "",
    ) -> None:
        """The command is over (it wrote its file itself, so the file holds all it printed)."""
        if watcher is not None:
            watcher.cancel()
        text, skipped = self._look(job)
        with contextlib.suppress(OSError):
            os.fchmod(job.fd, 0o600)  # private again, whatever the command did to it
        os.close(job.fd)
        info = _ended(job.info, result) if result is not None else replace(job.info, state=state, reason=reason)
        job.info = replace(info, ended=time.monotonic())
        job.ended.set()
        self._tell(JobChange("end", job.info, text, skipped))

    def _settle(self, job: _Job, reason: str) -> None:
        """A job whose task was cancelled before it began: ended here (its file closed; its
        command never started, see `_close_unstarted`)."""
        if not job.ended.is_set():
            self._finish(job, None, state="killed", reason=reason)

    def _tell(self, change: JobChange) -> None:
        for listener in list(self.listeners):
            try:
                listener(change)
            except Exception:  # a broken display must not end a job
                continue

    # --- what the model and the person ask ------------------------------------------------

    def jobs(self) -> list[JobInfo]:
        """Every job of the session, oldest first."""
        return [job.info for job in self._jobs.values()]

    def info(self, job_id: str) -> JobInfo | None:
        job = self._jobs.get(job_id)
        return job.info if job else None

    def read(self, job_id: str, offset: int, limit: int = PAGE_BYTES) -> tuple[JobInfo, JobPage]:
        """The job's state and a page of its output from `offset`. KeyError: no such job."""
        job = self._jobs[job_id]
        info = job.info  # taken first: an ended job's page then holds all it printed
        return info, read_page(job.path, max(0, min(offset, info.size)), limit)

    async def wait(self, job_id: str, timeout_s: float) -> JobInfo:
        """The job's info once it ended, or when `timeout_s` passed. KeyError: no such job."""
        job = self._jobs[job_id]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await job.ended.wait()
        return job.info

    def seen(self, job_id: str) -> None:
        """The model has read that the job ended: no note of its end will be given."""
        job = self._jobs.get(job_id)
        if job is not None and not job.info.running:
            job.end_seen = True

    async def kill(self, job_id: str) -> JobInfo:
        """Kill the job (its whole process group, and on another machine its remote group) and
        wait until it is gone. KeyError: no such job."""
        job = self._jobs[job_id]
        if job.task is not None and not job.task.done():
            job.kill_asked = True
            job.task.cancel()
            await asyncio.gather(job.task, return_exceptions=True)
        self._settle(job, "killed")
        return job.info

    def unseen_ends(self) -> list[JobInfo]:
        """Jobs that ended without the model reading it, each given once (for a note)."""
        found = []
        for job in self._jobs.values():
            if not job.info.running and not job.end_seen and not job.noted:
                job.noted = True
                found.append(job.info)
        return found

    async def close(self) -> None:
        """Kill every running job and wait for them (the session's end)."""
        self.closed = True
        tasks = [job.task for job in self._jobs.values() if job.task is not None and not job.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for job in self._jobs.values():
            self._settle(job, "session closed")


def _close_unstarted(running: Awaitable[MachineResult]) -> None:
    """A job killed before its task began never started its command: close the command's
    coroutine, which is then never awaited (Python would warn about it)."""
    if inspect.iscoroutine(running) and inspect.getcoroutinestate(running) == inspect.CORO_CREATED:
        running.close()


def _ended(info: JobInfo, result: MachineResult) -> JobInfo:
    """The job's info once the machine answered: exited with its code, or failed and why."""
    head = result.text.partition("\n")[0]
    exited = _EXIT.match(head)
    if exited and result.sandbox_denied is None:
        return replace(info, state="exited", exit_code=int(exited.group(1)))
    reason = head.removeprefix("error: ") or "error"
    if result.sandbox_denied is not None:
        reason = f"the sandbox refused to {result.sandbox_denied.needs} (a background job is never run outside it)"
    return replace(info, state="failed", reason=reason)


def ended_note(info: JobInfo) -> str:
    """What the model is told at its next turn of a job that ended while it was not looking
    (the job's own output stays out: it is read with job_output, as output)."""
    return (
        f"<system-reminder>\nBackground job {info.id} on {info.machine} ended: {info.outcome()} after "
        f"{info.runtime_s():.1f} s, {info.size:,} bytes of output (read them with job_output).\n</system-reminder>"
    )
