"""What an Ansible inventory holds once parsed: hosts with their own vars, groups with their hosts,
children and vars, and how Ansible orders groups when their vars meet (`sort_groups`).

Either reader fills one: the built-in one from INI, YAML and inventory scripts, the other from
`ansible-inventory --list`. `all` holds every group that has no other parent; a host in no group
but `all` is in `ungrouped`, as in Ansible.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cmdop_tui.machines.ansible_hosts import InventoryError

ALL, UNGROUPED = "all", "ungrouped"
IMPLICIT_GROUPS = frozenset({ALL, UNGROUPED})
DEFAULT_PRIORITY = 1  # a group's `ansible_group_priority` when it sets none

Vars = dict[str, Any]


@dataclass(frozen=True)
class HostFacts:
    """A host as Ansible ends up seeing it: its vars combined, every group it is in (`all` too)."""

    name: str
    vars: Mapping[str, Any]
    groups: frozenset[str]


@dataclass
class Group:
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: Vars = field(default_factory=dict)


@dataclass
class AnsibleInventory:
    """Hosts in the order they first appear, each with the vars the inventory gives it; groups by
    name."""

    hosts: dict[str, Vars] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=lambda: {ALL: Group(), UNGROUPED: Group()})

    def group(self, name: str) -> Group:
        return self.groups.setdefault(name, Group())

    def add_host(self, name: str, group: str, port: int | None = None) -> None:
        """Put `name` in `group` (its port is set only where the host is new, as in Ansible)."""
        if name not in self.hosts:
            self.hosts[name] = {"ansible_port": port} if port is not None else {}
        members = self.group(group).hosts
        if name not in members:
            members.append(name)

    def set_host_vars(self, name: str, variables: Mapping[str, Any]) -> None:
        """Set vars an inventory gives host `name`. Where a group has that name too, Ansible sets
        them on the group (and warns): a `[bastion]` group's `bastion ansible_user=...` line
        gives its user to the group, whose vars any group_vars/ file then overrides."""
        target = self.groups[name].vars if name in self.groups else self.hosts[name]
        target.update(variables)

    def add_child(self, parent: str, child: str) -> None:
        """Make `child` a child of `parent`; raises InventoryError for a loop, as Ansible does."""
        if parent == child or parent in self._descendants(child):
            raise InventoryError(f"adding the group {child!r} to {parent!r} makes a loop of groups")
        self.group(child)
        children = self.group(parent).children
        if child not in children:
            children.append(child)

    def _descendants(self, name: str) -> set[str]:
        found: set[str] = set()
        todo = [name]
        while todo:
            for child in self.groups.get(todo.pop(), Group()).children:
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

    def merge(self, other: AnsibleInventory) -> None:
        """Add another source's hosts and groups (an inventory folder's next file)."""
        for name, own in other.hosts.items():
            self.hosts.setdefault(name, {}).update(own)
        for name, group in other.groups.items():
            mine = self.group(name)
            mine.hosts += [host for host in group.hosts if host not in mine.hosts]
            mine.children += [child for child in group.children if child not in mine.children]
            mine.vars.update(group.vars)

    def reconcile(self) -> None:
        """As Ansible does after parsing: parentless groups under `all`, groupless hosts in
        `ungrouped`."""
        children_of_some = {child for group in self.groups.values() for child in group.children}
        for name in self.groups:
            if name != ALL and name not in children_of_some:
                self.add_child(ALL, name)
        grouped = {host for name, group in self.groups.items() if name not in IMPLICIT_GROUPS for host in group.hosts}
        for host in self.hosts:
            if host not in grouped and host not in self.groups[UNGROUPED].hosts:
                self.groups[UNGROUPED].hosts.append(host)
        self.groups[ALL].hosts = []  # every host is in `all`; Ansible lists them in their groups

    def depths(self) -> dict[str, int]:
        """Each group's depth: the longest path to it from `all` (cycles are not followed)."""
        depth = {ALL: 0}

        def visit(name: str, at: int, path: frozenset[str]) -> None:
            for child in self.groups.get(name, Group()).children:
                if child not in path and depth.get(child, -1) < at + 1:
                    depth[child] = at + 1
                    visit(child, at + 1, path | {child})

        visit(ALL, 0, frozenset({ALL}))
        return depth

    def groups_of(self) -> dict[str, set[str]]:
        """Every group each host is in, directly or through children (`all` included)."""
        parents: dict[str, set[str]] = {name: set() for name in self.groups}
        for name, group in self.groups.items():
            for child in group.children:
                parents.setdefault(child, set()).add(name)
        found: dict[str, set[str]] = {host: {ALL} for host in self.hosts}
        for name, group in self.groups.items():
            ancestors = _ancestors(name, parents)
            for host in group.hosts:
                found.setdefault(host, {ALL}).update(ancestors)
        return found

    def sorted_groups(self, names: set[str]) -> list[str]:
        """`names` in the order Ansible combines their vars: by depth, priority, then name."""
        depth = self.depths()
        return sorted(names, key=lambda name: (depth.get(name, 1), _priority(self.group(name).vars), name))

    def __iter__(self) -> Iterator[str]:
        return iter(self.hosts)


def _ancestors(name: str, parents: Mapping[str, set[str]]) -> set[str]:
    seen, todo = {name}, [name]
    while todo:
        for parent in parents.get(todo.pop(), set()):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def _priority(variables: Mapping[str, Any]) -> int:
    try:
        return int(variables.get("ansible_group_priority", DEFAULT_PRIORITY))
    except (TypeError, ValueError):
        return DEFAULT_PRIORITY
