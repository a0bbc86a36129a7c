"""Figures for the TUI, measured on the real app in a pseudo-terminal at 100x30.

Run: .venv/bin/python bench/bench_tui.py

1. A 50,000-character reply streamed at full speed: from the request reaching the (fake) API to
   its last word on screen, against the same span in headless mode (`-p --output-format
   stream-json`, to its final event printed). Target: TUI <= 1.2x headless.
2. While a stream runs, a keypress reaches the screen within 50 ms (typed into the prompt).
3. Stop keypress (Esc) to "Stopped." on screen: at most 100 ms.
4. Start-up to a ready prompt: at most 1 s.
5. Bytes written to the terminal per streamed character of reply (aim: 5 or fewer).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))


from fake_anthropic import FakeAnthropic, text_reply
from pty_app import PROMPT_DRAWN, PtyApp

REPLY_CHARS = 50_000
END_MARKER = "zzendzz"
CHUNK = 16  # characters per text delta, about what a fast model sends
KEYS = "αβγδεζηθικλμνξοπρστυ"  # on screen nowhere else, so each echo is unambiguous


def markdown_reply(size: int = REPLY_CHARS) -> str:
    """Realistic Markdown: paragraphs, lists, code blocks."""
    words = "the service restarted cleanly and the logs show no errors since then".split()
    blocks, length, n = [], 0, 0
    while length < size - 200:
        n += 1
        if n % 5 == 0:
            block = "```sh\n" + "\n".join(f"journalctl -u nginx --since today | grep {w}" for w in words[:4]) + "\n```"
        elif n % 3 == 0:
            block = "\n".join(f"- {' '.join(words[i : i + 6])}" for i in range(0, 12, 3))
        else:
            block = " ".join(words[(n + i) % len(words)] for i in range(70)) + "."
        blocks.append(block)
        length += len(block) + 2
    text = "\n\n".join(blocks)
    return text + "\n\nthe end " + END_MARKER


class RequestClock:
    """A scripted reply that notes when the request reached the server."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.arrived = 0.0

    def __call__(self, body: dict) -> object:
        self.arrived = time.perf_counter()
        return text_reply(self.reply, chunk_size=CHUNK)


def headless_seconds(server: FakeAnthropic, reply: str) -> float:
    """`cmdop-tui -p --output-format stream-json`: request arrival to the final event printed."""
    clock = RequestClock(reply)
    server.enqueue(clock)
    command = [sys.executable, "-m", "cmdop_tui", "-p", "go", "--output-format", "stream-json"]
    child = subprocess.Popen(command, env=app_env(server), stdout=subprocess.PIPE, text=True)
    final_at = 0.0
    for line in child.stdout:
        if line.startswith('{"type": "final"'):
            final_at = time.perf_counter()
    child.wait()
    assert final_at and clock.arrived, "headless mode did not finish"
    return final_at - clock.arrived


def app_env(server: FakeAnthropic) -> dict[str, str]:
    config = Path(tempfile.mkdtemp()) / "config.toml"
    return {
        **os.environ,
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "CMDOP_TUI_CONFIG": str(config),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "CMDOP_TUI_NO_WARM": "1",  # headless runs here in their own process, and leave no agent behind
    }


def start_app(server: FakeAnthropic) -> tuple[PtyApp, float]:
    app = PtyApp(app_env(server), size=(100, 30))
    ready = app.wait_for(PROMPT_DRAWN, timeout=20)
    app.wait_for(b"lists commands", timeout=20)  # the welcome: mounted and laid out
    return app, ready - app.started


def stream_once(app: PtyApp, server: FakeAnthropic, reply: str) -> tuple[float, int]:
    """Request arrival to the reply's last word on screen, and the bytes written meanwhile."""
    clock = RequestClock(reply)
    server.enqueue(clock)
    start = app.mark()
    app.write(b"show me\r")
    shown = app.wait_for_text(END_MARKER)
    app.wait_quiet(0.3)  # count the final repaints too
    return shown - clock.arrived, app.mark() - start


def key_latencies(app: PtyApp, server: FakeAnthropic, reply: str) -> list[float]:
    """Type distinct keys into the prompt while a paced stream runs; time each echo."""
    server.enqueue(text_reply(reply, chunk_size=CHUNK, delay_s=0.002))
    start = app.mark()
    app.write(b"stream slowly\r")
    app.wait_for(b"the service", start)
    latencies = []
    for key in KEYS:
        before = app.mark()
        sent = app.write(key.encode())
        latencies.append(app.wait_for(key.encode(), before) - sent)
        time.sleep(0.05)  # pacing between keystrokes, like a person typing
    app.write(b"\x1b")  # stop that stream
    app.wait_for(b"Stopped.", start)
    app.write(b"\x15")  # ctrl+u: clear what was typed
    time.sleep(1)
    return latencies


def stop_latency(app: PtyApp, server: FakeAnthropic, reply: str) -> float:
    server.enqueue(text_reply(reply, chunk_size=CHUNK, delay_s=0.001))
    start = app.mark()
    app.write(b"another\r")
    app.wait_for(b"the service", start)
    time.sleep(0.2)  # let it stream for a while: Stop mid-stream, not at its start
    before = app.mark()
    sent = app.write(b"\x1b")
    return app.wait_for(b"Stopped.", before) - sent


def describe(samples: list[float], unit: str = "ms", scale: float = 1000) -> str:
    ordered = sorted(s * scale for s in samples)
    precision = 2 if unit == "s" else 1
    return f"median {statistics.median(ordered):.{precision}f} {unit}, max {ordered[-1]:.{precision}f} {unit} (n={len(ordered)})"


def main() -> None:
    reply = markdown_reply()
    with FakeAnthropic() as server:
        headless = [headless_seconds(server, reply) for _ in range(3)]
        startups, renders, byte_rates, keys, stops = [], [], [], [], []
        for _ in range(3):
            app, startup = start_app(server)
            try:
                startups.append(startup)
                seconds, written = stream_once(app, server, reply)
                renders.append(seconds)
                byte_rates.append(written / len(reply))
                time.sleep(1)  # let the turn wind down before the next prompt
                keys += key_latencies(app, server, reply)
                stops.append(stop_latency(app, server, reply))
            finally:
                app.close()
    ratio = statistics.median(renders) / statistics.median(headless)
    print(f"50,000-char reply, headless consume: {describe(headless, 's', 1)}")
    print(
        f"50,000-char reply, TUI on screen:    {describe(renders, 's', 1)}  -> {ratio:.2f}x headless  [target <= 1.2x]"
    )
    print(f"keypress to screen while streaming:  {describe(keys)}  [target <= 50 ms]")
    print(f"Esc to 'Stopped.' on screen:         {describe(stops)}  [target <= 100 ms]")
    print(f"start-up to a ready prompt:          {describe(startups)}  [target <= 1000 ms]")
    print(f"bytes to the terminal per streamed character at 100x30: {statistics.median(byte_rates):.2f}  [aim <= 5]")


if __name__ == "__main__":
    main()
