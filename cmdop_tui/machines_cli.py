"""`cmdop-tui machines install NAME|tag:T|GROUP ...` and `cmdop-tui machines list`: the command line
of the machines of the settings (a surface, like `serve`; the work is in `machines/`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import platformdirs

from cmdop_tui.config.settings import SettingsError, load_settings
from cmdop_tui.machines.agent import agent_label
from cmdop_tui.machines.health import probe
from cmdop_tui.machines.install import DEFAULT_JOBS, Installer
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import Health, MachineError, MachineSpec
from cmdop_tui.machines.ssh import SshOptions, SshTransport
from cmdop_tui.machines.ssh_config import Connection
from cmdop_tui.machines.ssh_resolve import Resolution, SshResolver
from cmdop_tui.machines.wheels import Wheels, WheelsError
from cmdop_tui.session.inventory import inventory_of
from cmdop_tui.support.text import inert_line

EXIT_USAGE = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cmdop-tui machines", description="The machines of the settings.")
    commands = p.add_subparsers(dest="command", required=True)
    install = commands.add_parser(
        "install",
        help="put this version's agent (for ask_machine) on machines, in the remote user's data dir",
    )
    install.add_argument("machines", nargs="+", metavar="NAME", help="a machine, tag:T, or a group of the settings")
    install.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"machines at once (default {DEFAULT_JOBS})")
    install.add_argument(
        "--wheels", type=Path, metavar="DIR", help="use the wheels in DIR (this version's and its dependencies')"
    )
    commands.add_parser("list", help="each machine: host, user, port, jump, tags, state, and its agent")
    return p


def machines_main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings()
        machines = inventory_of(settings)
    except (SettingsError, MachineError) as exc:
        return fail(str(exc))
    for notice in machines.notices:  # what was left out, said before the list
        sys.stderr.write(f"cmdop-tui: {notice}\n")
    inventory, options = machines.inventory, machines.options
    if args.command == "list":
        print(asyncio.run(listing(inventory, options)))
        return 0
    try:
        specs = inventory.select(args.machines)
        wheels = Wheels.from_folder(args.wheels) if args.wheels else None
    except (MachineError, WheelsError) as exc:
        return fail(str(exc), EXIT_USAGE)
    return asyncio.run(install(specs, options, wheels, max(1, args.jobs)))


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"cmdop-tui: {message}\n")
    return code


async def install(specs: list[MachineSpec], options: SshOptions, wheels: Wheels | None, jobs: int) -> int:
    def say(name: str, text: str) -> None:
        print(f"{name}: {text}", flush=True)

    cache = Path(platformdirs.user_cache_dir("cmdop-tui")) / "agent-wheels"
    installer = Installer(options, say, cache=cache, wheels=wheels, jobs=jobs)
    outcomes = await installer.install_all(specs)
    failed = [outcome.name for outcome in outcomes if not outcome.ok]
    done = len(outcomes) - len(failed)
    print(f"{done} of {len(outcomes)} installed" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


async def listing(inventory: Inventory, options: SshOptions) -> str:
    """A table of the remote machines, each probed and (an ssh_config alias) asked of `ssh -G`, all
    at once; then the code forges of ssh_config (never probed) and what ssh_config has wrong."""
    remotes = [spec for spec in inventory if not spec.is_local]
    notes = _notes(inventory)
    if not remotes:
        return "\n".join(
            [
                "no machines: add [machines.NAME] to the settings, or Host entries to ~/.ssh/config",
                *map(inert_line, notes),
            ]
        )

    async def check(spec: MachineSpec) -> Health:
        transport = SshTransport(spec, options)
        try:
            return await probe(transport)
        finally:
            await transport.close()

    resolver = SshResolver(options.config_file)
    aliases = [spec.host for spec in remotes if spec.source == "ssh_config"]
    healths, answers = await asyncio.gather(
        asyncio.gather(*(check(spec) for spec in remotes)), resolver.resolve_all(aliases)
    )
    rows: list[tuple[str, ...]] = [("NAME", "HOST", "USER", "PORT", "JUMP", "TAGS", "STATE", "AGENT")]
    for spec, health in zip(remotes, healths, strict=True):
        answer = answers.get(spec.host) if spec.source == "ssh_config" else None
        host, user, port, jump = _address(spec, inventory, answer)
        tags = ",".join(spec.tags) or "-"
        rows.append((spec.name, host, user, port, jump, tags, health.state, agent_label(health.agent) or "-"))
    refusals = sorted({answer.error for answer in answers.values() if answer.error})
    return "\n".join([_table(rows), *(inert_line(f"ssh -G: {error}") for error in refusals), *map(inert_line, notes)])


def _address(spec: MachineSpec, inventory: Inventory, answer: Resolution | None) -> tuple[str, str, str, str]:
    """HOST, USER, PORT, JUMP of a machine: ssh -G's answer for an ssh_config alias (our own
    reading of the file when ssh could not answer); the spec's for the others ("-": ssh's default)."""
    defined = inventory.ssh_host(spec)
    connection: Connection | None = answer.connection if answer and answer.connection else None
    if connection is None and defined is not None:
        connection = defined.connection
    if connection is None:
        return spec.host, spec.user or "-", str(spec.port) if spec.port else "-", "-"
    jump = connection.proxy_jump or ("(ProxyCommand)" if connection.proxy_command else "-")
    return connection.hostname, connection.user, str(connection.port), jump


def _notes(inventory: Inventory) -> list[str]:
    notes = []
    if forges := inventory.forges:
        notes.append("code forges in ssh_config, not machines (never probed): " + ", ".join(f.alias for f in forges))
    return notes


def _table(rows: list[tuple[str, ...]]) -> str:
    """The rows aligned, each cell inert: an ssh_config (from a dotfiles repository, say) may hold
    terminal sequences in a HostName or a User."""
    rows = [tuple(inert_line(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]) for row in rows
    )
