"""What a change to a text file is: an exact-string edit of its bytes, and the diff a person reads.

An edit keeps every byte it does not replace: the encoding (UTF-8, UTF-8 with a byte-order mark,
else Latin-1, which maps each byte to one character and back), the line endings (in a file whose
lines end in CRLF the model's `\\n` means `\\r\\n`) and everything outside the match. A file with
a NUL byte is binary and is not edited. The old string must occur exactly once, unless every
occurrence is to be replaced; otherwise the edit fails saying how many there are, and where.

The diff is unified (`diff -u`), each line made inert (support/text.py) so file content cannot put
escape sequences on a terminal, and cut to a size a person can read. Only the lines between the
first and the last difference are compared line by line, so the diff of one edit in a 10 MB file
costs about what the edit does.
"""

from __future__ import annotations

import codecs
import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .text import inert_line

__all__ = [
    "DIFF_MAX_LINES",
    "DecodedText",
    "Edit",
    "apply_edit",
    "decode_text",
    "diff_counts",
    "unified_diff",
]

DIFF_CONTEXT = 3  # unchanged lines shown around a change
DIFF_MAX_LINES = 2_000  # lines of a diff kept; a note says how many more there were
DIFF_MAX_COMPARED = 20_000  # changed regions longer than this (in lines) are shown as one block
MATCH_LINES_SHOWN = 10  # line numbers named in a message about several matches
_BLOCK = 64 * 1024  # characters compared at a time when looking for the first difference
_LINE_NUMBERS = re.compile(r"^\s*\d+\t")  # read_file's `cat -n` prefix, copied by mistake
_HINT_MIN_CHARS = 8  # a shorter first line (a brace) is too common to point anywhere
_LABELS = {"utf-8": "UTF-8", "latin-1": "Latin-1"}
Opcode = tuple[str, int, int, int, int]


# --- decoding ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedText:
    """A text file's content as characters, and how to turn characters back into its bytes."""

    text: str
    encoding: str  # "utf-8" or "latin-1"
    bom: bytes = b""

    @property
    def label(self) -> str:
        return "UTF-8 with a byte-order mark" if self.bom else _LABELS.get(self.encoding, self.encoding)

    def encode(self, text: str) -> bytes:
        """`text` as this file's bytes; UnicodeEncodeError when the encoding cannot hold it."""
        return self.bom + text.encode(self.encoding)


def decode_text(data: bytes) -> DecodedText | None:
    """The file's text, or None for a binary file (one with a NUL byte).

    UTF-8 (with or without a byte-order mark) when it is valid UTF-8, else Latin-1: both give
    back exactly the bytes they read.
    """
    if b"\0" in data:
        return None
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        return DecodedText(data[len(bom) :].decode("utf-8"), "utf-8", bom)
    except UnicodeDecodeError:
        return DecodedText(data.decode("latin-1"), "latin-1")


# --- the edit ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """The outcome of an edit: the file's new bytes (and text before and after), or why not."""

    data: bytes = b""
    before: str = ""
    after: str = ""
    count: int = 0
    lines: tuple[int, ...] = ()  # where the first replacements start, 1-based, in the old file
    error: str | None = None

    def summary(self, name: str) -> str:
        """What the model is told when it worked."""
        times = "1 occurrence" if self.count == 1 else f"{self.count:,} occurrences"
        where = ", ".join(f"{line:,}" for line in self.lines)
        more = ", ..." if self.count > MATCH_LINES_SHOWN else ""
        label = "line" if self.count == 1 else "lines"
        return f"edited {name}: replaced {times} ({label} {where}{more})"


