"""Textual's Linux driver, with a lone Esc delivered promptly.

A terminal sends Esc as the single byte that also starts every key sequence, so the parser waits
ESCDELAY to tell them apart. Textual's input thread only lets the parser check that wait when its
`select` returns, every 100 ms, so Esc (our Stop key) could take over 100 ms to arrive. This input
loop is Textual's, except that while an escape is pending it wakes after ESCDELAY instead.
(Terminals with the kitty keyboard protocol send an unambiguous Esc and never wait.)

A bracketed paste is taken out of the input before the parser sees it (support/paste.py), so that
nothing pasted is read as keys: it arrives as one `Paste` event of inert text.

A terminal that goes away (an SSH link dropping) fails every write with EIO; Textual's writer
thread would die of the first, and the app block on its full queue while it exits, with the
session still open. Writes to a terminal that is gone are dropped instead (`TerminalOutput`).

The terminal's size is asked of the terminal the app draws on and reads from: Textual asks
standard output's, and with `cmdop-tui > file` (or `| tee`) it took 80x24 on every start and
every resize, whatever the terminal's size (`terminal_size`).
"""

from __future__ import annotations

import os
import selectors
import sys
from codecs import getincrementaldecoder
from collections.abc import Mapping
from typing import IO, Any

from textual import constants, events
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from cmdop_tui.support.paste import Pasted, PasteSplitter

IDLE_WAKE_S = 0.1  # Textual's own select timeout
ESC = "\x1b"


class TerminalOutput:
    """The terminal's stream for Textual's writer thread: after a failed write the terminal is
    taken for gone, and the rest is dropped."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> None:
        if not self.gone:
            try:
                self._stream.write(text)
            except OSError:
                self.gone = True

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self.gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def terminal_size(environ: Mapping[str, str] = os.environ) -> tuple[int, int] | None:
    """The size the app draws at: `COLUMNS` and `LINES` when both are set (as Python's own
    `shutil.get_terminal_size` honours them), else the size of the first of standard error,
    input and output that is a terminal; None when none is."""
    try:
        columns, lines = int(environ.get("COLUMNS", "0")), int(environ.get("LINES", "0"))
    except ValueError:
        columns = lines = 0
    if columns > 0 and lines > 0:
        return columns, lines
    for stream in (sys.__stderr__, sys.__stdin__, sys.__stdout__):
        try:
            size = os.get_terminal_size(stream.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # None, closed, or not a terminal
            continue
        if size.columns > 0 and size.lines > 0:
            return size.columns, size.lines
    return None


class PromptEscapeDriver(LinuxDriver):
    def _get_terminal_size(self) -> tuple[int, int]:
        return terminal_size() or super()._get_terminal_size()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._file is not None:  # Textual's writer thread only writes and flushes it
            self._file = TerminalOutput(self._file)  # type: ignore[assignment]

    def run_input_thread(self) -> None:
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        splitter = PasteSplitter()
        decode = getincrementaldecoder("utf-8")().decode
        escape_wake = constants.ESCAPE_DELAY + 0.002
        wake = IDLE_WAKE_S

        def process(selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> float:
            """Feed what arrived to the parser; return how long the next select may wait."""
            next_wake = IDLE_WAKE_S
            if not selector_events and (held := splitter.idle()):
                self._parse(parser, held)
                next_wake = escape_wake  # the parser now times what it was handed
            for index, (_key, mask) in enumerate(selector_events):
                if mask & selectors.EVENT_READ:
                    data = decode(os.read(self.fileno, 1024 * 4), final=final and index == len(selector_events) - 1)
                    if not data:
                        break
                    self._parse(parser, splitter.feed(data))
                    if ESC in data[-8:]:  # maybe a lone Esc, or a sequence still arriving
                        next_wake = escape_wake
            for event in parser.tick():
                self.process_message(event)
            return next_wake

        try:
            while not self.exit_event.is_set():
                wake = process(selector.select(wake))
            selector.unregister(self.fileno)
            process(selector.select(IDLE_WAKE_S), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _parse(self, parser: XTermParser, pieces: list[str | Pasted]) -> None:
        """Keys through the parser; a whole paste straight to the app as one event."""
        for piece in pieces:
            if isinstance(piece, Pasted):
                self.process_message(events.Paste(piece.text))
                continue
            for event in parser.feed(piece):
                self.process_message(event)
