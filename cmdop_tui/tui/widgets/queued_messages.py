"""What the user sent while a turn runs, shown above the prompt until it goes.

Two kinds: queued (Enter while a turn runs: sent when it ends, in order, one turn each) and
steering (ctrl+s: given to the running turn, waiting for its next step; it leaves this list when
the model gets it and the chat shows it). The newest queued message can be taken back into the
prompt (Up at an empty prompt) or dropped (ctrl+d at an empty prompt). The widget holds the list
and draws it; tui/type_ahead.py decides when each one goes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from textual.content import Content
from textual.widgets import Static

from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences

HINT = "↑ edit · ctrl+d drop (the newest, at an empty prompt) · {when}"
SENT_WHEN = "sent when the turn ends"
SENT_WHEN_STOPPED = "stopped: Enter sends the next"


@dataclass(frozen=True)
class HeldMessage:
    text: str
    steering: bool = False  # given to the running turn, not delivered yet


class QueuedMessages(Static):
    DEFAULT_CSS = """
    QueuedMessages {
        height: auto;
        max-height: 7;
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;

        &.-held {
            display: block;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.held: list[HeldMessage] = []
        self.paused = False  # a Stop ended the turn: the queue waits for Enter

    @property
    def queued(self) -> list[str]:
        """The queued messages (not steering), oldest first."""
        return [m.text for m in self.held if not m.steering]

    @property
    def steering(self) -> list[str]:
        """The steering that waits for the running turn's next step, oldest first."""
        return [m.text for m in self.held if m.steering]

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = paused
            self._changed()

    def add(self, text: str, *, steering: bool = False) -> None:
        self.held.append(HeldMessage(text, steering))
        self._changed()

    def take_first_queued(self) -> str | None:
        """The oldest queued message, taken off the list (the next to send)."""
        return self._take(next((m for m in self.held if not m.steering), None))

    def take_newest_queued(self) -> str | None:
        """The newest queued message, taken off the list (to edit or drop)."""
        return self._take(next((m for m in reversed(self.held) if not m.steering), None))

    def delivered(self, text: str) -> None:
        """The model got this steering: it leaves the list."""
        self._take(next((m for m in self.held if m.steering and m.text == text), None))

    def steering_returned(self, texts: Iterable[str]) -> None:
        """Steering no step took (the turn ended first): each becomes a queued message where it
        stood, or first in the list when it was not shown."""
        for text in texts:
            index = next((i for i, m in enumerate(self.held) if m.steering and m.text == text), None)
            if index is None:
                self.held.insert(0, HeldMessage(text))
            else:
                self.held[index] = replace(self.held[index], steering=False)
        self._changed()

    def _take(self, message: HeldMessage | None) -> str | None:
        if message is None:
            return None
        self.held.remove(message)
        self._changed()
        return message.text

    def _changed(self) -> None:
        self.set_class(bool(self.held), "-held")
        self.update(self._content())

    def _content(self) -> Content:
        lines = [_line(m) for m in self.held]
        if self.queued:
            hint = HINT.format(when=SENT_WHEN_STOPPED if self.paused else SENT_WHEN)
            lines.append(Content.styled(hint, "dim italic"))
        return Content("\n").join(lines)


def shown(text: str) -> str:
    """A held message as one line on screen: inert, secrets masked, its first line only."""
    first, _, rest = mask(strip_terminal_sequences(text)).strip().partition("\n")
    return first + (" …" if rest else "")


def _line(message: HeldMessage) -> Content:
    label = "↪ steering, at the next step: " if message.steering else "⧗ queued: "
    return Content.assemble((label, "bold"), shown(message.text))
