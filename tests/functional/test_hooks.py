"""Hooks over the fake Messages API, with real hook scripts: a PreToolUse hook that denies (the
model reads why), changes a call's input (the changed call is what runs, and the floor still
judges it), blocks by exit 2, times out (fail-closed with on_failure = "block"); PostToolUse,
Stop, UserPromptSubmit and PermissionRequest hooks; no credential in a hook's environment; a Stop
kills a running hook; a project's hooks run only once trusted as they are; `-p` prints a `hook`
event per run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.events import Cancelled, HookRan, ToolEnd
from cmdop_tui.config.loading import settings_from
from cmdop_tui.config.settings import Settings
from cmdop_tui.session.session import Session
from cmdop_tui.tools.outcome import OutcomeKind

PYTHON = sys.executable


def hook_script(folder: Path, name: str, body: str) -> str:
    """A Python hook script (its input parsed as `event`); the command line that runs it."""
    path = folder / f"{name}.py"
    path.write_text("import json, os, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{PYTHON} {path}"


def hooked(toml: str, *, auto: bool = True) -> Settings:
    return settings_from(tomllib.loads(toml)).with_run(auto_approve=auto)


def prompt_hook(command: str) -> Settings:
    return hooked(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(command)}\n")


def pre_tool_use(command: str, extra: str = "") -> str:
    return f'[[hooks.PreToolUse]]\nmatcher = "execute_command"\ncommand = {json.dumps(command)}\n{extra}'


def last_result(fake_api) -> dict:
    return fake_api.requests[-1].body["messages"][-1]["content"][0]


async def one_call(fake_api, settings: Settings, cwd: Path, command: str) -> Recorder:
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("done"))
    events = Recorder()
    async with Session(settings, platform="headless", cwd=cwd, record=False) as session:
        assert (await session.run("do it", events)).status == "final"
    return events


async def test_a_deny_is_read_by_the_model_and_the_hook_reads_claude_codes_fields(fake_api, anthropic_env, tmp_path):
    seen = tmp_path / "seen.json"
    deny = hook_script(
        tmp_path,
        "deny",
        f"open({str(seen)!r}, 'w').write(json.dumps(event))\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'deny',"
        " 'permissionDecisionReason': 'no deploys on Friday'}}))\n",
    )
    events = await one_call(fake_api, hooked(pre_tool_use(deny)), tmp_path, "touch made")
    result = last_result(fake_api)
    assert result["is_error"] and "no deploys on Friday" in result["content"] and "not run" in result["content"]
    assert not (tmp_path / "made").exists()
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "execute_command"
    assert event["tool_input"] == {"command": "touch made"} and event["cwd"] == str(tmp_path)
    assert event["tool_use_id"] == result["tool_use_id"] and "session_id" in event and "transcript_path" in event
    assert event["machine"] == "local" and event["host"] == "localhost" and event["tags"] == []
    assert [p["machine"] for p in event["placement"]] == ["local"]
    [ran] = events.of(HookRan)
    assert (ran.event, ran.decision, ran.reason, ran.call_id) == (
        "PreToolUse",
        "blocked",
        "no deploys on Friday",
        result["tool_use_id"],
    )


async def test_a_changed_input_is_what_runs_and_the_floor_still_judges_it(fake_api, anthropic_env, tmp_path):
    rewrite = hook_script(
        tmp_path,
        "rewrite",
        "command = event['tool_input']['command'].replace('first', 'second')\n"
        "if 'wipe' in command: command = 'rm -rf /'\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow',"
        " 'updatedInput': {'command': command}}}))\n",
    )
    settings = hooked(pre_tool_use(rewrite))
    events = await one_call(fake_api, settings, tmp_path, "touch first")
    assert (tmp_path / "second").exists() and not (tmp_path / "first").exists()
    assert not last_result(fake_api).get("is_error")
    assert [e.decision for e in events.of(HookRan)] == ["changed input"]

    await one_call(fake_api, settings, tmp_path, "echo wipe")  # the hook makes it rm -rf /
    result = last_result(fake_api)
    assert (
        result["is_error"] and "refused by the safety floor" in result["content"]
    )  # the floor refused the changed call
    assert (tmp_path / "second").exists()


async def test_exit_2_blocks_with_stderr_as_the_reason(fake_api, anthropic_env, tmp_path):
    block = hook_script(tmp_path, "block", "sys.stderr.write('use the staging host first')\nsys.exit(2)\n")
    events = await one_call(fake_api, hooked(pre_tool_use(block)), tmp_path, "touch made")
    result = last_result(fake_api)
    assert result["is_error"] and "use the staging host first" in result["content"]
    assert not (tmp_path / "made").exists()
    [end] = events.of(ToolEnd)  # drawn as a hook's denial, not a person's nor a failure
    assert end.outcome.kind == OutcomeKind.DENIED_BY_HOOK and "use the staging host first" in end.outcome.reason


@pytest.mark.parametrize("on_failure", ["block", "continue"])
async def test_a_hook_that_times_out_blocks_only_when_it_fails_closed(fake_api, anthropic_env, tmp_path, on_failure):
    slow = hook_script(tmp_path, "slow", "import time\ntime.sleep(30)\n")
    settings = hooked(pre_tool_use(slow, f'timeout = 0.3\non_failure = "{on_failure}"\n'))
    events = await one_call(fake_api, settings, tmp_path, "touch made")
    [ran] = events.of(HookRan)
    assert "timed out after 0.3 s" in ran.reason
    if on_failure == "block":
        assert ran.decision == "failed, blocked" and not (tmp_path / "made").exists()
        assert "timed out" in last_result(fake_api)["content"]
    else:
        assert ran.decision == "failed" and (tmp_path / "made").exists()


async def test_invalid_json_blocks_a_fail_closed_hook(fake_api, anthropic_env, tmp_path):
    broken = hook_script(tmp_path, "broken", "print('{not json')\n")
    await one_call(fake_api, hooked(pre_tool_use(broken, 'on_failure = "block"\n')), tmp_path, "touch made")
    assert "invalid JSON" in last_result(fake_api)["content"] and not (tmp_path / "made").exists()


async def test_a_hook_never_sees_the_api_key(fake_api, anthropic_env, tmp_path, monkeypatch):
    monkeypatch.setenv("COPY_OF_THE_KEY", fake_api.api_key)  # the same secret under another name
    monkeypatch.setenv("SOME_SETTING", "kept")
    env_dump = tmp_path / "env.json"
    dump = hook_script(tmp_path, "env", f"open({str(env_dump)!r}, 'w').write(json.dumps(dict(os.environ)))\n")
    await one_call(fake_api, hooked(pre_tool_use(dump)), tmp_path, "echo hi")
    environment = json.loads(env_dump.read_text())
    assert fake_api.api_key not in json.dumps(environment)
    assert "ANTHROPIC_API_KEY" not in environment and "COPY_OF_THE_KEY" not in environment
    assert environment["SOME_SETTING"] == "kept" and environment["CMDOP_PROJECT_DIR"] == str(tmp_path)


async def test_post_tool_use_tells_the_model_and_a_stop_hook_makes_the_run_go_on(fake_api, anthropic_env, tmp_path):
    post = hook_script(tmp_path, "post", "print(json.dumps({'decision': 'block', 'reason': 'now run the linter'}))\n")
    stop = hook_script(
        tmp_path,
        "stop",
        "if not event['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'the tests were not run'}))\n",
    )
    toml = f"""
