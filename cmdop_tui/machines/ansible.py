"""An Ansible inventory as machines, its groups as their tags.

Read by Ansible where it is installed: with `ansible-inventory` on the PATH, its `--list` is the
truth (plugins, scripts, group_vars and host_vars, templating of the inventory, precedence all
as Ansible does; ansible_cli.py). Without it, or where it fails, the built-in reader reads what
Ansible's own static formats and scripts hold, as Ansible would (ansible_sources.py: files,
folders, scripts; ansible_parse.py: INI and YAML; ansible_vars.py: group_vars, host_vars and
precedence; ansible_hosts.py: ranges, ports, IPv6). Either way, each host's vars become a
machine in ansible_specs.py, which says what is read and what is not.

A host that cannot be read is left out with a one-line notice naming it and why; an inventory
that cannot be read at all is one notice. Nothing here raises: the app always starts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cmdop_tui.machines.ansible_cli import ansible_facts
from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.machines.ansible_model import HostFacts
from cmdop_tui.machines.ansible_run import DEFAULT_TIMEOUT_S, TookTooLong
from cmdop_tui.machines.ansible_sources import read_source
from cmdop_tui.machines.ansible_specs import machine_of
from cmdop_tui.machines.ansible_vars import host_facts
from cmdop_tui.machines.spec import MachineSpec

__all__ = [
    "AnsibleMachines",
    "LeftOut",
    "find_ansible_inventory",
    "inventory_files",
    "machines_of",
    "read_ansible_inventory",
]

ANSIBLE_INVENTORY = "ansible-inventory"
Reader = Literal["ansible-inventory", "built-in"]


@dataclass(frozen=True)
class LeftOut:
    """A host of the inventory that is not a machine here, and why."""

    name: str
    reason: str

    @property
    def notice(self) -> str:
        return f"Ansible host {self.name} is left out: {self.reason}"


@dataclass(frozen=True)
class AnsibleMachines:
    """What an inventory gave: its machines, the hosts left out, what else the user should be
    told (an unreadable file, Ansible's warnings), and who read it."""

    machines: tuple[MachineSpec, ...]
    left_out: tuple[LeftOut, ...]
    problems: tuple[str, ...]
    reader: Reader

    @property
    def notices(self) -> tuple[str, ...]:
        """Everything to tell the user, one line each."""
        return (*self.problems, *(host.notice for host in self.left_out))


def find_ansible_inventory() -> Path | None:
    """Ansible's inventory reader on the PATH, if there is one."""
    found = shutil.which(ANSIBLE_INVENTORY)
    return Path(found) if found else None


def read_ansible_inventory(path: Path, program: Path | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> AnsibleMachines:
    """The machines of the inventory at `path`, read by `program` (ansible-inventory) when given,
    else (or where it fails quickly) by the built-in reader. A program that does not finish in
    time leaves the inventory out: the built-in reader would wait on the same script."""
    notices: list[str] = []
    reader: Reader = "built-in"
    facts: list[HostFacts] = []
    try:
        if program is not None:
            try:
                facts, notices = ansible_facts(program, path, timeout_s)
                reader = "ansible-inventory"
            except TookTooLong:
                raise
            except InventoryError as exc:
                notices.append(f"{exc}: {path} is read without it")
                facts = _builtin(path, timeout_s, notices)
        else:
            facts = _builtin(path, timeout_s, notices)
    except (OSError, RecursionError, TypeError, ValueError) as exc:  # InventoryError, or data no reader expects
        notices.append(f"the Ansible inventory {path} is not read: {exc}")
    machines, left_out = machines_of(facts)
    return AnsibleMachines(tuple(machines), tuple(left_out), tuple(notices), reader)


def inventory_files(path: Path, cwd: Path) -> list[Path]:
    """What decides the programs that reading the inventory runs (an inventory script, a
    ProxyCommand, what ansible.cfg enables): the inventory, the vars folders beside it, and the
    ansible.cfg Ansible would read there or in `cwd`. The session makes them read-only to
    commands, so that nothing a command writes runs, unsandboxed, when the next session starts."""
    base = path if path.is_dir() else path.parent
    return [path, base / "group_vars", base / "host_vars", base / "ansible.cfg", cwd / "ansible.cfg"]


def _builtin(path: Path, timeout_s: float, notices: list[str]) -> list[HostFacts]:
    if not path.exists():
        raise InventoryError("no such file or folder")
    source = read_source(path, timeout_s)
    notices += source.notices
    source.inventory.reconcile()
    return host_facts(source.inventory, [source.basedir])


def machines_of(facts: list[HostFacts]) -> tuple[list[MachineSpec], list[LeftOut]]:
    """The machines of the hosts, and the hosts left out."""
    machines, left_out = [], []
    for host in facts:
        try:
            machines.append(machine_of(host))
        except (TypeError, ValueError) as exc:  # InventoryError, or a value of a type no host has
            left_out.append(LeftOut(host.name, str(exc)))
    return machines, left_out
