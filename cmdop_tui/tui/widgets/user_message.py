"""A prompt the user sent, shown in the chat."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $primary;
        background: $primary 10%;
    }
    """

    def __init__(self, text: str) -> None:
        super().__init__(Content(mask(strip_terminal_sequences(text))), classes="user-message")
