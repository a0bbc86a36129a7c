"""`cmdop-tui -p ... --input-format stream-json`: user messages on stdin steer the running prompt,
in a child process talking to the fake API over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.headless import steering_text

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    env["CMDOP_TUI_NO_WARM"] = "1"
    return env


def user_line(content) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}}) + "\n"


def test_stdin_user_messages_steer_the_running_prompt(fake_api, cli_env, tmp_path):
    flag = tmp_path / "go-on"
    command = f"echo started; while [ ! -e {flag} ]; do sleep 0.02; done; echo finished"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}, id="toolu_h1"), text_reply("Both checked."))
    args = ["-p", "check it", "--yes", "--output-format", "stream-json", "--input-format", "stream-json"]
    child = subprocess.Popen(
        CLI + args, env=cli_env, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        event = json.loads(child.stdout.readline())
        while not (event["type"] == "tool_progress" and "started" in event["text"]):
            event = json.loads(child.stdout.readline())
        child.stdin.write(user_line([{"type": "text", "text": "and the disk too"}]))
        child.stdin.write("not json\n")  # said and skipped; once it is said, the line before was read
        child.stdin.flush()
        said = child.stderr.readline()
        assert "line 2 is not a user message" in said
        flag.touch()
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, err
    kinds = [json.loads(line)["type"] for line in out.splitlines()]
    assert "steering" in kinds and kinds[-1] == "final"
    last = fake_api.requests[1].body["messages"][-1]["content"]
    assert [(b["type"], b.get("text") or b.get("tool_use_id")) for b in last] == [
        ("tool_result", "toolu_h1"),
        ("text", "and the disk too"),
    ]


def test_stream_json_input_wants_the_prompt_as_an_argument(cli_env):
    done = subprocess.run(
        CLI + ["-p", "-", "--input-format", "stream-json"], env=cli_env, input="hi", capture_output=True, text=True
    )
    assert done.returncode == 2 and "give the prompt with -p TEXT" in done.stderr


def test_only_user_messages_are_steering():
    assert steering_text(user_line("plain")) == "plain"
    assert steering_text(user_line([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])) == "a\nb"
    for line in ["{}", "[1]", json.dumps({"type": "assistant", "message": {"role": "user", "content": "x"}})]:
        assert steering_text(line) is None
    assert steering_text(user_line([{"type": "image", "source": {}}])) is None
