"""`cmdop-tui acp` driven by an editor's side we did not write: the official TypeScript ACP SDK
(`@agentclientprotocol/sdk`, from npm, installed by .ci/tools), through the scenario of
tests/support/acp_ts_client.mjs: a new session, a write asked about and allowed (its diff), a
prompt cancelled mid-stream, the session loaded by a second agent process, and a command run in
the editor's terminal by a third (the sandbox off).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, text_reply, tool_reply
from real_tools import real_tool

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "acp_ts_client.mjs"


def test_the_typescript_sdk_drives_a_whole_session(
    anthropic_env: dict[str, str], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    sdk = real_tool("acp-typescript-sdk")
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed, though the TypeScript SDK is", pytrace=False)
    gate = threading.Event()
    fake_api.enqueue(
        tool_reply("write_file", {"path": "a.txt", "content": "from the editor\n"}),
        text_reply("Written."),
        text_reply("Talking on and on", chunk_size=4, stall_after=4, gate=gate),
        tool_reply("execute_command", {"command": "echo from the terminal; exit 4"}),
        text_reply("Ran."),
    )
    env = {**os.environ, "ACP_SDK": str(sdk), "ACP_AGENT": json.dumps([sys.executable, "-m", "cmdop_tui", "acp"])}
    try:
        done = subprocess.run([node, str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    finally:
        gate.set()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["loadSession"] is True and "plan" in report["modes"]
    assert report["stopReasons"] == ["end_turn", "cancelled", "end_turn"]
    [asked] = report["permissions"]
    assert asked == {"title": "Write a.txt", "kinds": ["allow_once", "allow_always", "reject_once", "reject_always"]}
    assert (tmp_path / "a.txt").read_text() == "from the editor\n"
    [call] = [u for u in report["first"] if u["sessionUpdate"] == "tool_call"]
    assert call["kind"] == "edit" and call["locations"] == [{"path": str(tmp_path / "a.txt")}]
    assert call["content"] == [{"type": "diff", "path": str(tmp_path / "a.txt"), "newText": "from the editor\n"}]
    assert any(u["sessionUpdate"] == "agent_message_chunk" for u in report["first"])
    told = [u for u in report["loaded"] if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in told] == ["write a.txt", "talk"]
    assert report["firstExit"] == 0 and report["secondExit"] == 0 and report["thirdExit"] == 0, done.stderr
    [terminal] = report["terminals"]
    assert terminal["args"][-1] == "echo from the terminal; exit 4" and terminal["cwd"] == str(tmp_path)
    assert terminal["released"] is True
    shown = [c for u in report["ran"] if u["sessionUpdate"] == "tool_call_update" for c in u.get("content") or []]
    assert {"type": "terminal", "terminalId": "term-1"} in shown
    result = fake_api.requests[-1].body["messages"][-1]["content"][0]["content"]
    result = result if isinstance(result, str) else "".join(part.get("text", "") for part in result)
    assert result.startswith("exit code: 4") and "from the terminal" in result
