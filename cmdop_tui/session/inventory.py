"""The machines a session has, read from the settings (cheap to import: no model SDK here, so
`cmdop-tui machines` can use it too).

Reading them may take a while (ansible-inventory starts in about a second, an inventory script
may be slow): callers on an event loop run `inventory_of` in a thread. What could not be read
comes back as notices, one line each, for the surface to show: it never stops a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.machines.ssh_config import SYSTEM_CONFIG


@dataclass(frozen=True)
class SessionMachines:
    """The machines of the settings, the ssh options to reach them, and what the user should be
    told about what was left out (a host that cannot be read, an inventory that cannot)."""

    inventory: Inventory
    options: SshOptions
    notices: tuple[str, ...] = ()


def inventory_of(settings: Settings) -> SessionMachines:
    """Local, the settings' machines, the Ansible inventory, ~/.ssh/config (or the configured
    ssh_config), with the settings' groups; and the ssh options to reach them."""
    user_config = Path.home() / ".ssh" / "config"
    ssh_config = settings.ssh_config or (user_config if user_config.exists() else None)
    ansible: tuple[MachineSpec, ...] = ()
    notices: tuple[str, ...] = ()
    if settings.ansible_inventory:  # imported only then: it brings the YAML parser
        from cmdop_tui.machines.ansible import find_ansible_inventory, read_ansible_inventory

        read = read_ansible_inventory(settings.ansible_inventory, find_ansible_inventory())
        ansible, notices = read.machines, read.notices
    system_config = None if settings.ssh_config else SYSTEM_CONFIG  # ssh reads it too, but not with -F
    inventory = Inventory.load([*settings.machines, *ansible], ssh_config, settings.groups, system_config=system_config)
    notices += tuple(f"ssh_config: {problem}" for problem in inventory.ssh.problems)
    return SessionMachines(inventory, SshOptions(config_file=settings.ssh_config), notices)
