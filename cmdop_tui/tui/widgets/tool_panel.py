"""The tool-activity panel: every tool call of the session, newest last.

Arrow keys move between calls; the highlighted call's output tail (the diff of a write or an
edit, then its result) shows below the table; Enter opens the whole output. The table
(widgets/tool_table.py) comes with the first call: until then the panel says there is none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static

from cmdop_tui.support.folding import fit_words
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.vocabulary.messages import Agent, ToolOutputCopyRequested, ToolOutputRequested
from cmdop_tui.tui.widgets.side_panel import SidePanel

if TYPE_CHECKING:  # loaded with the first tool call
    from textual.widgets import DataTable

    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
    from cmdop_tui.tui.widgets.tool_table import ToolTable

PREVIEW_LINES = 6
NO_CALLS = "No tool calls yet."


class ToolPanel(SidePanel):
    DEFAULT_CSS = """
    ToolPanel {
        height: 1fr;

        #tool-empty {
            height: 1fr;
            color: $text-muted;
        }

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

    # F4 here copies the highlighted call's output, in place of the app's F4 (the last reply).
    BINDINGS = [Binding("f4", "copy_output", "Copy output", tooltip="on a tool call: copy its output")]

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
        self._table: ToolTable | None = None  # made with the first call

    def compose(self) -> ComposeResult:
        yield Static(NO_CALLS, id="tool-empty", markup=False)
        yield Static("", id="tool-preview", markup=False)

    @property
    def table(self) -> ToolTable:
        """The table of calls, made in place of the panel's "no calls" when first asked for."""
        if self._table is None:
            from cmdop_tui.tui.widgets.tool_table import ToolTable  # with the first call

            self._table = ToolTable()
            self.query_one("#tool-empty").remove()
            self.mount(self._table, before="#tool-preview")
        return self._table

    def _cells(self, record: ToolRecord) -> tuple[Text | str, ...]:
        return self._mark(record), record.name, record.machine, record.elapsed, self._args_cell(record)

    def _mark(self, record: ToolRecord) -> Text:
        """The glyph, and how a call that did not end ok ended (`✗ exit 1`, `⊘ denied`): a rich
        Text in the theme's colour, which the table measures (a Content cell counts as 1 column,
        and the word would be cut)."""
        theme = self.app.current_theme
        colour = {"running": theme.warning, "ok": theme.success, "error": theme.error}[record.status]
        word = record.outcome_word if record.status == "error" else ""  # ok says nothing more
        return Text(f"{record.glyph} {word}".rstrip(), style=colour or "")

    def _args_cell(self, record: ToolRecord) -> str:
        """The arguments in the room the other columns leave, cut after a whole word: the panel
        cuts nothing itself (its edge would show `system` for `systemctl`)."""
        table = self.table
        if not table.size.width:  # not laid out yet: fitted on the first resize
            return record.summary
        others = sum(
            column.get_render_width(table) for key, column in table.columns.items() if key != table.args_column
        )
        return fit_words(record.summary, table.scrollable_content_region.width - others - 2 * table.cell_padding)

    def on_tool_table_resized(self) -> None:  # the panel's own size, or the table's first
        self.call_after_refresh(self._fit_args, list(self.records.values()))

    def _fit_args(self, records: list[ToolRecord]) -> None:
        for record in records:
            if record.call_id in self.records:
                self.table.update_cell(
                    record.call_id, self.table.args_column, self._args_cell(record), update_width=True
                )

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

    def on_agent_hook_ran(self, message: Agent.HookRan) -> None:
        """A hook's run: a row of its own (no output to open); a PreToolUse row comes just before its call's."""
        hook = message.event
        theme = self.app.current_theme
        colour = theme.error if "blocked" in hook.decision else theme.warning if "failed" in hook.decision else None
        said = f"{hook.decision}: {hook.reason}" if hook.reason else hook.decision
        cells = (Text("⚑", style=colour or "dim"), f"hook {hook.event}", hook.machine or "", f"{hook.duration_s:.2f}s")
        self.table.add_row(*cells, inert_line(mask(f"{said} · {hook.command}")), key=f"hook-{self.table.row_count}")

    def _update(self, record: ToolRecord) -> None:
        if record.call_id not in self.records:
            return
        for column, value in zip(self.table.columns, self._cells(record), strict=True):
            # A column grows to what it holds: a time or a machine name is never cut (`11.7` for `11.7 s`).
            self.table.update_cell(record.call_id, column, value, update_width=True)
        self.call_after_refresh(self._fit_args, [record])  # in the room the grown columns left
        self._show_preview()

    def highlighted(self) -> ToolRecord | None:
        table = self._table
        if table is None or table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return self.records.get(str(row_key.value))

    def _show_preview(self) -> None:
        record = self.highlighted()
        preview = self.query_one("#tool-preview", Static)
        if record is None:
            preview.update("")
        elif record.outcome is not None and not record.outcome.ok and not record.hosts:  # the reason whole
            said = Content.styled(record.outcome.described(), "$text-error")
            tail = record.preview(PREVIEW_LINES - 2) if record.outcome.kind.ran else ""  # a failure's output
            preview.update(Content("\n").join([said, Content(tail)]) if tail else said)
        elif record.applied_diff:
            from cmdop_tui.tui.vocabulary.tool_records import diff_content  # loaded by the record shown

            tail = record.preview(1)  # the result's last line, under the diff
            parts = [diff_content(record.applied_diff, lines=PREVIEW_LINES - (1 if tail else 0), headers=False)]
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
        if self._table is not None:
            self._table.clear()
        self._show_preview()
