"""A reply from the model, rendered as Markdown while it streams."""

from __future__ import annotations

from textual.widgets import Markdown


class AssistantReply(Markdown):
    DEFAULT_CLASSES = "assistant-reply"
