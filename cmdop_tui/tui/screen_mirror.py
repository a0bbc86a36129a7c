"""What the terminal shows, so that a frame sends only the cells that changed.

Textual repaints by region: when a widget's size or place changes (a streamed reply grows by a
line, a scrollbar's thumb moves), the whole region of its container is painted again, though on
screen almost every cell stays what it was. Over a slow or distant link that is what a person
feels, so the app keeps a mirror of the cells it has written and turns each partial update into
the runs of cells that differ, as curses does.

Only partial updates are diffed. A full-screen update (the first paint, a resize, a screen
change, the return from a suspended app) is written whole and resets the mirror, because the
terminal may then hold anything. A line whose cells cannot be read back exactly (a control
segment in it) is forgotten and written whole next time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat

from rich.cells import split_graphemes
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, CompositorUpdate, LayoutUpdate
from textual.strip import Strip

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
Cell = tuple[str, int]  # the character ("" right of a wide one) and the id of its look
Row = list[Cell]

RUN_GAP = 8  # unchanged cells between two changed runs rewritten rather than jumped over (a move costs ~8 bytes)
MIN_SCROLLED_ROWS = 3  # rows that must have moved for a scroll to be worth weighing
SCROLL_COST_CELLS = 16  # what the scroll's own sequences cost, in cells
MAX_LOOKS = 4096  # styles remembered by object before the cache starts again


class Looks:
    """Interns the look of a style (its escape sequence, meta ignored) as a small integer."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._ids: dict[tuple[str, str], int] = {("", ""): 0}
        self.wrappers: list[tuple[str, str]] = [("", "")]
        self._by_style: dict[Style, int] = {}

    def id_of(self, style: Style | None) -> int:
        if style is None:
            return 0
        known = self._by_style.get(style)
        if known is not None:
            return known
        if len(self._by_style) > MAX_LOOKS:
            self._by_style.clear()
        rendered = style.render("\0", color_system=self.console._color_system)
        before, _, after = rendered.partition("\0")
        look = self._ids.setdefault((before, after), len(self.wrappers))
        if look == len(self.wrappers):
            self.wrappers.append((before, after))
        self._by_style[style] = look
        return look

    def render(self, cells: Row) -> str:
        """`cells` as text, one escape sequence for each run of one look."""
        out: list[str] = []
        run_look, run_text = -1, ""
        for char, look in cells:
            if look != run_look:
                if run_text:
                    out.append(self._wrap(run_look, run_text))
                run_look, run_text = look, ""
            run_text += char
        if run_text:
            out.append(self._wrap(run_look, run_text))
        return "".join(out)

    def _wrap(self, look: int, text: str) -> str:
        before, after = self.wrappers[look]
        return f"{before}{text}{after}"


def cells_of(strip: Strip, looks: Looks) -> Row | None:
    """The cells `strip` covers, as Textual counts them (a grapheme at a time: an emoji with its
    variation selector or joiners is one character of two cells); None when it holds something
    a cell cannot say (a control), or when the count disagrees with the strip's own."""
    cells: Row = []
    for text, style, control in strip:
        if control:
            return None
        look = looks.id_of(style)
        if text.isascii() and text.isprintable():
            cells.extend(zip(text, repeat(look)))
            continue
        if _CONTROLS.search(text):
            return None  # a control character is no cell: the row is written as Textual wrote it
        spans, _ = split_graphemes(text)
        for start, end, width in spans:
            grapheme = text[start:end]
            if width == 1:
                cells.append((grapheme, look))
            elif width == 2:
                cells += [(grapheme, look), ("", look)]
            elif cells:  # nothing of its own on screen: it joins the character before it
                at = len(cells) - 1 if cells[-1][0] else len(cells) - 2
                cells[at] = (cells[at][0] + grapheme, cells[at][1])
    return cells if len(cells) == strip.cell_length else None


def changed_runs(old: Row, new: Row, start: int) -> list[tuple[int, int]]:
    """[from, to) columns where `new` (placed at `start`) differs from `old`, runs closer than
    RUN_GAP merged, widened so a wide character is never split."""
    runs: list[tuple[int, int]] = []
    for offset, cell in enumerate(new):
        x = start + offset
        if x < len(old) and old[x] == cell:
            continue
        if runs and x - runs[-1][1] <= RUN_GAP:
            runs[-1] = (runs[-1][0], x + 1)
        else:
            runs.append((x, x + 1))
    end = start + len(new)
    widened = []
    for first, last in runs:
        if first > start and new[first - start][0] == "":
            first -= 1
        if last < end and new[last - start][0] == "":
            last += 1
        widened.append((first, last))
    return widened


