"""A text of any size read a window at a time: a file on disk (or bytes in memory) seen as lines.

Opening costs one pass that counts the line breaks of each BLOCK (C speed, nothing kept but a
count per block), so line N is found by a bisection and a walk through one block. Only the
lines asked for are read and decoded; a line longer than LINE_BYTES is shown cut. Searching
scans the bytes in CHUNKs from a position, forward or backward, and counts matches the same
way, so a 100 MB output is never held in memory. A file that grows (an output still streaming)
is followed by `refresh`.

Lines are what `text.split("\\n")` gives, less the empty one after a final line break. Bytes
that are not UTF-8 decode as U+FFFD; making a line inert for the terminal is the caller's part.
"""

from __future__ import annotations

import io
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

__all__ = ["BLOCK", "LINE_BYTES", "Match", "PagedText", "Search"]

BLOCK = 64 * 1024  # bytes per counted block of the line index
CHUNK = 1 << 20  # bytes read at a time while indexing or searching
LINE_BYTES = 4096  # of a longer line, the first this many bytes are shown
Direction = Literal["forward", "backward"]


@dataclass(frozen=True)
class Search:
    """What to find: smart case (a needle with a capital letter matches case exactly; one without
    matches either case, ASCII letters)."""

    needle: str

    @property
    def exact_case(self) -> bool:
        """A capital letter in the needle, or no letter at all (then folding case is work for nothing)."""
        return self.needle != self.needle.lower() or self.needle.lower() == self.needle.upper()

    @property
    def pattern(self) -> bytes:
        encoded = self.needle.encode()
        return encoded if self.exact_case else encoded.lower()

    def prepared(self, data: bytes) -> bytes:
        return data if self.exact_case else data.lower()


@dataclass(frozen=True)
class Match:
    """A match: where it starts (a byte offset), its line, and its column in that line's bytes."""

    offset: int
    line: int
    column: int


