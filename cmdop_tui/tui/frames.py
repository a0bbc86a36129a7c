"""The app's frame writer: Textual's `_display` handed only the cells that changed
(`screen_mirror.py` keeps the cells on the terminal), and Ctrl+L to paint everything again.

Writing frames means reading Textual's internals; every one this package reads is named in
`TEXTUAL_INTERNALS`, pinned by a test to the Textual versions pyproject.toml allows (an upgrade
that renames one fails that test, not a user's screen).
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import RenderableType
from textual.app import App
from textual.screen import Screen

from cmdop_tui.support.heap import release_collections
from cmdop_tui.tui.screen_mirror import NOTHING_CHANGED, ScreenMirror

# (module, class, private name) for each Textual internal read here and in screen_mirror.py.
TEXTUAL_INTERNALS: tuple[tuple[str, str, str], ...] = (
    ("textual.app", "App", "_display"),  # overridden below: Textual's one frame writer
    ("textual.app", "App", "_running"),
    ("textual.app", "App", "_closed"),
    ("textual.app", "App", "_batch_count"),
    ("textual.app", "App", "_driver"),
    ("textual.app", "App", "_previous_cursor_position"),
    ("textual._compositor", "", "LayoutUpdate"),  # the updates the mirror rewrites
    ("textual._compositor", "", "ChopsUpdate"),
    ("textual._compositor", "", "CompositorUpdate"),
    ("rich.console", "Console", "_color_system"),  # a style's escape sequence, as the app writes it
)


class MirroredApp(App[None]):
    """An App whose frames carry only what changed on screen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        scrolls = os.environ.get("CMDOP_TUI_NO_SCROLL_REGIONS", "") in ("", "0")
        self._mirror = ScreenMirror(self.console, scrolls=scrolls)

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        """Textual's frame writer, handed only the cells that changed (see tui/screen_mirror.py)."""
        writes_now = self._running and not self._closed and not self.is_headless and not self._batch_count
        if writes_now and self._driver is not None and not self._driver.is_inline:
            renderable = self._mirror.take(renderable)
            unmoved = self.screen.outer_size.clamp_offset(self.cursor_position) == self._previous_cursor_position
            if renderable is NOTHING_CHANGED and unmoved:
                return  # nothing on screen would change: not even a cursor move goes out
        super()._display(screen, renderable)
        if writes_now:
            release_collections()  # the first frame is out: start-up held them (cli.run_tui)

    def action_redraw(self) -> None:
        """Paint the whole screen again, as a terminal's Ctrl+L does: for a terminal that lost
        what it showed (a resize back to the same size, a resume), which the mirror cannot see."""
        self._mirror.reset()
        self.screen.refresh()
