"""A tool call in the chat: what runs, where, its state, and the tail of its output."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from cmdop_tui.tui.vocabulary.messages import ToolOutputCopyRequested, ToolOutputRequested
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord

PREVIEW_LINES = 4
STATUS_STYLE = {"running": "$warning", "ok": "$success", "error": "$error"}


class ToolCard(Widget, can_focus=True):
    """Renders from its ToolRecord; `refresh()` after the record changes. Enter shows all output."""

    DEFAULT_CSS = """
    ToolCard {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $secondary;
    }
    """

    BINDINGS = [("enter", "show_output", "Output"), ("c", "copy_output", "Copy")]

    def __init__(self, record: ToolRecord) -> None:
        super().__init__(classes="tool-card")
        self.record = record

    def action_show_output(self) -> None:
        self.post_message(ToolOutputRequested(self.record))

    def action_copy_output(self) -> None:
        self.post_message(ToolOutputCopyRequested(self.record))

    def render(self) -> Content:
        record = self.record
        lead = Content.assemble(
            (f"{record.glyph} ", STATUS_STYLE[record.status]),
            (record.name, "bold"),
            (f" @{record.machine} ", "$text-muted"),
        )
        tail = Content.styled(f"  {record.status} {record.elapsed}".rstrip(), "$text-muted")
        room = max(8, self.size.width - lead.cell_length - tail.cell_length)
        summary = record.summary
        if len(summary) > room:
            summary = summary[: room - 1] + "…"
        header = Content.assemble(lead, summary, tail)
        preview = record.preview(PREVIEW_LINES, width=max(8, self.size.width))
        if not preview:
            return header
        return Content("\n").join([header, Content.styled(preview, "$text-muted")])
