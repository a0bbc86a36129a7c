"""The app's own credentials, and the secrets the sandbox hides, never reach the model through a
tool result (the real loop, the fake API)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.config.settings import SandboxPolicy
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap
from cmdop_tui.support.secrets import MARKER
from cmdop_tui.tools.base import ToolResult
from cmdop_tui.tools.registry import mask_credentials

TOKEN = "tok-ordinary-looking-0a1b2c3d4e5f"  # no known key shape: only the literal can find it


def last_tool_result(fake_api) -> str:
    (result,) = [b for b in fake_api.requests[-1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    return str(result["content"])


async def test_a_command_printing_the_key_reaches_the_model_masked(fake_api, anthropic_env, tmp_path) -> None:
    # Commands do not get the key in their environment; a file (an .env copy, a log) may hold it.
    (tmp_path / "notes.txt").write_text(f"export ANTHROPIC_API_KEY={fake_api.api_key}\n")
    command = "env; cat /proc/self/environ; echo; cat notes.txt"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    result = await make_runner(fake_api, cwd=tmp_path).run("show the environment", Recorder())
    assert result.status == "final"
    sent = last_tool_result(fake_api)
    assert fake_api.api_key not in sent and fake_api.api_key not in str(fake_api.requests[-1].body)
    assert f"export ANTHROPIC_API_KEY={MARKER}" in sent
    assert f"ANTHROPIC_BASE_URL={anthropic_env['ANTHROPIC_BASE_URL']}" in sent  # ordinary text stays


async def test_a_file_holding_the_key_or_the_token_is_read_masked(
    fake_api, anthropic_env, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", TOKEN)
    secrets_file = tmp_path / "settings.conf"
    secrets_file.write_text(f"key {fake_api.api_key} here\ntoken {TOKEN} there\nport 8080\n")
    fake_api.enqueue(tool_reply("read_file", {"path": str(secrets_file)}), text_reply("ok"))
    await make_runner(fake_api, cwd=tmp_path).run("read it", Recorder())
    sent = last_tool_result(fake_api)
    assert fake_api.api_key not in sent and TOKEN not in sent
    assert f"key {MARKER} here" in sent and f"token {MARKER} there" in sent and "port 8080" in sent


async def test_a_key_cut_in_half_by_truncation_leaves_no_piece(fake_api, anthropic_env, tmp_path) -> None:
    # 60 kB: the middle is cut. Copies of the key run across both edges of the cut, so wherever
    # exactly the buffer cuts, one copy is split by it.
    keys = f"$(for i in $(seq 40); do printf %s. {fake_api.api_key}; done)"
    command = f"a=$(head -c 14400 /dev/zero | tr '\\0' a); c=$(head -c 30000 /dev/zero | tr '\\0' c); printf %s $a{keys}$c{keys}$a"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    await make_runner(fake_api, cwd=tmp_path).run("print", Recorder())
    sent = last_tool_result(fake_api)
    assert "bytes cut" in sent and MARKER in sent
    key = fake_api.api_key
    assert not any(key[i : i + 8] in sent for i in range(len(key) - 7))


def test_pieces_of_a_credential_at_a_cut_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-configured-key-000"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    text = f"head {key[:12]}\n[... 1,234 bytes cut ...]\n{key[-9:]} tail, {key[:5]} stays"
    assert mask_credentials(ToolResult(text)).content == (
        f"head {MARKER}\n[... 1,234 bytes cut ...]\n{MARKER} tail, {key[:5]} stays"
    )


def test_only_the_configured_literals_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-configured-key-000")
    text = "DB_PASSWORD=hunter2 sk-ant-api03-someone-elses-key-123456 and sk-ant-api03-configured-key-000!"
    masked = mask_credentials(ToolResult(text, is_error=True))
    assert masked == ToolResult(f"DB_PASSWORD=hunter2 sk-ant-api03-someone-elses-key-123456 and {MARKER}!", True)
    unchanged = ToolResult("nothing secret here")
    assert mask_credentials(unchanged) is unchanged
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert mask_credentials(ToolResult(text)).content == text


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_the_file_tools_never_hand_the_model_a_hidden_secret_or_its_name(fake_api, tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_deploy_bank").write_text("SECRET-KEY-MARKER\n")
    (work / "deep" / "er" / "still" / "deeper").mkdir(parents=True)
    (work / "deep" / "er" / "still" / "deeper" / ".env").write_text("TOKEN=SECRET-ENV-MARKER\n")
    (work / "key").symlink_to("../.ssh/id_deploy_bank")
    (work / "keys").symlink_to(home / ".ssh")
    (work / "app.py").write_text("TOKEN = 'read from the environment'\n")
    calls = [
        ("read_file", {"path": "key"}),
        ("read_file", {"path": "keys/id_deploy_bank"}),
        ("read_file", {"path": f"/proc/self/root{home}/.ssh/id_deploy_bank"}),
        ("list_dir", {"path": "keys"}),
        ("glob", {"pattern": "**/*"}),
        ("glob", {"pattern": "*", "cwd": str(home)}),
        ("grep", {"pattern": "MARKER|TOKEN", "path": "."}),
        ("grep", {"pattern": "MARKER", "path": str(home)}),
    ]
    fake_api.enqueue(*(tool_reply(name, args) for name, args in calls), text_reply("done"))
    runner = make_runner(fake_api, cwd=work)
    runner.machines = Fleet(Inventory.load((), None), sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))
    assert (await runner.run("look around", Recorder())).status == "final"
    sent = str(fake_api.requests[-1].body["messages"])
    assert "SECRET-KEY-MARKER" not in sent and "SECRET-ENV-MARKER" not in sent
    assert "id_deploy_bank" in sent  # only where the model itself wrote it, in its calls
    results = [
        (str(block["content"]), bool(block.get("is_error")))
        for message in fake_api.requests[-1].body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == len(calls) and "app.py:1:TOKEN" in str(results)
    # The key's name comes back only in a refusal that repeats the path the model asked for.
    assert not [text for text, refused in results if "id_deploy_bank" in text and not refused]
    assert [refused for _, refused in results[:3]] == [True, True, True]
    assert "deeper/.env" not in str(results)
    assert "deeper/\n[3 entries hidden by the sandbox are left out]" in results[4][0]  # key, keys, .env
