"""The line at the top of a long chat that stands for what is not drawn: a resumed session shows
its last messages at once, and this brings back earlier ones, a page at a time, when asked."""

from __future__ import annotations

from textual.binding import Binding
from textual.events import Click
from textual.message import Message
from textual.widgets import Static


class EarlierMessages(Static, can_focus=True):
    DEFAULT_CSS = """
    EarlierMessages {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;

        &:focus {
            color: $text;
            background: $boost;
        }
    }
    """

    BINDINGS = [Binding("enter", "show_more", "Earlier", tooltip="on “earlier messages”: show more of them")]

    class Requested(Message):
        """The user asked for the page before what is drawn."""

        def __init__(self, item: EarlierMessages) -> None:
            super().__init__()
            self.item = item

    def __init__(self, hidden: int, page: int, *, can_show: bool = True) -> None:
        super().__init__()
        self.can_show = can_show
        self.set_counts(hidden, page)

    def set_counts(self, hidden: int, page: int) -> None:
        """`hidden` messages are not drawn; the next request brings back up to `page` of them."""
        self.hidden = hidden
        more = f" · Enter or a click shows {min(page, hidden)} more" if self.can_show else ""
        self.update(
            f"⋯ {hidden:,} earlier {'message' if hidden == 1 else 'messages'} not shown{more} · /export writes all"
        )

    def action_show_more(self) -> None:
        if self.can_show:
            self.post_message(self.Requested(self))

    def on_click(self, event: Click) -> None:
        event.stop()
        self.action_show_more()
