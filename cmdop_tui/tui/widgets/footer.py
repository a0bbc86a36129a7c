"""Textual's Footer, its keys made in their final style.

Each key the Footer binds to its own compactness starts compact and is then set to the Footer's
(not compact), and each change restyles the key at once: two style passes per key, at every
recompose (the first paint, and each change of focus). Those keys are handed over already in
the Footer's style, so neither change happens. What the Footer shows is Textual's, unchanged
(the command palette's key, which is not bound, keeps its own).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class AppFooter(Footer):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)  # what its binding would set
            yield widget
