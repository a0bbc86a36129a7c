"""A one-line note in the chat: stopped, an error, a retry, help output."""

from __future__ import annotations

from typing import Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual.content import Content
from textual.widgets import Static

from cmdop_tui.support.folding import fold
from cmdop_tui.support.text import strip_terminal_sequences

NoticeKind = Literal["info", "warning", "error", "stopped"]


class Notice(Static):
    DEFAULT_CSS = """
    Notice {
        margin: 1 0 0 0;
        padding: 0 1;

        &.-info {
            color: $text-muted;
        }
        &.-warning {
            color: $warning;
        }
        &.-error {
            color: $error;
            border-left: thick $error;
        }
        &.-stopped {
            color: $warning;
            text-style: bold;
        }
    }
    """

    def __init__(self, text: str, kind: NoticeKind = "info") -> None:
        super().__init__(Content(strip_terminal_sequences(text)), classes=f"notice -{kind}")
        self.kind = kind


class FoldedText:
    """Plain lines drawn folded to the width they get (support/folding.py): words whole, a
    table row's continuation under its second column. `str()` is the text as written."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.text.splitlines():
            for row in fold(line, options.max_width):
                yield Text(row, no_wrap=True, overflow="ignore")


class TableNotice(Notice):
    """A notice of aligned rows (/help's commands and keys): on a narrow screen a row's
    description wraps under its own column, not back to the notice's edge."""

    def __init__(self, text: str, kind: NoticeKind = "info") -> None:
        super().__init__(text, kind)
        self.update(FoldedText(strip_terminal_sequences(text)))
