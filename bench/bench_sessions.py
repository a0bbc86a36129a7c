"""Figures for durable sessions. Run: .venv/bin/python bench/bench_sessions.py

1. Time to append one record to a transcript (median, p99): what every message and event costs.
2. The size of a 1,000-turn transcript, each turn a prompt, a tool call, a ~500-character tool
   result and a ~300-character answer, as the conversation's operation records write it.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from cmdop_tui.agent.history import Conversation, text_block, tool_result_block
from cmdop_tui.transcripts import Transcript, load

API_KEY = "sk-ant-api03-" + "x" * 80


def one_turn(conversation: Conversation, n: int) -> None:
    conversation.append_user(f"turn {n}: check the disk usage on the web servers and tell me what is growing")
    call = {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "execute_command", "input": {"command": "df -h /srv"}}
    conversation.append_assistant([text_block("Let me look."), call])
    conversation.append_tool_results(
        [tool_result_block(call["id"], "exit code: 0\n\nstdout:\n" + "/dev/sda1  50G  41G  9G  82% /srv\n" * 12)]
    )
    conversation.append_assistant([text_block("The /srv volume is at 82%; the logs directory grew fastest. " * 5)])


def main() -> None:
    directory = Path(tempfile.mkdtemp())
    transcript = Transcript.create(directory, model="claude-sonnet-5-5", extra_secrets=[API_KEY])
    timings: list[float] = []

    def timed(record: dict) -> None:
        started = time.perf_counter()
        transcript.append(record)
        timings.append((time.perf_counter() - started) * 1e6)

    conversation = Conversation(listeners=[timed])
    for n in range(1000):
        one_turn(conversation, n)
    transcript.close()
    ordered = sorted(timings)
    p99 = ordered[int(len(ordered) * 0.99)]
    print(f"append one record: median {statistics.median(ordered):.0f} µs, p99 {p99:.0f} µs (n={len(ordered)})")
    size = transcript.path.stat().st_size
    print(f"1,000-turn transcript: {size:,} bytes ({size / 1000:,.0f} bytes a turn)")
    started = time.perf_counter()
    loaded = load(transcript.path)
    print(
        f"loading it back (--continue): {(time.perf_counter() - started) * 1000:.0f} ms, {len(loaded.messages)} messages"
    )


if __name__ == "__main__":
    main()
