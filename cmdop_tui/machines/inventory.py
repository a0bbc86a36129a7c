"""Which machines there are: the local one, those in settings, and the Host entries of ssh_config.

Names resolve by exact name, then by hostname, then by a unique prefix; an ambiguous name is an
error that lists the candidates. A selector names several machines at once: `tag:T` (the machines
tagged T), a group of the settings (`[groups] web = ["web1", "tag:db"]`: names, tags, groups), or
a machine's name.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from cmdop_tui.machines.spec import LOCAL, MachineError, MachineSpec, check_host

WILDCARDS = frozenset("*?!")
TAG_PREFIX = "tag:"


def ssh_config_hosts(path: Path) -> list[str]:
    """The concrete `Host` aliases of an ssh_config file (patterns and negations skipped, and so
    is an alias ssh would not read as a host, such as one with a zero-width space pasted from a
    web page: one odd line must not keep the session from opening)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    hosts: list[str] = []
    for line in text.splitlines():
        words = line.strip().split()
        if len(words) < 2 or words[0].lower() != "host":
            continue
        for alias in words[1:]:
            if alias.startswith("#"):
                break
            if not WILDCARDS & set(alias) and _is_host(alias) and alias not in hosts:
                hosts.append(alias)
    return hosts


def _is_host(alias: str) -> bool:
    try:
        check_host(alias)
    except MachineError:
        return False
    return True


def local_spec() -> MachineSpec:
    return MachineSpec(name=LOCAL, host=socket.gethostname(), source="local")


class Inventory:
    """Machines by name, in the order the user sees them: local, settings, ssh_config."""

    def __init__(self, machines: Iterable[MachineSpec], groups: Mapping[str, Sequence[str]] | None = None) -> None:
        self._machines: dict[str, MachineSpec] = {}
        for machine in machines:
            self._machines.setdefault(machine.name, machine)
        self.groups: dict[str, tuple[str, ...]] = {name: tuple(members) for name, members in (groups or {}).items()}

    @classmethod
    def load(
        cls,
        configured: Iterable[MachineSpec],
        ssh_config: Path | None,
        groups: Mapping[str, Sequence[str]] | None = None,
    ) -> Inventory:
        from_ssh = (
            [MachineSpec(name=alias, host=alias, source="ssh_config") for alias in ssh_config_hosts(ssh_config)]
            if ssh_config
            else []
        )
        return cls([local_spec(), *configured, *from_ssh], groups)

    def __iter__(self) -> Iterator[MachineSpec]:
        return iter(self._machines.values())

    def __len__(self) -> int:
        return len(self._machines)

    def names(self) -> list[str]:
        return list(self._machines)

    def resolve(self, name: str) -> MachineSpec:
        """The machine called `name`: exact name, else hostname, else a unique name prefix; a tag
        (`tag:T`) or a group that names exactly one machine names it."""
        wanted = name.strip()
        if wanted.startswith(TAG_PREFIX) or (wanted in self.groups and wanted not in self._machines):
            selected = self.select([wanted])
            if len(selected) == 1:
                return selected[0]
            names = ", ".join(m.name for m in selected)
            raise MachineError(f"{name!r} names {len(selected)} machines ({names}): name one of them")
        if wanted in self._machines:
            return self._machines[wanted]
        by_host = [m for m in self if m.host == wanted]
        if len(by_host) == 1:
            return by_host[0]
        candidates = by_host or ([m for m in self if m.name.startswith(wanted)] if wanted else [])
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            names = ", ".join(sorted(m.name for m in candidates))
            raise MachineError(f"machine {name!r} is ambiguous: it could be {names}")
        known = ", ".join(self.names())
        raise MachineError(f"unknown machine {name!r}; known machines: {known}")

    def select(self, selectors: Iterable[str]) -> list[MachineSpec]:
        """The machines the selectors name (`tag:T`, a group, a machine name), each once, in
        inventory order. Raises MachineError for a selector that names no machine."""
        chosen: set[str] = set()
        for selector in selectors:
            chosen.update(self._expand(selector.strip(), ()))
        return [machine for machine in self if machine.name in chosen]

    def _expand(self, selector: str, seen: tuple[str, ...]) -> set[str]:
        if selector.startswith(TAG_PREFIX):
            tag = selector.removeprefix(TAG_PREFIX).strip()
            tagged = {m.name for m in self if tag in m.tags}
            if not tagged:
                known = ", ".join(sorted({t for m in self for t in m.tags})) or "none"
                raise MachineError(f"no machine is tagged {tag!r}; tags: {known}")
            return tagged
        if selector in self.groups and selector not in seen:
            names: set[str] = set()
            for member in self.groups[selector]:
                names |= self._expand(member.strip(), (*seen, selector))
            return names
        if selector in seen:
            raise MachineError(f"group {selector!r} contains itself ({' -> '.join((*seen, selector))})")
        return {self.resolve(selector).name}
