"""Reading shell text without a parser: where quotes, brackets and substitutions end.

The floor, the fallback lexer and the rule globs all need to skip over a quoted string or find
the bracket that closes ``$(``; these scanners do it the way bash reads the text.
"""

from __future__ import annotations

import contextlib
import re


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`: how the long name tables are written."""
    return frozenset(text.split())


def match_close(text: str, start: int, open_ch: str = "(", close_ch: str = ")") -> int:
    """Index just past the bracket that closes `text[start]` (an `open_ch`), quote-aware."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch == '"':
            i = skip_double(text, i)
            continue
        if ch == "`":
            end = find_backtick(text, i + 1)
            i = end + 1
            continue
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def skip_double(text: str, start: int) -> int:
    """Index just past the double-quoted string starting at `start`."""
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        if ch == "$" and text.startswith("$(", i):
            i = match_close(text, i + 1)
            continue
        if ch == "`":
            i = find_backtick(text, i + 1) + 1
            continue
        i += 1
    return n


def find_backtick(text: str, start: int) -> int:
    """Index of the backtick that closes a backquoted substitution opened before `start`."""
    i, n = start, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    return n


def split_top_commas(text: str) -> list[str]:
    """`a,{b,c},d` -> ["a", "{b,c}", "d"]: the alternatives of one brace expression."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def substitutions(raw: str) -> list[str]:
    """The command substitutions ($( ), backticks, <( )) in a raw word."""
    found: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif ch == "$" and raw.startswith("$((", i):
            i = match_close(raw, i + 1)
        elif (ch == "$" or ch in "<>") and raw.startswith("(", i + 1):
            end = match_close(raw, i + 1)
            found.append(raw[i + 2 : end - 1])
            i = end
        elif ch == "`":
            end = find_backtick(raw, i + 1)
            found.append(raw[i + 1 : end])
            i = end + 1
        else:
            i += 1
    return found


_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def ansi_c(body: str) -> str:
    """Decode the inside of $'...' (also what `echo -e` and `printf` do to their text)."""
    out, i, n = [], 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_ESCAPES:
            out.append(_ANSI_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            match = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            if match:
                out.append(chr(int(match.group(0), 16)))
                i += 2 + len(match.group(0))
            else:
                out.append("\\x")
                i += 2
        elif nxt in "uU":
            match = re.match(r"[0-9A-Fa-f]{1,8}" if nxt == "U" else r"[0-9A-Fa-f]{1,4}", body[i + 2 :])
            if match:
                with contextlib.suppress(ValueError, OverflowError):
                    out.append(chr(int(match.group(0), 16)))
                i += 2 + len(match.group(0))
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            match = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert match is not None
            out.append(chr(int(match.group(0), 8) & 0xFF))
            i += 1 + len(match.group(0))
        elif nxt == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)
