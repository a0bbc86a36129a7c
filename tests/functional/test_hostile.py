"""Hostile input, named case by case: tool output, model replies, settings, arguments.

Whatever comes in, the rule is the same: a clear error or an inert display, nothing lost, and a
conversation that is still valid for the next turn (the fake API validates every request).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import raw_tool_use, reply, text, text_reply, thinking, tool_reply, tool_use

from cmdop_tui.agent.events import ToolEnd
from cmdop_tui.agent.history import sanitize
from cmdop_tui.config.settings import SettingsError, load_settings
from cmdop_tui.support.text import strip_terminal_sequences

CONTROL = set(chr(c) for c in range(0x20) if chr(c) not in "\n\t") | {"\x7f"} | {chr(c) for c in range(0x80, 0xA0)}


def inert(text: str) -> bool:
    return not (set(text) & CONTROL) and "\u202e" not in text


# --- tool output -------------------------------------------------------------------------------

OUTPUT_CASES = {
    "osc52-clipboard-write": r"printf 'a\033]52;c;cm0gLXJmIC8K\007b'",
    "osc-title-change": r"printf '\033]0;owned\007title'",
    "osc-terminated-by-st": r"printf '\033]8;;http://evil\033\\link\033]8;;\033\\'",
    "csi-clear-screen": r"printf '\033[2J\033[Hcleared'",
    "csi-cursor-and-colour": r"printf '\033[10A\033[31mred\033[0m\033[?25l'",
    "dcs-string": r"printf '\033P+q544e\033\\after'",
    "bare-esc": r"printf 'x\033y'",
    "bel-flood": r"printf 'ding\a\a\a\a'",
    "backspace-overwrite": r"printf 'safe\b\b\b\bEVIL'",
    "carriage-return-hiding": r"printf 'rm -rf /\rls -la   \n'",
    "c1-8bit-csi": r"printf 'a\302\2332Jb'",
    "invalid-utf8": r"printf 'ok\377\376\375ok'",
    "nul-and-binary": r"head -c 4096 /dev/urandom",
    "bidi-override": r"printf 'user\342\200\256nimda'",
    "unterminated-osc": r"head -c 2000000 /dev/zero | tr '\0' x | sed 's/^/\x1b]0;/'",
    "long-single-line": r"head -c 3000000 /dev/zero | tr '\0' a",
}


@pytest.mark.parametrize("command", OUTPUT_CASES.values(), ids=OUTPUT_CASES.keys())
async def test_hostile_command_output_is_inert_for_screen_and_model(fake_api, command):
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("seen"))
    events = Recorder()
    result = await make_runner(fake_api).run("run it", events)
    assert result.status == "final"
    end = events.of(ToolEnd)[0]
    assert inert(end.output) and len(end.output) < 40_000
    assert all(inert(p.text) for p in events.events if p.kind == "tool_progress")
    sent = str(fake_api.requests[1].body["messages"][-1]["content"][0]["content"])
    assert inert(sent)


async def test_hostile_100mb_output_is_bounded_and_the_model_is_told_what_was_cut(fake_api):
    command = "head -c 100000000 /dev/zero | tr '\\0' 'z'"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("big"))
    events = Recorder()
    await make_runner(fake_api).run("flood", events)
    output = events.of(ToolEnd)[0].output
    assert len(output) < 40_000 and "bytes cut" in output and "99,9" in output


@pytest.mark.parametrize(
    "name, content",
    [
        ("file-with-escapes", b"line1\x1b]52;c;aGk=\x07\nline2\x1b[2J\n"),
        ("file-invalid-utf8", b"caf\xe9 \xff\xfe\n"),
        ("file-bidi", "admin\u202e txt.exe\n".encode()),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
async def test_hostile_file_contents_are_inert(fake_api, tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    fake_api.enqueue(tool_reply("read_file", {"path": str(path)}), text_reply("read"))
    events = Recorder()
    await make_runner(fake_api).run("read", events)
    assert inert(events.of(ToolEnd)[0].output) and not events.of(ToolEnd)[0].is_error


async def test_hostile_file_names_are_inert_in_listings(fake_api, tmp_path):
    (tmp_path / "evil\x1b]0;pwn\x07name").write_text("x")
    (tmp_path / "new\nline").write_text("x")
    fake_api.enqueue(tool_reply("list_dir", {"path": str(tmp_path)}), text_reply("listed"))
    events = Recorder()
    await make_runner(fake_api).run("list", events)
    output = events.of(ToolEnd)[0].output
    assert inert(output) and "evil" in output and "new^Jline" in output


async def test_hostile_binary_file_is_refused_with_its_size(fake_api, tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x00\x01\x02" * 1000)
    fake_api.enqueue(tool_reply("read_file", {"path": str(path)}), text_reply("ok"))
    events = Recorder()
    await make_runner(fake_api).run("read", events)
    end = events.of(ToolEnd)[0]
    assert end.is_error and ("3,000" in end.output or "3000" in end.output)


# --- model replies -----------------------------------------------------------------------------

MODEL_CASES = {
    "invalid-tool-json": (raw_tool_use("list_dir", '{"path": '), "not valid JSON"),
    "tool-input-not-an-object": (raw_tool_use("list_dir", "[1, 2]"), "must be a JSON object"),
    "unknown-tool": (tool_use("format_disk", {}), "does not exist"),
    "hidden-tool": (tool_use("write_file", {"path": "/tmp/x", "content": "x"}), "not available"),
    "missing-argument": (tool_use("grep", {}), "missing required field 'pattern'"),
    "wrong-type": (tool_use("read_file", {"path": ["a"]}), "must be a string"),
    "extra-argument": (tool_use("list_dir", {"path": ".", "sudo": True}), "sudo"),
    "out-of-range": (tool_use("execute_command", {"command": "true", "timeout_ms": 0}), "timeout_ms"),
    "boolean-for-integer": (tool_use("read_file", {"path": "x", "start": True}), "must be an integer"),
    "ask-machine-without-machines": (tool_use("ask_machine", {"hostname": "x", "prompt": "p"}), "does not exist"),
    "unknown-machine": (tool_use("list_dir", {"path": ".", "machine": "nowhere"}), "unknown machine"),
}


@pytest.mark.parametrize("block, expected", MODEL_CASES.values(), ids=MODEL_CASES.keys())
async def test_hostile_tool_calls_get_an_error_result_and_the_loop_goes_on(fake_api, block, expected):
    from cmdop_tui.agent.routing import ToolPolicy

    fake_api.enqueue(reply(block), text_reply("recovered"))
    runner = make_runner(fake_api, tool_policy=ToolPolicy(hidden=frozenset({"write_file"})))
    result = await runner.run("go", Recorder())
    assert result.status == "final" and result.text == "recovered"
    tool_result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert tool_result["is_error"] is True and expected in tool_result["content"]


async def test_hostile_reply_cut_at_max_tokens_mid_tool_call(fake_api):
    fake_api.enqueue(
        reply(text("Let me"), raw_tool_use("list_dir", '{"pa'), stop_reason="max_tokens"), text_reply("again")
    )
    result = await make_runner(fake_api).run("go", Recorder())
    assert result.text == "again"


async def test_hostile_empty_reply_then_a_valid_next_turn(fake_api):
    fake_api.enqueue(reply(), text_reply("second"))
    runner = make_runner(fake_api)
    first = await runner.run("one", Recorder())
    assert first.status == "final" and first.text == ""
    assert (await runner.run("two", Recorder())).text == "second"


async def test_hostile_fifty_parallel_tool_calls_are_all_answered(fake_api, tmp_path):
    calls = [tool_use("glob", {"pattern": f"*.{i}", "cwd": str(tmp_path)}) for i in range(50)]
    fake_api.enqueue(reply(*calls), text_reply("done"))
    result = await make_runner(fake_api).run("go", Recorder())
    assert result.text == "done" and len(fake_api.requests[1].body["messages"][-1]["content"]) == 50


async def test_hostile_escape_sequences_in_thinking_and_text_reach_history_unchanged(fake_api):
    # The model's own words are kept as sent (the API wants thinking back unmodified); only the
    # display makes them inert (see test_assistant_reply and test_tui).
    fake_api.enqueue(reply(thinking("think \x1b[2J"), text("hi \x1b]0;t\x07")), text_reply("next"))
    runner = make_runner(fake_api)
    await runner.run("go", Recorder())
    assert runner.conversation.messages[1]["content"][0]["thinking"] == "think \x1b[2J"
    assert (await runner.run("again", Recorder())).text == "next"


async def test_hostile_cancel_at_every_moment_leaves_a_valid_history(fake_api):
    gate = threading.Event()
    fake_api.enqueue(
        reply(text("start "), tool_use("execute_command", {"command": "sleep 30"}), stall_after=5, gate=gate)
    )
    runner = make_runner(fake_api)
    events = Recorder()
    import asyncio

    task = asyncio.create_task(runner.run("go", events))
    await events.wait_for(lambda e: e.kind == "token")
    runner.ui_cancel.fire()
    await task
    assert sanitize(runner.conversation.messages) == runner.conversation.messages
    gate.set()


# --- settings ----------------------------------------------------------------------------------

SETTINGS_CASES = {
    "broken-toml": ("[agent]\nmax_turns = = 3\n", "line 2"),
    "wrong-type": ('[agent]\nmax_turns = "many"\n', "'max_turns' must be int"),
    "boolean-for-int": ("[agent]\nmax_turns = true\n", "'max_turns' must be int"),
    "unknown-agent-key": ("[agent]\nfly = true\n", "unknown key 'fly'"),
    "machines-not-tables": ("machines = 3\n", "[machines] must be a table"),
    "machine-bad-port": ('[machines.web]\nport = "22"\n', "'port' must be int"),
    "machine-unknown-key": ('[machines.web]\npassword = "x"\n', "unknown key 'password'"),
    "not-utf8": (b"\xff\xfe[agent]\n", "not UTF-8"),
}


@pytest.mark.parametrize("content, expected", SETTINGS_CASES.values(), ids=SETTINGS_CASES.keys())
def test_hostile_settings_are_a_clear_error_and_never_rewritten(tmp_path, content, expected):
    path = tmp_path / "config.toml"
    data = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(data)
    with pytest.raises(SettingsError) as error:
        load_settings(path, environ={})
    assert str(path) in str(error.value) and expected in str(error.value)
    assert path.read_bytes() == data


def test_hostile_unknown_model_alias_is_a_clear_error(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[agent]\nmodel = "@nonexistent"\n')
    with pytest.raises(SettingsError, match="unknown model alias '@nonexistent'"):
        load_settings(path, environ={}).resolve_model("@nonexistent")


def test_hostile_broken_user_theme_is_skipped_with_a_note(tmp_path):
    from cmdop_tui.tui.themes import load_themes

    (tmp_path / "bad.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    themes, problems = load_themes(tmp_path)
    assert "bad" not in {t.name for t in themes} and problems and "bad.toml" in problems[0]


# --- command-line arguments --------------------------------------------------------------------

ARGUMENT_CASES = {
    "empty-prompt": (["-p", "   "], 2, "the prompt is empty"),
    "zero-max-turns": (["-p", "x", "--max-turns", "0"], 2, "must be at least 1"),
    "unknown-output-format": (["-p", "x", "--output-format", "xml"], 2, "invalid choice"),
    "unknown-flag": (["-p", "x", "--frobnicate"], 2, "unrecognized arguments"),
}


@pytest.mark.parametrize("argv, code, expected", ARGUMENT_CASES.values(), ids=ARGUMENT_CASES.keys())
def test_hostile_arguments_are_a_clear_usage_error(argv, code, expected):
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", *argv], capture_output=True, text=True, env={**os.environ}
    )
    assert done.returncode == code and expected in done.stderr and "Traceback" not in done.stderr


def test_hostile_prompt_with_escape_sequences_is_shown_inert():
    assert inert(strip_terminal_sequences("hello \x1b]52;c;aGk=\x07 \x1b[2J world"))
