"""What a machine is (its address) and how it is doing (its health)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Literal

LOCAL = "local"

Source = Literal["local", "settings", "ssh_config", "ansible"]
Connection = Literal["ssh", "local"]  # local: this machine, under another name (Ansible's connection=local)
State = Literal["unknown", "online", "degraded", "offline"]


class MachineError(Exception):
    """A machine cannot be named, reached or used; the message says which and why."""


class MachineUnreachable(MachineError):
    """A machine cannot be reached: the last probe found it offline, or ssh could not connect."""


def check_host(host: str) -> None:
    """Raises MachineError for a host ssh would not read as one: a leading `-` would make it an
    option (`-oProxyCommand=...` runs a program here), and spaces or controls are no host."""
    if not host or host.startswith("-") or any(c.isspace() or not c.isprintable() for c in host):
        raise MachineError(f"{host!r} is not a host name or address")


_SSH_OPTION = re.compile(r"[A-Za-z][A-Za-z0-9]*=\S.*")


def check_ssh_option(option: str) -> None:
    """Raises MachineError for what is not one `Key=Value` ssh option on one printable line (it
    is given to ssh as the argument of `-o`, so it can be nothing else)."""
    if not _SSH_OPTION.fullmatch(option) or not option.isprintable():
        raise MachineError(f"{option!r} is not an ssh option (Key=Value)")


@dataclass(frozen=True)
class MachineSpec:
    """A machine in the inventory.

    `host` is what `ssh` is given: a hostname, an address, or a `Host` alias of ~/.ssh/config,
    whose settings (user, port, keys, jump hosts) then apply as in the user's shell.
    """

    name: str
    host: str
    user: str | None = None
    port: int | None = None
    tags: tuple[str, ...] = ()
    source: Source = "settings"
    cmdop: str = "cmdop-tui"  # the command that runs this project on that machine (ask_machine)
    writable: tuple[str, ...] = ()  # more places its sandbox lets commands write
    identity_file: str | None = None  # ssh -i: the key to log in with (else ssh's own choice)
    ssh_options: tuple[str, ...] = ()  # more `Key=Value` ssh options (a ProxyCommand, ...): ssh -o
    connection: Connection = "ssh"

    def __post_init__(self) -> None:
        if self.is_local:  # this machine is not reached by ssh: its hostname is only shown
            return
        check_host(self.host)
        for option in self.ssh_options:
            check_ssh_option(option)
        if self.identity_file is not None and (not self.identity_file or not self.identity_file.isprintable()):
            raise MachineError(f"{self.identity_file!r} is not a key file's path")

    @property
    def is_local(self) -> bool:
        return self.source == "local" or self.connection == "local"

    @classmethod
    def from_address(cls, address: str) -> MachineSpec:
        """`web1`, `ops@10.0.0.5` or `ops@10.0.0.5:2222` as a machine named after its host (an
        ssh alias or an address). Raises MachineError for an address it cannot read."""
        user, _, rest = address.strip().rpartition("@")
        host, colon, port = rest.rpartition(":") if rest.count(":") == 1 else ("", "", "")
        host = host if colon else rest
        if not host or any(c.isspace() for c in host) or (colon and not port.isdigit()):
            raise MachineError(f"cannot read the machine address {address!r}: use host, user@host or user@host:port")
        return cls(name=host, host=host, user=user or None, port=int(port) if colon else None)


@dataclass(frozen=True)
class Health:
    state: State = "unknown"
    latency_ms: float | None = None
    os_name: str = ""
    load: str = ""
    uptime: str = ""
    error: str = ""
    sandbox: str = ""  # "bubblewrap" where commands there can be sandboxed, "none", "" not known
    agent: str = ""  # this project's agent there: its version, "?" (version unknown), "none", "" not known
    checked_at: float = field(default_factory=time.monotonic)

    @property
    def glyph(self) -> str:
        return {"unknown": "○", "online": "●", "degraded": "◐", "offline": "✗"}[self.state]
