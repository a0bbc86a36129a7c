"""The model's thinking: dimmed and folded away unless the user opens it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences


class ThinkingBlock(Collapsible):
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
