"""Brace expansion as bash does it: first of all the expansions, on the word as written.

``rm -rf ~/{.,}*`` is ``rm -rf ~/.* ~/*``; ``rm -rf {~,/tmp}`` is ``rm -rf ~ /tmp`` (the tilde
of each alternative is then expanded, as bash does). Braces inside quotes, after ``$`` (``${x}``)
or inside a substitution are not expanded; ``{a,b}``, ``{1..9}``, ``{a..z}``, ``{1..9..2}``
and nested braces are. The alternatives are bounded (:data:`.context.MAX_CANDIDATES`).
"""

from __future__ import annotations

import re

from .context import MAX_CANDIDATES
from .scanning import find_backtick, match_close, skip_double

_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([a-zA-Z])\.\.([a-zA-Z])(?:\.\.(-?\d+))?")


def _skip(raw: str, i: int) -> int | None:
    """Index just past what starts at `i` and holds no brace to expand (a quote, an escape, a
    `${...}`, a substitution), or None when a plain character starts there."""
    ch = raw[i]
    if ch == "\\":
        return i + 2
    if ch == "'":
        end = raw.find("'", i + 1)
        return len(raw) if end < 0 else end + 1
    if ch == '"':
        return skip_double(raw, i)
    if ch == "`":
        return find_backtick(raw, i + 1) + 1
    if ch == "$" and raw.startswith(("${", "$("), i):
        return match_close(raw, i + 1, raw[i + 1], "}" if raw[i + 1] == "{" else ")")
    if ch in "<>" and raw.startswith("(", i + 1):
        return match_close(raw, i + 1)
    return None


def _alternatives(raw: str, start: int) -> tuple[int, list[str]] | None:
    """The brace opened at `start`: (index past its `}`, its alternatives as written), or None
    when it is no brace expression (no top-level comma, no sequence, never closed)."""
    depth, i, n = 0, start, len(raw)
    pieces: list[str] = []
    begin = start + 1
    while i < n:
        skipped = _skip(raw, i)
        if skipped is not None:
            i = skipped
            continue
        ch = raw[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                pieces.append(raw[begin:i])
                return (i + 1, pieces) if len(pieces) > 1 else _sequence(raw[start + 1 : i], i + 1)
        elif ch == "," and depth == 1:
            pieces.append(raw[begin:i])
            begin = i + 1
        i += 1
    return None


def _sequence(inner: str, end: int) -> tuple[int, list[str]] | None:
    """{1..5}, {5..1}, {a..e}, {1..9..2}: the values, bounded."""
    match = _SEQUENCE.fullmatch(inner)
    if match is None:
        return None
    if match.group(1) is not None:
        first, last, step = int(match.group(1)), int(match.group(2)), abs(int(match.group(3) or 1)) or 1
        direction = step if last >= first else -step
        values = [str(v) for v in range(first, last + (1 if direction > 0 else -1), direction)]
    else:
        first_ch, last_ch, step = ord(match.group(4)), ord(match.group(5)), abs(int(match.group(6) or 1)) or 1
        direction = step if last_ch >= first_ch else -step
        values = [chr(v) for v in range(first_ch, last_ch + (1 if direction > 0 else -1), direction)]
    return end, values[:MAX_CANDIDATES]


def brace_words(raw: str) -> list[str]:
    """The words `raw` (a word as written) becomes by brace expansion, still as written (quotes
    and `$` kept for the expansions that follow); `[raw]` when it has none."""
    if "{" not in raw:
        return [raw]
    i, n = 0, len(raw)
    while i < n:
        skipped = _skip(raw, i)
        if skipped is not None:
            i = skipped
            continue
        if raw[i] == "{":
            found = _alternatives(raw, i)
            if found is not None:
                end, options = found
                out: list[str] = []
                for option in options:
                    for word in brace_words(raw[:i] + option + raw[end:]):
                        if word not in out:
                            out.append(word)
                        if len(out) >= MAX_CANDIDATES:
                            return out
                return out
        i += 1
    return [raw]
