"""The completion list over the prompt: slash commands as `/` is typed, paths as `@` is.

A display only: it never takes focus (the keys stay in the prompt, which moves its highlight and
accepts from it: widgets/prompt_completion.py). It floats over the chat, its bottom edge on the
prompt bar's top, at most `ROWS` rows, scrolling to keep the highlight in view.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.geometry import Offset
from textual.widget import Widget

ROWS = 8


@dataclass(frozen=True)
class Choice:
    """One line of the list: what it shows, a note after it, and what accepting it inserts."""

    label: str
    note: str = ""
    insert: str = ""
    runs: bool = False  # accepting it with Enter also sends it (a command that takes no argument)


class CompletionMenu(Widget):
    DEFAULT_CSS = """
    CompletionMenu {
        overlay: screen;
        display: none;
        width: 1fr;
        height: auto;
        max-height: 10;
        padding: 0 1;
        border: round $primary 60%;
        background: $surface;
    }
    """

    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.choices: tuple[Choice, ...] = ()
        self.highlighted = 0
        self.waiting = ""  # said instead of choices while there are none yet ("listing files…")
        self._top = 0  # the first row shown
        self.showing = False  # what `display` would say, were it not True before the CSS applies

    def show(self, choices: list[Choice], *, waiting: str = "", above: Widget | None = None) -> None:
        """List `choices` (highlighting the first), floating just above `above`."""
        self.choices, self.waiting, self.highlighted, self._top = tuple(choices), waiting, 0, 0
        self.display = self.showing = bool(choices or waiting)
        if above is not None and self.showing:
            rows = min(ROWS, max(1, len(self.choices))) + 2  # and the border
            self.absolute_offset = Offset(above.region.x, max(0, above.region.y - rows))
            self.styles.width = above.region.width
        self.refresh(layout=True)

    def hide(self) -> None:
        self.choices, self.waiting = (), ""
        self.display = self.showing = False

    @property
    def is_open(self) -> bool:
        """Showing choices (not only a word that they are coming)."""
        return self.showing and bool(self.choices)

    @property
    def current(self) -> Choice | None:
        return self.choices[self.highlighted] if self.choices else None

    def move(self, step: int) -> None:
        """Move the highlight by `step`, wrapping around, keeping it in view."""
        if not self.choices:
            return
        self.highlighted = (self.highlighted + step) % len(self.choices)
        if self.highlighted < self._top:
            self._top = self.highlighted
        elif self.highlighted >= self._top + ROWS:
            self._top = self.highlighted - ROWS + 1
        self.refresh()

    def render(self) -> Content:
        if not self.choices:
            return Content.styled(self.waiting, "italic $text-muted")
        width = max(10, self.size.width)
        label_width = min(max(len(choice.label) for choice in self.choices), width * 2 // 3)
        lines = []
        for index in range(self._top, min(len(self.choices), self._top + ROWS)):
            choice = self.choices[index]
            label = _fit(choice.label, label_width).ljust(label_width)
            note = _fit(choice.note, max(0, width - label_width - 2)) if choice.note else ""
            line = Content.assemble((label, "bold"), "  ", (note, "$text-muted"))
            lines.append(line.stylize("reverse", 0, len(line)) if index == self.highlighted else line)
        return Content("\n").join(lines)


def _fit(text: str, width: int) -> str:
    """`text` in `width` cells: a long path keeps its end (the file's name), a note its start."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    return "…" + text[-(width - 1) :] if "/" in text else text[: width - 1] + "…"
