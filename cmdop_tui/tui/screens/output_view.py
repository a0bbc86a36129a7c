"""The whole output of one tool call, scrollable, selectable, closed with Esc.

A call over many machines (run_on_machines, ask_machines) lists its hosts above the output, as
the fleet view does; Enter on one shows that host's own stream. While the call runs, both
follow it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Label, OptionList, TextArea
from textual.widgets.option_list import Option, OptionDoesNotExist

from cmdop_tui.tui.vocabulary.messages import ToolOutputCopyRequested
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, fleet_rows, fleet_summary

ALL = "\0all"  # the option that shows the call's whole output, not one host's
FOLLOW_EVERY_S = 0.5


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
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Close"), Binding("c", "copy", "Copy all")]

    def action_copy(self) -> None:
        self.post_message(ToolOutputCopyRequested(self.record))

    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record
        self.shown_host = ALL
        self._ticker: Timer | None = None

    def compose(self) -> ComposeResult:
        record = self.record
        with Vertical(id="output-dialog"):
            yield Label(self._title(), id="output-title")
            yield Label(self._reason(), id="output-reason")
            hosts = OptionList(*self._host_options(), id="output-hosts")
            hosts.display = bool(record.hosts)  # shown once the call names hosts
            yield hosts
            yield TextArea(record.shown_output, read_only=True, soft_wrap=False, id="output-text")
            hint = "Enter shows a host's own output · Esc closes" if record.hosts else "Esc closes"
            yield Label(Content.styled(hint, "$text-muted"))

    def _title(self) -> Content:
        """The call, where it ran, how it ended (by kind) and how long it took."""
        record = self.record
        return Content.assemble(
            (f"{record.glyph} {record.name}", "bold"),
            f" @{record.machine}  {record.summary}  ",
            (record.outcome_label, "$text-success" if record.status == "ok" else "$text-error"),
            f" {record.elapsed}",
        )

    def _reason(self) -> Content:
        """Why it ended so, whole (it wraps); empty for a call that is running or ok."""
        outcome = self.record.outcome
        return Content("" if outcome is None or outcome.ok else outcome.described())

    def on_mount(self) -> None:
        (self.query_one(OptionList) if self.record.hosts else self.query_one(TextArea)).focus()
        if self.record.status == "running":
            self._ticker = self.set_interval(FOLLOW_EVERY_S, self._follow)

    def _host_options(self) -> list[Option]:
        """The hosts as the fleet view lists them (their lines are text, never markup)."""
        hosts = self.record.hosts
        if not hosts:
            return []
        rows = [Option(Content(line), id=name) for name, line in fleet_rows(hosts)]
        return [Option(Content(f"All output · {fleet_summary(hosts)}"), id=ALL), *rows]

    def _text(self) -> str:
        return self.record.shown_output if self.shown_host == ALL else self.record.host_output(self.shown_host)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.shown_host = event.option.id or ALL
        self.query_one(TextArea).load_text(self._text())

    def _follow(self) -> None:
        """A running call: the hosts' lines and the shown output, as they are now. A reader at
        the end stays at the end; one who scrolled back stays where they were."""
        if self.record.hosts:
            self._update_hosts()
        area = self.query_one(TextArea)
        text = self._text()
        if text != area.text:
            following = area.scroll_y >= area.max_scroll_y
            scrolled, selection = area.scroll_y, area.selection
            area.load_text(text)
            if following:
                area.scroll_end(animate=False, immediate=True)
            else:
                area.selection = selection
                area.scroll_to(y=scrolled, animate=False, immediate=True)
        if self.record.status != "running" and self._ticker is not None:
            self._ticker.stop()
            self.query_one("#output-title", Label).update(self._title())
            self.query_one("#output-reason", Label).update(self._reason())

    def _update_hosts(self) -> None:
        hosts = self.query_one(OptionList)
        hosts.display = True
        for option in self._host_options():
            try:
                hosts.replace_option_prompt(option.id or ALL, option.prompt)
            except OptionDoesNotExist:
                hosts.add_option(option)  # a host heard of only now
