"""Which machines there are: the local one, those in settings, and the Host entries of ssh_config.

Names resolve by exact name, then by hostname, then by a unique prefix; an ambiguous name is an
error that lists the candidates.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

from cmdop_tui.machines.spec import LOCAL, MachineError, MachineSpec

WILDCARDS = frozenset("*?!")


def ssh_config_hosts(path: Path) -> list[str]:
    """The concrete `Host` aliases of an ssh_config file (patterns and negations skipped)."""
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
            if not WILDCARDS & set(alias) and alias not in hosts:
                hosts.append(alias)
    return hosts


def local_spec() -> MachineSpec:
    return MachineSpec(name=LOCAL, host=socket.gethostname(), source="local")


class Inventory:
    """Machines by name, in the order the user sees them: local, settings, ssh_config."""

    def __init__(self, machines: Iterable[MachineSpec]) -> None:
        self._machines: dict[str, MachineSpec] = {}
        for machine in machines:
            self._machines.setdefault(machine.name, machine)

    @classmethod
    def load(cls, configured: Iterable[MachineSpec], ssh_config: Path | None) -> Inventory:
        from_ssh = (
            [MachineSpec(name=alias, host=alias, source="ssh_config") for alias in ssh_config_hosts(ssh_config)]
            if ssh_config
            else []
        )
        return cls([local_spec(), *configured, *from_ssh])

    def __iter__(self) -> Iterator[MachineSpec]:
        return iter(self._machines.values())

    def __len__(self) -> int:
        return len(self._machines)

    def names(self) -> list[str]:
        return list(self._machines)

    def resolve(self, name: str) -> MachineSpec:
        """The machine called `name`: exact name, else hostname, else a unique name prefix."""
        wanted = name.strip()
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
