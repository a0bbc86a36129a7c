"""The library's front door, `from cmdop_tui import Operator`, against the fake Messages API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator
from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.config.settings import Settings, load_settings
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.operator import OperatorError

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The Python example under README's "As a library" heading, verbatim."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## As a library", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README's library section has no Python example"
    return match.group(1)


def test_readme_loop_example_runs_until_the_breaker(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "mkdir demo"}),
        tool_reply("write_file", {"path": "demo/list.sh", "content": "ls demo\n"}),
        tool_reply("execute_command", {"command": "bash demo/list.sh"}),
        text_reply("The script printed: list.sh"),  # no breaker yet: loop mode asks again
        text_reply("All of it is done. The task is done."),
    )
    run = subprocess.run(
        [sys.executable, "-c", readme_example()],
        cwd=tmp_path,
        env={**os.environ, **anthropic_env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "All of it is done. The task is done."
    assert (tmp_path / "demo" / "list.sh").read_text() == "ls demo\n"
    ran_script = fake_api.requests[3].body["messages"][-1]["content"][0]
    assert "list.sh" in ran_script["content"] and not ran_script.get("is_error")
    loop_prompt = fake_api.requests[4].body["messages"][-1]["content"]
    assert "When the whole task is done, say exactly: The task is done." in str(loop_prompt)
    assert len(fake_api.requests) == 5


def test_chat_returns_the_answer_and_keeps_the_conversation(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("first answer"), text_reply("second answer"))
    with Operator(cwd=tmp_path, record=False) as operator:
        assert operator.chat("one") == "first answer"
        assert operator.chat("two") == "second answer"
        assert [m["role"] for m in operator.messages] == ["user", "assistant", "user", "assistant"]
    second = fake_api.requests[1].body["messages"]
    assert second[0]["content"][0]["text"] == "one" and second[-1]["content"][-1]["text"] == "two"
    assert fake_api.requests[0].body["temperature"] == 0.3


def test_default_approval_refuses_changes_nobody_can_approve(fake_api, anthropic_env, tmp_path):
    target = tmp_path / "made"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("could not"))
    with Operator(cwd=tmp_path, record=False) as operator:
        assert operator.chat("make it") == "could not"
    assert not target.exists()
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "no one can approve it" in result["content"]


def test_an_approval_function_decides_each_call(fake_api, anthropic_env, tmp_path):
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"touch {allowed}"}),
        tool_reply("execute_command", {"command": f"touch {denied}"}),
        text_reply("done"),
    )
    seen: list[str] = []

    async def decide(call: ToolCall) -> Approval:
        seen.append(call.input["command"])
        return Approval(str(allowed) in call.input["command"], "not that one")

    with Operator(cwd=tmp_path, record=False, approval=decide) as operator:
        operator.chat("go")
    assert allowed.exists() and not denied.exists() and len(seen) == 2
    assert "not that one" in fake_api.requests[2].body["messages"][-1]["content"][0]["content"]


def test_chat_raises_when_there_is_no_final_answer(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(*[tool_reply("list_dir", {"path": "."}) for _ in range(2)])
    with Operator(cwd=tmp_path, record=False, max_turns=2) as operator:
        with pytest.raises(OperatorError) as raised:
            operator.chat("list forever")
    assert raised.value.result.status == "max_turns"


async def test_run_yields_the_stream_json_events(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("list_dir", {"path": "."}), text_reply("listed"))
    async with Operator(cwd=tmp_path, record=False) as operator:
        kinds = [event["type"] async for event in operator.run("list")]
    assert kinds[0] == "turn_start" and kinds[-1] == "final"
    assert {"tool_start", "tool_end", "token", "usage"} <= set(kinds)
    assert operator.last_result is not None and operator.last_result.text == "listed"


async def test_leaving_run_early_stops_it_and_the_next_prompt_works(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "sleep 30"}))
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        async with contextlib.aclosing(operator.run("wait")) as events:
            async for event in events:
                if event["type"] == "tool_start":
                    break
        assert operator.last_result is not None and operator.last_result.status == "cancelled"
        fake_api.enqueue(text_reply("next"))
        answers = [e["text"] async for e in operator.run("again") if e["type"] == "final"]
    assert answers == ["next"]


async def test_a_run_abandoned_without_closing_is_stopped_by_the_next(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "sleep 30"}))
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        async for event in operator.run("wait"):
            if event["type"] == "tool_start":
                break
        fake_api.enqueue(text_reply("next"))
        answers = [e["text"] async for e in operator.run("again") if e["type"] == "final"]
    assert answers == ["next"]
    interrupted = fake_api.requests[-1].body["messages"][2]["content"][0]
    assert interrupted["type"] == "tool_result" and interrupted["is_error"]


def test_chat_inside_a_running_loop_says_what_to_use():
    async def inside() -> None:
        Operator(record=False).chat("hi")

    with pytest.raises(RuntimeError, match=r"operator\.run"):
        asyncio.run(inside())


def test_what_the_operator_leaves_unset_comes_from_the_config_file(fake_api, anthropic_env, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('permission_mode = "strict"\n\n[agents.default]\nmax_turns = 1\n')
    monkeypatch.setenv("CMDOP_TUI_CONFIG", str(config))
    target = tmp_path / "made"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}))
    with Operator(cwd=tmp_path, record=False) as operator, pytest.raises(OperatorError) as raised:
        operator.chat("make it")
    assert raised.value.result.status == "max_turns"  # the file's max_turns
    result = fake_api.requests[0].body  # one request only: the limit came first
    assert len(fake_api.requests) == 1 and not target.exists() and result["temperature"] == 0.3

    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("made"))
    with Operator(cwd=tmp_path, record=False, max_turns=5, approval="auto") as operator:
        assert operator.chat("make it") == "made"
    assert target.exists()


def test_the_model_is_told_the_working_directory_the_tools_use(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("ok"))
    with Operator(cwd=tmp_path, record=False) as operator:
        operator.chat("where am I?")
    system = json.dumps(fake_api.requests[0].body["system"])
    assert str(tmp_path) in system


def test_close_after_async_runs_closes_the_session(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("ok"))
    operator = Operator(cwd=tmp_path)

    async def one() -> list[str]:
        return [event["type"] async for event in operator.run("hi")]

    assert asyncio.run(one())[-1] == "final"
    session_id = operator._session.recorder.session_id
    operator.close()
    assert operator._session is None and operator.messages == []
    # The transcript's lock was let go: the session can be resumed at once.
    resumed = load_settings().with_run(resume=session_id)
    fake_api.enqueue(text_reply("again"))
    with Operator(cwd=tmp_path, settings=resumed) as again:
        assert again.chat("hello") == "again"
        assert [m["role"] for m in again.messages] == ["user", "assistant", "user", "assistant"]


def test_an_operator_works_on_a_remote_machine_over_real_ssh(ssh_hosts, fake_api, anthropic_env, tmp_path):
    lab = ssh_hosts(1)
    # Made in alpha's workspace: its /tmp is the session's own there.
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "touch made-over-ssh && echo at=$PWD && echo $SSH_CONNECTION"}),
        text_reply("made it there"),
    )
    settings = Settings(ssh_config=lab.config)
    with Operator(settings=settings, machine="alpha", approval="auto", cwd=tmp_path, record=False) as operator:
        assert operator.chat("make the file on alpha") == "made it there"
    ran = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert not ran.get("is_error") and "127.0.0.1" in ran["content"]  # sshd's side of the connection
    remote_file = Path(ran["content"].split("at=", 1)[1].split()[0]) / "made-over-ssh"
    try:
        assert remote_file.exists() and "cmdop-tui-workspace" in str(remote_file)  # not the remote home
    finally:
        remote_file.unlink(missing_ok=True)
    assert "Target machine: the user is working on alpha" in json.dumps(fake_api.requests[0].body["system"])


def test_machines_may_be_given_as_addresses():
    operator = Operator(machines=["web1", "ops@10.0.0.5:2222"], record=False)
    assert [(m.name, m.user, m.port) for m in operator.machines] == [("web1", None, None), ("10.0.0.5", "ops", 2222)]
    with pytest.raises(MachineError, match="cannot read the machine address"):
        Operator(machines=["not an address"])


def test_auto_run_is_open_interpreters_name_for_auto_approval():
    assert Operator(auto_run=True).approval == "auto"
    assert Operator(auto_run=True, approval="strict").approval == "strict"
