"""A prompt the user sent, shown in the chat (steering marked as such: it went to a running turn)."""

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

        &.-steering {
            border-left: thick $accent;
            background: $accent 10%;
        }
    }
    """

    def __init__(self, text: str, *, steering: bool = False) -> None:
        content = Content(mask(strip_terminal_sequences(text)))
        if steering:
            content = Content.assemble(("↪ steering  ", "bold"), content)
        super().__init__(content, classes="user-message -steering" if steering else "user-message")
