"""Figures for run_on_machines over 100 hosts, against real sshd on this machine.

Run: .venv/bin/python bench/bench_fleet.py   (needs openssh-server; .ci/run installs it)

Seven sshd servers listen on 127.0.0.2..127.0.0.101 (15 addresses each: sshd takes at most 16
listen sockets, 127.0.0.1 being one); the client's ssh_config has a host per address (h001..h100),
so each host is its own ssh connection and its own ControlMaster, as a hundred machines would be
(each server's host key pinned with HostKeyAlias).

1. run_on_machines, `sleep 1` on 100 hosts with its default settings, beside a bare parallel
   ssh fan-out: asyncio subprocesses of the same ssh binary with the same options (the
   transport's own argv), all at once, the same connections: cold (no master: every host
   connects) and warm (every master up). Target: run_on_machines within 10 % of plain ssh.
   Where a host has bubblewrap (as every host here has), each command runs in the sandbox there,
   which costs that host some milliseconds of CPU; a real fleet pays them on a hundred hosts'
   cores, here all hundred share this machine's two: so warm is also measured on hosts without a
   sandbox (its mode off), where only the fan-out itself is compared.
2. A single command on a warm connection, once per host: median, target <= 30 ms; and the same
   on hosts without a sandbox: the difference is what the sandbox costs each command on its host
   (bubblewrap's namespaces and the script that sets them up), paid on that host's own cores.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from remote_side import make_home, remove_home
from sshd import SshClientSetup, SshServer, current_user, start_servers, stop_servers

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES, default_concurrency
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

HOSTS = 100
ROUNDS = 5
COMMAND = "sleep 1"
ADDRESSES = [f"127.0.0.{i + 2}" for i in range(HOSTS)]
NAMES = [f"h{i + 1:03d}" for i in range(HOSTS)]
PER_SERVER = 15  # sshd's MAX_LISTEN_SOCKS is 16, and each server listens on 127.0.0.1 too


def client_config(client: SshClientSetup, servers: list[SshServer]) -> Path:
    """A Host block per address, each pinned to its server's host key."""
    known = client.directory / "bench_known_hosts"
    known.write_text("".join(f"bench-sshd-{n} {server.host_public_key}\n" for n, server in enumerate(servers)))
    blocks = []
    for index, (name, address) in enumerate(zip(NAMES, ADDRESSES, strict=True)):
        n = index // PER_SERVER
        blocks.append(
            f"Host {name}\n    HostName {address}\n    Port {servers[n].port}\n    User {current_user()}\n"
            f'    IdentityFile "{client.identity}"\n    IdentitiesOnly yes\n    HostKeyAlias bench-sshd-{n}\n'
            f'    UserKnownHostsFile "{known}"\n    StrictHostKeyChecking yes\n    BatchMode yes\n    LogLevel ERROR\n'
        )
    config = client.directory / "bench_ssh_config"
    config.write_text("\n".join(blocks))
    return config


def fresh_fleet(config: Path) -> Fleet:
    """A fleet with its own (short) control directory: no master of an earlier run is up."""
    control = Path(tempfile.mkdtemp(prefix="cmb", dir="/tmp"))
    return Fleet(Inventory.load([], config), SshOptions(config_file=config, control_dir=control))


async def on_machines(fleet: Fleet) -> float:
    args = {"command": COMMAND, "machines": NAMES}  # the default settings
    context = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet)
    started = time.perf_counter()
    result = await run_tool(RUN_ON_MACHINES, args, context)
    elapsed = time.perf_counter() - started
    assert result.content.startswith(f"{HOSTS} hosts: {HOSTS} exit 0"), result.content[:2000]
    return elapsed


async def plain_ssh(fleet: Fleet) -> float:
    """The same fan-out with nothing of ours around ssh: its argv, all at once, wait for all."""
    slots = asyncio.Semaphore(HOSTS)
    argvs = [
        [*fleet.transport(fleet.inventory.resolve(name))._options_argv("auto"), name, "--", COMMAND] for name in NAMES
    ]

    async def one(argv: list[str]) -> int:
        async with slots:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
            await process.communicate()
            return process.returncode or 0

    started = time.perf_counter()
    codes = await asyncio.gather(*(one(argv) for argv in argvs))
    elapsed = time.perf_counter() - started
    assert not any(codes), codes
    return elapsed


