"""Sessions survive `kill -9`: `--continue` restores the conversation, repairs a half-finished
turn, and the next request is one the (validating) fake API accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from agent_helpers import running
from fake_anthropic import DEFAULT_API_KEY, text_reply, tool_reply

from cmdop_tui import transcripts as sessions

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def env(anthropic_env, tmp_path):
    return {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}


def start(args, env):
    return subprocess.Popen(CLI + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_until(child, predicate):
    """Read stream-json lines until one satisfies `predicate`; return it."""
    for line in child.stdout:
        event = json.loads(line)
        if predicate(event):
            return event
    raise AssertionError("the child ended before the expected event")


def kill_nine(child):
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    child.stdout.close()
    child.stderr.close()


def user_texts(body):
    return [b["text"] for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


def test_kill_9_during_a_streamed_reply_then_continue(fake_api, env):
    gate = threading.Event()
    fake_api.enqueue(text_reply("a long answer " * 40, stall_after=6, gate=gate), text_reply("Continued fine."))
    child = start(["-p", "first question", "--output-format", "stream-json"], env)
    read_until(child, lambda e: e["type"] == "token")
    kill_nine(child)
    gate.set()

    done = subprocess.run(
        CLI + ["--continue", "-p", "second question"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Continued fine.\n" and "resumed session" in done.stderr
    assert user_texts(fake_api.requests[1].body) == ["first question", "second question"]


def test_kill_9_during_a_command_then_continue_repairs_the_turn(fake_api, env):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo started; sleep 3017.5"}, id="toolu_01KILLED"),
        text_reply("I see it was interrupted."),
    )
    child = start(["-p", "run something long", "--output-format", "stream-json", "--yes"], env)
    read_until(child, lambda e: e["type"] == "tool_progress" and "started" in e["text"])
    deadline = time.monotonic() + 10  # the shell starts sleep just after it printed "started"
    while not running("sleep", "3017.5") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert running("sleep", "3017.5")  # found by its command line: inside the sandbox its pid is its own
    kill_nine(child)
    deadline = time.monotonic() + 10  # the command dies with the app, even after kill -9
    while running("sleep", "3017.5") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running("sleep", "3017.5")

    done = subprocess.run(
        CLI + ["--continue", "-p", "what happened?"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    messages = fake_api.requests[1].body["messages"]
    assert messages[1]["content"][0]["id"] == "toolu_01KILLED"
    result = messages[2]["content"][0]
    assert result["tool_use_id"] == "toolu_01KILLED" and result["is_error"] is True
    assert "what happened?" in user_texts(fake_api.requests[1].body)


def test_resume_by_id_and_nothing_to_continue(fake_api, env):
    fake_api.enqueue(text_reply("one"), text_reply("two"), text_reply("fresh"))
    assert subprocess.run(CLI + ["-p", "hello"], env=env, capture_output=True, timeout=30).returncode == 0
    (info,) = sessions.list_sessions()
    done = subprocess.run(
        CLI + ["--resume", info.id[:10], "-p", "again"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and user_texts(fake_api.requests[1].body) == ["hello", "again"]
    missing = subprocess.run(CLI + ["--resume", "nope", "-p", "x"], env=env, capture_output=True, text=True, timeout=30)
    assert missing.returncode == 1 and "nope" in missing.stderr and "Traceback" not in missing.stderr


def test_transcripts_are_private_and_hold_no_api_key(fake_api, env):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo key=$ANTHROPIC_API_KEY"}), text_reply("done"))
    assert subprocess.run(CLI + ["-p", "show", "--yes"], env=env, capture_output=True, timeout=30).returncode == 0
    (info,) = sessions.list_sessions()
    assert info.path.stat().st_mode & 0o777 == 0o600
    assert info.path.parent.stat().st_mode & 0o777 == 0o700
    content = info.path.read_text()
    assert DEFAULT_API_KEY not in content
    outputs = [json.loads(line)["output"] for line in content.splitlines() if '"kind":"tool_end"' in line]
    assert outputs and outputs[0].rstrip().endswith("key=")  # the command's environment has no key
    kinds = [json.loads(line).get("kind") for line in content.splitlines()]
    assert {"tool_start", "tool_end", "final"} <= set(kinds)
