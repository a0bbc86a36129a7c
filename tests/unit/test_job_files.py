"""Job output files of sessions long gone are removed when a session starts; never a running
job's, never those of an app still running (session/job_files.py)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from cmdop_tui.config.settings import data_dir
from cmdop_tui.session.job_files import prune_job_files
from cmdop_tui.transcripts.paths import sessions_dir

DAY = 86_400


def session(name: str, age_days: float) -> Path:
    """A session's transcript and job folder, last written `age_days` ago."""
    sessions = sessions_dir()
    folder = sessions / f"{name}.jobs"
    folder.mkdir(parents=True)
    (folder / "job-1.log").write_text("output\n")
    (sessions / f"{name}.jsonl").write_text("{}\n")
    return aged(folder, age_days)


def aged(folder: Path, age_days: float) -> Path:
    then = time.time() - age_days * DAY
    for path in [*folder.iterdir(), folder, *folder.parent.glob(f"{folder.name.removesuffix('.jobs')}.*")]:
        os.utime(path, (then, then))
    return folder


def test_the_job_files_of_sessions_untouched_for_30_days_go_and_the_others_stay():
    old, recent = session("20250101-old", 40), session("20250301-recent", 3)
    resumed = session("20250102-resumed", 40)
    (sessions_dir() / "20250102-resumed.jsonl").touch()  # its transcript was written today
    assert prune_job_files() == [old]
    assert not old.exists() and recent.exists() and resumed.exists()
    assert (sessions_dir() / "20250101-old.jsonl").exists()  # the transcript is not ours to remove


def test_a_job_still_running_keeps_its_folder_however_old():
    folder = session("20250101-running", 40)
    with open(folder / "job-2.log", "ab") as output:
        job = subprocess.Popen(["sleep", "60"], stdout=output)
    try:
        aged(folder, 40)
        assert prune_job_files() == [] and (folder / "job-2.log").exists()
    finally:
        job.kill()
        job.wait()
    assert prune_job_files() == [folder]


def test_the_private_folder_of_an_app_still_running_stays():
    jobs = data_dir() / "jobs"
    live = aged(_made(jobs / f"{os.getpid()}-abcd1234"), 40)
    gone = aged(_made(jobs / f"{_exited_pid()}-abcd1234"), 40)
    assert prune_job_files() == [gone] and live.exists()


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "job-1.log").write_text("x\n")
    return folder


def _exited_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_job_folder_that_is_a_symlink_is_never_followed(tmp_path):
    """Someone who could write beside the transcripts (not a sandboxed command: the data folder
    is hidden from them) links an old session's job folder to the user's files."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    aged(mine, 40)
    sessions = sessions_dir()
    sessions.mkdir(parents=True)
    (sessions / "20250101-linked.jobs").symlink_to(mine)
    (data_dir() / "jobs").mkdir(parents=True)
    (data_dir() / "jobs" / f"{_exited_pid()}-abcd1234").symlink_to(mine)
    assert prune_job_files() == []
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_a_folder_that_could_not_be_removed_whole_is_not_said_removed():
    import shutil

    import pytest

    stuck = session("20250101-stuck", 40) / "job-1.log"
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode:
        pytest.skip("no immutable files here (chattr needs root on ext4-like filesystems)")
    try:
        assert prune_job_files() == [] and stuck.exists()
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)
