"""Figures for long sessions: a scripted 300-turn operator session against a 200k window.

    .venv/bin/python bench/bench_compaction.py [--turns 300]

The session is the library's `Operator` (the same loop and session as the app, with its
transcript) against the project's fake Messages API, whose Models API says the model reads
200,000 tokens and which refuses a longer request as the real API does. Thirty prompts of ten
tool turns each: every turn the model thinks aloud (~600 tokens) and reads an 8k-token file.
The fake writes each summary to the length it is asked for, plus a tenth (models overrun).

Printed: requests refused; the largest request as a share of the window; compactions, model
calls per compaction, summary sizes; the time each compaction adds; RSS from turn 50 to the end;
and `cmdop-tui --continue -p ...` after it: its request's size against the threshold.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
HOME = Path(tempfile.mkdtemp(prefix="cmdop-bench-"))
os.environ.update(  # before cmdop_tui is imported: its config and sessions go here
    HOME=str(HOME),
    XDG_CONFIG_HOME=str(HOME / "config"),
    XDG_DATA_HOME=str(HOME / "data"),
    CMDOP_TUI_CONFIG=str(HOME / "config.toml"),
)

from fake_anthropic import FakeAnthropic, ModelSpec, estimate_input_tokens, text_reply, tool_reply  # noqa: E402

from cmdop_tui import Operator, Settings  # noqa: E402
from cmdop_tui.agent.compaction import SUMMARISER_SYSTEM, CompactionPolicy  # noqa: E402

MODEL = "claude-sonnet-5-5"
WINDOW = 200_000
TURNS_PER_PROMPT = 10
OUTPUT_CHARS = 32_000  # ~8k tokens
THOUGHTS = "Checking the next log for the first timeout and what the service did after it. " * 30


class Script:
    """The fake model: the next planned reply for each turn, a summary for each summary request."""

    def __init__(self, server: FakeAnthropic) -> None:
        self.server = server
        self.plan: deque[Any] = deque()
        self.sizes: list[int] = []  # estimated input tokens of every turn's request
        self.summary_requests = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        del self.server.requests[:-1]  # the bench keeps its own figures; the fake keeps no history
        if body.get("system") == SUMMARISER_SYSTEM:
            self.summary_requests += 1
            return text_reply(summary_for(body))
        self.sizes.append(estimate_input_tokens(body))
        return self.plan.popleft()


def summary_for(body: dict[str, Any]) -> str:
    """A summary as long as asked, and a tenth more."""
    asked = int(re.findall(r"at most (\d+) words", body["messages"][0]["content"][0]["text"])[-1])
    lines, words = [], 0
    while words < asked * 1.1:
        line = f"- web{len(lines) % 40:02d}: nginx reloaded, error rate back under 0.1 %, log rotated"
        lines.append(line)
        words += len(line.split())
    return "## Findings\n" + "\n".join(lines)


def rss_mb() -> float:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def write_files(directory: Path, turns: int) -> None:
    for n in range(turns):
        row = f"{n:04d} GET /api/orders 200 12ms upstream=app{n % 7} " + "x" * 20 + "\n"
        (directory / f"access-{n:04d}.log").write_text((row * (OUTPUT_CHARS // len(row) + 1))[:OUTPUT_CHARS])


def run_session(server: FakeAnthropic, script: Script, work: Path, turns: int) -> dict[str, Any]:
    compactions: list[dict[str, Any]] = []
    rss: dict[int, float] = {}
    settings = Settings()
    started = time.perf_counter()
    with Operator(model=MODEL, approval="auto", max_turns=TURNS_PER_PROMPT + 2, settings=settings, cwd=work) as op:
        for prompt in range(turns // TURNS_PER_PROMPT):
            first = prompt * TURNS_PER_PROMPT
            for n in range(first, first + TURNS_PER_PROMPT):
                script.plan.append(tool_reply("read_file", {"path": f"access-{n:04d}.log"}, text=THOUGHTS))
            script.plan.append(text_reply(f"Logs {first}-{first + TURNS_PER_PROMPT - 1}: no timeouts."))
            op.chat(
                f"read access logs {first} to {first + TURNS_PER_PROMPT - 1} and look for timeouts",
                on_event=lambda event: compactions.append(event) if event["type"] == "compaction" else None,
            )
            done = first + TURNS_PER_PROMPT
            if done == 50 or done % 100 == 0 or done == turns:
                rss[done] = rss_mb()
    return {"compactions": compactions, "rss": rss, "seconds": time.perf_counter() - started}


def continue_after(server: FakeAnthropic, script: Script, work: Path) -> tuple[int, int]:
    """`cmdop-tui --continue -p ...`: (exit code, the size of the request it sent)."""
    script.sizes.clear()
    script.plan.append(text_reply("Ten prompts of logs read; no timeouts anywhere."))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmdop_tui",
            "--continue",
            "-p",
            "what is left to check?",
            "--model",
            MODEL,
            "--no-warm",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    return done.returncode, max(script.sizes, default=0)


def scenario(turns: int, window: int) -> None:
    work = HOME / f"work-{window}"
    work.mkdir()
    write_files(work, turns)
    with FakeAnthropic(models={MODEL: ModelSpec(max_input_tokens=window)}) as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=server.api_key)
        script = Script(server)
        server.enqueue(*[script] * (turns * 3))
        figures = run_session(server, script, work, turns)
        sizes, summary_requests = list(script.sizes), script.summary_requests
        code, resumed_size = continue_after(server, script, work)
        refused = len(server.too_long) + len(server.too_large) + len(server.invalid_requests)
    compactions = figures["compactions"]
    print(f"\n{turns} tool turns in {turns // TURNS_PER_PROMPT} prompts, window {window:,}: {figures['seconds']:.1f} s")
    print(f"requests refused: {refused}")
    print(f"largest request: {max(sizes):,} tokens = {max(sizes) / window:.1%} of the window (limit 80 %)")
    print(f"compactions: {len(compactions)}; model calls for them: {summary_requests}")
    if compactions:
        summaries = [c["summary_tokens"] for c in compactions]
        _, cap = CompactionPolicy().limits(window)
        print(f"summary after each compaction: max {max(summaries):,} tokens (cap {cap:,}), last {summaries[-1]:,}")
        shrink = ", ".join(
            f"{c['tokens_before'] / 1000:.0f}k->{c['tokens_after'] / 1000:.0f}k" for c in compactions[:8]
        )
        print(f"tokens before -> after: {shrink}{', ...' if len(compactions) > 8 else ''}")
        times = [c["duration_s"] * 1000 for c in compactions]
        print(f"time a compaction adds: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms")
        print(f"model calls per compaction: {summary_requests / len(compactions):.1f}")
    rss = figures["rss"]
    print("RSS: " + ", ".join(f"turn {turn}: {mb:.0f} MB" for turn, mb in rss.items()))
    if 50 in rss:
        print(f"RSS from turn 50 to turn {turns}: {rss[max(rss)] - rss[50]:+.0f} MB (limit ±50 MB)")
    share = resumed_size / window
    print(f"--continue after it: exit {code}, its request {resumed_size:,} tokens = {share:.1%} (threshold 75 %)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    turns = parser.parse_args().turns
    scenario(turns, WINDOW)  # the figure the project holds
    scenario(turns, 32_000)  # a small window: many compactions, each incremental


if __name__ == "__main__":
    main()
