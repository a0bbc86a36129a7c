"""Background jobs' ends as the person is told of them: one notice for the jobs that end
together, not one each.

Twenty jobs started by one reply end within a second of each other; a toast (and a desktop
notification while the terminal is away) each would be twenty widgets mounted and laid out on
the event loop at once, while the person types, and a stack no one reads. `JobEnds` gathers the
ends of a moment (`GATHER_S` from the first) and words them as one line (`ended_words`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from cmdop_tui.support.text import inert_line

if TYPE_CHECKING:  # types only: the app draws before the session's modules are imported
    from cmdop_tui.tools.jobs import JobInfo

__all__ = ["GATHER_S", "LISTED", "JobEnds", "ended_words"]

GATHER_S = 0.5  # ends this close to the first one of a moment are told with it
LISTED = 3  # up to this many ends are named one by one; more are counted by outcome


def ended_words(ended: list[JobInfo]) -> str:
    """One line for the jobs in `ended` (at least one), as the person reads it."""
    if len(ended) == 1:
        job = ended[0]
        return f"Background job {job.id} on {inert_line(job.machine)} ended: {job.outcome()}"
    if len(ended) <= LISTED:
        each = "; ".join(f"{job.id} on {inert_line(job.machine)}: {job.outcome()}" for job in ended)
        return f"{len(ended)} background jobs ended: {each}"
    counts = Counter("failed" if job.state == "failed" else job.outcome() for job in ended)
    said = ", ".join(f"{count} {outcome}" for outcome, count in counts.most_common())
    failed = [job.id for job in ended if job.state == "failed"]
    named = f" ({', '.join(failed[:LISTED])}{', ...' if len(failed) > LISTED else ''} failed)" if failed else ""
    return f"{len(ended)} background jobs ended: {said}{named}"


class JobEnds:
    """The ends of one moment, gathered: `add` each (True for the first of a moment: the caller
    then calls `flush` GATHER_S later), and `flush` tells `say` them all in one line, with
    whether any failed."""

    def __init__(self, say: Callable[[str, bool], None]) -> None:
        self.say = say
        self._pending: list[JobInfo] = []

    def add(self, job: JobInfo) -> bool:
        self._pending.append(job)
        return len(self._pending) == 1

    def flush(self) -> None:
        ended, self._pending = self._pending, []
        if ended:
            self.say(ended_words(ended), any(job.state == "failed" for job in ended))
