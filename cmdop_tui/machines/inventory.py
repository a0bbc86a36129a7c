"""Which machines there are: the local one, those in settings, and the Host aliases of ssh_config.

ssh_config is read as OpenSSH reads it (machines/ssh_config.py); an alias whose connection goes
to a code forge (github.com, ... or user `git`) is where git pushes go, not a machine: it is kept
apart (`forges`) and never probed.

Names resolve by exact name, then by hostname, then by a unique prefix; an ambiguous name is an
error that lists the candidates. A selector names several machines at once: `tag:T` (the machines
tagged T), a group of the settings (`[groups] web = ["web1", "tag:db"]`: names, tags, groups), or
a machine's name.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from cmdop_tui.machines.spec import LOCAL, MachineError, MachineSpec
from cmdop_tui.machines.ssh_config import SshConfig, SshHost, read_ssh_config

TAG_PREFIX = "tag:"


def ssh_config_hosts(path: Path) -> list[str]:
    """The aliases of an ssh_config file as ssh reads them (patterns, negations and Match
    criteria are none, and neither is a name ssh could not take as a host, such as one with a
    zero-width space pasted from a web page: one odd line must not keep the session from opening)."""
    return read_ssh_config(path).aliases


def local_spec() -> MachineSpec:
    return MachineSpec(name=LOCAL, host=socket.gethostname(), source="local")


class Inventory:
    """Machines by name, in the order the user sees them: local, settings, ssh_config."""

    def __init__(
        self,
        machines: Iterable[MachineSpec],
        groups: Mapping[str, Sequence[str]] | None = None,
        *,
        ssh: SshConfig | None = None,
    ) -> None:
        self._machines: dict[str, MachineSpec] = {}
        for machine in machines:
            self._machines.setdefault(machine.name, machine)
        self.groups: dict[str, tuple[str, ...]] = {name: tuple(members) for name, members in (groups or {}).items()}
        self.ssh = ssh or SshConfig()  # the ssh_config as read: its aliases, forges and problems
        self._ssh_hosts = {host.alias: host for host in self.ssh.hosts}

    @classmethod
    def load(
        cls,
        configured: Iterable[MachineSpec],
        ssh_config: Path | None,
        groups: Mapping[str, Sequence[str]] | None = None,
        *,
        system_config: Path | None = None,
    ) -> Inventory:
        """Local, `configured`, then the machine aliases of `ssh_config` (the user's file) and of
        `system_config` (read after it, as ssh reads /etc/ssh/ssh_config when given no -F)."""
        files = [(path, is_user) for path, is_user in ((ssh_config, True), (system_config, False)) if path]
        ssh = read_ssh_config(files) if files else SshConfig()
        from_ssh = [MachineSpec(name=host.alias, host=host.alias, source="ssh_config") for host in ssh.machines]
        return cls([local_spec(), *configured, *from_ssh], groups, ssh=ssh)

    @property
    def forges(self) -> list[SshHost]:
        """The ssh_config aliases that go to a code forge: not machines, never probed."""
        return [host for host in self.ssh.forges if host.alias not in self._machines]

    def ssh_host(self, spec: MachineSpec) -> SshHost | None:
        """How ssh_config defines `spec` (None: not an ssh_config alias)."""
        return self._ssh_hosts.get(spec.host) if spec.source == "ssh_config" else None

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
        if any(forge.alias == wanted for forge in self.forges):
            raise MachineError(f"{name!r} is a code forge in ssh_config (where git pushes go), not a machine")
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
