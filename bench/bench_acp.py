"""Figures for `cmdop-tui acp`. Run: .venv/bin/python bench/bench_acp.py

The agent runs as a child process, driven by the official ACP SDK's client side
(tests/support/acp_client.py), the model the fake API (tests/support/fake_anthropic.py):
1. initialize → its answer on a warm agent (the process up, its modules loaded); median,
   limit 300 ms. Beside it, cold: from the spawn to initialize answered, limit 500 ms (answered
   before the ACP SDK loads: acp/first_answer.py; the SDK and the session's modules, the model
   SDK among them, load after), and to session/new answered.
2. session/cancel → the prompt's answer with stopReason cancelled, while the reply streams
   (the first words shown, the rest held by the fake API); median, limit 50 ms.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from acp import PROTOCOL_VERSION, text_block  # noqa: E402
from acp.schema import ClientCapabilities  # noqa: E402
from acp_client import editor_session  # noqa: E402
from fake_anthropic import FakeAnthropic, text_reply  # noqa: E402

ROUNDS = 5
INITIALIZE_LIMIT_S = 0.300
COLD_INITIALIZE_LIMIT_S = 0.500
CANCEL_LIMIT_S = 0.050


async def one_round(api: FakeAnthropic, env: dict[str, str], cwd: Path) -> tuple[float, float, float, float]:
    """(spawn → initialized, spawn → session/new answered, warm initialize → answer, cancel →
    stopReason cancelled), seconds."""
    gate = threading.Event()
    api.enqueue(text_reply("Hello there, this goes on and on", chunk_size=5, stall_after=4, gate=gate))
    spawned = time.monotonic()
    try:
        async with editor_session(env, cwd=cwd) as (editor, conn):
            capabilities = ClientCapabilities()
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
            cold = time.monotonic() - spawned
            session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            opened = time.monotonic() - spawned
            asked = time.monotonic()  # warm: everything loaded, a session open
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
            warm = time.monotonic() - asked
            prompt = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block("talk")]))
            await editor.wait_for(lambda: "agent_message_chunk" in editor.kinds())
            cancelled = time.monotonic()
            await conn.cancel(session_id=session)
            answer = await prompt
            stop = time.monotonic() - cancelled
            assert answer.stop_reason == "cancelled", answer
    finally:
        gate.set()
    return cold, opened, warm, stop


def verdict(value: float, limit: float) -> str:
    return "ok" if value <= limit else "OVER"


async def main() -> None:
    api = FakeAnthropic().start()
    home, cwd = tempfile.mkdtemp(), Path(tempfile.mkdtemp())
    env = {**os.environ, "HOME": home, "ANTHROPIC_API_KEY": api.api_key, "ANTHROPIC_BASE_URL": api.url}
    env["CMDOP_TUI_NO_WARM"] = "1"
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CMDOP_TUI_CONFIG"):
        env.pop(name, None)
    try:
        rounds = [await one_round(api, env, cwd) for _ in range(ROUNDS)]
    finally:
        api.stop()
    cold, opened, warm, stop = (statistics.median(figures) for figures in zip(*rounds, strict=True))
    print(
        f"acp: spawn -> initialize answered (cold, median of {ROUNDS}): {cold * 1000:.0f} ms "
        f"(limit {COLD_INITIALIZE_LIMIT_S * 1000:.0f} ms) {verdict(cold, COLD_INITIALIZE_LIMIT_S)}"
    )
    print(f"acp: spawn -> session/new answered (cold, median of {ROUNDS}): {opened * 1000:.0f} ms")
    print(
        f"acp: initialize -> answered (warm, median of {ROUNDS}): {warm * 1000:.1f} ms "
        f"(limit {INITIALIZE_LIMIT_S * 1000:.0f} ms) {verdict(warm, INITIALIZE_LIMIT_S)}"
    )
    print(
        f"acp: session/cancel -> stopReason cancelled (median of {ROUNDS}): {stop * 1000:.1f} ms "
        f"(limit {CANCEL_LIMIT_S * 1000:.0f} ms) {verdict(stop, CANCEL_LIMIT_S)}"
    )


if __name__ == "__main__":
    asyncio.run(main())
