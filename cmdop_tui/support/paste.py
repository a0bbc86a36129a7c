"""A bracketed paste taken whole from the terminal's input, before any of it can be read as keys.

With bracketed paste on, a terminal wraps what is pasted in `ESC[200~` ... `ESC[201~`. Textual's
parser reads an ESC inside a paste as the start of a key sequence: a coloured log line's
`ESC[31m` turns the rest of the paste into key presses, and its `\\r` into Enter, which sends the
prompt. So the driver hands its input to a `PasteSplitter` first: text outside a paste goes on to
the parser, a whole paste comes out as one `Pasted` value, made inert (`inert_paste`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cmdop_tui.support.text import strip_terminal_sequences

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
# A paste whose end marker never comes (a terminal that dropped it) ends after this long without
# input, so the keyboard is never lost for good; a paste over a slow link pauses far less.
PASTE_IDLE_S = 3.0


def inert_paste(text: str) -> str:
    """Pasted text as text: escape sequences removed, other controls shown (`^G`), CR-LF and a
    lone CR as one newline. Nothing in it can act as a key or reach the terminal."""
    return strip_terminal_sequences(text)


@dataclass(frozen=True)
class Pasted:
    """One whole bracketed paste, already inert."""

    text: str


def _marker_prefix_length(data: str, marker: str, shortest: int) -> int:
    """How many characters at the end of `data` could begin `marker` (at least `shortest`)."""
    for length in range(min(len(marker) - 1, len(data)), shortest - 1, -1):
        if data.endswith(marker[:length]):
            return length
    return 0


class PasteSplitter:
    """Splits the terminal's input into text for the key parser and whole pastes.

    A marker split across two reads is held back until the next read. Outside a paste only a
    prefix of two characters or more is held (`ESC[`): a lone ESC is the Esc key and goes on at
    once, as the parser must time it.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held = ""
        self._pasting = False
        self._paste: list[str] = []
        self._last_input = 0.0

    @property
    def pending(self) -> bool:
        """Something is held back: the caller should call `idle` soon."""
        return bool(self._held) or self._pasting

    def feed(self, data: str) -> list[str | Pasted]:
        """What `data` (with what was held back) amounts to, in order."""
        self._last_input = self._clock()
        data, self._held = self._held + data, ""
        pieces: list[str | Pasted] = []
        while data:
            data = self._in_paste(data, pieces) if self._pasting else self._outside(data, pieces)
        return pieces

    def idle(self) -> list[str | Pasted]:
        """Nothing arrived for a while: a held-back prefix was only keys; a paste left open for
        `PASTE_IDLE_S` ends with what it has."""
        if not self._pasting:
            held, self._held = self._held, ""
            return [held] if held else []
        if self._clock() - self._last_input < PASTE_IDLE_S:
            return []
        self._paste.append(self._held)
        self._held = ""
        return [self._end_paste()]

    def _outside(self, data: str, pieces: list[str | Pasted]) -> str:
        start = data.find(PASTE_START)
        if start < 0:
            keep = _marker_prefix_length(data, PASTE_START, shortest=2)
            keys, self._held = data[: len(data) - keep], data[len(data) - keep :]
            if keys:
                pieces.append(keys)
            return ""
        if start:
            pieces.append(data[:start])
        self._pasting = True
        return data[start + len(PASTE_START) :]

    def _in_paste(self, data: str, pieces: list[str | Pasted]) -> str:
        end = data.find(PASTE_END)
        if end < 0:
            keep = _marker_prefix_length(data, PASTE_END, shortest=1)
            self._paste.append(data[: len(data) - keep])
            self._held = data[len(data) - keep :]
            return ""
        self._paste.append(data[:end])
        pieces.append(self._end_paste())
        return data[end + len(PASTE_END) :]

    def _end_paste(self) -> Pasted:
        text = "".join(self._paste)
        self._paste.clear()
        self._pasting = False
        return Pasted(inert_paste(text.replace("\x00", "")))
