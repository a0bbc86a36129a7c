"""Figures for /compact after a huge paste: what the compaction reports against what the next
request really costs.

    .venv/bin/python bench/bench_compaction_paste.py [--lines 5000]

A session (the app's, with its transcript) against the project's fake Messages API (a 200,000
token window): a prompt that pastes LINES log lines is answered, `/compact` runs (the fake
writes a short summary), then one more prompt. Printed: the tokens before and after as the
compaction reports them, the next request's real input (the fake's count, as usage reports it),
the gap between the two, the summary's size and how much of the paste it carries.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
HOME = Path(tempfile.mkdtemp(prefix="cmdop-bench-"))
os.environ.update(  # before cmdop_tui is imported: its config and sessions go here
    HOME=str(HOME),
    XDG_CONFIG_HOME=str(HOME / "config"),
    XDG_DATA_HOME=str(HOME / "data"),
    XDG_STATE_HOME=str(HOME / "state"),
    CMDOP_TUI_CONFIG=str(HOME / "config.toml"),
)

import anthropic  # noqa: E402
from fake_anthropic import FakeAnthropic, estimate_input_tokens, text_reply  # noqa: E402

from cmdop_tui.agent.events import Compacted, Event  # noqa: E402
from cmdop_tui.config.settings import Settings  # noqa: E402
from cmdop_tui.session.session import Session  # noqa: E402

SUMMARY = "## Findings\n- the user pasted a web server's access log to read\n- nothing failed in it"


async def measure(lines: int) -> dict[str, float]:
    paste = "\n".join(f"line {n:05d} GET /api/v1/items?page={n} 200 0.{n % 997:03d}s" for n in range(lines))
    compactions: list[Compacted] = []

    def emit(event: Event) -> None:
        if isinstance(event, Compacted):
            compactions.append(event)

    with FakeAnthropic() as server:
        server.enqueue(text_reply("Read it."), text_reply(SUMMARY), text_reply("Next answer."))
        client = anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
        async with Session(Settings(), platform="headless", client=client, cwd=HOME) as session:
            await session.run(paste, emit)
            await session.compact(emit)
            await session.run("and now?", emit)
        summary = server.requests[-1].body["messages"][0]["content"][0]["text"]
        real = estimate_input_tokens(server.requests[-1].body)
    (event,) = compactions
    return {
        "paste lines": lines,
        "reported before (tokens)": event.tokens_before,
        "reported after (tokens)": event.tokens_after,
        "next request, real (tokens)": real,
        "after vs real (%)": round(100 * (event.tokens_after - real) / real, 1),
        "summary (characters)": len(summary),
        "paste carried in the summary (%)": round(100 * len(summary) / len(paste), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5000)
    figures = asyncio.run(measure(parser.parse_args().lines))
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:>12,}")


if __name__ == "__main__":
    main()
