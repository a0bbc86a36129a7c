"""The model's thinking: dimmed and folded away unless the user opens it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences


class ThinkingBlock(Collapsible):
    # Named with :ansi too, so that Collapsible's own rules for ANSI themes do not outrank these.
    DEFAULT_CSS = """
    ThinkingBlock, ThinkingBlock:ansi {
        margin: 1 0 0 0;
        padding: 0;
        border: none;
        background: transparent;
        color: $text-muted;
    }

    ThinkingBlock .thinking-text {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self) -> None:
        self._text = ""
        self._body = Static("", classes="thinking-text")
        super().__init__(self._body, title="Thinking", collapsed=True, classes="thinking")

    def append(self, text: str) -> None:
        self._text += strip_terminal_sequences(text)
        self._body.update(Content(mask(self._text)))

    @property
    def text(self) -> str:
        return self._text
