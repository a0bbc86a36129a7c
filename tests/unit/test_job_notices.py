"""Background jobs' ends told as one notice per moment (tui/job_notices.py)."""

from __future__ import annotations

from cmdop_tui.tools.jobs import JobInfo
from cmdop_tui.tui.job_notices import JobEnds, ended_words


def job(number: int, state: str = "exited", code: int | None = 0, machine: str = "local") -> JobInfo:
    return JobInfo(f"job-{number}", machine, "true", state, 0.0, 1.0, exit_code=code)  # type: ignore[arg-type]


def test_one_end_names_the_job_a_few_are_each_named_more_are_counted():
    assert ended_words([job(1)]) == "Background job job-1 on local ended: exit 0"
    assert ended_words([job(1), job(2, code=2, machine="web\x1b[31m1")]) == (
        "2 background jobs ended: job-1 on local: exit 0; job-2 on web1: exit 2"  # made inert
    )
    twenty = [job(n) for n in range(1, 18)] + [job(18, "failed", None), job(19, "killed", None), job(20, code=1)]
    assert ended_words(twenty) == "20 background jobs ended: 17 exit 0, 1 failed, 1 killed, 1 exit 1 (job-18 failed)"


def test_ends_of_a_moment_are_said_once_with_whether_any_failed():
    said: list[tuple[str, bool]] = []
    ends = JobEnds(lambda words, failed: said.append((words, failed)))
    assert ends.add(job(1)) and not ends.add(job(2, "failed", None))  # the first of a moment asks for a flush
    ends.flush()
    ends.flush()  # nothing new: nothing said
    assert said == [("2 background jobs ended: job-1 on local: exit 0; job-2 on local: failed", True)]
    assert ends.add(job(3))  # a new moment
