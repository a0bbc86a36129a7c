"""The footer's keys, whole at every width: when they do not fit the line (a narrow terminal, a
focused panel adding its own), the footer goes compact, and if that is not enough the last keys
are left out, never cut mid-word (Textual's footer would draw `f4 Copy re▏`). Every key is in
/help and the palette anyway."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets._footer import FooterKey  # the footer's own key widget: no public name

from cmdop_tui.tui.widgets.footer import AppFooter


class FittingFooter(AppFooter):
    async def recompose(self) -> None:  # the keys change with the focus
        await super().recompose()
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Compact when the keys overflow; then leave out the last until the rest fit."""
        keys = list(self.query(FooterKey))
        palette = [key for key in keys if key.has_class("-command-palette")]
        shown = [key for key in keys if key not in palette]
        room = self.size.width or self.app.size.width  # before its first layout: the whole line

        def overflows(compact: bool) -> bool:
            return sum(key_width(key, compact) for key in shown + palette) + len(palette) > room

        compact = overflows(compact=False)
        if compact != self.compact:
            self.compact = compact
        hidden: list[FooterKey] = []
        while shown and overflows(compact):
            hidden.append(shown.pop())
        # Only what changes: setting a key's display, even to what it is, lays the screen out again
        # (at the first frame, six keys made the echo of the first key wait for a whole layout).
        for key, display in [(key, True) for key in shown] + [(key, False) for key in hidden]:
            if key.display != display:
                key.display = display


def key_width(key: FooterKey, compact: bool) -> int:
    """The cells a key takes, by the footer's own styles (textual/widgets/_footer.py): ` ^q Quit `
    with one cell on either side, or `^q Quit` and a cell of margin when compact."""
    return cell_len(key.key_display) + cell_len(key.description) + (2 if compact else 3)
