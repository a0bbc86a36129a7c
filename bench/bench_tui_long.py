"""Figures for a long session in the TUI, measured on the real app in a pseudo-terminal.

Run: .venv/bin/python bench/bench_tui_long.py

A session of 500 tool turns (a prompt, a tool call, its result and an answer each: 2,000
messages) is written as a transcript, then opened with `cmdop-tui -c` at 100x30 and at 80x24:
the time until the prompt is usable and until the last answer is on screen (the target: 1 s,
with no replay of the session), and the echo of keys typed into the prompt afterwards.

Then, in that session and in a fresh one, a reply streams at a model's pace (800 characters a
second) while keys are typed into the prompt: key echo p50 and p95 (targets 16 and 25 ms), the
app's CPU (target: 30 % of a core) and RSS (target: 150 MB) meanwhile, and where the bytes went
(frames a second, bytes a frame, the regions each frame touched; bench/frames.py).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from bench_tui_bytes import END, PACE_S, paced_reply
from fake_anthropic import FakeAnthropic, text_reply
from frames import attribute, layout_of
from pty_app import PROMPT_DRAWN, PtyApp

TURNS = 500  # 2,000 messages, the session the figures are for
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


def app_env(server: FakeAnthropic, data_home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "CMDOP_TUI_CONFIG": str(data_home / "config.toml"),
        "XDG_DATA_HOME": str(data_home),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
    }
    env.pop("SSH_CONNECTION", None)  # the default mode, whatever the shell running the bench
    return env


def echo_times(app: PtyApp, keys: str, pause_s: float) -> list[float]:
    """Type `keys` one by one; the time from each keystroke to its echo on the terminal."""
    echoes = []
    for key in keys:
        start = app.mark()
        sent = app.write(key.encode())
        echoes.append(app.wait_for(key.encode(), start) - sent)
        time.sleep(pause_s)  # a person's pace between keys
    return echoes


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def stream_while_typing(app: PtyApp, server: FakeAnthropic) -> str:
    """A reply at 800 characters a second while keys are typed: echo, CPU, RSS, frames."""
    reply = paced_reply()
    server.enqueue(text_reply(reply, chunk_size=4, delay_s=PACE_S))
    app.write(b"report\r")
    app.wait_for_text(reply.split()[2], timeout=30)  # streaming has begun
    start, cpu, began = app.mark(), cpu_seconds(app.pid), time.perf_counter()
    echoes = echo_times(app, KEYS * 2, 0.08)  # 40 keys while it streams
    app.wait_for_text(END, timeout=60)
    seconds = time.perf_counter() - began
    used, rss, output = cpu_seconds(app.pid) - cpu, rss_mb(app.pid), bytes(app.output[start:])
    with app.changed:
        layout = layout_of(app.screen_text().split("\n"))
    app.write(b"\x15")  # ctrl+u: clear what was typed
    frames = attribute(output, layout, seconds)
    return (
        f"  while a reply streams at 800 chars/s: key echo {percentiles(echoes)} (targets 16, 25); "
        f"CPU {100 * used / seconds:.0f} % of a core (target 30); RSS {rss:.0f} MB (target 150)\n"
        f"  frames: {frames.report(len(reply), 'streamed character')}"
    )


def measure_resumed(server: FakeAnthropic, data_home: Path, size: tuple[int, int]) -> None:
    app = PtyApp(app_env(server, data_home), size=size, args=("-c", "--no-low-bandwidth"))
    try:
        ready = app.wait_for(PROMPT_DRAWN, timeout=30) - app.started
        last = app.wait_for_text(f"answer {TURNS - 1}", timeout=120) - app.started
        app.wait_quiet(0.5)
        echoes = echo_times(app, KEYS, 0.05)
        app.write(b"\x15")
        print(
            f"{size[0]}x{size[1]} resumed: prompt ready {ready:.2f} s, last answer on screen {last:.2f} s "
            f"(target 1 s); key echo afterwards {percentiles(echoes)}"
        )
        print(stream_while_typing(app, server))
    finally:
        app.close()


def measure_fresh(server: FakeAnthropic, data_home: Path, size: tuple[int, int]) -> None:
    app = PtyApp(app_env(server, data_home), size=size, args=("--no-low-bandwidth",))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=30)
        app.wait_for(b"lists commands", timeout=30)
        app.wait_quiet(1.0)  # the session (and the SDK) loaded
        print(f"{size[0]}x{size[1]} fresh session:")
        print(stream_while_typing(app, server))
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
            copy = Path(tempfile.mkdtemp(prefix="cmdop-long-"))  # each run resumes the session as written
            shutil.copytree(data_home, copy, dirs_exist_ok=True)
            measure_resumed(server, copy, terminal)
            measure_fresh(server, Path(tempfile.mkdtemp(prefix="cmdop-fresh-")), terminal)


if __name__ == "__main__":
    main()
