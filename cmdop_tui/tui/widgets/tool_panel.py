"""The tool-activity panel: every tool call of the session, newest last.

Arrow keys move between calls; the highlighted call's output tail (the diff of a write or an
edit, then its result) shows below the table; Enter opens the whole output.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import DataTable, Static

from cmdop_tui.support.folding import fit_words
from cmdop_tui.tui.vocabulary.messages import Agent, ToolOutputCopyRequested, ToolOutputRequested
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, diff_content
from cmdop_tui.tui.widgets.side_panel import SidePanel

PREVIEW_LINES = 6


class ToolPanel(SidePanel):
    DEFAULT_CSS = """
    ToolPanel {
        height: 1fr;

        #tool-table {
            height: 1fr;
            scrollbar-size-vertical: 1;
            overflow-x: hidden;
        }

        #tool-preview {
            height: auto;
            max-height: 7;
            color: $text-muted;
            border-top: dashed $primary 30%;
        }
    }
    """

    BINDINGS = [("c", "copy_output", "Copy output")]

    def action_copy_output(self) -> None:
        record = self.highlighted()
        if record is not None:
            self.post_message(ToolOutputCopyRequested(record))
        else:
            self.notify("No tool call to copy from yet.", severity="warning")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: dict[str, ToolRecord] = {}
        self.border_title = "Tools"

    def compose(self) -> ComposeResult:
        table: DataTable[str | Content] = DataTable(cursor_type="row", zebra_stripes=False, id="tool-table")
        *_, self._args = table.add_columns("", "tool", "on", "time", "args")
        yield table
        yield Static("", id="tool-preview", markup=False)

    @property
    def table(self) -> DataTable[str | Content]:
        return self.query_one("#tool-table", DataTable)

    def _cells(self, record: ToolRecord) -> tuple[Content | str, ...]:
        style = {"running": "$warning", "ok": "$success", "error": "$error"}[record.status]
        return Content.styled(record.glyph, style), record.name, record.machine, record.elapsed, self._args_cell(record)

    def _args_cell(self, record: ToolRecord) -> str:
        """The arguments in the room the other columns leave, cut after a whole word: the panel
        cuts nothing itself (its edge would show `system` for `systemctl`)."""
        table = self.table
        if not table.size.width:  # not laid out yet: fitted on the first resize
            return record.summary
        others = sum(column.get_render_width(table) for key, column in table.columns.items() if key != self._args)
        return fit_words(record.summary, table.scrollable_content_region.width - others - 2 * table.cell_padding)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_args, list(self.records.values()))

    def _fit_args(self, records: list[ToolRecord]) -> None:
        for record in records:
            if record.call_id in self.records:
                self.table.update_cell(record.call_id, self._args, self._args_cell(record), update_width=True)

    def on_agent_tool_started(self, message: Agent.ToolStarted) -> None:
        record = message.record
        self.records[record.call_id] = record
        self.table.add_row(*self._cells(record), key=record.call_id)
        self.call_after_refresh(self._fit_args, [record])
        self.table.move_cursor(row=self.table.row_count - 1)
        self._show_preview()

    def on_agent_tool_progressed(self, message: Agent.ToolProgressed) -> None:
        self._update(message.record)

    def on_agent_tool_ended(self, message: Agent.ToolEnded) -> None:
        self._update(message.record)

    def on_agent_tool_nested(self, message: Agent.ToolNested) -> None:
        self._update(message.record)

    def _update(self, record: ToolRecord) -> None:
        if record.call_id not in self.records:
            return
        for column, value in zip(self.table.columns, self._cells(record), strict=True):
            # A column grows to what it holds: a time or a machine name is never cut (`11.7` for `11.7 s`).
            self.table.update_cell(record.call_id, column, value, update_width=True)
        self.call_after_refresh(self._fit_args, [record])  # in the room the grown columns left
        self._show_preview()

    def highlighted(self) -> ToolRecord | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return self.records.get(str(row_key.value))

    def _show_preview(self) -> None:
        record = self.highlighted()
        preview = self.query_one("#tool-preview", Static)
        if record is None:
            preview.update("")
        elif record.diff:
            tail = record.preview(1)  # the result's last line, under the diff
            parts = [diff_content(record.diff, lines=PREVIEW_LINES - (1 if tail else 0), headers=False)]
            preview.update(Content("\n").join([*parts, Content(tail)] if tail else parts))
        else:
            preview.update(Content(record.preview(PREVIEW_LINES)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_preview()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        record = self.records.get(str(event.row_key.value))
        if record is not None:
            self.post_message(ToolOutputRequested(record))

    def clear(self) -> None:
        self.records.clear()
        self.table.clear()
        self._show_preview()
