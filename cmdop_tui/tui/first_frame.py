"""What the app sets up before its first frame, so that the frame is not drawn, nor styled, twice.

Textual sets the screen's breakpoint classes (`HORIZONTAL_BREAKPOINTS`: the side column folds
below NARROW_WIDTH) when the screen's first Resize arrives, which is after the first frame: every
widget was then styled again and laid out again while the first key waited, and on a narrow
terminal the side column showed for a frame, then folded.

Textual also styles every widget of a screen again each time the screen is resumed, the first
time included, when its widgets have just been styled as they were mounted: the first screen
skips that first pass (`FirstScreen`), and is not laid out again for what only looks like a
change: a Resize to its own size, the toasts' rack hidden when it was never shown, the sizes the
first layout itself gives the widgets, and the requests the widgets mounted for the first frame
made before that layout, which arrive after it had done them. Each was a whole layout after the
first frame, in the way of the first key.
"""

from __future__ import annotations

from typing import Any, Self

from textual import events, messages
from textual._time import get_time  # the clock of a message's `time`
from textual.app import App
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets._toast import ToastRack  # the screen's own rack: no public name


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


class FirstScreen(Screen[Any]):
    """The app's default screen: its widgets styled once before the first frame, not twice."""

    # Focused as the screen is composed: Textual's own choice, the first focusable widget (the
    # chat), showed in the first frame, and the prompt's focus came after it, restyling both.
    AUTO_FOCUS = "#prompt"

    def __init__(self) -> None:
        super().__init__(id="_default")  # Textual's own default screen's id
        self._resumed = False
        self._laid_out_at: float | None = None  # when the first whole layout began
        self._drawn_whole = False  # the first layout has just drawn the screen whole

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Before Textual's handler: the first resume leaves the styles that mounting gave
        (every later one, after a dialog or a screen of its own, restyles as Textual does)."""
        if not self._resumed:
            event.refresh_styles = False
        self._resumed = True

    def on_mount(self) -> None:
        """The toasts' rack is hidden from the start: Textual hides it, whatever it was, when the
        app is ready, after the first frame, and that alone laid the screen out again."""
        for rack in self.query(ToastRack):  # none when the app shows no notifications
            rack.display = False

    def on_resize(self, event: events.Resize) -> None:
        """Before Textual's handler: a Resize to the size the screen has is not laid out again.
        Textual sends two as it starts, after the first frame, each a whole layout and paint
        in the way of the first key (a terminal resized back to its size is painted again whole
        by the app, `frames.py`)."""
        if event.size == self.outer_size:
            event.prevent_default()

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        """The first whole layout, which draws the first frame whole, asks for no second layout
        or paint of its own.

        Laying widgets out sets their sizes, and a widget whose (scrollable) size changed asks
        for another whole layout and a paint: every widget, at the first frame, a second layout
        and a second frame in the way of the first key. Only a widget whose scrollbars came or
        went needs a layout again; the first layout takes back the other requests, and the
        whole-screen paint Textual asks for just after it (later layouts are Textual's own)."""
        first = self._laid_out_at is None and not scroll and bool(size or self.outer_size)
        if not first:
            super()._refresh_layout(size, scroll)
            return
        self._laid_out_at = get_time()
        widgets = list(self.walk_children(Widget))
        scrollbars = [(widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar) for widget in widgets]
        with self.app.batch_update():  # painted once, after both passes below
            super()._refresh_layout(size, scroll)
            if scrolled := [widget for widget in widgets if widget._scroll_required]:
                # The chat, anchored to its end, scrolls as the layout sizes it: laid out at once,
                # not in a second frame (the first showed the chat before it scrolled, blank).
                for widget in scrolled:
                    widget._scroll_required = False
                super()._refresh_layout(scroll=True)
        for widget, before in zip(widgets, scrollbars, strict=True):
            if (widget.show_vertical_scrollbar, widget.show_horizontal_scrollbar) == before:
                widget._layout_required = False
            widget._repaint_required = False  # painted in the frame just drawn
        self._repaint_required = False  # the screen too (a Resize before the first frame asked)
        self._drawn_whole = True  # until the end of the handler that laid it out (the resume)
        self.call_next(self._forget_drawn_whole)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        """A whole-screen paint asked for just after the first layout drew it whole is skipped
        (Textual's resume asks for one right after laying the screen out)."""
        if self._drawn_whole and not (regions or layout or recompose):
            self._drawn_whole = False
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _forget_drawn_whole(self) -> None:
        self._drawn_whole = False

    def on_layout(self, message: messages.Layout) -> None:
        """Before Textual's handler: a request for a layout made before the first whole layout
        began was done by it. The widgets mounted for the first frame each ask for one, and
        their requests arrive after that frame was laid out."""
        self._drop_if_done(message)

    def on_update(self, message: messages.Update) -> None:
        """Before Textual's handler: so was a request for a paint (the first frame drew every
        widget)."""
        self._drop_if_done(message)

    def _drop_if_done(self, message: messages.Layout | messages.Update) -> None:
        if self._laid_out_at is not None and message.time < self._laid_out_at:
            message.stop()
            message.prevent_default()
