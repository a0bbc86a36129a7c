"""A reply from the model, rendered as Markdown while it streams.

Textual's `Markdown` widget mounts a widget per block and every update re-lays-out the whole chat:
a 50,000-character reply took over 6 s to show at full stream speed. This widget renders Markdown
with Rich into lines instead (the Line API):

* the reply is cut into blocks at blank lines outside code fences; a finished block never changes,
  so it is rendered once; the open block is re-rendered at most once per frame;
* a finished block that is off screen is not rendered until it is needed: its height is estimated
  from its text, and it is rendered when a line of it is painted or when the app is idle;
* only visible lines are painted;
* text arriving faster than `paint_interval` is painted at that pace, the latest text each time
  (the chat sets it while streaming; a keystroke's echo and the Stop are never held back);
* while the chat follows it, a growing reply takes room ahead of its text, `jump_lines` at a time
  (jump scrolling, as terminals do it): the chat scrolls once per jump instead of once per line,
  and a line landing in the room it took changes nothing but that line.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual.color import Color
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.theme import Theme as TextualTheme
from textual.timer import Timer
from textual.widget import Widget

from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences
from cmdop_tui.tui.vocabulary.markdown_blocks import FENCE, split_finished
from cmdop_tui.tui.vocabulary.rich_markdown import parsed_markdown


def markdown_theme(theme: TextualTheme) -> Theme:
    """Rich's Markdown styles in the colours of the current Textual theme."""
    primary = _rich_name(theme.primary)
    accent = _rich_name(theme.accent or theme.primary)
    foreground = Color.parse(theme.foreground or ("#e0e0e0" if theme.dark else "#202020"))
    background = Color.parse(theme.background or ("#000000" if theme.dark else "#ffffff"))
    # ANSI themes leave colours to the terminal: there is nothing to blend, so dim the text.
    ansi = foreground.ansi is not None or background.ansi is not None
    muted = "dim" if ansi else foreground.blend(background, 0.4).hex
    return Theme(
        {
            "markdown.h1": f"bold {primary}",
            "markdown.h1.border": primary,
            "markdown.h2": f"bold underline {primary}",
            "markdown.h3": f"bold {primary}",
            "markdown.h4": "bold",
            "markdown.h5": "bold italic",
            "markdown.h6": "italic",
            "markdown.code": f"bold {accent}",
            "markdown.code_block": "",
            "markdown.block_quote": f"italic {muted}",
            "markdown.item.bullet": f"bold {accent}",
            "markdown.item.number": f"bold {accent}",
            "markdown.hr": muted,
            "markdown.link": f"underline {primary}",
            "markdown.link_url": f"underline {primary}",
            "markdown.table.border": muted,
        }
    )


def _rich_name(color: str) -> str:
    """A Textual colour as Rich names it: ANSI themes say `ansi_blue`, which Rich cannot read."""
    return Color.parse(color).rich_color.name


def _is_blank(line: list[Segment]) -> bool:
    return all(not segment.text.strip() and not (segment.style and segment.style.bgcolor) for segment in line)


def trim_blank_edges(lines: list[list[Segment]]) -> list[list[Segment]]:
    """Rich pads some blocks with empty lines (a list starts with one); spacing is ours to set."""
    start, end = 0, len(lines)
    while start < end and _is_blank(lines[start]):
        start += 1
    while end > start and _is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


IDLE_RENDER_DELAY_S = 0.3  # render off-screen blocks once the stream has paused this long
IDLE_RENDER_SLICE_S = 0.015  # in slices short enough for keys to stay responsive; each slice that
# corrects an estimated height costs one repaint, so the slices are not too short either
RENDER_AT_FINISH = 30  # a reply with at most this many blocks left unrendered is finished at once


def estimate_height(text: str, width: int) -> int:
    """Lines a block will take, guessed from its text (exact for plain paragraphs).

    A code block keeps its line count: its fence lines become padding and long lines are cut.
    """
    lines = text.split("\n")
    if FENCE.match(text):
        return len(lines)
    return sum(max(1, math.ceil(len(line) / max(width - 4, 1))) for line in lines)


@dataclass
class _Block:
    text: str
    lines: list[list[Segment]] | None = None
    estimate: int = 1
    rendered_from: str | None = None  # the text `lines` show (an open block's text runs ahead of its painting)

    @property
    def height(self) -> int:
        return len(self.lines) if self.lines is not None else self.estimate


