"""`cmdop-tui acp` driven by the official ACP SDK's client side, as an editor drives it: the
agent runs as a child process over stdio, the model is the fake API over real HTTP.

A whole session: initialize, session/new, a prompt streaming text and thoughts, a tool call with
its diff and a permission request answered allow, reject, always; cancel mid-stream; modes; the
plan from todo; slash commands; session/load of an earlier session, and that session back in
headless mode.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, McpServerStdio, WriteTextFileResponse
from acp_client import RecordingEditor, editor_session
from fake_anthropic import FakeAnthropic, error_reply, reply, text, text_reply, thinking, tool_reply, tool_use
from mcp_servers.harness import TINY

from cmdop_tui.machines.sandbox import bubblewrap
from cmdop_tui.permissions import Permissions


@pytest.fixture
def env(anthropic_env: dict[str, str]) -> dict[str, str]:
    return dict(os.environ)


async def open_session(conn: ClientSideConnection, cwd: Path, capabilities: ClientCapabilities | None = None) -> str:
    await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities or ClientCapabilities())
    session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
    return str(session.session_id)


async def test_initialize_offers_load_modes_and_the_api_key(env: dict[str, str], tmp_path: Path) -> None:
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        assert init.agent_capabilities.prompt_capabilities.embedded_context
        assert [m.id for m in init.auth_methods] == ["api-key"]
        await conn.authenticate(method_id="api-key")
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "default"
        assert [m.id for m in session.modes.available_modes] == ["default", "accept_edits", "plan", "auto", "strict"]
        await editor.wait_for(lambda: "available_commands_update" in editor.kinds())
        names = [c.name for c in editor.of_kind("available_commands_update")[0].available_commands]
        assert {"compact", "clear", "model", "machine", "budget"} <= set(names)
    assert editor.process.returncode == 0  # stdin closed: the agent left by itself


async def test_a_prompt_streams_thoughts_text_and_a_write_with_its_diff(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(
        reply(
            thinking("I should write it."),
            text("Writing it."),
            tool_use("write_file", {"path": "a.txt", "content": "hello\n"}),
        ),
        text_reply("Done.", chunk_size=2),
    )
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        answer = await conn.prompt(session_id=session, prompt=[text_block("write a.txt")])
    assert answer.stop_reason == "end_turn"
    assert editor.text("agent_thought_chunk") == "I should write it."
    assert editor.text() == "Writing it.Done."
    assert len(editor.of_kind("agent_message_chunk")) > 3  # streamed, not one block at the end
    [start] = editor.of_kind("tool_call")
    target = str(tmp_path / "a.txt")
    assert (start.kind, start.title, start.status) == ("edit", "Write a.txt", "pending")
    assert [loc.path for loc in start.locations] == [target]
    assert [(c.type, c.path, c.new_text, c.old_text) for c in start.content] == [("diff", target, "hello\n", None)]
    [(asked, options)] = editor.permission_requests
    assert asked.tool_call_id == start.tool_call_id and asked.kind == "edit"
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    statuses = [u.status for u in editor.of_kind("tool_call_update")]
    assert statuses == ["in_progress", "completed"]
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert editor.kinds().index("tool_call") < editor.kinds().index("tool_call_update")


async def test_rejected_and_always_answers(env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path) -> None:
    fake_api.enqueue(
        tool_reply("write_file", {"path": "no.txt", "content": "x"}),
        text_reply("Not written."),
        tool_reply("write_file", {"path": "yes.txt", "content": "y"}),
        tool_reply("write_file", {"path": "yes2.txt", "content": "z"}),
        text_reply("Both written."),
    )
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        editor.answer = "reject_once"
        await conn.prompt(session_id=session, prompt=[text_block("write no.txt")])
        failed = editor.of_kind("tool_call_update")[-1]
        assert failed.status == "failed" and not (tmp_path / "no.txt").exists()
        assert "denied" in fake_api.requests[1].body["messages"][-1]["content"][0]["content"]
        editor.answer = "allow_always"
        await conn.prompt(session_id=session, prompt=[text_block("write yes.txt and yes2.txt")])
    assert (tmp_path / "yes.txt").read_text() == "y" and (tmp_path / "yes2.txt").read_text() == "z"
    assert len(editor.permission_requests) == 2  # the rule "always" saved answered the second write
    rules = [rule.text for rule in Permissions.load().rules]
    assert any(rule.startswith("local:write_file(") for rule in rules), rules


async def test_cancel_mid_stream_ends_the_prompt_cancelled(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    gate = threading.Event()
    fake_api.enqueue(text_reply("Hello there, this goes on", chunk_size=5, stall_after=4, gate=gate))
    try:
        async with editor_session(env, cwd=tmp_path) as (editor, conn):
            session = await open_session(conn, tmp_path)
            prompt = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block("talk")]))
            await editor.wait_for(lambda: "agent_message_chunk" in editor.kinds())
            await conn.cancel(session_id=session)
            answer = await prompt
            assert answer.stop_reason == "cancelled"
            fake_api.enqueue(text_reply("Still here."))
            again = await conn.prompt(session_id=session, prompt=[text_block("are you there?")])
            assert again.stop_reason == "end_turn" and editor.text().endswith("Still here.")
    finally:
        gate.set()


async def test_modes_plan_and_slash_commands(env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path) -> None:
    items = [
        {"text": "look", "status": "done"},
        {"text": "fix", "status": "in_progress"},
        {"text": "test", "status": "pending"},
    ]
    fake_api.enqueue(
        tool_reply("todo", {"items": items}),
        tool_reply("write_file", {"path": "b.txt", "content": "b"}),
        text_reply("ok"),
    )
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        await conn.cancel(session_id=session)  # nothing runs: the next prompt is not stopped by it
        await conn.set_session_mode(session_id=session, mode_id="accept_edits")
        with pytest.raises(RequestError):
            await conn.set_session_mode(session_id=session, mode_id="yolo")
        await conn.prompt(session_id=session, prompt=[text_block("plan, then write b.txt")])
        said = await conn.prompt(session_id=session, prompt=[text_block("/budget 5")])
    assert [u.current_mode_id for u in editor.of_kind("current_mode_update")] == ["accept_edits"]
    assert editor.permission_requests == []  # accept_edits: an edit in the working tree goes through
    assert (tmp_path / "b.txt").read_text() == "b"
    [plan] = editor.of_kind("plan")
    assert [(e.content, e.status) for e in plan.entries] == [
        ("look", "completed"),
        ("fix", "in_progress"),
        ("test", "pending"),
    ]
    assert said.stop_reason == "end_turn" and "the budget is $5.00" in editor.text()
    assert len(fake_api.requests) == 3  # the slash command asked no model


async def test_a_cut_answer_stops_with_max_tokens(env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path) -> None:
    fake_api.enqueue(text_reply("Half an ans", stop_reason="max_tokens"))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        answer = await conn.prompt(session_id=session, prompt=[text_block("say it all")])
    assert answer.stop_reason == "max_tokens"


async def test_load_replays_an_earlier_session_and_headless_continues_it(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(tool_reply("write_file", {"path": "c.txt", "content": "c"}), text_reply("First answer."))
    async with editor_session(env, cwd=tmp_path) as (_, conn):
        session = await open_session(conn, tmp_path)
        await conn.prompt(session_id=session, prompt=[text_block("first prompt")])
    fake_api.enqueue(text_reply("Second answer."))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        loaded = await conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        replayed = list(editor.kinds())
        assert editor.text("user_message_chunk") == "first prompt"
        assert editor.text() == "First answer."
        assert replayed.count("tool_call") == 1 and editor.of_kind("tool_call_update")[-1].status == "completed"
        await conn.prompt(session_id=session, prompt=[text_block("second prompt")])
        listed = await conn.list_sessions(cwd=str(tmp_path))
        assert [(s.session_id, s.title) for s in listed.sessions] == [(session, "first prompt")]
        assert (await conn.list_sessions(cwd=str(tmp_path / "elsewhere"))).sessions == []
    history = fake_api.requests[-1].body["messages"]
    assert "first prompt" in str(history[0]) and "second prompt" in str(history[-1])
    fake_api.enqueue(text_reply("Third answer."))
    headless = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "--resume", session, "-p", "third prompt"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert headless.returncode == 0, headless.stderr
    assert "second prompt" in str(fake_api.requests[-1].body["messages"])


async def test_an_unknown_session_and_a_missing_key_are_said(env: dict[str, str], tmp_path: Path) -> None:
    async with editor_session(env, cwd=tmp_path) as (_, conn):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        with pytest.raises(RequestError):
            await conn.prompt(session_id="nope", prompt=[text_block("hi")])
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(tmp_path), session_id="no-such-session", mcp_servers=[])
    keyless = {k: v for k, v in env.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    async with editor_session(keyless, cwd=tmp_path, editor=RecordingEditor()) as (_, conn):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert raised.value.code == -32000  # auth_required


FILES = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


def tool_result_text(fake_api: FakeAnthropic, request: int) -> str:
    """The text of the first tool result in the last message of request number `request`."""
    content = fake_api.requests[request].body["messages"][-1]["content"][0]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def test_reads_and_edits_of_the_working_tree_go_through_the_editor(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("saved text\n")
    fake_api.enqueue(
        tool_reply("read_file", {"path": "notes.txt"}),
        tool_reply("edit_file", {"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}),
        tool_reply("read_file", {"path": "/etc/hostname"}),
        text_reply("ok"),
    )
    async with editor_session(env, cwd=tmp_path, args=("--sandbox", "off")) as (editor, conn):  # see below
        editor.buffers[str(notes)] = "unsaved text\n"  # what the person has not saved yet
        session = await open_session(conn, tmp_path, FILES)
        await conn.set_session_mode(session_id=session, mode_id="auto")
        await conn.prompt(session_id=session, prompt=[text_block("read notes, fix them")])
    assert "unsaved text" in tool_result_text(fake_api, 1)  # the model saw the buffer, not the disk
    assert editor.writes == [(str(notes), "edited text\n")]
    assert "through the editor" in tool_result_text(fake_api, 2)
    assert editor.reads == [str(notes), str(notes)]  # /etc/hostname, outside the tree, was read here
    assert tool_result_text(fake_api, 3).strip()


async def test_what_the_sandbox_refuses_never_goes_through_the_editor(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    config = tmp_path / ".git" / "config"
    before = config.read_text()
    fake_api.enqueue(tool_reply("write_file", {"path": ".git/config", "content": "[core]\n"}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path, FILES)
        await conn.set_session_mode(session_id=session, mode_id="auto")
        editor.answer = "reject_once"
        await conn.prompt(session_id=session, prompt=[text_block("rewrite the git config")])
    assert editor.writes == [] and config.read_text() == before
    [(asked, options)] = editor.permission_requests  # leaving the sandbox: a person, each time
    assert "outside the sandbox" in (asked.title or "")
    assert [o.kind for o in options] == ["allow_once", "reject_once"]


async def test_the_editors_mcp_servers_join_ours(env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path) -> None:
    tiny = McpServerStdio(name="tiny", command=sys.executable, args=[str(TINY)], env=[])
    fake_api.enqueue(tool_reply("mcp__tiny__echo", {"text": "from the editor's server"}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[tiny])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("echo it")])
    assert "mcp__tiny__echo" in [tool["name"] for tool in fake_api.requests[0].body["tools"]]
    assert "from the editor's server" in tool_result_text(fake_api, 1)
    [call] = editor.of_kind("tool_call")
    assert (call.title, call.kind) == ("tiny: echo", "other")


async def test_a_cancel_sent_with_the_prompt_is_not_lost(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    gate = threading.Event()  # the reply never comes until the test ends
    fake_api.enqueue(text_reply("too late", gate=gate))
    try:
        async with editor_session(env, cwd=tmp_path) as (editor, conn):
            session = await open_session(conn, tmp_path)
            prompt = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block("hello")]))
            await asyncio.sleep(0)  # a yield, not a wait: the prompt's request is written first
            await conn.cancel(session_id=session)
            async with asyncio.timeout(30):
                answer = await prompt
            assert answer.stop_reason == "cancelled"
            assert "too late" not in editor.text()
    finally:
        gate.set()


async def test_a_commands_output_shows_while_it_runs(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    command = "echo started; while [ ! -e go ]; do sleep 0.05; done; echo finished"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    async with editor_session(env, cwd=tmp_path) as (editor, conn):
        session = await open_session(conn, tmp_path)
        await conn.set_session_mode(session_id=session, mode_id="auto")
        prompt = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block("run it")]))

        def output_shown() -> bool:
            updates = editor.of_kind("tool_call_update")
            return any(u.status is None and u.content and "started" in u.content[0].content.text for u in updates)

        await editor.wait_for(output_shown)  # the command is still waiting for `go`
        (tmp_path / "go").touch()
        assert (await prompt).stop_reason == "end_turn"
    [call] = editor.of_kind("tool_call")
    assert (call.kind, call.title) == ("execute", f"Run `{command}`")
    done = editor.of_kind("tool_call_update")[-1]
    assert done.status == "completed" and "finished" in done.content[0].content.text


async def test_other_machines_work_from_the_editor_with_our_own_tools(
    ssh_hosts, env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    remote_data = tmp_path / "remote-data"
    workspace = remote_data / "cmdop-tui-workspace"  # beside the data dir there
    workspace.mkdir(parents=True)
    lab = ssh_hosts(2, env={"XDG_DATA_HOME": str(remote_data)})
    config = tmp_path / "config.toml"
    config.write_text(f"ssh_config = {json.dumps(str(lab.config))}\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    command = "echo hello from the fleet"
    fake_api.enqueue(
        tool_reply("run_on_machines", {"command": command, "machines": ["alpha", "bravo"]}),
        tool_reply("write_file", {"path": "remote.txt", "content": "r\n", "machine": "alpha"}),
        text_reply("done"),
    )
    async with editor_session({**env, "CMDOP_TUI_CONFIG": str(config)}, cwd=tree) as (editor, conn):
        session = await open_session(conn, tree, FILES)
        await conn.set_session_mode(session_id=session, mode_id="auto")
        assert (await conn.prompt(session_id=session, prompt=[text_block("greet the fleet")])).stop_reason == "end_turn"
    fanout, write = editor.of_kind("tool_call")
    assert (fanout.kind, fanout.title) == ("execute", f"Run `{command}` on alpha, bravo")
    assert (write.title, write.locations) == ("Write remote.txt on alpha", None)
    assert [c.path for c in write.content] == ["alpha:remote.txt"]
    ends = [u for u in editor.of_kind("tool_call_update") if u.status == "completed"]
    assert len(ends) == 2 and "hello from the fleet" in ends[0].content[0].content.text
    assert editor.writes == [] and (workspace / "remote.txt").read_text() == "r\n"  # over ssh, not the editor


async def test_a_run_that_fails_answers_the_prompt_with_its_reason(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.enqueue(error_reply(400, message="messages: the request is malformed"))
    async with editor_session(env, cwd=tmp_path) as (_, conn):
        session = await open_session(conn, tmp_path)
        with pytest.raises(RequestError) as raised:
            await conn.prompt(session_id=session, prompt=[text_block("hi")])
        assert "the request is malformed" in str(raised.value)
        fake_api.enqueue(text_reply("fine now"))
        assert (await conn.prompt(session_id=session, prompt=[text_block("again")])).stop_reason == "end_turn"


class RacedEditor(RecordingEditor):
    """An editor whose files a concurrent command swaps for a symlink out of the tree between our
    check of a path and the editor's write of it (as a background job may): the editor, outside
    our sandbox, follows it."""

    def __init__(self, outside: Path) -> None:
        super().__init__()
        self.outside = outside

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        Path(path).unlink(missing_ok=True)
        Path(path).symlink_to(self.outside)
        return await super().write_text_file(content, path, session_id, **kwargs)


@pytest.mark.skipif(bubblewrap() is None, reason="no sandbox here: the editor's files are used as ours would be")
async def test_with_the_sandbox_on_the_editor_never_writes_for_the_model(
    env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-marker"
    outside.write_text("untouched\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "notes.txt").write_text("saved\n")
    fake_api.enqueue(tool_reply("write_file", {"path": "notes.txt", "content": "MARKER\n"}), text_reply("ok"))
    async with editor_session(env, cwd=tree, editor=RacedEditor(outside)) as (editor, conn):
        session = await open_session(conn, tree, FILES)
        await conn.set_session_mode(session_id=session, mode_id="auto")
        await conn.prompt(session_id=session, prompt=[text_block("write the notes")])
    assert editor.writes == [] and editor.reads == []  # our sandboxed tool wrote it
    assert outside.read_text() == "untouched\n" and (tree / "notes.txt").read_text() == "MARKER\n"
