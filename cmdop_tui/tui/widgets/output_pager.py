"""A pager over a text of any size (`support/paged_text.py`): only the lines on screen are read.

Every line is made inert (no terminal sequences, control characters shown as `^X`), its tabs
expanded and its secrets masked before it is drawn. Home/End, Ctrl+Home/Ctrl+End and g/G go to
the first and last line, PageUp/PageDown a page, the arrows a line or a column. A search
(`find`) highlights every match on screen and the current one apart, and says where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Offset, Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from cmdop_tui.support.paged_text import Direction, Match, PagedText, Search
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import inert_line

TAB = 8
SELECTED_LINES = 100_000  # a mouse selection spans at most this many lines (select-all on 100 MB: no)


@dataclass(frozen=True)
class Found:
    """Where a search stands: the current match (None: no match), its ordinal among `total`,
    and whether reaching it went round the end of the text."""

    match: Match | None
    ordinal: int
    total: int
    wrapped: bool = False


def shown_line(line: str) -> str:
    """A line as the pager draws it: inert, tabs expanded, secrets masked."""
    return mask(inert_line(line).expandtabs(TAB))


class OutputPager(ScrollView, can_focus=True):
    """The lines of a PagedText; `follow()` takes in what was appended, staying at the end when
    the reader is there."""

    COMPONENT_CLASSES = {"output-pager--match", "output-pager--current"}
    DEFAULT_CSS = """
    OutputPager {
        background: $surface;
        & > .output-pager--match { background: $warning 40%; }
        & > .output-pager--current { background: $accent; color: $text; text-style: bold; }
    }
    """
    BINDINGS = [
        Binding("ctrl+home,g", "scroll_home", "Top", show=False),
        Binding("ctrl+end,G", "scroll_end", "End", show=False),
    ]

    def __init__(self, text: PagedText, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paged = text
        self.search: Search | None = None
        self.found: Found | None = None
        self._window: tuple[int, list[str]] = (0, [])  # the first line read and the lines from it
        self._width = 0  # the widest line seen so far, in cells

    # --- keys: at once, never animated (an animation over 200,000 lines reads every page between) ---

    def action_scroll_home(self) -> None:
        self.scroll_to(0, 0, animate=False, immediate=True)

    def action_scroll_end(self) -> None:
        self.scroll_to(0, self.max_scroll_y, animate=False, immediate=True)

    def action_page_down(self) -> None:
        self.scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)

    # --- what is shown -------------------------------------------------------------------------

    def show(self, text: PagedText) -> None:
        """Show another text from its start (the search is kept, its place is not)."""
        self.paged = text
        self.found = None
        self._reset()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def swap(self, text: PagedText) -> None:
        """Show another version of the same output: a reader at the end stays at the end, one
        who scrolled back stays where they were."""
        at_end, y = self.scroll_y >= self.max_scroll_y, self.scroll_y
        self.paged = text
        self._reset()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.scroll_to(y=y, animate=False, immediate=True)

    def follow(self) -> bool:
        """Take in what the text gained since; a reader at the end stays there. Whether it grew."""
        at_end = self.scroll_y >= self.max_scroll_y
        if not self.paged.refresh():
            return False
        self._reset()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        return True

    @property
    def text(self) -> str:
        """The whole text (for a copy that fits, and for tests)."""
        return self.paged.read().decode("utf-8", errors="replace")

    def _reset(self) -> None:
        self._window = (0, [])
        self.virtual_size = Size(max(self._width, 1), self.paged.line_count)
        self.refresh()

    def _lines_around(self, line: int) -> tuple[int, list[str]]:
        first, lines = self._window
        if not first <= line < first + len(lines):
            height = max(1, self.size.height)
            first = max(0, line - height)
            lines = [shown_line(raw) for raw in self.paged.lines(first, 3 * height)]
            self._window = (first, lines)
            widest = max((cell_len(shown) for shown in lines), default=0)
            if widest > self._width:
                self._width = widest
                self.call_after_refresh(self._widen)
        return self._window

    def _widen(self) -> None:
        self.virtual_size = Size(self._width, self.paged.line_count)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        style = self.rich_style
        width = self.size.width
        if line >= self.paged.line_count:
            return Strip.blank(width, style)
        first, lines = self._lines_around(line)
        if line - first >= len(lines):
            return Strip.blank(width, style)
        shown = lines[line - first]
        text = Text(shown, no_wrap=True)
        text.stylize(style)  # as a span: a Text's own style is not in the segments it renders
        self._highlight(text, line)
        self._select(text, line)
        strip = Strip(text.render(self.app.console), cell_len(shown))
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, line)

    def _highlight(self, text: Text, line: int) -> None:
        if self.search is None or not self.search.needle:
            return
        needle = self.search.needle if self.search.exact_case else self.search.needle.lower()
        haystack = text.plain if self.search.exact_case else text.plain.lower()
        current = self._current_column(line)
        match_style = self.get_component_rich_style("output-pager--match")
        current_style = self.get_component_rich_style("output-pager--current")
        start = haystack.find(needle)
        while start >= 0:
            end = start + len(needle)
            text.stylize(current_style if start == current else match_style, start, end)
            start = haystack.find(needle, end)

    def _select(self, text: Text, line: int) -> None:
        selection = self.text_selection
        span = selection.get_span(line) if selection is not None else None
        if span is not None:
            start, end = span
            text.stylize(
                self.screen.get_component_rich_style("screen--selection"), start, len(text) if end < 0 else end
            )

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text a mouse selection covers, as shown (its lines are numbered from the first)."""
        first = selection.start.y if selection.start is not None else 0
        last = selection.end.y if selection.end is not None else self.paged.line_count - 1
        if last - first >= SELECTED_LINES:
            self.notify("Too much to select with the mouse: c copies the whole output.", severity="warning")
            return None
        lines = [shown_line(raw) for raw in self.paged.lines(first, last - first + 1)]
        start = selection.start - Offset(0, first) if selection.start is not None else None
        end = selection.end - Offset(0, first) if selection.end is not None else None
        return Selection(start, end).extract("\n".join(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _current_column(self, line: int) -> int | None:
        """Where the current match starts in `line` as shown (characters), if it is on it."""
        match = self.found.match if self.found else None
        if match is None or match.line != line:
            return None
        before = self.paged.line_bytes(line)[: match.column].decode("utf-8", errors="replace")
        return len(shown_line(before))

    # --- searching -----------------------------------------------------------------------------

    def find(self, search: Search | None = None, direction: Direction = "forward") -> Found:
        """A new search from the top line on screen (`search` given), or the next or previous
        match of the current one; past the end (the start) it goes round to the start (the end)."""
        if search is not None:
            self.search, self.found = search, None
        if self.search is None:
            return Found(None, 0, 0)
        current = self.found.match if self.found else None
        if current is None:
            start = self.paged.line_start(int(self.scroll_y))
        else:
            start = current.offset + 1 if direction == "forward" else current.offset
        match = self.paged.find(self.search, start, direction)
        wrapped = match is None
        if wrapped:
            match = self.paged.find(self.search, 0 if direction == "forward" else self.paged.size, direction)
        self.found = self._placed(match, current, direction, wrapped)
        if match is not None:
            self._reveal(match)
        self.refresh()
        return self.found

    def _placed(self, match: Match | None, before: Match | None, direction: Direction, wrapped: bool) -> Found:
        """The ordinal of `match`: counted for a new search, else one on from the last."""
        assert self.search is not None
        if match is None:
            return Found(None, 0, 0)
        if before is None or self.found is None:  # one pass: the matches before it, then the rest
            ahead = self.paged.count(self.search, match.offset)
            total = ahead + self.paged.count(self.search, start=match.offset)
            return Found(match, ahead + 1, total, wrapped)
        total = self.found.total
        step = 1 if direction == "forward" else -1
        ordinal = (1 if direction == "forward" else total) if wrapped else self.found.ordinal + step
        return Found(match, max(1, min(ordinal, total)), total, wrapped)

    def _reveal(self, match: Match) -> None:
        self._lines_around(match.line)
        self._widen()  # the match's line may be the widest yet: scrolling to it needs the width
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_y)
        y = top if top <= match.line < top + height else max(0, match.line - height // 2)
        column = self._current_column(match.line) or 0
        x = int(self.scroll_x)
        width = max(1, self.scrollable_content_region.width)
        if not x <= column < x + width - 1:
            x = max(0, column - width // 3)
        self.scroll_to(x, y, animate=False, immediate=True)
