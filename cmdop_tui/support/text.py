"""Make untrusted program output safe to show in a terminal and small enough to send to a model.

Everything a tool prints comes from the machine, not from us: a `cat` of a hostile file or a
command's output may carry escape sequences that retitle the window, write the clipboard
(OSC 52) or move the cursor over the UI. Everything shown or sent passes through
`strip_terminal_sequences`, so none of that reaches the terminal.

Convention for control characters: complete escape sequences (CSI, OSC, DCS, SOS, PM, APC and
two-character ESC sequences) are removed; every other control character except `\\n` and `\\t`
is shown in `cat -v` notation: C0 as caret notation (`^[` for a bare ESC, `^G` for BEL, `^H`
for backspace), DEL as `^?`, C1 (U+0080-U+009F) as `M-^@`..`M-^_`. `\\r\\n` and a lone `\\r` become
`\\n`. A sequence that never completes is not removed: its ESC shows as `^[`, the rest as text.
"""

from __future__ import annotations

import codecs
import re
from typing import Literal

__all__ = [
    "BoundedBuffer",
    "StreamSanitizer",
    "Utf8StreamDecoder",
    "cut_note",
    "decode_output",
    "inert_line",
    "strip_terminal_sequences",
    "truncate_middle",
]

# All patterns use possessive quantifiers and character classes that stop at the next ESC, so
# each match attempt scans at most to the next ESC: the whole pass is linear in the input.
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*+[ -/]*+[@-~]"  # CSI: parameters, intermediates, final byte
    r"|\x1b[\]PX^_][^\x07\x18\x1a\x1b\x9c]*+(?:\x07|\x1b\\|\x9c)"  # OSC/DCS/SOS/PM/APC strings
    r"|\x1b(?:[ -/]++[0-~]|[0-OQ-WYZ\\`-~])"  # other ESC sequences (nF, Fp, Fe, Fs)
)
# The start of a sequence that may complete in the next chunk, or a `\r` that may pair with `\n`.
_PARTIAL_TAIL = re.compile(r"\x1b(?:\[[0-?]*+[ -/]*+|[\]PX^_][^\x07\x18\x1a\x1b\x9c]*+\x1b?|[ -/]*+)\Z|\r\Z")
# Bidirectional overrides and isolates reorder how text *looks* ("Trojan Source"): shown as codes.
_BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _control_notation() -> list[tuple[str, str]]:
    """The `cat -v` spelling of every control character that is not `\\n` or `\\t`."""
    table = [(chr(code), "^" + chr(code + 0x40)) for code in range(0x20) if chr(code) not in "\n\t"]
    table.append(("\x7f", "^?"))
    table.extend((chr(code), "M-^" + chr(code - 0x80 + 0x40)) for code in range(0x80, 0xA0))
    table.extend((chr(code), f"<U+{code:04X}>") for code in _BIDI_CONTROLS)
    return table


_CONTROL_NOTATION = _control_notation()


def decode_output(data: bytes) -> str:
    """Decode program output as UTF-8; invalid bytes become U+FFFD instead of failing."""
    return data.decode("utf-8", errors="replace")


