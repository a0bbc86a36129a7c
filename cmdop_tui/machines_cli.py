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
from cmdop_tui.machines.wheels import Wheels, WheelsError
from cmdop_tui.session.inventory import inventory_of

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
    commands.add_parser("list", help="each machine: host, tags, state, and its agent")
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
    """A table of the remote machines, each probed (at once)."""
    remotes = [spec for spec in inventory if not spec.is_local]
    if not remotes:
        return "no machines: add [machines.NAME] to the settings, or Host entries to ~/.ssh/config"

    async def check(spec: MachineSpec) -> Health:
        transport = SshTransport(spec, options)
        try:
            return await probe(transport)
        finally:
            await transport.close()

    healths = await asyncio.gather(*(check(spec) for spec in remotes))
    rows = [("NAME", "HOST", "TAGS", "STATE", "AGENT")]
    for spec, health in zip(remotes, healths, strict=True):
        rows.append((spec.name, spec.host, ",".join(spec.tags) or "-", health.state, agent_label(health.agent) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[4]]) for row in rows
    )
