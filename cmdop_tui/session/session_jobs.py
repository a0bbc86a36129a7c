"""The session's background jobs (tools/jobs.py): where their output files live, what the
running turn's events say of them, and the notes the model reads of jobs that ended unseen.

A recorded session keeps its jobs' output beside its transcript, in `<session id>.jobs/`; one
without a transcript in a private folder of its own under the data directory's `jobs/`. Both
are under the data directory, which commands never see (session/assembly.py `build_sandbox`).
Those of sessions untouched for 30 days go when a session starts (session/job_files.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from cmdop_tui.agent.events import Event, JobEnded, JobOutput, JobStarted
from cmdop_tui.agent.history import Conversation
from cmdop_tui.config.settings import data_dir
from cmdop_tui.session.job_files import JOBS_SUFFIX, prune_job_files
from cmdop_tui.tools.jobs import JobChange, JobTable, ended_note

__all__ = ["JOBS_SUFFIX", "job_event", "jobs_directory", "note_ended_jobs", "session_jobs"]


def jobs_directory(transcript: Path | None, fallback: Callable[[], Path]) -> Path:
    """Beside the transcript (`<id>.jobs`), else `fallback()`."""
    return transcript.with_suffix(JOBS_SUFFIX) if transcript is not None else fallback()


def _private_folder() -> Callable[[], Path]:
    """A folder made once, on first use, under the data directory's `jobs/`."""
    made: list[Path] = []

    def folder() -> Path:
        if not made:
            parent = data_dir() / "jobs"
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            made.append(parent / f"{os.getpid()}-{os.urandom(4).hex()}")
        return made[0]

    return folder


def job_event(change: JobChange) -> Event:
    """A change of a job as the event surfaces show and stream-json prints."""
    job = change.job
    if change.kind == "start":
        return JobStarted(job.id, job.machine, job.command, job.call_id)
    if change.kind == "output":
        return JobOutput(job.id, change.text, change.skipped)
    return JobEnded(
        job.id, job.machine, job.state, job.exit_code, job.reason, round(job.runtime_s(), 3), job.size, job.output_file
    )


def session_jobs(transcript: Callable[[], Path | None], emit: Callable[[Event], None]) -> JobTable:
    """The session's table: output files beside `transcript()` (when there is one), each
    change sent to `emit` as an event."""
    fallback = _private_folder()
    threading.Thread(target=prune_job_files, name="cmdop-job-files", daemon=True).start()  # sessions long gone
    table = JobTable(lambda: jobs_directory(transcript(), fallback))
    table.listeners.append(lambda change: emit(job_event(change)))
    return table


def note_ended_jobs(table: JobTable, conversation: Conversation) -> int:
    """Tell the model, with the prompt about to go, of each job that ended while it was not
    looking (a note per job, once); how many."""
    ended = table.unseen_ends()
    for info in ended:
        conversation.append_user(ended_note(info))
    return len(ended)
