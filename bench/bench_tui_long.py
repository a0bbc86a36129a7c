"""Figures for a long session in the TUI, measured on the real app in a pseudo-terminal.

Run: .venv/bin/python bench/bench_tui_long.py

A session of 1,000 tool turns (a prompt, a tool call, its result and an answer each: 4,000
messages) is written as a transcript, then opened with `cmdop-tui -c` at 100x30 and at 80x24:
the time until the prompt is usable and until the last answer is on screen (the target: 1 s,
with no replay of the session), and the echo of keys typed into the prompt afterwards.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_anthropic import FakeAnthropic
from pty_app import PtyApp

TURNS = 1_000
KEYS = "αβγδεζηθικλμνξοπρστυ"


def write_session(data_home: Path) -> int:
    os.environ["XDG_DATA_HOME"] = str(data_home)
    from cmdop_tui.agent.history import Conversation, text_block, tool_result_block
    from cmdop_tui.transcripts import Transcript

    conversation = Conversation()
    with Transcript.create(model="claude-sonnet-5-5", cwd=str(data_home)) as transcript:
        conversation.listeners.append(transcript.append)
        for n in range(TURNS):
            call = {"type": "tool_use", "id": f"toolu_{n:05d}", "name": "execute_command", "input": {"command": "df"}}
            conversation.append_user(f"prompt {n}: how full are the disks on the web servers?")
            conversation.append_assistant([text_block("Let me look."), call])
            output = "exit code: 0\n\nstdout:\n" + "/dev/sda1  50G  41G  9G  82% /srv\n" * 20
            conversation.append_tool_results([tool_result_block(call["id"], output)])
            conversation.append_assistant([text_block(f"answer {n}: /srv is at 82 %; the logs grow fastest. " * 4)])
        size = transcript.path.stat().st_size
    return size


def measure(server: FakeAnthropic, data_home: Path, size: tuple[int, int]) -> None:
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "CMDOP_TUI_CONFIG": str(data_home / "config.toml"),
        "XDG_DATA_HOME": str(data_home),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
    }
    app = PtyApp(env, size=size, args=("-c",))
    try:
        ready = app.wait_for(b"Ask the operator", timeout=30) - app.started
        last = app.wait_for(f"answer {TURNS - 1}".encode(), timeout=120) - app.started
        app.wait_quiet(0.5)
        echoes = []
        for key in KEYS:
            start = app.mark()
            sent = app.write(key.encode())
            echoes.append(app.wait_for(key.encode(), start) - sent)
            app.wait_quiet(0.05)
        p50 = statistics.median(echoes) * 1000
        p95 = sorted(echoes)[int(len(echoes) * 0.95) - 1] * 1000
        print(
            f"{size[0]}x{size[1]}: prompt ready {ready:.2f} s, last answer on screen {last:.2f} s "
            f"(target 1 s); key echo afterwards p50 {p50:.0f} ms, p95 {p95:.0f} ms"
        )
    finally:
        app.close()


def main() -> None:
    data_home = Path(tempfile.mkdtemp(prefix="cmdop-long-"))
    started = time.perf_counter()
    size = write_session(data_home)
    print(
        f"a session of {TURNS:,} tool turns ({4 * TURNS:,} messages, {size / 1e6:.1f} MB) written in "
        f"{time.perf_counter() - started:.1f} s"
    )
    with FakeAnthropic() as server:
        for terminal in ((100, 30), (80, 24)):
            measure(server, data_home, terminal)


if __name__ == "__main__":
    main()
