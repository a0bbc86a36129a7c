"""Background jobs' output files of sessions long gone, removed when a session starts.

A job's output stays in a file beside its session's transcript (`<id>.jobs/`, or a private
folder under the data directory's `jobs/` for a session without one: session/session_jobs.py)
so the model and the person can read it after the job ended, for as long as the session may go
on. Nothing else removes them, and a job that printed 1 MB/s for an hour left 3.6 GB. So each
session, as it starts, removes the job folders of sessions untouched for `KEEP_DAYS` days (no
job file, no transcript written since), never one a process still holds open (a job that runs
on, silent, in another session) nor the private folder of an app still running.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from cmdop_tui.config.settings import data_dir
from cmdop_tui.support.processes import process_alive
from cmdop_tui.transcripts.paths import sessions_dir

__all__ = ["JOBS_SUFFIX", "KEEP_DAYS", "prune_job_files"]

KEEP_DAYS = 30
JOBS_SUFFIX = ".jobs"  # `<session id>.jobs` beside the transcript


def prune_job_files(keep_days: int = KEEP_DAYS, now: float | None = None) -> list[Path]:
    """Remove the job folders of sessions untouched for `keep_days` days; those removed."""
    cutoff = (now if now is not None else time.time()) - keep_days * 86_400
    old = [folder for folder in _job_folders() if _last_written(folder) < cutoff and not _app_alive(folder)]
    if not old:
        return []
    held = _open_files()
    if held is None:  # no way to tell a running job's file here: nothing is removed
        return []
    removed = []
    for folder in old:
        inside = os.path.realpath(folder) + "/"
        if any(path.startswith(inside) for path in held):
            continue  # a job still runs there
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():  # a file we may not remove keeps its folder: not said as removed
            removed.append(folder)
    return removed


def _job_folders() -> list[Path]:
    """Every session's job folder (real folders only: a link is never followed out)."""
    found: list[Path] = []
    for parent, pattern in ((sessions_dir(), f"*{JOBS_SUFFIX}"), (data_dir() / "jobs", "*")):
        try:
            found += [path for path in parent.glob(pattern) if path.is_dir() and not path.is_symlink()]
        except OSError:
            continue
    return found


def _last_written(folder: Path) -> float:
    """When the session last wrote: its job files, the folder, and its transcript beside it."""
    times = [0.0]
    try:
        paths = [folder, *folder.iterdir()]
    except OSError:  # gone meanwhile, or unreadable: its own time is all there is
        paths = [folder]
    if folder.name.endswith(JOBS_SUFFIX):
        stem = folder.name.removesuffix(JOBS_SUFFIX)
        paths += [path for path in folder.parent.glob(f"{stem}.*") if path != folder]
    for path in paths:
        try:
            times.append(path.lstat().st_mtime)
        except OSError:
            continue
    return max(times)


def _app_alive(folder: Path) -> bool:
    """Whether the private folder `jobs/<pid>-<random>` is that of an app still running."""
    pid = folder.name.split("-", 1)[0]
    return folder.parent.name == "jobs" and pid.isdigit() and process_alive(int(pid))


def _open_files() -> set[str] | None:
    """The files any process we may look at holds open (/proc/PID/fd), as real paths; None
    where there is no /proc to ask."""
    held: set[str] = set()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
    return held
