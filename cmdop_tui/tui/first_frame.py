"""What the app sets up before its first frame, so that the frame is not drawn twice.

Textual sets the screen's breakpoint classes (`HORIZONTAL_BREAKPOINTS`: the side column folds
below NARROW_WIDTH) when the screen's first Resize arrives, which is after the first frame: every
widget was then styled again and laid out again while the first key waited, and on a narrow
terminal the side column showed for a frame, then folded.
"""

from __future__ import annotations

from typing import Any

from textual.app import App


def breakpoint_classes(breakpoints: list[tuple[int, str]], width: int) -> dict[str, bool]:
    """The screen's classes for a terminal `width` wide, as Textual's Screen sets them on a
    Resize: the class of the widest breakpoint the width reaches, and none of the others."""
    widest_first = sorted(breakpoints, reverse=True)
    reached = next((name for least, name in widest_first if width >= least), None)
    return {name: name == reached for _, name in widest_first}


def style_before_first_frame(app: App[Any]) -> None:
    """Called from the app's compose, before any widget is styled."""
    classes = breakpoint_classes(app.HORIZONTAL_BREAKPOINTS or [], app.size.width)
    app.screen.update_classes(classes, update=False)