def apply_edit(data: bytes, old: str, new: str, *, replace_all: bool = False, name: str = "the file") -> Edit:
    """Replace `old` with `new` in a file's bytes; `name` is how messages call the file.

    Fails (`Edit.error`) for an empty `old`, `old == new`, a binary file, no match, several
    matches without `replace_all`, or a `new` the file's encoding cannot hold.
    """
    if not old:
        return Edit(error="old_string is empty: edit_file replaces text that is there (write_file creates a file)")
    if old == new:
        return Edit(error="old_string and new_string are the same: the edit would change nothing")
    decoded = decode_text(data)
    if decoded is None:
        return Edit(error=f"{name} is a binary file ({len(data):,} bytes); edit_file edits text files only")
    text = decoded.text
    old, new, count = _matching(text, old, new)
    if count == 0:
        return Edit(error=_not_found(text, old, name))
    lines = _match_lines(text, old, MATCH_LINES_SHOWN if (replace_all or count > 1) else 2)
    if count == 1 and len(lines) > 1 and not replace_all:  # overlapping occurrences ("aa" in "aaa"): ambiguous too
        count = 2
    if count > 1 and not replace_all:
        distinct = dict.fromkeys(lines)  # overlapping occurrences may start on one line
        shown = ", ".join(f"{line:,}" for line in distinct) + (", ..." if count > len(lines) else "")
        return Edit(
            error=f"old_string matches {count:,} times in {name} (at lines {shown}); include more of the "
            "surrounding lines to pick one, or set replace_all to replace every one. The file was not changed."
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    try:
        encoded = decoded.encode(after)
    except UnicodeEncodeError as exc:
        bad = inert_line(exc.object[exc.start : exc.end])
        return Edit(error=f"{name} is {decoded.label}, which cannot hold {bad!r} from new_string; it was not changed")
    return Edit(encoded, text, after, count, tuple(dict.fromkeys(lines if replace_all else lines[:1])))


def _to_crlf(text: str) -> str:
    return re.sub(r"(?<!\r)\n", "\r\n", text)


def _mostly_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 > text.count("\n")


def _matching(text: str, old: str, new: str) -> tuple[str, str, int]:
    """`old` and `new` as this file spells line endings, and how often `old` occurs.

    In a file whose lines end mostly in CRLF, the model's `\\n` means `\\r\\n`: its text is tried
    that way first, then as it came (a file of mixed endings may have a match either way).
    """
    if "\n" in old + new and _mostly_crlf(text):
        old_crlf, new_crlf = _to_crlf(old), _to_crlf(new)
        count = text.count(old_crlf)
        if count or old_crlf == old:
            return old_crlf, new_crlf, count
    return old, new, text.count(old)


def _match_lines(text: str, old: str, most: int) -> tuple[int, ...]:
    """The 1-based lines where the first `most` occurrences of `old` start (overlaps included)."""
    lines: list[int] = []
    line, counted, at = 1, 0, text.find(old)
    while at != -1 and len(lines) < most:
        line += text.count("\n", counted, at)
        counted = at
        lines.append(line)
        at = text.find(old, at + 1)
    return tuple(lines)


def _not_found(text: str, old: str, name: str) -> str:
    """Why there is no match, with a hint at the likely cause."""
    message = f"old_string was not found in {name}; the file was not changed."
    if _LINE_NUMBERS.match(old):
        return message + " It seems to start with read_file's line numbers: leave them out."
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    lines = _match_lines(text, first, 3) if len(first) >= _HINT_MIN_CHARS else ()
    if lines:
        where = ", ".join(f"{line:,}" for line in lines)
        return (
            message + f" Its first line appears at line {where}, so the rest differs (whitespace, indentation, "
            "other lines): read the file there and copy the text exactly."
        )
    return message + " Read the file and copy the text exactly, whitespace included."


# --- the diff ----------------------------------------------------------------------------------


def unified_diff(before: str, after: str, path: str, *, created: bool = False, max_lines: int = DIFF_MAX_LINES) -> str:
    """`diff -u` of two texts, inert, at most `max_lines` lines (then a note); empty when equal.

    `created`: the file does not exist yet (the old side is /dev/null).
    """
    if before == after and not created:
        return ""
    start = _common_prefix(before, after)
    start = before.rfind("\n", 0, start) + 1  # back to the start of a line both texts have
    end_before, end_after = _common_suffix_lines(before, after, start)
    context_before = _last_lines(before[:start], DIFF_CONTEXT)
    context_after = _first_lines(before[end_before:], DIFF_CONTEXT)
    base = before.count("\n", 0, start) - len(context_before)  # the 0-based line of the first one shown
    old = context_before + _lines(before[start:end_before]) + context_after
    new = context_before + _lines(after[start:end_after]) + context_after
    shown = inert_line(path)
    body = list(_hunks(old, new, base))
    notes = _ending_note(before, after)
    head = ["--- /dev/null" if created else f"--- {shown}", f"+++ {shown}"]
    lines = [*notes, *head, *body]
    if len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = [*lines[:max_lines], f"[... {hidden:,} more lines of the diff not shown]"]
    return "\n".join(lines)


def diff_counts(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) in a diff made by `unified_diff` (shown lines only)."""
    added = removed = 0
    in_hunk = False
    for line in diff.split("\n"):
        if line.startswith("@@ "):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed


def _common_prefix(a: str, b: str) -> int:
    """How many characters `a` and `b` share at the start (compared a block at a time)."""
    limit = min(len(a), len(b))
    at = 0
    while at < limit:
        end = min(at + _BLOCK, limit)
        if a[at:end] != b[at:end]:
            low, high = at, end  # a[:low] == b[:low]; they differ before `high`
            while high - low > 1:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            return low
        at = end
    return limit


def _common_suffix(a: str, b: str, room: int) -> int:
    """How many characters `a` and `b` share at the end, at most `room`."""
    la, lb = len(a), len(b)
    at = 0
    while at < room:
        end = min(at + _BLOCK, room)
        if a[la - end : la - at] != b[lb - end : lb - at]:
            low, high = at, end
            while high - low > 1:
                middle = (low + high) // 2
                if a[la - middle : la - low] == b[lb - middle : lb - low]:
                    low = middle
                else:
                    high = middle
            return low
        at = end
    return room


def _common_suffix_lines(before: str, after: str, start: int) -> tuple[int, int]:
    """Where the whole lines both texts end with begin, in each (never before `start`)."""
    shared = _common_suffix(before, after, min(len(before), len(after)) - start)
    at_before, at_after = len(before) - shared, len(after) - shared
    if shared == 0:
        return len(before), len(after)
    if _line_start(before, at_before) and _line_start(after, at_after):
        return at_before, at_after
    newline = before.find("\n", at_before)  # the shared part's first whole line starts after it
    if newline == -1:
        return len(before), len(after)
    skip = newline + 1 - at_before
    return at_before + skip, at_after + skip


def _line_start(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] == "\n"


def _lines(text: str) -> list[str]:
    """Lines with their `\\n` (the last may have none); only `\\n` ends a line."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _last_lines(text: str, count: int) -> list[str]:
    at = len(text)
    for _ in range(count + 1):
        at = text.rfind("\n", 0, at)
        if at == -1:
            break
    return _lines(text[at + 1 :])[-count:] if count else []


def _first_lines(text: str, count: int) -> list[str]:
    at = -1
    for _ in range(count):
        at = text.find("\n", at + 1)
        if at == -1:
            return _lines(text)
    return _lines(text[: at + 1])


def _hunks(old: list[str], new: list[str], base: int) -> Iterator[str]:
    """The hunks of a diff of two line lists; `base` is the file line number of their first line."""
    if len(old) + len(new) > DIFF_MAX_COMPARED:  # too long to compare: line against line, or one block
        groups = _grouped(_aligned(old, new) if len(old) == len(new) else _one_block(old, new))
    else:
        matcher = difflib.SequenceMatcher(None, old, new)
        groups = list(matcher.get_grouped_opcodes(DIFF_CONTEXT))
    for group in groups:
        first, last = group[0], group[-1]
        yield (f"@@ -{_range(base + first[1], last[2] - first[1])} +{_range(base + first[3], last[4] - first[3])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from _shown(" ", old[i1:i2])
                continue
            yield from _shown("-", old[i1:i2])
            yield from _shown("+", new[j1:j2])


def _aligned(old: list[str], new: list[str]) -> list[Opcode]:
    """Line i against line i (as many lines each side): runs of equal and of changed lines."""
    codes: list[Opcode] = []
    at = 0
    while at < len(old):
        same = old[at] == new[at]
        end = at + 1
        while end < len(old) and (old[end] == new[end]) == same:
            end += 1
        codes.append(("equal" if same else "replace", at, end, at, end))
        at = end
    return codes


def _grouped(codes: list[Opcode], context: int = DIFF_CONTEXT) -> list[list[Opcode]]:
    """Changes with `context` equal lines around them, in hunks (difflib's grouping)."""
    if codes and codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes and codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _one_block(old: list[str], new: list[str]) -> list[Opcode]:
    """A region too long to compare line by line: its context, then all out and all in."""
    head = 0
    while head < min(len(old), len(new), DIFF_CONTEXT) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new), DIFF_CONTEXT) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    codes.append(("replace", head, len(old) - tail, head, len(new) - tail))
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return codes


def _range(start: int, length: int) -> str:
    """A hunk header's range, as `diff -u` writes it (an empty range names the line before)."""
    beginning = start + 1 if length else start
    return f"{beginning}" if length == 1 else f"{beginning},{length}"


def _shown(mark: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        body = line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")
        yield mark + inert_line(body)
        if not line.endswith("\n"):
            yield "\\ No newline at end of file"


def _ending_note(before: str, after: str) -> list[str]:
    """A note when the texts end their lines differently (every line then differs)."""
    styles = [("CRLF" if _mostly_crlf(text) else "LF") if "\n" in text else None for text in (before, after)]
    if None in styles or styles[0] == styles[1]:
        return []
    return [f"[line endings change: {styles[0]} -> {styles[1]}]"]