class AssistantReply(Widget):
    DEFAULT_CSS = """
    AssistantReply {
        height: auto;
        margin: 1 0 0 0;
        padding: 0;
        background: transparent;
    }
    """

    def __init__(self, source: str = "") -> None:
        super().__init__()
        self.source = ""
        self._blocks: list[_Block] = []  # finished
        self._open = _Block("")
        self._open_dirty = False
        self._width = 0
        self._offsets: list[int] | None = None  # first line of each block, open block last
        self._total = 0
        self._strips: dict[int, Strip] = {}
        self._markdown_console: Console | None = None
        self._code_theme = "monokai"
        self._idle_timer: Timer | None = None
        self.jump_lines = 0  # room to take ahead of the text while streaming; 0: none
        self.paint_interval = 0.0  # seconds between paints of streamed text; 0: paint every append
        self._painted_at = 0.0
        self._paint_timer: Timer | None = None
        self._layout_due = False  # a block finished since the last paint
        self._reserved = 0  # the height taken, text and room
        if source:
            self.append(source)

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._restyle, init=False)

    # --- content -------------------------------------------------------------------------------

    def append(self, text: str) -> None:
        """Add streamed text; finished blocks are fixed, the open one is re-rendered lazily."""
        # Model text is shown, never interpreted: no escape sequence reaches the terminal.
        text = strip_terminal_sequences(text)
        self.source += text
        finished, rest = split_finished(self._open.text + text)
        for block_text in finished:
            self._finish_block(block_text)
        if finished:
            self._open, self._layout_due = _Block(rest), True
        else:
            self._open.text = rest
        self._paint_soon()

    def _paint_soon(self) -> None:
        wait = self._painted_at + self.paint_interval - time.monotonic()
        if wait <= 0 or not self.is_attached:
            self._paint()
        elif self._paint_timer is None:
            self._paint_timer = self.set_timer(wait, self._paint)

    def _paint(self) -> None:
        self._paint_timer, self._painted_at = None, time.monotonic()
        if self._layout_due:
            self._layout_due = False
            self._blocks_finished()
        else:
            self._open_grew()

    def _blocks_finished(self) -> None:
        """Blocks finished since the last paint: repaint from the first of them down; lay out
        again only when the reply outgrows the room it has (a layout of a long chat is costly)."""
        if self._offsets is None or not self._width or not self._reserved:
            self._changed(open_block=True)
            return
        top = self._offsets[-1]  # where the open block began at the last paint
        self._open_dirty, self._offsets = True, None
        self._prepare(self._width)
        self._forget_strips_from(top)
        if self._total >= self._reserved:
            self.refresh(layout=True)
        else:
            self.refresh(Region(0, top, self.size.width, max(1, self.size.height - top)))

    def finish(self) -> None:
        """The reply is complete: the open block becomes a finished one.

        A short reply is rendered completely now, so its final layout needs no estimates.
        """
        if self._paint_timer is not None:
            self._paint_timer.stop()
            self._paint_timer = None
        if self._open.text.strip():
            self._finish_block(self._open.text.strip("\n"))
        self._open, self._layout_due = _Block(""), False
        self.jump_lines = self._reserved = 0
        pending = [block for block in self._blocks if block.lines is None]
        if self._width and len(pending) <= RENDER_AT_FINISH:
            for block in pending:
                self._render_block(block)
        self._changed(open_block=True)

    def _finish_block(self, text: str) -> None:
        # The block most likely was the open block at the last frame: reuse that rendering.
        painted = self._open.rendered_from
        reuse = (
            self._open.lines if painted is not None and painted.strip("\n") == text and not self._open_dirty else None
        )
        self._blocks.append(_Block(text, reuse, estimate_height(text, self._width or 80)))
        self._arm_idle_render()

    def _open_grew(self) -> None:
        """Only the open block changed: repaint the lines of it that differ (a token should cost
        the line it lands on, not the whole block or column); lay out again only when the reply
        outgrows the room it has."""
        if self._offsets is None or not self._width or not self._open.lines or not self._open.text.strip():
            self._changed(open_block=True)
            return
        before = self._open.lines
        after = self._render_text(self._open.text)
        self._open.lines, self._open.rendered_from, self._open_dirty = after, self._open.text, False
        grown = len(after) - len(before)
        pairs = zip(before, after, strict=False)
        first = next((row for row, (old, new) in enumerate(pairs) if old != new), min(len(before), len(after)))
        if first == len(after) == len(before):
            return
        top = self._offsets[-1] + first
        self._forget_strips_from(top)  # the lines above are painted as they were: blocks before never change
        if grown and (grown < 0 or self._total + grown > self._reserved):
            self._offsets = None
            self.refresh(layout=True)
            return
        self._total += grown
        self.refresh(Region(0, top, self.size.width, len(after) - first))

    def _forget_strips_from(self, top: int) -> None:
        for y in [y for y in self._strips if y >= top]:
            del self._strips[y]

    def _changed(self, *, open_block: bool = False) -> None:
        self._open_dirty = self._open_dirty or open_block
        self._offsets = None
        self._strips.clear()
        self.refresh(layout=True)

    # --- rendering -----------------------------------------------------------------------------

    def _restyle(self) -> None:
        self._markdown_console = None
        self._forget_renderings()

    def _forget_renderings(self) -> None:
        for block in self._blocks:
            block.lines = None
            block.estimate = estimate_height(block.text, self._width or 80)
        self._open.lines = None
        self._changed(open_block=True)
        self._arm_idle_render()

    def _render_text(self, text: str) -> list[list[Segment]]:
        if self._markdown_console is None:
            theme = self.app.current_theme
            self._markdown_console = Console(
                color_system="truecolor", force_terminal=True, legacy_windows=False, theme=markdown_theme(theme)
            )
            self._code_theme = "monokai" if theme.dark else "default"
        options = self._markdown_console.options.update(width=self._width)
        markdown = parsed_markdown(mask(text), self._code_theme)  # secrets never reach the screen
        lines = self._markdown_console.render_lines(markdown, options, pad=False)
        return trim_blank_edges(lines)

    def _render_block(self, block: _Block) -> bool:
        """Render a finished block; True when its height differs from the estimate."""
        block.lines = self._render_text(block.text)
        return len(block.lines) != block.estimate

    def _prepare(self, width: int) -> list[int]:
        """Render what must be current for `width` and return the block offsets."""
        width = max(width, 10)
        if width != self._width:
            self._width = width
            self._forget_renderings()
        if self._open_dirty:
            self._open_dirty = False
            self._open.lines = self._render_text(self._open.text) if self._open.text.strip() else []
            self._open.rendered_from = self._open.text
            self._offsets = None
        if self._offsets is None:
            offsets, y = [], 0
            for block in [*self._blocks, self._open]:
                offsets.append(y)
                if block.height:
                    y += block.height + 1  # a blank line between blocks
            self._offsets, self._total = offsets, max(0, y - 1)
        return self._offsets

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._prepare(width)
        if not self.jump_lines:
            self._reserved = 0
        elif not self._total < self._reserved <= self._total + self.jump_lines:
            self._reserved = self._total + self.jump_lines  # outgrown, or a wider view shortened the text
        return max(self._total, self._reserved)

    def render_line(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            strip = self._strip(self._segments_at(y))
            self._strips[y] = strip
        return strip

    def _segments_at(self, y: int) -> list[Segment]:
        offsets = self._prepare(self.size.width)
        index = bisect.bisect_right(offsets, y) - 1
        if index < 0:
            return []
        block = self._open if index == len(self._blocks) else self._blocks[index]
        if block.lines is None and self._render_block(block):  # it is on screen now, and not as estimated
            self._changed()
            return self._segments_at(y)  # the lines below it moved: read them at their new places
        row = y - offsets[index]
        return block.lines[row] if block.lines is not None and row < len(block.lines) else []

    def _strip(self, segments: list[Segment]) -> Strip:
        width = self.size.width
        base: Style = self.rich_style
        return Strip(Segment.apply_style(segments, base)).extend_cell_length(width, base).crop(0, width)

    # --- idle rendering ------------------------------------------------------------------------

    def _arm_idle_render(self) -> None:
        """(Re)start the idle timer: each new block pushes idle rendering further back."""
        if not self.is_attached:
            return
        if self._idle_timer is not None:
            self._idle_timer.stop()
        self._idle_timer = self.set_timer(IDLE_RENDER_DELAY_S, self._render_some)

    def _render_some(self) -> None:
        """Render off-screen blocks, newest first, for a short slice; re-arm if any are left."""
        self._idle_timer = None
        if not self._width:
            return
        deadline = time.monotonic() + IDLE_RENDER_SLICE_S
        resized = False
        for block in reversed(self._blocks):
            if block.lines is None:
                if time.monotonic() > deadline:
                    self.call_later(self._render_some)  # after whatever else is waiting
                    break
                resized = self._render_block(block) or resized
        if resized:
            self._changed()
