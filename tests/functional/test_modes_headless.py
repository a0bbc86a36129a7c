"""`--permission-mode` in headless mode, and `approval=` in the library: plan refuses a write with
the reason the model reads, and the request says plan mode; accept_edits writes inside the
working directory without anyone to ask (there is no one: in default mode the same write is
refused) and still refuses a command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator
from cmdop_tui.agent.context import PLAN_MODE

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def run(mode: str, env: dict[str, str], cwd) -> subprocess.CompletedProcess[str]:
    args = [*CLI, "-p", "write it", "--permission-mode", mode]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, cwd=cwd)


@pytest.mark.parametrize(
    ("mode", "written", "said"),
    [
        ("plan", False, "plan mode: write_file was not run"),
        ("accept_edits", True, None),
        ("default", False, "no one can approve it here"),
    ],
)
def test_the_mode_from_the_command_line(fake_api, cli_env, tmp_path, mode, written, said):
    work = tmp_path / "work"
    work.mkdir()
    fake_api.enqueue(tool_reply("write_file", {"path": "out.txt", "content": "hi\n"}), text_reply("Done."))
    done = run(mode, cli_env, work)
    assert done.returncode == (4 if mode == "default" else 0), done.stderr  # 4: no one could be asked
    assert (work / "out.txt").exists() is written
    first, second = fake_api.requests
    system = first.body["system"]
    system = system if isinstance(system, str) else "".join(block["text"] for block in system)
    assert (PLAN_MODE in system) is (mode == "plan")
    result = second.body["messages"][-1]["content"][0]
    assert bool(result.get("is_error")) is not written
    if said:
        assert said in str(result["content"])


def test_the_library_takes_the_modes_as_approval(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply("write_file", {"path": "out.txt", "content": "hi\n"}),
        tool_reply("execute_command", {"command": "touch ran"}),
        text_reply("Wrote it; the command was refused."),
    )
    with Operator(cwd=tmp_path, record=False, approval="accept_edits") as operator:
        assert operator.chat("write, then run") == "Wrote it; the command was refused."
    assert (tmp_path / "out.txt").read_text() == "hi\n" and not (tmp_path / "ran").exists()
    refused = fake_api.requests[2].body["messages"][-1]["content"][0]
    assert refused["is_error"] and "no one can approve it here" in str(refused["content"])