async def warm_up(fleet: Fleet) -> None:
    """Every master up (as a session's health probes leave them)."""
    await asyncio.gather(*(fleet.transport(fleet.inventory.resolve(name)).run("true") for name in NAMES))


async def close(fleet: Fleet) -> None:
    """Stop its masters and remove the control directory fresh_fleet made."""
    await fleet.close()
    if fleet.options.control_dir is not None:
        shutil.rmtree(fleet.options.control_dir, ignore_errors=True)


async def cold_pair(config: Path) -> tuple[float, float]:
    """(run_on_machines, plain ssh), each with no master up: every host connects."""
    fleet = fresh_fleet(config)
    ours = await on_machines(fleet)
    await close(fleet)
    fleet = fresh_fleet(config)
    plain = await plain_ssh(fleet)
    await close(fleet)
    return ours, plain


async def warm_pair(fleet: Fleet) -> tuple[float, float]:
    """(run_on_machines, plain ssh) over the same masters, all up."""
    return await on_machines(fleet), await plain_ssh(fleet)


async def single_commands(fleet: Fleet) -> list[float]:
    context = ToolContext(call_id="bench", cwd=Path.cwd(), machines=fleet)
    samples = []
    for name in NAMES:
        started = time.perf_counter()
        result = await run_tool(EXECUTE_COMMAND, {"command": "true", "machine": name}, context)
        samples.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content
    return samples


def compare(what: str, ours: list[float], plain: list[float]) -> str:
    a, b = statistics.median(ours), statistics.median(plain)
    return (
        f"run_on_machines {HOSTS} hosts {COMMAND}, {what}: {a:.2f} s; plain ssh fan-out: {b:.2f} s "
        f"({(a - b) / b * 100:+.1f} %)  [target within 10 %; medians of {len(ours)}, default concurrency {default_concurrency(HOSTS)}]"
    )


async def main(config: Path) -> None:
    cold = [await cold_pair(config) for _ in range(ROUNDS)]
    print(compare("cold", [c[0] for c in cold], [c[1] for c in cold]))
    fleet = fresh_fleet(config)
    try:
        await warm_up(fleet)
        warm = [await warm_pair(fleet) for _ in range(ROUNDS)]
        print(compare("warm", [w[0] for w in warm], [w[1] for w in warm]))
        fleet.sandbox = Sandbox(SandboxPolicy(mode="off"))  # as on hosts without bubblewrap
        bare = [await warm_pair(fleet) for _ in range(ROUNDS)]
        print(compare("warm, hosts without a sandbox", [w[0] for w in bare], [w[1] for w in bare]))
        bare_singles = await single_commands(fleet)
        fleet.sandbox = Sandbox()
        singles = await single_commands(fleet)
        ordered = sorted(singles)
        print(
            f"single command, warm connection, once per host: median {statistics.median(ordered):.1f} ms, "
            f"max {ordered[-1]:.1f} ms (n={len(ordered)})  [target median <= 30 ms]; on hosts without a "
            f"sandbox: median {statistics.median(bare_singles):.1f} ms"
        )
    finally:
        await close(fleet)


def remote_home() -> Path:
    """The remote user's home: a server's, small (a dotfile or two), not this machine's. The hosts
    all run here, so the sandbox's first scan of the home for secrets there, which a real fleet
    does on each host's own cores, would otherwise be a hundred scans of one large home on two.
    Outside /tmp, which the sandbox there makes private."""
    home = make_home()
    (home / ".bashrc").write_text("# a server's home\n")
    (home / ".ssh").mkdir(mode=0o700)
    return home


if __name__ == "__main__":
    client = SshClientSetup()
    groups = [ADDRESSES[i : i + PER_SERVER] for i in range(0, HOSTS, PER_SERVER)]
    home = remote_home()
    servers = [
        SshServer(client.identity, name=f"sshd-fleet{n}", listen=group, env={"HOME": str(home)})
        for n, group in enumerate(groups)
    ]
    try:
        start_servers(servers)
        asyncio.run(main(client_config(client, servers)))
    finally:
        stop_servers(servers)
        client.close()
        remove_home(home)
