"""A reply from the model, rendered as Markdown while it streams.

Textual's `Markdown` widget mounts a widget per block and every update re-lays-out the whole chat:
a 50,000-character reply took over 6 s to show at full stream speed. This widget instead renders
Markdown with Rich into cached lines (the Line API): finished blocks are rendered once, only the
open block is re-rendered on the next frame, and only visible lines are painted. Rendering is lazy,
so however many fragments arrive between two frames, the open block is rendered once.
"""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual.color import Color
from textual.geometry import Size
from textual.strip import Strip
from textual.theme import Theme as TextualTheme
from textual.widget import Widget

from cmdop_tui.text import strip_terminal_sequences
from cmdop_tui.tui.markdown_blocks import split_finished


def markdown_theme(theme: TextualTheme) -> Theme:
    """Rich's Markdown styles in the colours of the current Textual theme."""
    primary = theme.primary
    accent = theme.accent or theme.primary
    foreground = Color.parse(theme.foreground or ("#e0e0e0" if theme.dark else "#202020"))
    background = Color.parse(theme.background or ("#000000" if theme.dark else "#ffffff"))
    muted = foreground.blend(background, 0.4).hex
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


class AssistantReply(Widget):
    DEFAULT_CSS = """
    AssistantReply { height: auto; }
    """

    def __init__(self, source: str = "") -> None:
        super().__init__()
        self.source = ""
        self._finished: list[str] = []
        self._open = ""
        self._width = 0
        self._finished_lines: list[list[Segment]] = []
        self._rendered_blocks = 0
        self._open_lines: list[list[Segment]] | None = None
        self._strips: dict[int, Strip] = {}
        self._markdown_console: Console | None = None
        self._code_theme = "monokai"
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
        finished, self._open = split_finished(self._open + text)
        self._finished.extend(finished)
        self._open_lines = None
        self._strips.clear()
        self.refresh(layout=True)

    def finish(self) -> None:
        """The reply is complete: the open block becomes a finished one."""
        if self._open.strip():
            self._finished.append(self._open.strip("\n"))
        self._open = ""
        self._open_lines = None
        self._strips.clear()
        self.refresh(layout=True)

    # --- rendering -----------------------------------------------------------------------------

    def _restyle(self) -> None:
        self._markdown_console = None
        self._reset_cache()
        self.refresh(layout=True)

    def _reset_cache(self) -> None:
        self._finished_lines = []
        self._rendered_blocks = 0
        self._open_lines = None
        self._strips.clear()

    def _render_block(self, block: str, width: int) -> list[list[Segment]]:
        if self._markdown_console is None:
            theme = self.app.current_theme
            self._markdown_console = Console(
                color_system="truecolor", force_terminal=True, legacy_windows=False, theme=markdown_theme(theme)
            )
            self._code_theme = "monokai" if theme.dark else "default"
        options = self._markdown_console.options.update(width=width)
        lines = self._markdown_console.render_lines(Markdown(block, code_theme=self._code_theme), options, pad=False)
        return trim_blank_edges(lines)

    def _ensure_rendered(self, width: int) -> None:
        width = max(width, 10)
        if width != self._width:
            self._width = width
            self._reset_cache()
        while self._rendered_blocks < len(self._finished):
            if self._finished_lines:
                self._finished_lines.append([])  # a blank line between blocks
            self._finished_lines.extend(self._render_block(self._finished[self._rendered_blocks], width))
            self._rendered_blocks += 1
        if self._open_lines is None:
            self._open_lines = self._render_block(self._open, width) if self._open.strip() else []
            if self._open_lines and self._finished_lines:
                self._open_lines.insert(0, [])

    def _line_count(self) -> int:
        return len(self._finished_lines) + len(self._open_lines or [])

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._ensure_rendered(width)
        return self._line_count()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        self._ensure_rendered(width)
        strip = self._strips.get(y)
        if strip is None:
            finished = self._finished_lines
            open_lines = self._open_lines or []
            if y < len(finished):
                segments = finished[y]
            elif y - len(finished) < len(open_lines):
                segments = open_lines[y - len(finished)]
            else:
                segments = []
            base: Style = self.rich_style
            strip = Strip(Segment.apply_style(segments, base)).extend_cell_length(width, base).crop(0, width)
            self._strips[y] = strip
        return strip