class PagedText:
    """Lines of `source` (a file's path, or bytes), a window at a time."""

    def __init__(self, source: Path | bytes) -> None:
        self.source = source
        self._before: list[int] = [0]  # line breaks before each whole block, and before the tail
        self._tail_breaks = 0  # line breaks in the partial block at the end
        self._size = 0
        self._ends_with_break = False
        self.refresh()

    # --- the index -----------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Take in what was appended since (a file rewritten smaller is indexed again); whether
        anything changed. A file that cannot be read reads as empty."""
        size = self._current_size()
        if size == self._size:
            return False
        if size < self._size:
            self._before, self._tail_breaks, self._size = [0], 0, 0
        whole = size // BLOCK
        with self._open() as data:
            done = len(self._before) - 1  # whole blocks already counted
            data.seek(done * BLOCK)
            while done < whole:
                chunk = data.read(min(CHUNK, (whole - done) * BLOCK))
                for start in range(0, len(chunk), BLOCK):
                    self._before.append(self._before[-1] + chunk.count(b"\n", start, start + BLOCK))
                done += len(chunk) // BLOCK
                if not chunk:
                    break
            data.seek(whole * BLOCK)
            tail = data.read(size - whole * BLOCK)
            self._tail_breaks = tail.count(b"\n")
            data.seek(max(0, size - 1))
            self._ends_with_break = size > 0 and data.read(1) == b"\n"
        self._size = size
        return True

    @property
    def size(self) -> int:
        """Bytes indexed."""
        return self._size

    @property
    def line_count(self) -> int:
        breaks = self._before[-1] + self._tail_breaks
        return breaks + (1 if self._size and not self._ends_with_break else 0)

    def line_start(self, line: int) -> int:
        """The byte offset where `line` (from 0) starts; the size past the last."""
        if line <= 0:
            return 0
        if line >= self.line_count:
            return self._size
        block = bisect_left(self._before, line) - 1  # the block holding break number `line`
        start = block * BLOCK
        with self._open() as data:
            data.seek(start)
            chunk = data.read(BLOCK)
        position = -1
        for _ in range(line - self._before[block]):
            position = chunk.find(b"\n", position + 1)
        return start + position + 1

    def line_of(self, offset: int) -> int:
        """The line that holds byte `offset`."""
        block = min(offset // BLOCK, len(self._before) - 1)
        with self._open() as data:
            data.seek(block * BLOCK)
            chunk = data.read(offset - block * BLOCK)
        return self._before[block] + chunk.count(b"\n")

    # --- reading -------------------------------------------------------------------------------

    def lines(self, first: int, count: int) -> list[str]:
        """Up to `count` lines from `first`, decoded; one past LINE_BYTES cut there, with `…`."""
        shown: list[str] = []
        line = max(0, first)
        end = min(self.line_count, line + max(0, count))
        with self._open() as data:
            position = self.line_start(line)
            while line < end:
                data.seek(position)
                chunk = data.read(max(BLOCK, LINE_BYTES + 1))
                taken, used = _split_lines(chunk, end - line, at_end=position + len(chunk) >= self._size)
                shown.extend(taken)
                line += len(taken)
                if not taken and used == 0:
                    break  # nothing more to read (the file changed under us)
                if used < 0:  # a long line: shown cut, and the next one found by the index
                    shown.append(_decode(chunk[:LINE_BYTES]) + "…")
                    line += 1
                    position = self.line_start(line)
                else:
                    position += used
        return shown

    def line_bytes(self, line: int) -> bytes:
        """One line's bytes (at most LINE_BYTES), for columns and copies."""
        start = self.line_start(line)
        with self._open() as data:
            data.seek(start)
            chunk = data.read(LINE_BYTES)
        return chunk.split(b"\n", 1)[0]

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        """The bytes from `start` to `end` (the end of the text): for a copy of the whole."""
        end = self._size if end is None else end
        with self._open() as data:
            data.seek(start)
            return data.read(max(0, end - start))

    # --- searching -----------------------------------------------------------------------------

    def find(self, search: Search, start: int, direction: Direction = "forward") -> Match | None:
        """The first match at or after byte `start` (forward), or the last one that starts before
        it (backward); None when there is none that way."""
        offset = self._find_forward(search, start) if direction == "forward" else self._find_backward(search, start)
        if offset is None:
            return None
        line = self.line_of(offset)
        return Match(offset, line, offset - self.line_start(line))

    def count(self, search: Search, end: int | None = None, start: int = 0) -> int:
        """How many matches start from byte `start` to before byte `end` (the end of the text)."""
        pattern = search.pattern
        end = self._size if end is None else min(end, self._size)
        if not pattern or end <= start:
            return 0
        total, carry = 0, b""
        with self._open() as data:
            data.seek(start)
            position = start
            while position < end:
                chunk = data.read(min(CHUNK, end - position))
                if not chunk:
                    break
                position += len(chunk)
                total += search.prepared(carry + chunk).count(pattern)
                carry = chunk[-(len(pattern) - 1) :] if len(pattern) > 1 else b""
        # a match that begins before `end` but runs past it is one of them too
        straddling = self._find_forward(search, max(start, end - len(pattern) + 1))
        return total + (1 if straddling is not None and straddling < end else 0)

    def _find_forward(self, search: Search, start: int) -> int | None:
        pattern = search.pattern
        if not pattern:
            return None
        position = max(0, start)
        with self._open() as data:
            while position < self._size:
                data.seek(position)
                window = search.prepared(data.read(CHUNK + len(pattern) - 1))
                found = window.find(pattern)
                if found >= 0:
                    return position + found
                position += CHUNK
        return None

    def _find_backward(self, search: Search, start: int) -> int | None:
        pattern = search.pattern
        if not pattern:
            return None
        end = min(start, self._size)  # a match must start before this
        with self._open() as data:
            while end > 0:
                begin = max(0, end - CHUNK)
                data.seek(begin)
                window = search.prepared(data.read(end - begin + len(pattern) - 1))
                found = window.rfind(pattern)  # the window ends len(pattern) - 1 past `end`
                if found >= 0:
                    return begin + found
                end = begin
        return None

    # --- the source ----------------------------------------------------------------------------

    def _current_size(self) -> int:
        if isinstance(self.source, bytes):
            return len(self.source)
        try:
            return self.source.stat().st_size
        except OSError:
            return 0

    @contextmanager
    def _open(self) -> Iterator[BinaryIO]:
        if isinstance(self.source, bytes):
            yield io.BytesIO(self.source)
            return
        try:
            handle: BinaryIO = self.source.open("rb")
        except OSError:
            yield io.BytesIO(b"")
            return
        with handle:
            yield handle


def _split_lines(chunk: bytes, wanted: int, *, at_end: bool) -> tuple[list[str], int]:
    """The whole lines at the start of `chunk` (at most `wanted`) and the bytes they took; -1 for
    the bytes when the chunk starts with a line longer than LINE_BYTES. At the end of the text,
    a last line without a break is whole too."""
    lines: list[str] = []
    used = 0
    while len(lines) < wanted:
        brk = chunk.find(b"\n", used)
        end = len(chunk) if brk < 0 else brk
        if end - used > LINE_BYTES:
            return (lines, -1) if not lines else (lines, used)  # a long line: cut, or first next time
        if brk < 0:
            if at_end and used < len(chunk):  # the last line, without a break
                lines.append(_decode(chunk[used:]))
                used = len(chunk)
            break
        lines.append(_decode(chunk[used:brk]))
        used = brk + 1
    return lines, used


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