class Utf8StreamDecoder:
    """Decode a chunked byte stream as UTF-8.

    A character split across two chunks is held back until its last byte arrives, so it
    decodes whole instead of as two replacement characters.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def decode(self, data: bytes) -> str:
        """Text for `data`, minus any incomplete character at its end (kept for the next chunk)."""
        return self._decoder.decode(data, final=False)

    def flush(self) -> str:
        """What is still held back, at the end of the stream (incomplete bytes become U+FFFD)."""
        return self._decoder.decode(b"", final=True)


def strip_terminal_sequences(text: str) -> str:
    """Remove escape sequences and make every other control character visible and inert.

    The result contains no control characters except `\\n` and `\\t`, so it can be written to a
    terminal or a widget without side effects. See the module docstring for the notation.
    """
    if not _UNSAFE.search(text):
        return text
    text = _SEQUENCE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # One C-speed `replace` per control character present beats `str.translate`, whose
    # multi-character mappings cost a dict lookup per character (4x slower on 10 MB).
    for char, notation in _CONTROL_NOTATION:
        if char in text:
            text = text.replace(char, notation)
    return text


def inert_line(text: str) -> str:
    """`strip_terminal_sequences` for text that must stay on one line (file names, grep hits).

    `\\r` and `\\n` are shown as `^M` and `^J` instead of breaking the line.
    """
    return strip_terminal_sequences(text.replace("\r", "^M").replace("\n", "^J"))


class StreamSanitizer:
    """Decode and neutralize a chunked byte stream for live display.

    Holds back an incomplete UTF-8 character, an escape sequence that may complete in the next
    chunk (at most `max_pending` characters, after which it is shown as inert text) and a
    trailing `\\r` (so a `\\r\\n` split across chunks gives one newline, not two).
    """

    def __init__(self, max_pending: int = 4096) -> None:
        self._decoder = Utf8StreamDecoder()
        self._pending = ""
        self._max_pending = max_pending

    def feed(self, data: bytes) -> str:
        """Inert text for `data` (possibly empty when everything is held back)."""
        text = self._pending + self._decoder.decode(data)
        window_start = max(0, len(text) - self._max_pending)
        match = _PARTIAL_TAIL.search(text, window_start)
        cut = match.start() if match else len(text)
        self._pending = text[cut:]
        return strip_terminal_sequences(text[:cut])

    def flush(self) -> str:
        """Inert text for everything still held back; call once at the end of the stream."""
        text = self._pending + self._decoder.flush()
        self._pending = ""
        return strip_terminal_sequences(text)


def cut_note(count: int, unit: str) -> str:
    """The one-line marker that stands where text was cut out, e.g. `[... 1,234 bytes cut ...]`."""
    return f"[... {count:,} {unit} cut ...]"


def _join_around_cut(head: str, tail: str, count: int, unit: str) -> str:
    """Head, the cut note on a line of its own, then tail."""
    separator = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{separator}{cut_note(count, unit)}\n{tail}"


def truncate_middle(text: str, limit: int, *, unit: Literal["characters", "lines"] = "characters") -> str:
    """Keep the first and last `limit // 2`-ish characters (or lines) and note what was cut.

    The middle goes because the start of output says what ran and the end says how it ended
    (errors, summaries). At most `limit` units of the original are kept, plus the note line.
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if unit == "lines":
        return _truncate_lines(text, limit)
    if unit != "characters":
        raise ValueError(f"unknown unit {unit!r}")
    if len(text) <= limit:
        return text
    head_size = limit // 2
    tail_size = limit - head_size
    tail = text[len(text) - tail_size :] if tail_size else ""
    return _join_around_cut(text[:head_size], tail, len(text) - limit, unit)


def _truncate_lines(text: str, limit: int) -> str:
    """`truncate_middle` counting lines instead of characters."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= limit:
        return text
    head_size = limit // 2
    tail_size = limit - head_size
    tail = lines[len(lines) - tail_size :] if tail_size else []
    return _join_around_cut("".join(lines[:head_size]), "".join(tail), len(lines) - limit, "lines")


class BoundedBuffer:
    """Collect a byte stream in bounded memory: its first half and last half of `limit_bytes`.

    A command may print gigabytes; only the start and the end are worth keeping, and memory must
    not grow with the output. `total` remembers how much arrived so the cut can be reported.
    """

    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes < 0:
            raise ValueError("limit_bytes must be >= 0")
        self.limit = limit_bytes
        self.total = 0
        self._head_cap = limit_bytes // 2
        self._tail_cap = limit_bytes - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()

    @property
    def truncated(self) -> bool:
        """Whether bytes have been dropped from the middle."""
        return self.total > self.limit

    @property
    def kept_bytes(self) -> int:
        """How many bytes are held in memory right now (never more than `limit`)."""
        return len(self._head) + len(self._tail)

    def append(self, data: bytes) -> None:
        """Add the next chunk of the stream."""
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or not self._tail_cap:
            return
        self._tail += data[-self._tail_cap :]
        excess = len(self._tail) - self._tail_cap
        if excess > 0:
            del self._tail[:excess]

    def render(self, limit: int | None = None) -> str:
        """The stream as inert text; past `limit` bytes (default: all kept) the middle is cut.

        `limit` may only shrink what is shown (it is capped at the buffer's own limit). A
        character or escape sequence broken by the cut shows as inert text, never as a sequence.
        """
        limit = self.limit if limit is None else min(limit, self.limit)
        if self.total <= limit:
            return strip_terminal_sequences(decode_output(bytes(self._head + self._tail)))
        head_size = limit // 2
        tail_size = limit - head_size
        head = Utf8StreamDecoder().decode(bytes(self._head[:head_size]))
        tail = decode_output(_skip_continuation_bytes(self._last(tail_size)))
        return _join_around_cut(
            strip_terminal_sequences(head),
            strip_terminal_sequences(tail),
            self.total - limit,
            "bytes",
        )

    def _last(self, size: int) -> bytes:
        """The last `size` bytes of the stream (all available when `size <= limit`)."""
        if size <= 0:
            return b""
        if len(self._tail) >= size:
            return bytes(self._tail[-size:])
        return bytes(self._head[len(self._head) - (size - len(self._tail)) :] + self._tail)


def _skip_continuation_bytes(data: bytes) -> bytes:
    """Drop the tail end of a UTF-8 character the cut split (at most 3 continuation bytes)."""
    start = 0
    while start < min(3, len(data)) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]
