"""The whole output of one tool call, paged from disk, searchable, copied whole; closed with Esc.

A call's output is kept whole beside the transcript as it streams (`transcripts/outputs.py`);
this view reads only the lines on screen from that file (`widgets/output_pager.py`), so a 100 MB
output opens at once. Without such a file (a session with no transcript, a call that streamed
nothing) it shows what the app holds in memory, and says so when that is only a part.

Home/End (Ctrl+Home/Ctrl+End, g/G) go to the first and last line; `/` opens a search line, Enter
finds, `n`/`N` go to the next and previous match; `c` copies the whole output (its file's path
when it is too big for the clipboard), `y` the line of the current match.

A call over many machines (run_on_machines, ask_machines) lists its hosts above the output, as
the fleet view does; Enter on one shows that host's own stream. While the call runs, both
follow it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from cmdop_tui.support.paged_text import PagedText, Search
from cmdop_tui.tools.base import size_text
from cmdop_tui.transcripts import KeptOutputs
from cmdop_tui.tui.vocabulary.copying import copy_masked
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, fleet_rows, fleet_summary
from cmdop_tui.tui.widgets.output_pager import Found, OutputPager

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session

ALL = "\0all"  # the option that shows the call's whole output, not one host's
FOLLOW_EVERY_S = 0.5
COPY_LIMIT = 512 * 1024  # bytes: past this a copy gives the kept file's path (OSC 52 has limits)
HINT = "/ search · n/N next/prev · c copy all · y copy line · End · Esc close"


def session_outputs(session: Session | None, previewed: KeptOutputs | None = None) -> KeptOutputs | None:
    """The outputs `session` keeps on disk (None: none); before it opens, those of the resumed
    session drawn from its transcript (`previewed`)."""
    return session.recorder.outputs if session is not None else previewed


def output_source(record: ToolRecord, kept: KeptOutputs | None, host: str | None = None) -> Path | bytes:
    """A call's whole output (one host's own stream of it): its kept file, else what the app holds."""
    if kept is not None and (path := kept.existing(record.call_id, host)) is not None:
        return path
    return (record.shown_output if host is None else record.host_output(host)).encode()


def copy_whole(app: App[Any], source: Path | bytes, what: str) -> str:
    """`source` to the clipboard, secrets masked, or the path of its file when it is too big for
    OSC 52 (past COPY_LIMIT); what was done, in words ('' for nothing to copy)."""
    data = source
    if isinstance(source, Path):
        try:
            size = source.stat().st_size
            if size > COPY_LIMIT:
                app.copy_to_clipboard(str(source))
                said = f"Too big for the clipboard ({size_text(size)}): it is in {source} (path copied)"
                app.notify(said)
                return said
            data = source.read_bytes()
        except OSError as exc:
            app.notify(f"Cannot copy {what}: {exc.strerror or exc}", severity="error")
            return ""
    assert isinstance(data, bytes)
    copy_masked(app, data.decode("utf-8", errors="replace"), what)
    return f"Copied the whole output ({size_text(len(data))})." if data else ""


class OutputScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    OutputScreen {
        align: center middle;

        #output-dialog {
            width: 96%;
            height: 90%;
            padding: 0 1;
            border: thick $primary;
            background: $surface;
        }

        #output-reason {
            width: 1fr;
            color: $text-error;
        }

        #output-text {
            height: 1fr;
        }

        #output-hosts {
            height: auto;
            max-height: 8;
            border: none;
            margin-bottom: 1;
        }

        #output-search {
            display: none;
        }

        #output-note {
            color: $text-warning;
        }
    }
    """

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("slash", "open_search", "Search"),
        Binding("n", "find('forward')", "Next", show=False),
        Binding("N", "find('backward')", "Previous", show=False),
        Binding("c", "copy", "Copy all"),
        Binding("y", "copy_match", "Copy line", show=False),
    ]

    def __init__(self, record: ToolRecord, kept: KeptOutputs | None = None) -> None:
        super().__init__()
        self.record = record
        self.kept = kept  # the session's outputs on disk; None: it keeps none (no transcript)
        self.shown_host = ALL
        self._ticker: Timer | None = None

    @classmethod
    def of_session(
        cls, record: ToolRecord, session: Session | None, previewed: KeptOutputs | None = None
    ) -> OutputScreen:
        """The view of `record`, reading the outputs `session` keeps (`previewed`: see session_outputs)."""
        return cls(record, session_outputs(session, previewed))

    def compose(self) -> ComposeResult:
        with Vertical(id="output-dialog"):
            yield Label(self._title(), id="output-title")
            yield Label(self._reason(), id="output-reason")
            hosts = OptionList(*self._host_options(), id="output-hosts")
            hosts.display = bool(self.record.hosts)  # shown once the call names hosts
            yield hosts
            yield OutputPager(PagedText(self._source()), id="output-text")
            yield Label(Content.styled(self._note(), "$text-warning"), id="output-note")
            yield Input(placeholder="Search: Enter finds, Esc closes", id="output-search")
            yield Label(Content.styled(self._hint(), "$text-muted"), id="output-status")

    def _title(self) -> Content:
        """The call, where it ran, how it ended (by kind) and how long it took."""
        record = self.record
        return Content.assemble(
            (f"{record.glyph} {record.name}", "bold"),
            f" @{record.machine}  {record.summary}  ",
            (record.outcome_label, "$text-success" if record.status == "ok" else "$text-error"),
            f" {record.elapsed}",
        )

    def _show_reason(self) -> None:
        """The reason's line, shown only when there is a reason (an ok call has none)."""
        reason = self._reason()
        label = self.query_one("#output-reason", Label)
        label.update(reason)
        label.display = bool(reason.plain)

    def _reason(self) -> Content:
        """Why it ended so, whole (it wraps); empty for a call that is running or ok."""
        outcome = self.record.outcome
        return Content("" if outcome is None or outcome.ok else outcome.described())

    def on_mount(self) -> None:
        self.query_one("#output-note").display = bool(self._note())
        self._show_reason()
        (self.query_one(OptionList) if self.record.hosts else self.query_one(OutputPager)).focus()
        if self.record.status == "running":
            self._ticker = self.set_interval(FOLLOW_EVERY_S, self._follow)

    def _hint(self) -> str:
        return f"Enter shows a host's own output · {HINT}" if self.record.hosts else HINT

    # --- what is shown -------------------------------------------------------------------------

    def _host(self) -> str | None:
        return None if self.shown_host == ALL else self.shown_host

    def _held(self) -> str:
        """What the app holds in memory of the shown output (secrets are masked when drawn)."""
        host = self._host()
        return self.record.shown_output if host is None else self.record.host_output(host)

    def _source(self) -> Path | bytes:
        return output_source(self.record, self.kept, self._host())

    def _note(self) -> str:
        """Why only a part is shown, when it is."""
        if self._host() is not None or self.record.hosts or self.record.streamed <= len(self._held()):
            return ""
        if self.kept is not None and self.kept.existing(self.record.call_id) is not None:
            return ""
        if self.kept is None:
            return "Only what the app holds is shown: this session keeps no transcript, the rest is not kept."
        return "Only what the app holds is shown: the rest could not be kept on disk."

    def _show_source(self, *, from_top: bool) -> None:
        pager = self.query_one(OutputPager)
        source = self._source()
        if from_top:
            pager.show(PagedText(source))
        elif source == pager.paged.source:
            pager.follow()  # the same file, grown (or the same text held): only what was added is read
        else:
            pager.swap(PagedText(source))
        note = self._note()
        self.query_one("#output-note", Label).update(Content.styled(note, "$text-warning"))
        self.query_one("#output-note").display = bool(note)

    # --- hosts and following -------------------------------------------------------------------

    def _host_options(self) -> list[Option]:
        """The hosts as the fleet view lists them (their lines are text, never markup)."""
        hosts = self.record.hosts
        if not hosts:
            return []
        rows = [Option(Content(line), id=name) for name, line in fleet_rows(hosts)]
        return [Option(Content(f"All output · {fleet_summary(hosts)}"), id=ALL), *rows]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.shown_host = event.option.id or ALL
        self._show_source(from_top=True)

    def _follow(self) -> None:
        """A running call: the hosts' lines and the shown output, as they are now. A reader at
        the end stays at the end; one who scrolled back stays where they were."""
        if self.record.hosts:
            self._update_hosts()
        self._show_source(from_top=False)
        self.query_one("#output-title", Label).update(self._title())
        if self.record.status != "running" and self._ticker is not None:
            self._ticker.stop()
            self.query_one("#output-title", Label).update(self._title())
            self._show_reason()

    def _update_hosts(self) -> None:
        hosts = self.query_one(OptionList)
        hosts.display = True
        for option in self._host_options():
            try:
                hosts.replace_option_prompt(option.id or ALL, option.prompt)
            except OptionDoesNotExist:
                hosts.add_option(option)  # a host heard of only now

    # --- search --------------------------------------------------------------------------------

    def action_open_search(self) -> None:
        search = self.query_one("#output-search", Input)
        search.display = True
        search.focus()

    def action_close(self) -> None:
        """Esc: closes the search line when it is open, else the view."""
        search = self.query_one("#output-search", Input)
        if search.display:
            search.display = False
            self.query_one(OutputPager).focus()
            return
        self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.display = False
        pager = self.query_one(OutputPager)
        pager.focus()
        if event.value:
            self._say(pager.find(Search(event.value)))

    def action_find(self, direction: str) -> None:
        pager = self.query_one(OutputPager)
        if pager.search is None:
            self._status("No search yet: / opens one.")
            return
        self._say(pager.find(direction="backward" if direction == "backward" else "forward"))

    def _say(self, found: Found) -> None:
        needle = self.query_one(OutputPager).search
        what = needle.needle if needle else ""
        if found.match is None:
            self._status(f"No match for {what!r}.")
            return
        went_round = ""
        if found.wrapped:
            went_round = " · went round to the top" if found.ordinal == 1 else " · went round to the bottom"
        self._status(f"{found.ordinal:,}/{found.total:,} {what!r} on line {found.match.line + 1:,}{went_round}")

    def _status(self, text: str) -> None:
        self.query_one("#output-status", Label).update(Content(text))

    # --- copy ----------------------------------------------------------------------------------

    def action_copy(self) -> None:
        """The whole output to the clipboard; its file's path when it is too big for one."""
        said = copy_whole(self.app, self.query_one(OutputPager).paged.source, f"the output of {self.record.name}")
        if said:
            self._status(said)

    def action_copy_match(self) -> None:
        """The line of the current match to the clipboard."""
        pager = self.query_one(OutputPager)
        match = pager.found.match if pager.found else None
        if match is None:
            self._status("No match to copy: / searches.")
            return
        copy_masked(self.app, pager.paged.line_bytes(match.line).decode("utf-8", errors="replace"), "the line")
        self._status(f"Copied line {match.line + 1:,}.")
