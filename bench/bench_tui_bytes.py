"""Bytes the TUI writes to the terminal per character of a reply streamed at a model's pace.

Run: .venv/bin/python bench/bench_tui_bytes.py

A reply of 4,000 characters arrives at about 800 characters a second in 4-character chunks; the
bytes written to the pseudo-terminal are counted from the moment the reply's middle is on screen
(by then it has scrolled) to its end, and divided by the characters streamed meanwhile. At
100x30 and 80x24, by default and in low-bandwidth mode (`--low-bandwidth`). Aims: 40 bytes a
character by default, 10 in low-bandwidth mode.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_anthropic import FakeAnthropic, text_reply
from pty_app import PtyApp

PACE_S = 4 / 800  # a 4-character chunk every 5 ms: 800 characters a second
MIDDLE, END = "zzmiddlezz", "zzendzz"


def paced_reply() -> str:
    line = "The service restarted cleanly and the logs show no errors since then.\n"
    half = line * 28  # about 2,000 characters
    return f"{half}{MIDDLE}\n{half}{END}"


def measure(server: FakeAnthropic, size: tuple[int, int], low_bandwidth: bool) -> float:
    config = Path(tempfile.mkdtemp()) / "config.toml"
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "CMDOP_TUI_CONFIG": str(config),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
    }
    env.pop("SSH_CONNECTION", None)
    flag = "--low-bandwidth" if low_bandwidth else "--no-low-bandwidth"
    app = PtyApp(env, size=size, args=(flag,))
    try:
        app.wait_for(b"Ask the operator", timeout=30)
        app.wait_for(b"lists commands", timeout=30)
        app.wait_quiet(1.5)  # the session (and the SDK) loaded
        reply = paced_reply()
        server.enqueue(text_reply(reply, chunk_size=4, delay_s=PACE_S))
        start = app.mark()
        app.write(b"report\r")
        app.wait_for(MIDDLE.encode(), start, timeout=60)
        middle = app.mark()
        app.wait_for(END.encode(), middle, timeout=60)
        app.wait_quiet(0.3)
        streamed = len(reply) - reply.index(MIDDLE)
        return (app.mark() - middle) / streamed
    finally:
        app.close()


def main() -> None:
    with FakeAnthropic() as server:
        for size in ((100, 30), (80, 24)):
            for low in (False, True):
                per_char = measure(server, size, low)
                mode, aim = ("low-bandwidth", 10) if low else ("default", 40)
                print(f"{size[0]}x{size[1]} {mode:13s}: {per_char:6.1f} bytes per streamed character (aim <= {aim})")


if __name__ == "__main__":
    main()
