"""Run the real app in a pseudo-terminal and watch what it writes, as a terminal would.

Used by the TUI benchmarks and tests: bytes written, time until text appears on screen, key
latency. What the screen shows is read with pyte, a terminal emulator: the app writes only the
cells that change, so a word on screen need not appear whole in the byte stream.
"""

from __future__ import annotations

import bisect
import fcntl
import math
import os
import pty
import select
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyte

ROOT = Path(__file__).resolve().parents[2]
SYNC_QUERY = b"\x1b[?2026$p"  # DECRQM: does the terminal do synchronized output?
SYNC_SUPPORTED = b"\x1b[?2026;2$y"  # yes (and it is off now)


# The prompt drawn, as found in the raw output: its placeholder is one run of text after its
# first letter, which the focused prompt's cursor covers.
PROMPT_DRAWN = b"sk the operator"


class PtyApp:
    """`cmdop-tui` in a pty of the given size; output is read continuously with timestamps."""

    def __init__(
        self,
        env: dict[str, str],
        size: tuple[int, int] = (100, 30),
        args: tuple[str, ...] = (),
        *,
        sync: bool = True,
        redirect: dict[int, str] | None = None,
    ) -> None:
        """`sync`: answer the app's query for synchronized output as modern terminals do, so that
        every frame comes between `\\x1b[?2026h` and `\\x1b[?2026l` and can be counted.
        `redirect`: file descriptors of the app's (0, 1, 2) opened on a file instead of the
        terminal, as a shell's `<` and `>` do."""
        self.sync = sync
        self.columns, self.rows = size
        self.output = bytearray()
        self.arrivals: list[tuple[int, float]] = []  # (output length after a read, when it was read)
        self.changed = threading.Condition()
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the app
            # Its terminal's size is set here, before the exec: set only by the parent, a loaded
            # machine could start the app on a terminal of no size yet (drawn at Textual's 80x25)
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.columns, 0, 0))
            os.chdir(ROOT)
            for target, path in (redirect or {}).items():
                os.dup2(os.open(path, os.O_RDONLY if target == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC), target)
            os.execvpe(sys.executable, [sys.executable, "-m", "cmdop_tui", *args], env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.columns, 0, 0))
        self.screen = pyte.Screen(self.columns, self.rows)
        self._terminal = pyte.ByteStream(self.screen)
        self._fed = 0  # output fed to the emulator so far (fed by the waiting thread, not the reader)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                if not select.select([self.fd], [], [], 0.05)[0]:
                    if self._hanging_up:
                        return
                    continue
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            with self.changed:
                if not data:
                    self.closed = True
                    self.changed.notify_all()
                    return
                self.output += data
                self.arrivals.append((len(self.output), time.perf_counter()))
                self.changed.notify_all()
            if self.sync and SYNC_QUERY in data:
                os.write(self.fd, SYNC_SUPPORTED)

    closed = False
    _hanging_up = False

    def hang_up(self) -> None:
        """Close the terminal's side, as an SSH link that drops: the kernel sends SIGHUP, and
        nothing the app writes arrives any more."""
        self._hanging_up = True
        self._reader.join()
        os.close(self.fd)

    def mark(self) -> int:
        """The current output length, to search only what comes after it."""
        with self.changed:
            return len(self.output)

    def wait_for(self, needle: bytes, start: int = 0, timeout: float = 30.0) -> float:
        """Block until `needle` appears in the output after offset `start`; return the time then."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            while needle not in self.output[start:]:
                left = deadline - time.perf_counter()
                if left <= 0 or self.closed:
                    tail = bytes(self.output[-400:])
                    raise TimeoutError(f"{needle!r} did not appear; last output: {tail!r}")
                self.changed.wait(left)
            return time.perf_counter()

    def screen_text(self) -> str:
        """What the terminal shows now, one line per row (call with `changed` held, or not at all
        while another thread waits)."""
        self._terminal.feed(bytes(self.output[self._fed :]))
        self._fed = len(self.output)
        return "\n".join(self.screen.display)

    def wait_for_text(self, text: str, timeout: float = 30.0) -> float:
        """Block until `text` is on the screen (within one row); return the time then."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            while text not in self.screen_text():
                left = deadline - time.perf_counter()
                if left <= 0 or self.closed:
                    raise TimeoutError(f"{text!r} is not on screen; it shows:\n{self.screen_text()}")
                self.changed.wait(left)
            return time.perf_counter()

    def wait_until_screen(self, holds: Callable[[], bool], timeout: float = 30.0) -> float:
        """Block until `holds()` (which reads `self.screen`) is true; return the time then."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            self.screen_text()
            while not holds():
                left = deadline - time.perf_counter()
                if left <= 0 or self.closed:
                    raise TimeoutError(f"the screen never held; it shows:\n{self.screen_text()}")
                self.changed.wait(left)
                self.screen_text()
            return time.perf_counter()

    def wait_for_screen(self, text: str, start: int = 0, timeout: float = 30.0, *, gone: bool = False) -> float:
        """Block until `text` is on the emulated screen (within one row), or with `gone` is not,
        through output read after offset `start`; return when the read that did it arrived (the
        emulator is fed one read at a time, so its own speed does not count)."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            self.screen_text_upto(start)
            read = bisect.bisect_right(self.arrivals, (self._fed, math.inf))
            while True:
                while read < len(self.arrivals):
                    end, arrived = self.arrivals[read]
                    read += 1
                    if (text in self.screen_text_upto(end)) != gone:
                        return arrived
                left = deadline - time.perf_counter()
                if left <= 0 or self.closed:
                    raise TimeoutError(f"{text!r} is not on screen; it shows:\n{self.screen_text()}")
                self.changed.wait(left)

    def screen_text_upto(self, end: int) -> str:
        """What the terminal showed once the output up to `end` was written (`changed` held)."""
        if end > self._fed:
            self._terminal.feed(bytes(self.output[self._fed : end]))
            self._fed = end
        return "\n".join(self.screen.display)

    def wait_quiet(self, seconds: float) -> None:
        """Block until nothing has been written for `seconds`."""
        with self.changed:
            while True:
                size = len(self.output)
                self.changed.wait(seconds)
                if len(self.output) == size:
                    return

    def resize(self, columns: int, rows: int) -> None:
        """The terminal resized, as a window is: the app is told by SIGWINCH, as the kernel does."""
        with self.changed:
            self.columns, self.rows = columns, rows
            self.screen.resize(rows, columns)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def write(self, data: bytes) -> float:
        now = time.perf_counter()
        os.write(self.fd, data)
        return now

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Block until the app exits; its exit code, or -N if signal N killed it (as `subprocess`)."""
        deadline = time.perf_counter() + timeout
        while True:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.exited = True
                return os.waitstatus_to_exitcode(status)
            if time.perf_counter() > deadline:
                raise TimeoutError(f"the app did not exit within {timeout} s")
            time.sleep(0.02)

    exited = False

    def close(self) -> None:
        """Quit the app (ctrl+q); kill it if it is still there after 3 s, or its terminal is gone."""
        if self.exited:
            return
        try:
            if not self._hanging_up:
                os.write(self.fd, b"\x11")  # ctrl+q
                deadline = time.perf_counter() + 3
                while time.perf_counter() < deadline:
                    done, _ = os.waitpid(self.pid, os.WNOHANG)
                    if done:
                        return
                    time.sleep(0.02)
        except (OSError, ChildProcessError):
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
