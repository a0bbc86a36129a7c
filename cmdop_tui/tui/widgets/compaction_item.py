"""A compaction in the chat: one line while it runs, then what it saved, folding out to the summary.

The summary is the model's text: it is shown as Markdown, made inert (no escape sequence reaches
the terminal) and masked, like a reply. It is rendered only when first unfolded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.events import Click
from textual.widgets import Static

from cmdop_tui.support.figures import duration
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
from cmdop_tui.tui.widgets.status_line import compact_count

if TYPE_CHECKING:  # types only: the loop's events load with the session, after the first paint
    from cmdop_tui.agent import events as ev

CompactionState = Literal["running", "done", "failed", "stopped"]
STOPPED = "Compaction stopped; the conversation is as it was."


def rough_count(tokens: int) -> str:
    """`152k` for a figure that is an estimate anyway."""
    return f"{tokens / 1000:.0f}k" if tokens >= 1000 else str(tokens)


def compacted_line(event: ev.Compacted) -> str:
    """`Compacted: 152.3k → 21.0k tokens · 143 messages summarised · 2.1 s`."""
    messages = "1 message" if event.messages == 1 else f"{event.messages:,} messages"
    return (
        f"Compacted: {compact_count(event.tokens_before)} → {compact_count(event.tokens_after)} tokens"
        f" · {messages} summarised · {duration(event.duration_s)}"
    )


def failed_line(message: str) -> str:
    message = inert_line(mask(message)).strip() or "no reason given"
    if message.lower().startswith(("compaction failed", "not compacted")):
        return message[0].upper() + message[1:]
    return f"Compaction failed: {message}"


class CompactionItem(Vertical, can_focus=True):
    """Starts running (`CompactionItem.started(event)`); `done`, `failed` or `stopped` end it.

    Once done, Enter (when focused) or a click folds the summary out and back.
    """

    DEFAULT_CSS = """
    CompactionItem {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $accent 60%;

        &:focus {
            background-tint: $foreground 5%;
        }
        & > .compaction-line {
            color: $text-muted;
        }
        &.-done > .compaction-line {
            color: $text;
        }
        &.-failed {
            border-left: thick $warning;
        }
        &.-failed > .compaction-line, &.-stopped > .compaction-line {
            color: $warning;
        }
        & > .compaction-summary {
            margin: 1 0 0 2;
        }
    }
    """

    BINDINGS = [Binding("enter", "fold", "Summary", tooltip="on a compaction: show or hide its summary")]

    def __init__(self, line: str, state: CompactionState = "running", summary: str = "") -> None:
        super().__init__(classes=f"compaction -{state}")
        self.state: CompactionState = state
        self.headline = line
        self.summary = summary
        self.expanded = False
        self._line = Static(classes="compaction-line")
        self._body: AssistantReply | None = None

    @classmethod
    def started(cls, event: ev.CompactionStarted) -> CompactionItem:
        return cls(f"Compacting the conversation… ({rough_count(event.tokens_before)} tokens)")

    @classmethod
    def resumed(cls, summary: str) -> CompactionItem:
        """A resumed conversation that starts with a summary: the summary, folded."""
        return cls("Compacted: the earlier conversation was summarised", "done", summary)

    def compose(self) -> ComposeResult:
        yield self._line

    def on_mount(self) -> None:
        self._show()

    # --- state ---------------------------------------------------------------------------------

    def done(self, event: ev.Compacted) -> None:
        self.summary = event.summary
        self._set("done", compacted_line(event))

    def failed(self, message: str) -> None:
        self._set("failed", failed_line(message))

    def stopped(self, event: ev.Cancelled) -> None:
        if event.reason == "ui":
            self._set("stopped", STOPPED)
        else:
            self._set("stopped", f"Compaction stopped ({event.message}); the conversation is as it was.")

    @property
    def running(self) -> bool:
        return self.state == "running"

    def _set(self, state: CompactionState, line: str) -> None:
        self.remove_class(f"-{self.state}")
        self.state, self.headline = state, line
        self.add_class(f"-{state}")
        self._show()
        self.refresh_bindings()

    # --- folding -------------------------------------------------------------------------------

    @property
    def expandable(self) -> bool:
        return self.state == "done" and bool(self.summary)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.expandable if action == "fold" else True

    async def action_fold(self) -> None:
        if not self.expandable:
            return
        self.expanded = not self.expanded
        if self.expanded and self._body is None:
            self._body = AssistantReply(self.summary)
            self._body.add_class("compaction-summary")
            await self.mount(self._body)
            self._body.finish()
        if self._body is not None:
            self._body.display = self.expanded
        self._show()

    async def on_click(self, event: Click) -> None:
        """A click on the line folds (one on the summary is left to text selection)."""
        if self._body is None or event.widget is not self._body:
            event.stop()
            await self.action_fold()

    @property
    def summary_shown(self) -> str:
        """The summary as it is shown now ("" while folded)."""
        return self._body.source if self._body is not None and self.expanded else ""

    def _show(self) -> None:
        glyph = {"running": "⟳", "done": "✓", "failed": "⚠", "stopped": "■"}[self.state]
        if self.expandable:
            glyph = "▾" if self.expanded else "▸"
        self._line.update(Content.assemble((f"{glyph} ", "bold"), inert_line(self.headline)))
