"""`cmdop-tui acp` running commands in the editor's terminal (`terminal/*`), driven by the
official ACP SDK's client side whose terminals run the commands for real (acp_terminals.py).

Only where our sandbox would not hold the command anyway (the sandbox off): the gate decides
first, the app's credentials stay out, the output the model sees is bounded, a timeout and Stop
kill the terminal, and every terminal is released. With the sandbox on, our own tool runs.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities
from acp_client import editor_session
from fake_anthropic import FakeAnthropic, text_reply, tool_reply

from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT
from cmdop_tui.machines.sandbox import bubblewrap

TERMINAL = ClientCapabilities(terminal=True)
SANDBOX_OFF = ("--sandbox", "off")


@pytest.fixture
def env(anthropic_env: dict[str, str]) -> dict[str, str]:
    return dict(os.environ)


async def open_session(conn: ClientSideConnection, cwd: Path, mode: str = "auto") -> str:
    await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=TERMINAL)
    session = str((await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id)
    await conn.set_session_mode(session_id=session, mode_id=mode)
    return session


def tool_result_text(fake_api: FakeAnthropic, request: int) -> str:
    content = fake_api.requests[request].body["messages"][-1]["content"][0]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def terminal_ids(updates: list[object]) -> list[str]:
    """The terminals embedded in tool call updates, in order."""
    shown = [c for u in updates for c in (getattr(u, "content", None) or []) if c.type == "terminal"]
    return [c.terminal_id for c in shown]


async def test_a_command_runs_in_the_editors_terminal_shown_live_without_our_credentials(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    command = 'pwd; echo "key=${ANTHROPIC_API_KEY:-none}"; echo oops >&2; exit 3'
    fake_api.enqueue(tool_reply("execute_command", {"command": command, "cwd": "sub"}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path, args=SANDBOX_OFF) as (editor, conn):
        session = await open_session(conn, tmp_path)
        assert (await conn.prompt(session_id=session, prompt=[text_block("run it")])).stop_reason == "end_turn"
    [(terminal_id, terminal)] = editor.terminals.made.items()
    assert terminal.command == "/usr/bin/env" and terminal.args[-3:] == ["/bin/bash", "-c", command]
    assert terminal.cwd == str(tmp_path / "sub") and terminal.limit == DEFAULT_OUTPUT_LIMIT
    assert terminal.released and not terminal.killed
    result = tool_result_text(fake_api, 1)
    assert result.startswith("exit code: 3")
    assert str(tmp_path / "sub") in result and "oops" in result
    assert "key=none" in result  # the app's key is in the editor's environment, not the command's
    updates = editor.of_kind("tool_call_update")
    assert terminal_ids(updates) == [terminal_id, terminal_id]  # while it runs, and at its end
    assert updates[-1].status == "completed"


async def test_the_gate_decides_before_the_editors_terminal(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch made"}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path, args=SANDBOX_OFF) as (editor, conn):
        session = await open_session(conn, tmp_path, mode="default")
        editor.answer = "reject_once"
        await conn.prompt(session_id=session, prompt=[text_block("make it")])
    assert len(editor.permission_requests) == 1
    assert editor.terminals.made == {} and not (tmp_path / "made").exists()


async def test_a_timeout_kills_the_terminal_and_the_output_is_bounded(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    long = "head -c 100000 /dev/zero | tr '\\0' x; echo; sleep 60"
    fake_api.enqueue(tool_reply("execute_command", {"command": long, "timeout_ms": 1500}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path, args=SANDBOX_OFF) as (editor, conn):
        session = await open_session(conn, tmp_path)
        await conn.prompt(session_id=session, prompt=[text_block("run it")])
        [terminal] = editor.terminals.made.values()
        async with asyncio.timeout(30):  # released by the agent (a loaded machine may answer first)
            await terminal.gone.wait()
    assert terminal.killed
    result = tool_result_text(fake_api, 1)
    assert result.startswith("error: the command timed out after 1500 ms and was killed")
    assert result.count("x") <= DEFAULT_OUTPUT_LIMIT < 100_000
    assert editor.of_kind("tool_call_update")[-1].status == "failed"


async def test_stop_kills_the_command_in_the_editors_terminal(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": "sleep 60"}), text_reply("not reached"))
    async with editor_session(env, cwd=tmp_path, args=SANDBOX_OFF) as (editor, conn):
        session = await open_session(conn, tmp_path)
        prompt = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block("wait")]))
        async with asyncio.timeout(30):
            await editor.terminals.started.wait()
        await conn.cancel(session_id=session)
        async with asyncio.timeout(30):
            assert (await prompt).stop_reason == "cancelled"
        [terminal] = editor.terminals.made.values()
        async with asyncio.timeout(30):  # released by the agent (a loaded machine may answer first)
            await terminal.gone.wait()
        assert terminal.killed and terminal.process.returncode is not None


@pytest.mark.skipif(bubblewrap() is None, reason="no sandbox here: commands run unconfined anyway")
async def test_with_the_sandbox_on_our_own_tool_runs_the_command(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo inside"}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        await conn.prompt(session_id=session, prompt=[text_block("run it")])
    assert editor.terminals.made == {}
    assert "inside" in tool_result_text(fake_api, 1)
    assert terminal_ids(editor.of_kind("tool_call_update")) == []


async def test_the_settings_sandbox_off_uses_the_editors_terminal(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\nmode = "off"\n')
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo there"}), text_reply("ok"))
    async with editor_session({**env, "CMDOP_TUI_CONFIG": str(config)}, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        await conn.prompt(session_id=session, prompt=[text_block("run it")])
    assert len(editor.terminals.made) == 1
    assert "there" in tool_result_text(fake_api, 1)
