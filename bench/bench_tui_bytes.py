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
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from fake_anthropic import FakeAnthropic, text_reply
from pty_app import PROMPT_DRAWN, PtyApp

PACE_S = 4 / 800  # a 4-character chunk every 5 ms: 800 characters a second
MIDDLE, END = "zzmiddlezz", "zzendzz"


WORDS = (
    "nginx web07 restarted cleanly at 09:14 and the error log shows three upstream timeouts before "
    "then; disk usage on /var is 71 percent, load 0.42, memory 3.1 GiB free, certificates renew in "
    "23 days, the backup job finished at 02:00 with 1,204 files and no warnings on db02 or cache01"
).split()


def paced_reply(blocks: int = 16) -> str:
    """About 250 characters a block (4,000 by default) of varied lines, as a real reply has (a
    repeated line would let a screen that shifts by a line change almost no cell, and flatter the
    figures)."""
    draw = random.Random(7)

    def sentence() -> str:
        return " ".join(draw.choice(WORDS) for _ in range(draw.randint(8, 20))).capitalize() + "."

    def paragraph() -> str:  # prose, or a short list
        if draw.random() < 0.3:
            return "\n".join(f"- {sentence()}" for _ in range(3))
        return " ".join(sentence() for _ in range(3))

    drawn = [paragraph() for _ in range(blocks)]
    return "\n\n".join([*drawn[: blocks // 2], MIDDLE, *drawn[blocks // 2 :], END])


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
        app.wait_for(PROMPT_DRAWN, timeout=30)
        app.wait_for(b"lists commands", timeout=30)
        app.wait_quiet(1.5)  # the session (and the SDK) loaded
        reply = paced_reply()
        server.enqueue(text_reply(reply, chunk_size=4, delay_s=PACE_S))
        app.write(b"report\r")
        app.wait_for_text(MIDDLE, timeout=60)
        middle = app.mark()
        app.wait_for_text(END, timeout=60)
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
