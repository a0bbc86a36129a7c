"""A tool call in the chat: what runs, where, its state, the diff of a write or an edit, and the
tail of its output."""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content
from textual.widget import Widget

from cmdop_tui.tui.vocabulary.messages import ToolOutputCopyRequested, ToolOutputRequested
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, diff_content

PREVIEW_LINES = 4
DIFF_LINES = 12  # of a write's or an edit's diff; Enter shows all of it
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

    BINDINGS = [
        Binding("enter", "show_output", "Output", tooltip="on a tool call: its whole output"),
        Binding("f4", "copy_output", "Copy output", tooltip="on a tool call: copy its output"),
    ]

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
        counts = f"  {record.diff_summary}" if record.diff_summary else ""
        tail = Content.styled(f"{counts}  {record.outcome_label} {record.elapsed}".rstrip(), "$text-muted")
        if record.status == "error":  # a failure stands out
            tail = Content.assemble(
                (f"{counts}  ", "$text-muted"),
                (record.outcome_label, STATUS_STYLE["error"]),
                (f" {record.elapsed}", "$text-muted"),
            )
        room = max(8, self.size.width - lead.cell_length - tail.cell_length)
        summary = record.summary
        if len(summary) > room:
            summary = summary[: room - 1] + "…"
        parts = [Content.assemble(lead, summary, tail)]
        outcome = record.outcome
        if outcome is not None and not outcome.kind.ran:  # why it did not run, whole (it wraps)
            parts.append(Content.styled(outcome.described(), STATUS_STYLE["error"]))
            if record.diff:
                parts.append(
                    Content.styled("The change was not applied (Enter shows the diff it asked for).", "$text-muted")
                )
            return Content("\n").join(parts)
        if record.applied_diff:
            parts.append(
                diff_content(record.applied_diff, lines=DIFF_LINES, width=max(8, self.size.width), headers=False)
            )
        elif record.diff:
            parts.append(Content.styled("The change was not applied (Enter shows the diff).", "$text-muted"))
        preview = record.preview(PREVIEW_LINES, width=max(8, self.size.width))
        if preview:
            parts.append(Content.styled(preview, "$text-muted"))
        return Content("\n").join(parts)