class ScreenMirror:
    """The cells on the terminal, and the smallest writes that bring it to a new frame."""

    def __init__(self, console: Console, *, scrolls: bool = True) -> None:
        self.looks = Looks(console)
        self.rows: list[Row | None] = []
        self.scrolls = scrolls  # may the terminal scroll rows itself (CMDOP_TUI_NO_SCROLL_REGIONS=1: no)

    def reset(self) -> None:
        self.rows = []

    def take(self, update: RenderableType | None) -> RenderableType | None:
        """The update to write instead of `update`: the same frame on screen, fewer bytes
        (NOTHING_CHANGED when no cell would change)."""
        if update is None:
            return None
        if isinstance(update, LayoutUpdate) and update.region.x == 0 and update.region.y == 0:
            self._remember_full(update)
            return update
        if isinstance(update, ChopsUpdate) and self.rows:
            writes = self._diff(update.chops, update.spans, update.chop_ends)
            return CellsUpdate(writes) if writes else NOTHING_CHANGED
        self.reset()  # something this mirror does not follow: start again at the next full paint
        return update

    def _remember_full(self, update: LayoutUpdate) -> None:
        rows: list[Row | None] = []
        for strips in update.strips:
            row: Row | None = []
            for strip in strips:
                cells = cells_of(strip, self.looks)
                row = None if cells is None or row is None else row + cells
            rows.append(row)
        self.rows = rows

    def _diff(
        self, chops: Sequence[Mapping[int, Strip | None]], spans: Iterable[tuple[int, int, int]], ends: list[list[int]]
    ) -> list[str]:
        """The writes that bring the terminal to the new frame (a scroll of the rows that moved
        up, then the changed runs of each row), with the mirror brought up to date."""
        pieces: dict[int, list[tuple[int, Strip]]] = {}
        for y, x1, x2 in spans:
            for end, (x, strip) in zip(ends[y], chops[y].items(), strict=False):
                if strip is None or x > x2 or end <= x1:
                    continue  # what Textual itself would skip
                shown = strip if x2 > x >= x1 and end <= x2 else strip.crop(0, min(end, x2) - x)
                pieces.setdefault(y, []).append((x, shown))
        new_rows: dict[int, Row] = {}
        whole: list[str] = []  # rows the mirror cannot follow, written as Textual would
        for y, row_pieces in pieces.items():
            row = self._new_row(y, row_pieces)
            if row is None:
                whole += [move_to(x, y) + strip.render(self.looks.console) for x, strip in row_pieces]
            else:
                new_rows[y] = row
        writes = self._scroll(new_rows)
        for y in sorted(new_rows):
            old, row = self.rows[y], new_rows[y]
            assert old is not None
            writes += [
                move_to(first, y) + self.looks.render(row[first:last]) for first, last in changed_runs(old, row, 0)
            ]
            self.rows[y] = row
        return writes + whole

    def _new_row(self, y: int, pieces: list[tuple[int, Strip]]) -> Row | None:
        """Row `y` with `pieces` laid on it; None (and the row forgotten) when it cannot be followed."""
        old = self.rows[y] if y < len(self.rows) else None
        row = list(old) if old is not None else None
        for x, strip in pieces:
            cells = cells_of(strip, self.looks)
            if cells is None or row is None or x + len(cells) > len(row):
                if y < len(self.rows):
                    self.rows[y] = None  # not followed any more: written whole until the next full paint
                return None
            row[x : x + len(cells)] = cells
        return row

    def _scroll(self, new_rows: dict[int, Row]) -> list[str]:
        """When a block of whole rows moved up (a followed chat jumped), have the terminal scroll
        them (a scroll region, lines deleted at its top) rather than write them again; the mirror
        scrolls with it. Chosen by the cells left to write: beside side panels that stayed, a
        scroll would only move the writing from the chat to the panels."""
        if not self.scrolls:
            return []
        best: tuple[int, int, int, int] | None = None  # rows saved, top, bottom, lines
        for top, bottom in _runs_of(sorted(new_rows)):
            if bottom - top < MIN_SCROLLED_ROWS:
                continue  # too few rows to save MIN_SCROLLED_ROWS (a token's frame has one or two)
            new = [hash(tuple(new_rows[y])) for y in range(top, bottom + 1)]  # rows compared as numbers
            old = [hash(tuple(row)) if row is not None else None for row in self.rows[top : bottom + 1]]
            unchanged = sum(a == b for a, b in zip(new, old, strict=True))  # free without a scroll
            for lines in range(1, (bottom - top + 1) // 2 + 1):
                moved = sum(a == b for a, b in zip(new, old[lines:], strict=False))
                saved = moved - unchanged  # rows a scroll saves writing (blank rows match anywhere)
                if saved >= MIN_SCROLLED_ROWS and (best is None or saved > best[0]):
                    best = (saved, top, bottom, lines)
        if best is None:
            return []
        _, top, bottom, lines = best
        width = len(new_rows[top])
        scrolled = [*self.rows[top + lines : bottom + 1], *([(" ", 0)] * width for _ in range(lines))]
        stayed = self.rows[top : bottom + 1]
        if _cells_to_write(new_rows, top, scrolled) + SCROLL_COST_CELLS >= _cells_to_write(new_rows, top, stayed):
            return []
        self.rows[top : bottom + 1] = scrolled
        # Lines deleted at the region's top (DL), not fed at its bottom: nothing scrolls off the
        # screen, so no terminal copies the chat into its scrollback.
        return [f"\x1b[0m\x1b[{top + 1};{bottom + 1}r\x1b[{top + 1};1H\x1b[{lines}M\x1b[r"]


def _cells_to_write(new_rows: dict[int, Row], top: int, shown: Sequence[Row | None]) -> int:
    """How many cells of the new rows from `top` on differ from what the terminal would show."""
    total = 0
    for offset, old in enumerate(shown):
        new = new_rows[top + offset]
        total += len(new) if old is None else sum(cell != was for cell, was in zip(new, old, strict=False))
    return total


def _runs_of(rows: list[int]) -> list[tuple[int, int]]:
    """Consecutive row numbers as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for y in rows:
        if runs and runs[-1][1] == y - 1:
            runs[-1] = (runs[-1][0], y)
        else:
            runs.append((y, y))
    return runs


def move_to(x: int, y: int) -> str:
    return f"\x1b[{y + 1};{x + 1}H"


class CellsUpdate(CompositorUpdate):
    """Writes already rendered: each a cursor move and the cells that changed there."""

    def __init__(self, writes: list[str]) -> None:
        self.writes = writes

    def render_segments(self, console: Console) -> str:
        return "".join(self.writes)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.render_segments(console))  # the raw sequences, as a terminal should get them


NOTHING_CHANGED = CellsUpdate([])