[[hooks.PostToolUse]]
command = {json.dumps(post)}
[[hooks.Stop]]
command = {json.dumps(stop)}
"""
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo built"}), text_reply("built"), text_reply("tested")
    )
    events = Recorder()
    async with Session(hooked(toml), platform="headless", cwd=tmp_path, record=False) as session:
        result = await session.run("build it", events)
    assert result.status == "final" and result.text == "tested"
    tool_result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert "built" in tool_result["content"] and "A hook says: now run the linter" in tool_result["content"]
    assert fake_api.requests[2].body["messages"][-1]["content"][-1]["text"] == "the tests were not run"
    assert [(e.event, e.decision) for e in events.of(HookRan)] == [
        ("PostToolUse", "blocked"),
        ("Stop", "blocked"),
        ("Stop", "ok"),
    ]


async def test_a_prompt_hook_blocks_a_prompt_or_adds_context(fake_api, anthropic_env, tmp_path):
    gate = hook_script(
        tmp_path,
        "prompt",
        "if 'password' in event['prompt']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'no passwords in prompts'}))\n"
        "else:\n"
        "    print('the on-call engineer is Ann')\n",
    )
    fake_api.enqueue(text_reply("ok"))
    events = Recorder()
    async with Session(prompt_hook(gate), platform="headless", cwd=tmp_path, record=False) as session:
        blocked = await session.run("my password is hunter2", events)
        assert blocked.status == "error" and "no passwords in prompts" in blocked.message
        assert fake_api.requests == []  # never sent
        assert (await session.run("who is on call?", events)).status == "final"
    sent = fake_api.requests[0].body["messages"][-1]["content"]
    assert "who is on call?" in str(sent) and "the on-call engineer is Ann" in str(sent)
    assert "hunter2" not in json.dumps(fake_api.requests[0].body)


async def test_a_permission_request_hook_answers_when_no_person_can(fake_api, anthropic_env, tmp_path):
    allow = hook_script(
        tmp_path,
        "permit",
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',"
        " 'decision': {'behavior': 'allow' if 'allowed' in event['tool_input']['command'] else 'deny',"
        " 'message': 'only allowed files'}}}))\n",
    )
    toml = f"[[hooks.PermissionRequest]]\ncommand = {json.dumps(allow)}\n"
    await one_call(fake_api, hooked(toml, auto=False), tmp_path, "touch allowed")
    assert (tmp_path / "allowed").exists()
    await one_call(fake_api, hooked(toml, auto=False), tmp_path, "touch other")
    result = last_result(fake_api)
    assert not (tmp_path / "other").exists() and "only allowed files" in result["content"]


async def test_a_stop_kills_a_running_hook_at_once(fake_api, anthropic_env, tmp_path):
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    hang = hook_script(
        tmp_path, "hang", f"open({str(fifo)!r}, 'w').write(str(os.getpid()))\nimport time\ntime.sleep(60)\n"
    )
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch made"}))
    events = Recorder()
    async with Session(hooked(pre_tool_use(hang)), platform="headless", cwd=tmp_path, record=False) as session:
        run = asyncio.create_task(session.run("do it", events))
        pid = int(await asyncio.to_thread(fifo.read_text))  # the hook runs
        session.stop()
        result = await run
    assert result.status == "cancelled" and not (tmp_path / "made").exists()
    assert gone(pid)


async def test_a_stop_while_a_prompt_hook_runs_stops_the_run_before_the_model_is_asked(
    fake_api, anthropic_env, tmp_path
):
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    hang = hook_script(  # hangs while the fifo is there
        tmp_path,
        "hang",
        f"if os.path.exists({str(fifo)!r}):\n"
        f"    open({str(fifo)!r}, 'w').write(str(os.getpid()))\n"
        "    import time\n"
        "    time.sleep(60)\n",
    )
    fake_api.enqueue(text_reply("asked"))
    events = Recorder()
    async with Session(prompt_hook(hang), platform="headless", cwd=tmp_path, record=False) as session:
        run = asyncio.create_task(session.run("do it", events))
        pid = int(await asyncio.to_thread(fifo.read_text))  # the hook runs
        session.stop()
        result = await asyncio.wait_for(run, 10)
        assert result.status == "cancelled" and fake_api.requests == []  # the model was asked nothing
        assert events.events[-1] == Cancelled(reason="ui", message="stopped by the user")
        assert gone(pid)
        fifo.unlink()
        assert (await session.run("and now", Recorder())).text == "asked"  # the last Stop was its run's


def gone(pid: int) -> bool:
    """Whether the process ended (a zombie has ended: only its parent's bookkeeping is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def test_a_projects_hooks_run_only_once_trusted_as_they_are(fake_api, anthropic_env, tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / ".cmdop" / "mark.sh"
    script.parent.mkdir()
    script.write_text(f"touch {marker}\n")
    hooks_file = {
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh .cmdop/mark.sh"}]}]}
    }
    (tmp_path / ".cmdop" / "hooks.json").write_text(json.dumps(hooks_file))

    async def session_notes() -> list[str]:
        fake_api.enqueue(tool_reply("execute_command", {"command": "echo hi"}), text_reply("done"))
        async with Session(hooked(""), platform="headless", cwd=tmp_path, record=False) as session:
            await session.run("go", Recorder())
            return session.notes

    notes = await session_notes()
    assert not marker.exists() and any("hooks.json" in note and "trust" in note for note in notes)
    trusted = subprocess.run(
        [PYTHON, "-m", "cmdop_tui", "hooks", "trust"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert trusted.returncode == 0 and "hooks for PreToolUse" in trusted.stdout, trusted.stderr
    await session_notes()
    assert marker.exists()  # Bash matched execute_command
    marker.unlink()
    script.write_text(f"touch {marker}; echo changed\n")  # the script changed: asked again
    notes = await session_notes()
    assert not marker.exists() and any("hooks.json" in note for note in notes)


def test_headless_prints_a_hook_event_per_run(fake_api, anthropic_env, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(pre_tool_use("cat >/dev/null"))
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo hi"}), text_reply("done"))
    run = subprocess.run(
        [PYTHON, "-m", "cmdop_tui", "-p", "go", "--output-format", "stream-json", "--yes"],
        cwd=tmp_path,
        env={**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    [hook] = [line for line in lines if line["type"] == "hook"]
    assert hook["event"] == "PreToolUse" and hook["command"] == "cat >/dev/null" and hook["decision"] == "ok"
    assert hook["duration_s"] >= 0 and hook["tool"] == "execute_command"
    ends = [line for line in lines if line["type"] == "tool_end"]
    assert ends and not ends[0]["is_error"]
    assert ToolEnd.kind == "tool_end"


async def test_the_tools_panel_shows_a_row_per_hook_run(fake_api, tmp_path):
    from tui_helpers import finish_turn, make_app, submit, wait_until

    block = hook_script(tmp_path, "block", "sys.stderr.write('not here')\nsys.exit(2)\n")
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch made"}), text_reply("blocked"))
    app = make_app(fake_api, settings=hooked(pre_tool_use(block)))
    async with app.run_test(size=(140, 40)) as pilot:
        await submit(pilot, "make it")
        await finish_turn(pilot)
        table = app.query_one("#tool-table")
        await wait_until(pilot, lambda: table.row_count == 2, what="a hook row and the call's row")
        hook_row = [str(cell) for cell in table.get_row_at(0)]
        assert hook_row[1] == "hook PreToolUse" and "blocked: not here" in hook_row[4] and block in hook_row[4]
        assert str(table.get_row_at(1)[1]) == "execute_command"
    assert not (tmp_path / "made").exists()


def test_the_library_runs_hooks_as_the_session_does_and_audits_each_run(fake_api, anthropic_env, tmp_path, monkeypatch):
    from cmdop_tui import Operator
    from cmdop_tui.permissions.store import audit_path

    seen = tmp_path / "seen.json"
    start = hook_script(tmp_path, "start", "print('the deploy window is closed')\n")
    deny = hook_script(
        tmp_path,
        "deny",
        f"open({str(seen)!r}, 'w').write(json.dumps(event))\n"
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'deny', 'permissionDecisionReason': 'closed'}}))\n",
    )
    config = tmp_path / "config.toml"
    config.write_text(f"[[hooks.SessionStart]]\ncommand = {json.dumps(start)}\n" + pre_tool_use(deny))
    monkeypatch.setenv("CMDOP_TUI_CONFIG", str(config))
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch made"}), text_reply("it is closed"))
    with Operator(cwd=tmp_path, approval="auto") as operator:
        assert operator.chat("deploy") == "it is closed"
    assert "the deploy window is closed" in str(fake_api.requests[0].body["messages"][0]["content"])
    assert "closed" in last_result(fake_api)["content"] and not (tmp_path / "made").exists()
    event = json.loads(seen.read_text())
    assert event["session_id"] and Path(event["transcript_path"]).exists()
    audited = [json.loads(line) for line in audit_path().read_text().splitlines()]
    hooks = [line for line in audited if "hook" in line]
    assert [(h["hook"], h["decision"]) for h in hooks] == [("SessionStart", "ok"), ("PreToolUse", "blocked")]
    assert hooks[1]["command"] == deny and hooks[1]["tool"] == "execute_command" and hooks[1]["reason"] == "closed"


async def test_pre_compact_and_notification_hooks_hear_of_their_moments(fake_api, anthropic_env, tmp_path):
    from cmdop_tui.agent.approval import Approval, ToolCall

    compacting = tmp_path / "compacting.json"
    notified = tmp_path / "notified"
    os.mkfifo(notified)
    before = hook_script(tmp_path, "compact", f"open({str(compacting)!r}, 'w').write(json.dumps(event))\n")
    notify = hook_script(tmp_path, "notify", f"open({str(notified)!r}, 'w').write(event['message'])\n")
    toml = f"[[hooks.PreCompact]]\ncommand = {json.dumps(before)}\n[[hooks.Notification]]\ncommand = {json.dumps(notify)}\n"
    told: list[str] = []

    async def ask(call: ToolCall) -> Approval:
        told.append(await asyncio.to_thread(notified.read_text))  # the hook ran before the person answers
        return Approval(False, "not now", by_person=True)

    fake_api.enqueue(
        tool_reply("execute_command", {"command": "touch made"}),
        text_reply("not allowed"),
        text_reply("a summary of it all"),
    )
    async with Session(hooked(toml, auto=False), platform="headless", ask=ask, cwd=tmp_path, record=False) as session:
        assert (await session.run("make it", Recorder())).status == "final"
        await session.compact(Recorder(), "keep the names")
    assert told == ["cmdop-tui needs your permission to use execute_command on local"]
    event = json.loads(compacting.read_text())
    assert (event["hook_event_name"], event["trigger"], event["custom_instructions"]) == (
        "PreCompact",
        "manual",
        "keep the names",
    )


def test_headless_says_a_failed_hook_on_stderr_and_goes_on(fake_api, anthropic_env, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(pre_tool_use("exit 7"))
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo ran"}), text_reply("done"))
    run = subprocess.run(
        [PYTHON, "-m", "cmdop_tui", "-p", "go", "--yes"],
        cwd=tmp_path,
        env={**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and run.stdout.strip() == "done"
    assert "cmdop-tui: PreToolUse hook `exit 7` exited with 7" in run.stderr
    assert "ran" in last_result(fake_api)["content"]


async def test_a_hooks_ask_reaches_a_person_and_its_allow_spares_the_question_where_no_rule_asks(
    fake_api, anthropic_env, tmp_path
):
    from cmdop_tui.agent.approval import Approval, ToolCall

    word = hook_script(
        tmp_path,
        "word",
        "answer = 'ask' if 'ask' in event['tool_input']['command'] else 'allow'\n"
        "print(json.dumps({'hookSpecificOutput': {'permissionDecision': answer, 'permissionDecisionReason': 'check'}}))\n",
    )
    asked: list[str] = []

    async def person(call: ToolCall) -> Approval:
        asked.append(call.input["command"])
        return Approval(False, "the person said no", by_person=True)

    async def run(command: str, auto: bool) -> None:
        fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("done"))
        settings = hooked(pre_tool_use(word), auto=auto)
        async with Session(settings, platform="headless", ask=person, cwd=tmp_path, record=False) as session:
            await session.run("go", Recorder())

    await run("touch allowed", auto=False)  # changes ask by default; the hook's allow spares it
    assert (tmp_path / "allowed").exists() and asked == []
    await run("touch ask-me", auto=True)  # auto mode allows it; the hook's ask asks a person
    assert asked == ["touch ask-me"] and not (tmp_path / "ask-me").exists()
    assert "the person said no" in last_result(fake_api)["content"]


async def test_a_hook_runs_outside_the_sandbox(fake_api, anthropic_env, tmp_path, isolated_home):
    outside = isolated_home / "written-by-the-hook"
    mark = hook_script(tmp_path, "mark", f"open({str(outside)!r}, 'w').write('hook')\n")
    fake_api.enqueue(tool_reply("execute_command", {"command": f"echo command > {outside}"}), text_reply("done"))
    async with Session(hooked(pre_tool_use(mark)), platform="headless", cwd=tmp_path, record=False) as session:
        if not session.fleet.sandbox.confines:
            pytest.skip("no sandbox here to be outside of")
        await session.run("go", Recorder())
    assert outside.read_text() == "hook"  # the command, in the sandbox, could not write there
    assert last_result(fake_api)["is_error"]
