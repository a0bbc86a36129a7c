"""/jobs: the session's background jobs (tools/jobs.py) per machine, with state, runtime and
last line, kept current; Enter follows one live (`JobFollowScreen`), `k` kills one, Esc closes.

What a job printed is the command's output, already made inert where it was read; each line
shown is made inert again (a row is one line), and the followed view holds a bounded tail of
the job's output file, read from where it left off.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, TextArea
from textual.widgets.option_list import Option

from cmdop_tui.support.text import inert_line
from cmdop_tui.tools.jobs import clean

if TYPE_CHECKING:  # types only: the TUI draws before the session's parts are imported
    from cmdop_tui.tools.jobs import JobInfo, JobTable

REFRESH_EVERY_S = 0.5
FOLLOW_EVERY_S = 0.25
FOLLOW_KEEP_CHARS = 200_000  # of a followed job's output, the tail on screen
FOLLOW_READ_BYTES = 1_000_000  # read at most this much a tick; past it, skip to the tail
COMMAND_CHARS = 40
STATE_STYLE = {"running": "$accent", "exited": "$success", "failed": "$error", "killed": "$warning"}


def job_row(info: JobInfo, now: float) -> Content:
    """One job as a row: id, outcome, runtime, command, last line."""
    command = inert_line(info.command)
    command = command if len(command) <= COMMAND_CHARS else command[: COMMAND_CHARS - 1] + "…"
    style = STATE_STYLE.get(info.state, "")
    if info.state == "exited" and info.exit_code != 0:
        style = "$error"
    return Content.assemble(
        (f"  {info.id:<8}", "bold"),
        (f"{info.outcome()[:24]:<25}", style),
        (f"{info.runtime_s(now):>8.1f} s  ", "$text-muted"),
        (f"{command}  ", ""),
        (inert_line(info.last_line), "$text-muted"),
    )


def grouped_options(jobs: list[JobInfo], now: float) -> list[Option]:
    """A heading per machine (in the order their first job started), its jobs under it."""
    machines: dict[str, list[JobInfo]] = {}
    for info in jobs:
        machines.setdefault(info.machine, []).append(info)
    options: list[Option] = []
    for machine, infos in machines.items():
        running = sum(info.running for info in infos)
        heading = Content.assemble(
            (inert_line(machine), "bold"), (f"  {running} of {len(infos)} running", "$text-muted")
        )
        options.append(Option(heading, disabled=True))
        options += [Option(job_row(info, now), id=info.id) for info in infos]
    return options


class JobsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    JobsScreen {
        align: center middle;

        #jobs-dialog {
            width: 96%;
            height: auto;
            max-height: 85%;
            padding: 1 2;
            border: thick $primary;
            background: $surface;
        }

        #jobs-list {
            height: auto;
            max-height: 30;
            margin-top: 1;
        }
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Close"), Binding("k", "kill", "Kill the job")]

    def __init__(self, jobs: JobTable) -> None:
        super().__init__()
        self.jobs = jobs

    def compose(self) -> ComposeResult:
        with Vertical(id="jobs-dialog"):
            yield Label(Content.styled("Background jobs: Enter follows one, k kills it, Esc closes", "bold"))
            yield Label("No background jobs in this session.", id="jobs-none")
            yield OptionList(id="jobs-list")

    def on_mount(self) -> None:
        self.refresh_jobs()
        self.set_interval(REFRESH_EVERY_S, self.refresh_jobs)
        self.query_one(OptionList).focus()

    def refresh_jobs(self) -> None:
        """The list as the table is now, the highlighted job kept highlighted."""
        listing = self.query_one(OptionList)
        kept = self.highlighted_job()
        jobs = self.jobs.jobs()
        listing.clear_options()
        listing.add_options(grouped_options(jobs, time.monotonic()))
        self.query_one("#jobs-none").display = not jobs
        listing.display = bool(jobs)
        ids = [option.id for option in listing.options]
        if kept in ids:
            listing.highlighted = ids.index(kept)
        elif jobs:
            listing.highlighted = next(index for index, option_id in enumerate(ids) if option_id is not None)

    def highlighted_job(self) -> str | None:
        option = self.query_one(OptionList).highlighted_option
        return option.id if option is not None else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.app.push_screen(JobFollowScreen(self.jobs, event.option.id))

    def action_kill(self) -> None:
        job_id = self.highlighted_job()
        info = self.jobs.info(job_id) if job_id else None
        if info is not None and info.running:
            self.run_worker(self.jobs.kill(info.id), group="job-kill", exit_on_error=False)
            self.notify(f"Killing {info.id} on {inert_line(info.machine)}")


class JobFollowScreen(ModalScreen[None]):
    """One job's output as it comes: a bounded tail of its file, read on from where it left off."""

    DEFAULT_CSS = """
    JobFollowScreen {
        align: center middle;

        #job-dialog {
            width: 96%;
            height: 90%;
            padding: 0 1;
            border: thick $primary;
            background: $surface;
        }

        #job-text {
            height: 1fr;
        }
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Back"), Binding("k", "kill", "Kill the job")]

    def __init__(self, jobs: JobTable, job_id: str) -> None:
        super().__init__()
        self.jobs = jobs
        self.job_id = job_id
        self.read_to = 0
        self.tail = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="job-dialog"):
            yield Label("", id="job-head")
            yield TextArea("", read_only=True, soft_wrap=False, id="job-text")
            yield Label(Content.styled("k kills it · Esc goes back", "$text-muted"))

    def on_mount(self) -> None:
        self.follow()
        self.set_interval(FOLLOW_EVERY_S, self.follow)
        self.query_one(TextArea).focus()

    def follow(self) -> None:
        """Read what the job printed since the last tick (at most a bounded piece) and show it."""
        info = self.jobs.info(self.job_id)
        if info is None:
            return
        head = Content.assemble(
            (f"{info.id} @{inert_line(info.machine)}  ", "bold"),
            (f"{info.outcome()}  {info.runtime_s():.1f} s  {info.size:,} bytes  ", "$text-muted"),
            inert_line(info.command),
        )
        self.query_one("#job-head", Label).update(head)
        fresh = self._read(Path(info.output_file), info.size)
        if fresh:
            self.tail = (self.tail + fresh)[-FOLLOW_KEEP_CHARS:]
            text = self.query_one(TextArea)
            text.load_text(self.tail)
            text.move_cursor(text.document.end)
            text.scroll_cursor_visible()

    def _read(self, path: Path, size: int) -> str:
        if size <= self.read_to:
            return ""
        start = max(self.read_to, size - FOLLOW_READ_BYTES)
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            return ""
        self.read_to = start + len(data)
        return clean(data)  # the file holds what the command printed, raw

    def action_kill(self) -> None:
        info = self.jobs.info(self.job_id)
        if info is not None and info.running:
            self.run_worker(self.jobs.kill(info.id), group="job-kill", exit_on_error=False)
