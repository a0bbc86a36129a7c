"""A machine behind a bastion (`ProxyJump` in the ssh config), through two real sshd servers
(tests/sshd.py): commands, files and run_on_machines there through the project's Fleet, with a
ControlMaster that holds one connection through the jump.

How the tests know the hop happened: the target's sshd lets the user in only from 127.0.0.1
(`AllowUsers USER@127.0.0.1`), and the client's block for it binds its own end to 127.0.0.9
(`BindAddress`). A direct connection therefore comes from 127.0.0.9 and is refused; only one
that the jump server opens (from 127.0.0.1) gets in. `inner-direct`, the same server without
the ProxyJump, shows the refusal.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sshd import (
    SshClientSetup,
    SshServer,
    current_user,
    process_table,
    sshd_unavailable_reason,
    start_servers,
    stop_servers,
)

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

OUTSIDE = "127.0.0.9"  # the client's own address: the target refuses it


@dataclass
class Bastion:
    client: SshClientSetup
    jump: SshServer
    target: SshServer

    @property
    def config(self) -> Path:
        return self.client.config


@pytest.fixture
def bastion() -> Iterator[Bastion]:
    reason = sshd_unavailable_reason()
    if reason is not None:
        pytest.skip(f"real SSH servers unavailable: {reason}")
    client = SshClientSetup()
    servers: list[SshServer] = []
    try:
        jump = SshServer(client.identity, name="sshd-jump")
        target = SshServer(client.identity, name="sshd-target", extra_config=[f"AllowUsers {current_user()}@127.0.0.1"])
        servers = [jump, target]
        start_servers(servers)
        client.add_server("jumphost", jump)
        client.add_server("inner", target, ["ProxyJump jumphost", f"BindAddress {OUTSIDE}"])
        client.add_server("inner-direct", target, [f"BindAddress {OUTSIDE}"])
        yield Bastion(client, jump, target)
    finally:
        stop_servers(servers)
        client.close()


@pytest.fixture
async def fleet(bastion: Bastion) -> Iterator[Fleet]:
    fleet = Fleet(Inventory.load([], bastion.config), SshOptions(config_file=bastion.config))
    yield fleet
    await fleet.close()


def context(fleet: Fleet, tmp_path: Path) -> ToolContext:
    return ToolContext(call_id="toolu_jump", cwd=tmp_path, machines=fleet)


def client_end(content: str) -> tuple[str, str]:
    """(address, port) of the connection's client end as the target saw it ($SSH_CONNECTION)."""
    line = next(line for line in content.splitlines() if line.count(" ") == 3 and line[0].isdigit())
    address, port, _, _ = line.split()
    return address, port


def test_the_target_lets_in_only_what_comes_through_the_jump(bastion: Bastion):
    direct = subprocess.run(
        bastion.client.ssh_command("inner-direct", "true"), capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert direct.returncode == 255 and "Permission denied" in direct.stderr
    jumped = subprocess.run(
        bastion.client.ssh_command("inner", "echo $SSH_CONNECTION"),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert jumped.returncode == 0, jumped.stderr
    assert jumped.stdout.split()[0] == "127.0.0.1" and jumped.stdout.split()[3] == str(bastion.target.port)


async def test_commands_and_files_through_the_jump(bastion: Bastion, fleet: Fleet, tmp_path: Path):
    ctx = context(fleet, tmp_path)
    result = await run_tool(EXECUTE_COMMAND, {"command": "echo $SSH_CONNECTION", "machine": "inner"}, ctx)
    assert not result.is_error and "exit code: 0" in result.content, result.content
    assert client_end(result.content)[0] == "127.0.0.1"  # the jump server's end, not OUTSIDE

    machine = fleet.machine("inner")
    # The "remote" host is this one, with our home: a relative path lands in its workspace there.
    target = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local/share/cmdop-tui-workspace" / f"bastion-{os.getpid()}.txt"
    try:
        written = await machine.write_file(target.name, "first line\nsecond line\n")
        assert not written.is_error and target.read_text() == "first line\nsecond line\n", written.text
        read = await machine.read_file(target.name, start=2)
        assert not read.is_error and "second line" in read.text and "first line" not in read.text
    finally:
        target.unlink(missing_ok=True)

    direct = await run_tool(EXECUTE_COMMAND, {"command": "true", "machine": "inner-direct"}, ctx)
    assert direct.is_error and "cannot reach inner-direct over ssh" in direct.content


async def test_run_on_machines_through_the_jump(bastion: Bastion, fleet: Fleet, tmp_path: Path):
    args = {"command": 'echo "from ${SSH_CONNECTION%% *}"', "machines": ["inner", "jumphost"]}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path))
    assert not result.is_error, result.content
    assert result.content.splitlines()[1:] == ["2 hosts (jumphost, inner): exit 0", "  stdout:", "  from 127.0.0.1"]


async def test_one_control_master_holds_the_connection_through_the_jump(bastion: Bastion, fleet: Fleet, tmp_path: Path):
    ctx = context(fleet, tmp_path)
    command = {"command": "echo $SSH_CONNECTION", "machine": "inner"}
    ends = [client_end((await run_tool(EXECUTE_COMMAND, command, ctx)).content) for _ in range(3)]
    assert len(set(ends)) == 1 and ends[0][0] == "127.0.0.1"  # one TCP connection, from the jump
    transport = fleet.transport(fleet.inventory.resolve("inner"))
    check = await asyncio.create_subprocess_exec(
        *transport._options_argv(), "-O", "check", "inner",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await check.communicate()
    assert check.returncode == 0 and b"Master running" in stderr
    assert _hops(bastion), "the master's `ssh -W` to the jump server runs"

    await fleet.close()  # the master ends, and the hop to the jump server with it
    async with asyncio.timeout(5):
        while _hops(bastion):
            await asyncio.sleep(0.02)


def _hops(bastion: Bastion) -> list[int]:
    """The `ssh -W ... jumphost` processes that ProxyJump started with this config."""
    found = []
    for pid in process_table():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-W" in argv and str(bastion.config).encode() in argv:
            found.append(pid)
    return found


async def test_stop_kills_the_command_behind_the_jump(fleet: Fleet, tmp_path: Path):
    from agent_helpers import running

    args = {"command": "sleep 30.5123 & sleep 30.5123; echo never", "machine": "inner"}
    task = asyncio.create_task(run_tool(EXECUTE_COMMAND, args, context(fleet, tmp_path)))
    async with asyncio.timeout(10):
        while len(running("sleep", "30.5123")) < 2:  # the "remote" host is this one
            await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(5):  # the command's group, its background job too, over the jump
        while running("sleep", "30.5123"):
            await asyncio.sleep(0.02)
