"""MCP tools through the real agent loop against the fake Messages API, through the permission
gate, Stop, the Session and the Operator (startup in the background, the headless wait), and
`cmdop-tui mcp list`; against real servers (tests/mcp_servers/demo_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import Recorder, allow_all, make_runner
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import (
    DEMO,
    free_port,
    http_server,
    http_spec,
    new_tag,
    settings_with,
    stdio_spec,
    tagged,
    wait_gone,
)

from cmdop_tui import Operator
from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import Cancelled, ToolEnd, ToolStart
from cmdop_tui.agent.history import CANCELLED_RESULT
from cmdop_tui.agent.routing import ToolPolicy
from cmdop_tui.config.settings import Settings
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.mcp.trust import trust
from cmdop_tui.permissions import Permissions
from cmdop_tui.session.gate import permission_gate
from cmdop_tui.session.session import Session

HANGS = (sys.executable, "-c", "import time; time.sleep(120)")  # a server that never answers


@pytest.fixture(params=["stdio", "http"])
def demo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[McpServerSpec, Path]]:
    tag, mark = new_tag(), tmp_path / "mark"
    if request.param == "stdio":
        yield stdio_spec(tag=tag, env={"DEMO_MARK_FILE": str(mark)}), mark
    else:
        with http_server(tag, env={"DEMO_MARK_FILE": str(mark)}) as (url, _):
            yield http_spec("demo", url), mark
    assert wait_gone(tag) == [], "an MCP server process outlived its test"


def tool_names(request) -> list[str]:
    return [tool["name"] for tool in request.body.get("tools", [])]


def last_result(request) -> dict:
    return request.body["messages"][-1]["content"][0]


async def test_the_model_sees_mcp_tools_and_gets_their_results(fake_api, demo, attach):
    spec, _ = demo
    fake_api.enqueue(tool_reply("mcp__demo__echo", {"text": "hello"}), text_reply("it said hello"))
    runner = make_runner(fake_api, approve=allow_all())
    await attach(runner, spec)
    result = await runner.run("ask the server", Recorder())
    assert result.text == "it said hello"
    first = fake_api.requests[0].body
    echo = next(tool for tool in first["tools"] if tool["name"] == "mcp__demo__echo")
    assert echo["input_schema"]["properties"]["text"]["type"] == "string"
    assert {"execute_command", "mcp__demo__slow", "mcp__demo__image"} <= set(tool_names(fake_api.requests[0]))
    answered = last_result(fake_api.requests[1])
    assert answered["type"] == "tool_result" and answered["content"] == "hello" and not answered.get("is_error")


async def test_turn_one_allowlist_offers_mcp_tools_by_their_tag(fake_api, attach):
    fake_api.enqueue(text_reply("fine"))
    runner = make_runner(fake_api, tool_policy=ToolPolicy(turn1_allow_tags=frozenset({"mcp"})))
    await attach(runner, stdio_spec())
    await runner.run("hi", Recorder())
    names = tool_names(fake_api.requests[0])
    core = {tool.name for tool in runner.tools if tool.core}
    assert {name for name in names if not name.startswith("mcp__")} == core  # core tools survive turn 1
    assert len([name for name in names if name.startswith("mcp__demo__")]) == 16


async def test_the_gate_asks_for_mutating_tools_audits_them_and_rules_decide(fake_api, attach, tmp_path):
    audit = tmp_path / "audit.jsonl"
    permissions = Permissions(audit_path=audit)
    asked: list[str] = []

    async def ask(call: ToolCall) -> Approval:
        asked.append(call.name)
        return Approval(False, "not today")

    fake_api.enqueue(
        tool_reply("mcp__demo__echo", {"text": "read-only: no question"}),
        tool_reply("mcp__demo__slow", {"seconds": 0}),
        text_reply("first done"),
        tool_reply("mcp__demo__slow", {"seconds": 0}),
        tool_reply("mcp__demo__echo", {"text": "denied by rule"}),
        text_reply("second done"),
    )
    runner = make_runner(fake_api, approve=permission_gate(permissions, ask))
    await attach(runner, stdio_spec())
    await runner.run("go", Recorder())
    assert asked == ["mcp__demo__slow"]
    assert last_result(fake_api.requests[1])["content"] == "read-only: no question"
    denied = last_result(fake_api.requests[2])
    assert denied["is_error"] and "not today" in denied["content"]
    permissions.add_session_rule("mcp__demo", "allow")
    permissions.add_session_rule("mcp__demo__echo", "deny")
    await runner.run("again", Recorder())
    assert asked == ["mcp__demo__slow"]  # the rule allowed it: nobody was asked
    assert last_result(fake_api.requests[4])["content"] == "slept 0.0s"
    assert "denied by rule `mcp__demo__echo(*)`" in last_result(fake_api.requests[5])["content"]
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["tool"], line["verdict"], line["outcome"]) for line in lines] == [
        ("mcp__demo__echo", "allow", "allowed"),
        ("mcp__demo__slow", "ask", "denied"),
        ("mcp__demo__slow", "allow", "allowed"),
        ("mcp__demo__echo", "deny", "denied"),
    ]


async def test_the_floor_refuses_catastrophic_commands_and_secrets_whatever_tool_carries_them(fake_api, attach):
    fake_api.enqueue(
        tool_reply("mcp__demo__run", {"command": "rm -rf /"}),
        tool_reply("mcp__demo__peek", {"path": "~/.ssh/id_ed25519"}),
        tool_reply("mcp__demo__run", {"command": "ls -la"}),
        text_reply("done"),
    )
    runner = make_runner(fake_api, approve=permission_gate(Permissions(mode="auto", audit=False), None))
    await attach(runner, stdio_spec())
    await runner.run("go", Recorder())
    refused_rm, refused_key, ran = (last_result(fake_api.requests[i]) for i in (1, 2, 3))
    assert refused_rm["is_error"] and "refused" in refused_rm["content"]
    assert refused_key["is_error"] and "private key" in refused_key["content"]
    assert ran["content"] == "would run: ls -la"


async def test_stop_cancels_an_mcp_call_in_flight_and_the_session_goes_on(fake_api, demo, attach):
    spec, mark = demo
    fake_api.enqueue(
        tool_reply("mcp__demo__slow", {"seconds": 60}),
        tool_reply("mcp__demo__echo", {"text": "still here"}),
        text_reply("after the stop"),
    )
    runner, events = make_runner(fake_api, approve=allow_all()), Recorder()
    await attach(runner, spec)
    task = asyncio.create_task(runner.run("wait a minute", events))
    await events.wait_for(ToolStart)
    await asyncio.sleep(0.3)  # the call is on the server
    fired = time.monotonic()
    runner.ui_cancel.fire()
    result = await task
    assert result.status == "cancelled" and time.monotonic() - fired < 1.0
    end = events.of(ToolEnd)[0]
    assert end.is_error and end.output == CANCELLED_RESULT
    async with asyncio.timeout(10):
        while not mark.exists():
            await asyncio.sleep(0.02)
    assert mark.read_text() == "cancelled"  # the server was told
    again = await runner.run("go on", Recorder())
    assert again.text == "after the stop"
    assert last_result(fake_api.requests[-1])["content"] == "still here"


# --- the session and the library -------------------------------------------------------------------


async def test_a_session_opens_without_waiting_for_its_servers(fake_api, anthropic_env, tmp_path):
    tag = new_tag()
    hanging = McpServerSpec(name="slowpoke", command=HANGS[0], args=(*HANGS[1:], tag))
    fake_api.enqueue(text_reply("no waiting"))
    started = time.monotonic()
    async with Session(settings_with(hanging), platform="tui", cwd=tmp_path, record=False) as session:
        assert time.monotonic() - started < 1.0
        assert session.mcp is not None and [s.status for s in session.mcp.states()] == ["connecting"]
        result = await session.run("hello", Recorder())
        assert result.text == "no waiting" and time.monotonic() - started < 5.0  # the TUI never waits
        async with asyncio.timeout(10):
            while not tagged(tag):
                await asyncio.sleep(0.05)
    assert wait_gone(tag) == []  # closing the session ended the server that never answered


async def test_a_headless_run_waits_for_servers_still_connecting_and_stop_ends_the_wait(
    fake_api, anthropic_env, tmp_path
):
    tag = new_tag()
    hanging = McpServerSpec(name="slowpoke", command=HANGS[0], args=(*HANGS[1:], tag))
    async with Session(settings_with(hanging), platform="headless", cwd=tmp_path, record=False) as session:
        events = Recorder()
        task = asyncio.create_task(session.run("hello", events))
        await asyncio.sleep(0.5)
        assert not task.done()  # waiting for slowpoke
        session.stop()
        result = await asyncio.wait_for(task, 2)
        assert result.status == "cancelled" and events.of(Cancelled)
        assert fake_api.requests == []
        session.mcp_wait_s = 0.3  # a bound on the wait: then the run goes on without it
        fake_api.enqueue(text_reply("went on without it"))
        started = time.monotonic()
        assert (await session.run("hello", Recorder())).text == "went on without it"
        assert 0.3 <= time.monotonic() - started < 3
    assert wait_gone(tag) == []


async def test_a_server_that_fails_is_reported_and_the_session_works(fake_api, anthropic_env, tmp_path):
    broken = McpServerSpec(name="gone", command="no-such-mcp-server-here")
    fake_api.enqueue(text_reply("fine without it"))
    async with Session(settings_with(broken), platform="headless", cwd=tmp_path, record=False) as session:
        result = await session.run("hello", Recorder())
        assert result.text == "fine without it"
        assert session.mcp is not None and session.mcp.states()[0].summary().startswith("failed: cannot start")
    assert "tools" not in fake_api.requests[0].body or all(
        not name.startswith("mcp__") for name in tool_names(fake_api.requests[0])
    )


def test_the_operator_offers_tools_of_its_settings_and_of_the_projects_mcp_json(fake_api, anthropic_env, tmp_path):
    tags = new_tag(), new_tag()
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [str(DEMO), "--tag", tags[1]]}}})
    )
    fake_api.enqueue(
        tool_reply("mcp__proj__where", {}),
        tool_reply("mcp__mine__echo", {"text": "from the settings"}),
        text_reply("both answered"),
    )
    settings = settings_with(stdio_spec("mine", tag=tags[0]))
    trust(tmp_path / ".mcp.json")  # a project's servers are programs: they start once trusted
    with Operator(settings=settings, cwd=tmp_path, record=False, approval="auto") as operator:
        assert operator.chat("use them") == "both answered"
    first = tool_names(fake_api.requests[0])  # the first request already has them: -p waits
    assert "mcp__proj__where" in first and "mcp__mine__echo" in first
    assert last_result(fake_api.requests[1])["content"] == str(tmp_path)
    assert last_result(fake_api.requests[2])["content"] == "from the settings"
    assert all(wait_gone(tag) == [] for tag in tags)


# --- cmdop-tui mcp list ------------------------------------------------------------------------------


def mcp_list(tmp_path: Path, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.toml").write_text(config)
    env = {**os.environ, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    return subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "mcp", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_mcp_list_prints_each_server_its_source_transport_state_and_tools(tmp_path):
    tag = new_tag()
    port = free_port()
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}})
    )
    config = f'[mcp.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(DEMO))}, "--tag", "{tag}"]\n'
    trusted = mcp_list(tmp_path, config, "trust")
    assert trusted.returncode == 0 and trusted.stdout.startswith("trusted ") and trusted.stdout.endswith(": web\n")
    done = mcp_list(tmp_path, config, "list", "--timeout", "20")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"demo  (settings, stdio: {sys.executable} {DEMO} --tag {tag})"
    assert lines[1] == "  connected: 16 tools"
    assert "    mcp__demo__echo  (read-only)" in lines and "    mcp__demo__slow" in lines
    web = lines.index(f"web  (.mcp.json, http: http://127.0.0.1:{port}/mcp)")
    assert lines[web + 1].startswith(f"  failed: cannot reach http://127.0.0.1:{port}/mcp")
    assert wait_gone(tag) == []


def test_mcp_list_with_no_servers_and_with_bad_arguments(tmp_path):
    done = mcp_list(tmp_path, "", "list")
    assert done.returncode == 0 and "No MCP servers" in done.stdout
    assert mcp_list(tmp_path, "", "lists").returncode == 2
    assert mcp_list(tmp_path, "", "list", "--timeout", "soon").returncode == 2
    broken = mcp_list(tmp_path, "[mcp.x]\nargs = []\n", "list")
    assert broken.returncode == 1 and "needs a command" in broken.stderr


def test_a_projects_servers_start_only_once_it_is_trusted_as_it_is(fake_api, anthropic_env, tmp_path):
    from cmdop_tui.mcp.configured import configured_servers

    project = tmp_path / ".mcp.json"
    project.write_text(json.dumps({"mcpServers": {"proj": {"command": "some-program"}}}))
    specs, notes = configured_servers(Settings(), tmp_path)
    assert specs == [] and "start only once you trust this project" in notes[0] and "proj" in notes[0]
    trust(project)
    specs, notes = configured_servers(Settings(), tmp_path)
    assert [spec.name for spec in specs] == ["proj"] and notes == []
    project.write_text(json.dumps({"mcpServers": {"proj": {"command": "another-program"}}}))
    specs, _ = configured_servers(Settings(), tmp_path)
    assert specs == []  # a changed file asks again


def test_headless_says_which_mcp_server_failed_and_still_answers(fake_api, anthropic_env, tmp_path):
    (tmp_path / "config.toml").write_text('[mcp.broken]\ncommand = "/nonexistent/mcp-server"\n')
    fake_api.enqueue(text_reply("answered anyway"))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "-p", "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "answered anyway\n", done.stderr
    assert "cmdop-tui: MCP server broken failed" in done.stderr
