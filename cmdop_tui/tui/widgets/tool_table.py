"""The tool panel's table of calls (widgets/tool_panel.py): Textual's DataTable, with Enter said
for what it does here, and its columns measured before it is first drawn. It is made with the
session's first tool call: until then the panel says there is none, and the app starts without
Textual's DataTable."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

# Text, not str: a str label is read as Rich markup, whose first use imports Rich's emoji table
COLUMNS = tuple(map(Text, ("", "tool", "on", "time", "args")))


class ToolTable(DataTable[str | Text]):
    """The table of calls: Textual's, with Enter said for what it does here (/help, footer)."""

    BINDINGS = [Binding("enter", "select_cursor", "Output", tooltip="the tool panel: the call's whole output")]

    class Resized(Message):
        """The table has a new size: the arguments are fitted to the room it leaves them."""

    def __init__(self) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id="tool-table")
        *_, self.args_column = self.add_columns(*COLUMNS)  # fitted to the room the others leave

    def on_mount(self) -> None:
        """Measure the columns now, before the next frame: DataTable waits for its first idle,
        just after that frame, and lays the screen out again."""
        if self._require_update_dimensions:
            self._require_update_dimensions = False
            self._update_dimensions(self._new_rows)
            self._new_rows.clear()

    def on_resize(self) -> None:
        self.post_message(self.Resized())
