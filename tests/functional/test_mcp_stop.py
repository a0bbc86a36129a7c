"""Stop during an MCP call ends the call and the run at once, and the app's exit does not wait
on a server that ignores the cancellation (tests/support/mcp_servers/stubborn_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import STUBBORN, new_tag, settings_with, tagged, wait_gone

from cmdop_tui.agent.events import Cancelled, ToolEnd, ToolStart
from cmdop_tui.agent.history import CANCELLED_RESULT
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.session.session import Session

BOUND_S = 1.0  # from Stop to the run's end, and from there to the session closed: the SDK alone waits 2 s


def stubborn(tag: str, mark: Path, *flags: str) -> McpServerSpec:
    return McpServerSpec(
        name="stub",
        command=sys.executable,
        args=(str(STUBBORN), "--tag", tag, *flags),
        env={"STUBBORN_MARK_FILE": str(mark)},
    )


async def until_exists(path: Path) -> None:
    async with asyncio.timeout(20):
        while not path.exists():
            await asyncio.sleep(0.02)


async def test_stop_ends_the_call_the_run_and_the_server_at_once_when_it_ignores_the_cancel(
    fake_api, anthropic_env, tmp_path
):
    tag, mark = new_tag(), tmp_path / "mark"
    fake_api.enqueue(tool_reply("mcp__stub__stall", {"seconds": 60}), text_reply("never"))
    settings = settings_with(stubborn(tag, mark)).with_run(auto_approve=True)
    events = Recorder()
    session = Session(settings, platform="headless", cwd=tmp_path, record=False)
    await session.__aenter__()
    try:
        task = asyncio.create_task(session.run("stall", events))
        await events.wait_for(ToolStart, timeout=30)
        await until_exists(mark)  # the server is working on the call
        stopped = time.monotonic()
        session.stop()
        await events.wait_for(Cancelled, timeout=BOUND_S)
        end = events.of(ToolEnd)[0]
        assert end.is_error and end.output == CANCELLED_RESULT
        assert (await task).status == "cancelled" and time.monotonic() - stopped < BOUND_S
        assert tagged(tag), "the server is still there until the session closes"
    finally:
        closing = time.monotonic()
        await session.close()
    assert time.monotonic() - closing < BOUND_S  # not the 2 s the SDK gives a server to leave by itself
    assert wait_gone(tag, timeout=5) == []


async def test_a_server_whose_first_process_left_is_ended_too_after_a_stop(fake_api, anthropic_env, tmp_path):
    # The process the SDK started forked and left at once: its child, in its group, serves.
    tag, mark = new_tag(), tmp_path / "mark"
    fake_api.enqueue(tool_reply("mcp__stub__stall", {"seconds": 60}), text_reply("never"))
    settings = settings_with(stubborn(tag, mark, "--fork")).with_run(auto_approve=True)
    events = Recorder()
    async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
        task = asyncio.create_task(session.run("stall", events))
        await events.wait_for(ToolStart, timeout=30)
        await until_exists(mark)
        session.stop()
        assert (await task).status == "cancelled"
    assert wait_gone(tag, timeout=5) == []  # not left working for a minute


def test_headless_exits_at_once_after_a_stop_during_a_call_to_a_server_that_ignores_it(
    fake_api, anthropic_env, tmp_path
):
    tag, mark = new_tag(), tmp_path / "mark"
    spec = stubborn(tag, mark)
    table = {"command": spec.command, "args": list(spec.args), "env": dict(spec.env)}
    (tmp_path / "config.toml").write_text(f"[mcp.stub]\n{_toml(table)}")
    fake_api.enqueue(tool_reply("mcp__stub__stall", {"seconds": 60}), text_reply("never"))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    argv = [sys.executable, "-m", "cmdop_tui", "-p", "stall", "--yes", "--output-format", "stream-json", "--no-warm"]
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if json.loads(line)["type"] == "tool_start":
                break
        deadline = time.monotonic() + 20
        while not mark.exists() and time.monotonic() < deadline:  # the server is working on the call
            time.sleep(0.02)
        stopped = time.monotonic()
        process.send_signal(signal.SIGINT)
        kinds = [json.loads(line)["type"] for line in process.stdout]
        assert process.wait(timeout=10) == 130
        assert time.monotonic() - stopped < 2 * BOUND_S  # the run ended and the process left
        assert kinds[:2] == ["tool_end", "cancelled"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert wait_gone(tag, timeout=5) == []


def _toml(table: dict[str, object]) -> str:
    lines = []
    for key, value in table.items():
        if isinstance(value, dict):
            value = "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
        else:
            value = json.dumps(value)
        lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"
