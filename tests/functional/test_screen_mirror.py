"""The screen mirror: the cells it writes leave the terminal exactly as Textual's own frames do.

Frames come from a real Textual app (its compositor's updates, caught on their way to the
terminal); each is written twice, as Textual would write it and as the mirror writes it, to two
pyte terminals, which must then show the same cells in the same colours.
"""

from __future__ import annotations

import io
from typing import Any

import pyte
from rich.console import Console, RenderableType
from rich.segment import ControlType, Segment
from textual._compositor import ChopsUpdate, LayoutUpdate
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static

from cmdop_tui.tui.screen_mirror import NOTHING_CHANGED, ScreenMirror, changed_runs

SIZE = (50, 14)


class FrameCatcher(App[None]):
    CSS = "#log { height: 1fr; } #status { height: 1; background: $primary; }"

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Any] = []

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="log")
        yield Static("ready", id="status")

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        if renderable is not None:
            self.frames.append(renderable)
        super()._display(screen, renderable)


def cells(screen: pyte.Screen) -> list[list[tuple[str, str, str, bool, bool]]]:
    return [
        [(c.data, c.fg, c.bg, c.bold, c.reverse) for c in (screen.buffer[y][x] for x in range(screen.columns))]
        for y in range(screen.lines)
    ]


async def record_frames() -> list[Any]:
    """A log that grows past its view (follows, then scrolls), a status line that changes, wide
    characters, and styles coming and going."""
    app = FrameCatcher()
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one("#log", VerticalScroll)
        log.anchor()
        status = app.query_one("#status", Static)
        for n in range(30):
            await log.mount(Static(f"[b]{n:02d}[/b] line {'中文' if n % 3 else 'ascii'} {'é' * (n % 4)} {'x' * n}"))
            status.update(f"{n} lines · [i]{'working' if n % 2 else 'idle'}[/i] ✓")
            await pilot.pause()
        log.scroll_home(animate=False)
        await pilot.pause()
        log.children[0].update("first line [reverse]changed[/reverse]")  # type: ignore[attr-defined]
        await pilot.pause()
    return app.frames


async def test_the_mirror_leaves_the_terminal_as_textuals_frames_do():
    frames = await record_frames()
    console = Console(width=SIZE[0], height=SIZE[1], file=io.StringIO(), force_terminal=True, color_system="truecolor")
    mirror = ScreenMirror(console)
    plain, mirrored = pyte.Screen(*SIZE), pyte.Screen(*SIZE)
    plain_stream, mirrored_stream = pyte.Stream(plain), pyte.Stream(mirrored)
    sent_plain = sent_mirrored = scrolls = 0
    assert len(frames) > 20
    for frame in frames:
        textual_bytes = frame.render_segments(console)
        ours = mirror.take(frame)
        our_bytes = ours.render_segments(console) if ours is not NOTHING_CHANGED else ""
        plain_stream.feed(textual_bytes)
        mirrored_stream.feed(our_bytes)
        sent_plain, sent_mirrored = sent_plain + len(textual_bytes), sent_mirrored + len(our_bytes)
        scrolls += "\x1b[r" in our_bytes  # the log moved up: the terminal scrolled it
        assert cells(mirrored) == cells(plain)
    assert "changed" in "\n".join(plain.display) and "中文" in "\n".join(plain.display)
    assert sent_mirrored < sent_plain / 2 and scrolls > 5  # and it is worth it


def test_changed_runs_merge_near_changes_and_never_split_a_wide_character():
    old = [(c, 0) for c in "abcdefghijklmnopqrstuvwxyz"]
    new = list(old)
    new[3] = ("X", 0)
    new[6] = ("Y", 0)  # 2 cells from the first change: one run
    new[20] = ("Z", 1)  # far: a run of its own
    assert changed_runs(old, new, 0) == [(3, 7), (20, 21)]
    assert changed_runs(old, old, 0) == []
    wide = [("a", 0), ("中", 0), ("", 0), ("b", 0)]
    was = [("a", 0), ("中", 0), ("", 1), ("b", 0)]  # only the right half's look differs
    assert changed_runs(was, wide, 0) == [(1, 3)]
    shifted = changed_runs([("-", 0)] * 10, wide, 5)  # placed at column 5
    assert shifted == [(5, 9)]


def one_row(text: str, width: int) -> tuple[LayoutUpdate, ChopsUpdate]:
    """A full frame of `text` on one row, then a partial update of the same row with `text`."""
    strip = Strip([Segment(text)]).extend_cell_length(width)
    full = LayoutUpdate([[strip]], Region(0, 0, width, 1))
    return full, ChopsUpdate([{0: strip}], [(0, 0, width)], [[width]])


def test_an_emoji_with_its_selector_takes_the_cells_textual_gives_it():
    console = Console(width=20, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    mirror = ScreenMirror(console)
    before, _ = one_row("✔️ do 👨‍👩‍👧 x", 20)
    _, after = one_row("✔️ done 👨‍👩‍👧 y", 20)
    mirror.take(before)
    written = mirror.take(after).render_segments(console)
    # ✔️ is two cells, so "ne" lands at column 6 (1-based); the family emoji is two cells as well
    assert written.startswith("\x1b[1;6Hne") and "y" in written and "✔" not in written


def test_a_strip_whose_cells_cannot_be_counted_is_written_whole():
    console = Console(width=10, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    mirror = ScreenMirror(console)
    full, _ = one_row("abc", 10)
    mirror.take(full)
    control = Strip([Segment("x"), Segment("\x1b[5m", None, [(ControlType.BELL,)])]).extend_cell_length(10)
    written = mirror.take(ChopsUpdate([{0: control}], [(0, 0, 10)], [[10]])).render_segments(console)
    assert written.startswith("\x1b[1;1Hx")  # the row is forgotten: written as Textual would
    again = mirror.take(one_row("abd", 10)[1]).render_segments(console)
    assert again.startswith("\x1b[1;1Habd")  # and stays written whole until the next full frame


def test_every_textual_internal_the_frame_writer_reads_is_in_this_textual():
    """cmdop_tui/tui/frames.py names each private part of Textual (and Rich) it and the mirror
    read; on the Textual pyproject.toml allows, each one is there."""
    import importlib
    import re
    from importlib.metadata import requires, version

    from rich.console import Console
    from textual.app import App

    from cmdop_tui.tui.frames import TEXTUAL_INTERNALS

    pinned = next(r for r in requires("cmdop-tui") or [] if re.match(r"textual\b", r))
    low, high = re.search(r">=([\d.]+)", pinned), re.search(r"<(\d+)", pinned)
    assert low and high, pinned
    installed = tuple(int(n) for n in version("textual").split(".")[:3])
    assert tuple(int(n) for n in low[1].split(".")) <= installed < (int(high[1]),), (pinned, installed)
    instances = {"App": App(), "Console": Console()}
    for module, owner, name in TEXTUAL_INTERNALS:
        holder = instances[owner] if owner else importlib.import_module(module)
        assert hasattr(holder, name), f"{module}.{owner}.{name}".replace("..", ".")
