"""The frame shared by the panels beside the chat: a rounded border that lights up with focus."""

from __future__ import annotations

from textual.containers import Vertical


class SidePanel(Vertical):
    DEFAULT_CSS = """
    SidePanel {
        border: round $primary 40%;
        border-title-color: $text-accent;
        padding: 0 1;

        &:focus-within {
            border: round $primary;
        }
    }
    """
