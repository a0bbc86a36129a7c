"""The safety floor through the whole loop, in auto mode (`--yes`): nothing catastrophic runs.

The model (the fake API) asks for every command below at once. The permission gate is the real
one; only the executor is a recorder, because if the floor failed the real one would wipe a disk.
The count of commands that reached the executor must be 0.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import reply, text_reply, tool_use

from cmdop_tui.permissions import Permissions
from cmdop_tui.session.gate import permission_gate
from cmdop_tui.tools.base import ToolResult
from cmdop_tui.tools.registry import ToolRegistry
from cmdop_tui.tools.shell import EXECUTE_COMMAND

FLOOR_COMMANDS = [
    "rm -rf /",
    "rm -rf /*",
    "rm -fr --no-preserve-root /",
    "rm -r -f /",
    "sudo rm -rf /",
    "sudo -u root rm -rf --no-preserve-root /",
    "env LC_ALL=C rm -rf /",
    "nohup rm -rf / &",
    "'rm' -rf /",
    'r"m" -rf /',
    "\\rm -rf /",
    "/bin/rm -rf /",
    "rm -rf ~",
    "rm -rf $HOME",
    "rm -rf /root",
    "cd / && rm -rf *",
    "bash -c 'rm -rf /'",
    "sh -c \"bash -c 'rm -rf /'\"",
    "(rm -rf /)",
    "{ rm -rf /; }",
    "echo $(rm -rf /)",
    "echo 'rm -rf /' | sh",
    "echo / | xargs rm -rf",
    "find / -delete",
    ":(){ :|:& };:",
    "bomb(){ bomb|bomb& }; bomb",
    "mkfs.ext4 /dev/sda1",
    "mkfs -t xfs /dev/nvme0n1p1",
    "wipefs -a /dev/sda",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "dd if=/dev/urandom of=/dev/nvme0n1",
    "echo hi > /dev/sda",
    "cat /dev/zero | tee /dev/vda",
    "shred -n1 /dev/sda",
    "chmod -R 777 /",
    "chown -R nobody /",
    "cat ~/.ssh/id_ed25519",
    "cp ~/.ssh/id_rsa /tmp/k",
    "base64 ~/.ssh/id_rsa",
    "cat .env",
    "base64 .env.production",
    "cat /etc/shadow",
    "sudo cat /etc/gshadow",
    "echo 'x ALL=(ALL) NOPASSWD: ALL' >> /etc/sudoers",
    "timeout 5 nice -n 10 rm -rf /",
]

FILE_TOOL_CALLS = [
    ("read_file", {"path": "~/.ssh/id_rsa"}),
    ("read_file", {"path": "/etc/shadow"}),
    ("read_file", {"path": ".env"}),
    ("write_file", {"path": "/etc/shadow", "content": "x"}),
    ("write_file", {"path": "~/.ssh/id_ed25519", "content": "x"}),
]


def recording_executor(ran: list[str]):
    async def run(args, ctx) -> ToolResult:
        ran.append(args["command"])
        return ToolResult("exit code: 0")

    return replace(EXECUTE_COMMAND, run=run)


async def test_no_floor_command_runs_in_auto_mode(fake_api, tmp_path):
    ran: list[str] = []
    permissions = Permissions.load(mode="auto", audit_path=tmp_path / "audit.jsonl")
    calls = [tool_use("execute_command", {"command": command}) for command in FLOOR_COMMANDS]
    fake_api.enqueue(reply(*calls), text_reply("all refused"))
    runner = make_runner(fake_api, approve=permission_gate(permissions, ask=None))
    runner.tools = ToolRegistry([recording_executor(ran), *[t for t in runner.tools if t.name != "execute_command"]])
    events = Recorder()
    await runner.run("do dangerous things", events)

    assert ran == [], f"{len(ran)} floor commands were executed: {ran}"
    results = fake_api.requests[1].body["messages"][-1]["content"]
    assert len(results) == len(FLOOR_COMMANDS)
    assert all(r["is_error"] and "refused" in r["content"] for r in results)
    audit = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert len(audit) >= len(FLOOR_COMMANDS)


@pytest.mark.parametrize("tool, args", FILE_TOOL_CALLS, ids=[f"{t}:{a['path']}" for t, a in FILE_TOOL_CALLS])
async def test_file_tools_cannot_touch_secrets_even_in_auto_mode(fake_api, tmp_path, tool, args):
    permissions = Permissions.load(mode="auto", audit_path=tmp_path / "audit.jsonl")
    fake_api.enqueue(reply(tool_use(tool, args)), text_reply("refused"))
    runner = make_runner(fake_api, approve=permission_gate(permissions, ask=None))
    await runner.run("try", Recorder())
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "refused" in result["content"]


async def test_harmless_commands_run_in_auto_mode(fake_api, tmp_path):
    ran: list[str] = []
    harmless = ["rm -rf ./build", "ls /dev/sda*", "echo 'rm -rf /'", "cat ~/.ssh/id_rsa.pub", "git status"]
    permissions = Permissions.load(mode="auto", audit_path=tmp_path / "audit.jsonl")
    fake_api.enqueue(reply(*[tool_use("execute_command", {"command": c}) for c in harmless]), text_reply("ok"))
    runner = make_runner(fake_api, approve=permission_gate(permissions, ask=None))
    runner.tools = ToolRegistry([recording_executor(ran), *[t for t in runner.tools if t.name != "execute_command"]])
    await runner.run("do normal things", Recorder())
    assert sorted(ran) == sorted(harmless)


async def test_default_mode_asks_and_strict_mode_refuses_changes(fake_api, tmp_path):
    asked: list[str] = []

    async def ask(call):
        from cmdop_tui.agent.approval import Approval

        asked.append(call.name)
        return Approval(False, "no")

    fake_api.enqueue(
        reply(
            tool_use("list_dir", {"path": str(tmp_path)}),
            tool_use("write_file", {"path": str(tmp_path / "f"), "content": "x"}),
        ),
        text_reply("ok"),
        reply(tool_use("write_file", {"path": str(tmp_path / "g"), "content": "x"})),
        text_reply("ok"),
    )
    default = Permissions.load(mode="default", audit_path=tmp_path / "a.jsonl")
    await make_runner(fake_api, approve=permission_gate(default, ask)).run("go", Recorder())
    assert asked == ["write_file"] and not (tmp_path / "f").exists()
    strict = Permissions.load(mode="strict", audit_path=tmp_path / "b.jsonl")
    await make_runner(fake_api, approve=permission_gate(strict, ask)).run("go", Recorder())
    assert asked == ["write_file"] and not (tmp_path / "g").exists()
