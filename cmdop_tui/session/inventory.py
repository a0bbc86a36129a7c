"""The machines a session has, read from the settings (cheap to import: no model SDK here, so
`cmdop-tui machines` can use it too)."""

from __future__ import annotations

from pathlib import Path

from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.machines.ssh_config import SYSTEM_CONFIG


def inventory_of(settings: Settings) -> tuple[Inventory, SshOptions]:
    """Local, the settings' machines, the Ansible inventory, ~/.ssh/config (or the configured
    ssh_config), with the settings' groups; and the ssh options to reach them.

    Raises MachineError when the Ansible inventory cannot be read.
    """
    user_config = Path.home() / ".ssh" / "config"
    ssh_config = settings.ssh_config or (user_config if user_config.exists() else None)
    ansible: list[MachineSpec] = []
    if settings.ansible_inventory:  # imported only then: it brings the YAML parser
        from cmdop_tui.machines.ansible import load_ansible_inventory

        ansible = load_ansible_inventory(settings.ansible_inventory)
    system_config = None if settings.ssh_config else SYSTEM_CONFIG  # ssh reads it too, but not with -F
    inventory = Inventory.load([*settings.machines, *ansible], ssh_config, settings.groups, system_config=system_config)
    return inventory, SshOptions(config_file=settings.ssh_config)
