"""What a machine is (its address) and how it is doing (its health)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

LOCAL = "local"

Source = Literal["local", "settings", "ssh_config", "ansible"]
State = Literal["unknown", "online", "degraded", "offline"]


class MachineError(Exception):
    """A machine cannot be named, reached or used; the message says which and why."""


def check_host(host: str) -> None:
    """Raises MachineError for a host ssh would not read as one: a leading `-` would make it an
    option (`-oProxyCommand=...` runs a program here), and spaces or controls are no host."""
    if not host or host.startswith("-") or any(c.isspace() or not c.isprintable() for c in host):
        raise MachineError(f"{host!r} is not a host name or address")


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

    def __post_init__(self) -> None:
        if self.source != "local":  # this machine is not reached by ssh: its hostname is only shown
            check_host(self.host)

    @property
    def is_local(self) -> bool:
        return self.source == "local"

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
