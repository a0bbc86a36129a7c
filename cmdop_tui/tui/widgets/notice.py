"""A one-line note in the chat: stopped, an error, a retry, help output."""

from __future__ import annotations

from typing import Literal

from textual.content import Content
from textual.widgets import Static

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
