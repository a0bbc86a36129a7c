"""The whole output of one tool call, scrollable, selectable, closed with Esc."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea

from cmdop_tui.tui.vocabulary.messages import ToolOutputCopyRequested
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord


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

        #output-text {
            height: 1fr;
        }
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Close"), Binding("c", "copy", "Copy all")]

    def action_copy(self) -> None:
        self.post_message(ToolOutputCopyRequested(self.record))

    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        record = self.record
        with Vertical(id="output-dialog"):
            yield Label(
                Content.assemble(
                    (f"{record.glyph} {record.name}", "bold"),
                    f" @{record.machine}  {record.summary}  {record.elapsed}",
                )
            )
            yield TextArea(record.shown_output, read_only=True, soft_wrap=False, id="output-text")
            yield Label(Content.styled("Esc closes", "$text-muted"))

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()
