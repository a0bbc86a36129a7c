"""Lines folded to a width without cutting a word: at spaces, a long path at its slashes, and
continuation lines indented (a hanging indent) so a table's second column stays a column.

A word is split only when it alone is wider than the room; a path (`/a/b/c`) then breaks after
one of its `/`, never inside a name, unless a single name is itself wider than the room.
"""

from __future__ import annotations

import re

MIN_ROOM = 12  # below this a hanging indent would leave too little room: the hang shrinks
TABLE_GAP = re.compile(r"\S( {2,})(?=\S)")  # a row's first column ends with two spaces or more


def hang_of(line: str) -> int:
    """Where the continuation of `line` starts: under a table row's second column (after its
    first gap of two spaces or more), else two columns in from the line's own indent."""
    indent = len(line) - len(line.lstrip(" "))
    gap = TABLE_GAP.search(line, indent)
    return gap.end(1) if gap else indent + 2


def fold(line: str, width: int, hang: int | None = None) -> list[str]:
    """`line` in rows of at most `width` cells, continuation rows indented by `hang` (by
    `hang_of(line)` when None). Spaces inside a row are kept as written (a table's padding)."""
    if width <= 0 or len(line) <= width:
        return [line]
    hang = hang_of(line) if hang is None else hang
    if width - hang < MIN_ROOM:
        hang = min(len(line) - len(line.lstrip(" ")), max(width - MIN_ROOM, 0))
    rows: list[str] = []
    row = ""
    for token in re.findall(r" +|[^ ]+", line):
        if token.startswith(" "):
            row = row if rows and not row.strip() else row + token  # a break swallows the spaces at it
            continue
        if len(row) + len(token) <= width:
            row += token
            continue
        if row.strip():
            rows.append(row.rstrip())
            row = " " * hang
        while len(row) + len(token) > width:  # alone, still too wide: a path breaks after a slash
            room = max(width - len(row), 1)
            cut = token.rfind("/", 0, room) + 1 or room  # a single name wider than the room: cut
            rows.append(row + token[:cut])
            row, token = " " * hang, token[cut:]
        row += token
    rows.append(row.rstrip())
    return rows


def fit_words(text: str, width: int) -> str:
    """`text` in at most `width` cells: whole when it fits, else cut after its last whole word
    with ` …`, or a path after one of its `/` (`/etc/nginx/…`); when not even the first word
    fits, `…` alone: a word is never shown cut."""
    if len(text) <= width:
        return text
    if width < 2:
        return "…"[:width]
    head = text[: width - 1]
    space = head.rstrip().rfind(" ")
    if space > 0:
        return f"{head[:space].rstrip()} …"
    slash = head.rfind("/")
    return f"{head[: slash + 1]}…" if slash > 0 else "…"
