"""Where the bytes a TUI writes go: frames, bytes per frame, and the regions each frame touches.

The pty answers the app's query for synchronized output (tests/support/pty_app.py), so each frame comes
between `ESC[?2026h` and `ESC[?2026l`. Inside a frame every write starts with a cursor move
(`ESC[row;colH`); its bytes are charged to the region of the screen it lands in, found from
what the screen shows (the side panels' top border, the status line, the prompt, the footer).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

FRAME_START = b"\x1b[?2026h"
MOVE = re.compile(rb"\x1b\[(\d+);(\d+)H")
REGIONS = ("chat", "side panels", "status line", "prompt", "footer", "cursor")


@dataclass(frozen=True)
class Layout:
    side_x: int | None  # first column of the side panels; None when they are folded away
    status_row: int
    footer_row: int

    def region(self, row: int, column: int) -> str:
        if row == self.footer_row:
            return "footer"
        if row == self.status_row:
            return "status line"
        if row > self.status_row:
            return "prompt"
        return "side panels" if self.side_x is not None and column >= self.side_x else "chat"


def layout_of(screen_rows: list[str], model: str = "claude-") -> Layout:
    """The regions of the app's screen, read off what it shows."""
    # the lowest row naming the model (at 80 columns the status line may leave out the turn count)
    status = max(row for row, text in enumerate(screen_rows) if model in text)
    top = screen_rows[0]
    side_x = top.index("╭─ Machines") if "╭─ Machines" in top else None
    return Layout(side_x, status, len(screen_rows) - 1)


@dataclass
class FrameStats:
    seconds: float
    frames: int = 0
    bytes: int = 0
    by_region: Counter[str] = field(default_factory=Counter)  # bytes
    frames_touching: Counter[str] = field(default_factory=Counter)

    def report(self, per: int | None = None, unit: str = "") -> str:
        fps = self.frames / self.seconds if self.seconds else 0.0
        per_frame = self.bytes / self.frames if self.frames else 0.0
        lines = [f"{self.frames} frames in {self.seconds:.1f} s ({fps:.1f}/s), {per_frame:,.0f} bytes a frame"]
        if per:
            lines[0] += f", {self.bytes / per:.1f} bytes a {unit}"
        for region in REGIONS:
            if self.by_region[region] or self.frames_touching[region]:
                share = 100 * self.by_region[region] / max(self.bytes, 1)
                touched = 100 * self.frames_touching[region] / max(self.frames, 1)
                lines.append(f"    {region:12s} {share:5.1f} % of bytes, in {touched:5.1f} % of frames")
        return "\n".join(lines)


def attribute(output: bytes, layout: Layout, seconds: float) -> FrameStats:
    """Count the frames in `output` and charge each write to the region it lands in."""
    stats = FrameStats(seconds, bytes=len(output))
    for frame in output.split(FRAME_START)[1:]:
        stats.frames += 1
        touched: set[str] = set()
        moves = list(MOVE.finditer(frame))
        for index, move in enumerate(moves):
            end = moves[index + 1].start() if index + 1 < len(moves) else len(frame)
            written = frame[move.end() : end]
            region = layout.region(int(move[1]) - 1, int(move[2]) - 1)
            if not written.replace(b"\x1b[?2026l", b""):  # a move and nothing more: where the cursor rests
                region = "cursor"
            stats.by_region[region] += end - move.start()
            touched.add(region)
        stats.frames_touching.update(touched)
    return stats
