"""An Ansible inventory (INI or YAML) as machines, its groups as their tags.

Read: hosts with `ansible_host`, `ansible_user` and `ansible_port` (on the host line, or in a
group's vars, the host's own winning), numeric host ranges (`web[01:12].example.com`), and nested
groups (`[prod:children]` in INI, `children:` in YAML): a host of a child group carries the tags
of every group above it. `all` and `ungrouped` are not tags. Nothing else of Ansible is read
(no dynamic inventories, no host_vars folders, no vaults).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from cmdop_tui.machines.spec import MachineError, MachineSpec

__all__ = ["AnsibleInventory", "load_ansible_inventory", "parse_ini", "parse_yaml"]

IMPLICIT_GROUPS = frozenset({"all", "ungrouped"})
CONNECTION_VARS = ("ansible_host", "ansible_user", "ansible_port")
_RANGE = re.compile(r"\[(\d+):(\d+)\]")


@dataclass
class AnsibleInventory:
    """Hosts (in the order they first appear) with their own vars; groups with their hosts,
    children and vars."""

    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    group_hosts: dict[str, list[str]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    group_vars: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add_host(self, group: str, name: str, variables: Mapping[str, Any]) -> None:
        self.hosts.setdefault(name, {}).update(variables)
        self.group(group)
        if name not in self.group_hosts[group]:
            self.group_hosts[group].append(name)

    def group(self, name: str) -> None:
        self.group_hosts.setdefault(name, [])
        self.children.setdefault(name, [])
        self.group_vars.setdefault(name, {})

    def add_child(self, parent: str, child: str) -> None:
        self.group(parent)
        self.group(child)
        if child not in self.children[parent]:
            self.children[parent].append(child)

    def groups_of(self, host: str) -> list[str]:
        """Every group `host` is in, directly or through children, outermost last."""
        found: list[str] = []

        def visit(group: str, path: tuple[str, ...]) -> bool:
            if group in path:
                return False  # a cycle: ignore it
            inside = host in self.group_hosts.get(group, []) or any(
                [visit(child, (*path, group)) for child in self.children.get(group, [])]
            )
            if inside and group not in found:
                found.append(group)
            return inside

        for group in self.group_hosts:
            visit(group, ())
        return found

    def machines(self) -> list[MachineSpec]:
        specs = []
        for name, own in self.hosts.items():
            groups = self.groups_of(name)
            variables: dict[str, Any] = {}
            for group in ["all", *reversed(groups)]:  # outer groups first, inner ones override
                variables.update(self.group_vars.get(group, {}))
            variables.update(own)
            specs.append(_spec(name, variables, tuple(g for g in groups if g not in IMPLICIT_GROUPS)))
        return specs


def _spec(name: str, variables: Mapping[str, Any], tags: tuple[str, ...]) -> MachineSpec:
    port = variables.get("ansible_port")
    try:
        port_number = int(port) if port not in (None, "") else None
    except (TypeError, ValueError):
        raise MachineError(f"Ansible inventory: host {name!r} has ansible_port {port!r}, not a number") from None
    user = variables.get("ansible_user")
    try:
        return MachineSpec(
            name=name,
            host=str(variables.get("ansible_host") or name),
            user=str(user) if user not in (None, "") else None,
            port=port_number,
            tags=tags,
        )
    except MachineError as exc:
        raise MachineError(f"Ansible inventory: host {name!r}: {exc}") from None


def expand_range(pattern: str) -> list[str]:
    """`web[01:03]` as web01, web02, web03 (zero padding kept); other names as they are."""
    match = _RANGE.search(pattern)
    if match is None:
        return [pattern]
    first, last = match.group(1), match.group(2)
    width = len(first) if first.startswith("0") else 0
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [
        name
        for number in range(int(first), int(last) + 1)
        for name in expand_range(f"{head}{str(number).zfill(width)}{tail}")
    ]


def _assignments(words: Iterable[str]) -> dict[str, str]:
    return dict(word.split("=", 1) for word in words if "=" in word)


def parse_ini(text: str) -> AnsibleInventory:
    """An INI inventory: `[group]`, `[group:children]`, `[group:vars]` sections."""
    inventory = AnsibleInventory()
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section, _, kind = line[1:-1].strip().partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "children", "vars"):
                raise MachineError(f"Ansible inventory line {number}: unknown section kind {kind!r}")
            inventory.group(section)
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise MachineError(f"Ansible inventory line {number}: {exc}") from None
        if not words:
            continue
        if kind == "children":
            inventory.add_child(section, words[0])
        elif kind == "vars":
            key, _, value = line.partition("=")
            inventory.group_vars[section][key.strip()] = value.strip().strip("\"'")
        else:
            name, colon, port = words[0].rpartition(":")
            variables = _assignments(words[1:])
            if colon and port.isdigit() and "[" not in port:  # `host:2222`
                variables = {"ansible_port": port, **variables}
            else:
                name = words[0]
            for host in expand_range(name):
                inventory.add_host(section, host, variables)
    return inventory


def parse_yaml(text: str) -> AnsibleInventory:
    """A YAML inventory: top-level groups (usually `all`), each with `hosts`, `children`, `vars`."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MachineError(f"Ansible inventory: not valid YAML ({exc})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MachineError("Ansible inventory: the top level must map group names to groups")
    inventory = AnsibleInventory()
    for name, body in data.items():
        _yaml_group(inventory, str(name), body)
    return inventory


def _yaml_group(inventory: AnsibleInventory, name: str, body: Any) -> None:
    inventory.group(name)
    if body is None:
        return
    if not isinstance(body, dict):
        raise MachineError(f"Ansible inventory: group {name!r} must be a mapping")
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise MachineError(f"Ansible inventory: the hosts of {name!r} must be a mapping")
    for host, variables in hosts.items():
        for expanded in expand_range(str(host)):
            inventory.add_host(name, expanded, variables if isinstance(variables, dict) else {})
    group_vars = body.get("vars") or {}
    if isinstance(group_vars, dict):
        inventory.group_vars[name].update(group_vars)
    children = body.get("children") or {}
    if not isinstance(children, dict):
        raise MachineError(f"Ansible inventory: the children of {name!r} must be a mapping")
    for child, child_body in children.items():
        inventory.add_child(name, str(child))
        _yaml_group(inventory, str(child), child_body)


def load_ansible_inventory(path: Path) -> list[MachineSpec]:
    """The machines of the inventory file at `path` (YAML by its suffix or its content, else INI).

    Raises MachineError when the file cannot be read or understood.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MachineError(f"cannot read the Ansible inventory {path}: {exc.strerror or exc}") from None
    looks_yaml = path.suffix in (".yml", ".yaml") or text.lstrip().startswith(("---", "all:"))
    inventory = parse_yaml(text) if looks_yaml else parse_ini(text)
    return [replace(spec, source="ansible") for spec in inventory.machines()]
