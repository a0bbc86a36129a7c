"""A hostile MCP server (tests/support/mcp_servers/hostile_server.py) asking the client for more
than it should: sampling outside any call of ours, a flood of sampling within one call, a flood
that would cross the session's budget, a request too large to be worth asking about."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import HOSTILE, new_tag, settings_with, wait_gone

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import ToolEnd, Usage
from cmdop_tui.mcp.answering import MAX_ASKS_PER_CALL
from cmdop_tui.mcp.listing import list_servers_text
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.session.server_asks import MAX_SAMPLING_CHARS
from cmdop_tui.session.session import Session

FLOOD = "mcp__hostile__flood"


def hostile(tag: str, control: Path | None = None) -> McpServerSpec:
    args = (str(HOSTILE), "--tag", tag, *(("--control", str(control)) if control else ()))
    return McpServerSpec(name="hostile", command=sys.executable, args=args, timeout_s=30)


class Allowing:
    """An approver that allows everything (as after "This session") and counts the samplings."""

    def __init__(self) -> None:
        self.samplings = 0

    async def __call__(self, call: ToolCall) -> Approval:
        self.samplings += call.name.endswith("__sampling")
        return Approval(True, "", by_person=True)


def flooded(events: Recorder) -> dict:
    end = next(end for end in events.of(ToolEnd) if end.name == FLOOD)
    return json.loads(end.output)


async def test_a_sampling_request_outside_any_call_is_refused_and_no_one_is_asked(fake_api, anthropic_env, tmp_path):
    tag, control = new_tag(), tmp_path / "control.sock"
    allowing = Allowing()
    settings = settings_with(hostile(tag, control))
    async with Session(settings, platform="headless", ask=allowing, cwd=tmp_path, record=False) as session:
        assert await session.mcp.wait(30)
        reader, writer = await asyncio.open_unix_connection(str(control))
        writer.write(b"sample\n")
        answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
        writer.close()
    assert "error" in answer and "only while it works on a call" in answer["error"]["message"]
    assert allowing.samplings == 0 and fake_api.requests == []
    assert wait_gone(tag, timeout=5) == []


async def test_a_flood_of_sampling_within_one_call_is_cut_off(fake_api, anthropic_env, tmp_path):
    count = MAX_ASKS_PER_CALL + 5
    fake_api.enqueue(
        tool_reply(FLOOD, {"count": count}), *(text_reply("ok") for _ in range(MAX_ASKS_PER_CALL)), text_reply("done")
    )
    allowing, events = Allowing(), Recorder()
    settings = settings_with(hostile(new_tag()))
    async with Session(settings, platform="headless", ask=allowing, cwd=tmp_path, record=False) as session:
        await session.run("flood", events)
    summary = flooded(events)
    assert summary["granted"] == MAX_ASKS_PER_CALL and summary["refused"] == 5
    assert f"more than {MAX_ASKS_PER_CALL}" in summary["first_refusal"][0]
    assert allowing.samplings == MAX_ASKS_PER_CALL and len(fake_api.requests) == MAX_ASKS_PER_CALL + 2
    for sampled in fake_api.requests[1:-1]:  # the session's model, and the server's words alone
        body = sampled.body
        assert body["model"] == "claude-sonnet-5-5" and "tools" not in body and "system" not in body
        assert [m["role"] for m in body["messages"]] == ["user"] and "flood" not in json.dumps(body["messages"])


async def test_sampling_requests_at_once_do_not_take_the_session_past_its_budget(fake_api, anthropic_env, tmp_path):
    # Each completion is 4,096 output tokens ($0.061 at $15 per million): the budget holds one.
    fake_api.enqueue(tool_reply(FLOOD, {"count": 6, "max_tokens": 4096}), *(text_reply("x" * 16_384) for _ in range(6)))
    fake_api.enqueue(text_reply("done"))
    allowing, events = Allowing(), Recorder()
    settings = replace(settings_with(hostile(new_tag())), max_budget_usd=0.1)
    async with Session(settings, platform="headless", ask=allowing, cwd=tmp_path, record=False) as session:
        await session.run("flood", events)
    summary = flooded(events)
    assert summary["granted"] == 1 and "budget" in summary["first_refusal"][0]
    sampled = [usage.session_cost_usd for usage in events.of(Usage) if usage.purpose == "sampling"]
    assert len(sampled) == 1 and sampled[0] <= 0.1  # the session's spending once it had sampled


async def test_a_sampling_request_too_large_is_refused_before_anyone_is_asked(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply(FLOOD, {"count": 1, "chars": MAX_SAMPLING_CHARS + 1}), text_reply("done"))
    allowing, events = Allowing(), Recorder()
    async with Session(
        settings_with(hostile(new_tag())), platform="headless", ask=allowing, cwd=tmp_path, record=False
    ) as session:
        await session.run("flood", events)
    summary = flooded(events)
    assert summary["refused"] == 1 and "too large" in summary["first_refusal"][0]
    assert allowing.samplings == 0 and len(fake_api.requests) == 2


def test_headless_asks_sampling_requests_made_at_once_on_the_terminal_one_after_the_other(
    fake_api, anthropic_env, tmp_path
):
    # Two readers of one terminal: the second replaced the first, whose question never ended.
    fake_api.enqueue(tool_reply(FLOOD, {"count": 2}), text_reply("one"), text_reply("two"), text_reply("done"))
    spec = hostile(new_tag())
    (tmp_path / "config.toml").write_text(
        f"[mcp.hostile]\ncommand = {json.dumps(spec.command)}\nargs = {json.dumps(list(spec.args))}\n"
    )
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    controller, terminal = pty.openpty()
    argv = [sys.executable, "-m", "cmdop_tui", "-p", "flood", "--no-warm"]
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdin=terminal, stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    try:
        for _ in range(3):  # the tool call, then each sampling request, each answered once asked
            until_on_terminal(controller, "[y/N]")
            os.write(controller, b"y\n")
        assert process.wait(timeout=30) == 0
        assert process.stdout is not None and "done" in process.stdout.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert len(fake_api.requests) == 4


def until_on_terminal(controller: int, text: str, timeout: float = 30) -> str:
    """What the terminal shows up to and including `text` (read as it comes, within `timeout`)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        ready, _, _ = select.select([controller], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"{text!r} not shown; the terminal shows: {seen.decode(errors='replace')[-500:]!r}"
        seen += os.read(controller, 4096)
    return seen.decode(errors="replace")


async def test_mcp_list_prints_no_terminal_sequence_a_project_or_a_server_writes(tmp_path, monkeypatch):
    # A cloned project's .mcp.json (not trusted) and a configured server that fails, saying why
    # on stderr: both may hold terminal sequences, and `mcp list` prints them to the terminal.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"a\x1b]0;owned\x07": {"command": "x"}}}))
    failing = McpServerSpec(
        name="noisy", command="sh", args=("-c", "printf 'broken\\033[2J\\007\\n' >&2; exit 1"), timeout_s=10
    )
    text = await list_servers_text(settings_with(failing), tmp_path, timeout=10)
    assert "names MCP servers (a)" in text and "it said: broken" in text
    assert "\x1b" not in text and "\x07" not in text
