"""Each host's vars as Ansible combines them, with the `group_vars/` and `host_vars/` folders
beside the inventory (Ansible's `host_group_vars` plugin), lowest first:

1. the inventory's vars for `all`;
2. the inventory's vars for each of the host's groups, by depth (a child after its parents),
   then `ansible_group_priority`, then name;
3. `group_vars/all`, then `group_vars/GROUP` for those groups in the same order;
4. the inventory's vars for the host;
5. `host_vars/HOST`.

A vars entry is `NAME`, `NAME.yml`, `NAME.yaml` or `NAME.json` (the first that exists), or a
folder `NAME/` whose files are read in sorted order. A file encrypted with Ansible Vault cannot
be read here: the hosts it applies to are marked (`UNREADABLE`) rather than read without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.machines.ansible_model import ALL, AnsibleInventory, HostFacts, Vars
from cmdop_tui.machines.ansible_parse import VAULT_HEADER, load_yaml

__all__ = ["UNREADABLE", "host_facts", "vars_files"]

UNREADABLE = "\0unreadable"  # a key no inventory can write: why some of a host's vars are unknown
VARS_SUFFIXES = ("", ".yml", ".yaml", ".json")


def vars_files(folder: Path, name: str) -> list[Path]:
    """The files that hold `name`'s vars in a group_vars or host_vars folder, in reading order."""
    for suffix in VARS_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_dir():
            return _folder_files(path)
        if path.is_file():
            return [path]
    return []


def _folder_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name.endswith("~"):
            continue
        if entry.is_dir() and not entry.suffix:
            found += _folder_files(entry)
        elif entry.is_file() and entry.suffix in VARS_SUFFIXES:
            found.append(entry)
    return found


class VarsFolders:
    """The group_vars and host_vars folders of the inventory's sources, each file read once."""

    def __init__(self, basedirs: Sequence[Path]) -> None:
        self.basedirs = list(basedirs)
        self._read: dict[Path, Vars] = {}

    def of(self, kind: str, name: str) -> Vars:
        """The vars `kind` ("group_vars" or "host_vars") gives `name`, over every source."""
        combined: Vars = {}
        if name.startswith("/"):
            return combined
        for basedir in self.basedirs:
            for path in vars_files(basedir / kind, name):
                combined.update(self._file(path))
        return combined

    def _file(self, path: Path) -> Vars:
        if path not in self._read:
            self._read[path] = _read_vars(path)
        return self._read[path]


def _read_vars(path: Path) -> Vars:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        return {UNREADABLE: f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"}
    if text.startswith(VAULT_HEADER):
        return {UNREADABLE: f"{path} is encrypted with Ansible Vault"}
    try:
        data: Any = load_yaml(text)
    except InventoryError as exc:
        return {UNREADABLE: f"{path}: {exc}"}
    if data is None:
        return {}
    if not isinstance(data, dict):
        return {UNREADABLE: f"{path} does not map names to values"}
    return {str(key): value for key, value in data.items()}


def host_facts(inventory: AnsibleInventory, basedirs: Sequence[Path]) -> list[HostFacts]:
    """Every host with its vars combined as Ansible does, and its groups."""
    folders = VarsFolders(basedirs)
    memberships = inventory.groups_of()
    facts = []
    for host, own in inventory.hosts.items():
        groups = inventory.sorted_groups(memberships[host] - {ALL})
        combined: Vars = dict(inventory.group(ALL).vars)
        for group in groups:
            combined.update(inventory.group(group).vars)
        unreadable = [folders.of("group_vars", ALL).get(UNREADABLE)]
        combined.update(folders.of("group_vars", ALL))
        for group in groups:
            group_file_vars = folders.of("group_vars", group)
            unreadable.append(group_file_vars.get(UNREADABLE))
            combined.update(group_file_vars)
        combined.update(own)
        host_file_vars = folders.of("host_vars", host)
        unreadable.append(host_file_vars.get(UNREADABLE))
        combined.update(host_file_vars)
        reasons = [reason for reason in unreadable if reason]
        combined.pop(UNREADABLE, None)
        if reasons:
            combined[UNREADABLE] = reasons[0]
        facts.append(HostFacts(host, combined, frozenset(memberships[host])))
    return facts
