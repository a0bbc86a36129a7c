"""What a machine is (its address) and how it is doing (its health)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

LOCAL = "local"

Source = Literal["local", "settings", "ssh_config"]
State = Literal["unknown", "online", "degraded", "offline"]


class MachineError(Exception):
    """A machine cannot be named, reached or used; the message says which and why."""


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

    @property
    def is_local(self) -> bool:
        return self.source == "local"


@dataclass(frozen=True)
class Health:
    state: State = "unknown"
    latency_ms: float | None = None
    os_name: str = ""
    load: str = ""
    uptime: str = ""
    error: str = ""
    checked_at: float = field(default_factory=time.monotonic)

    @property
    def glyph(self) -> str:
        return {"unknown": "○", "online": "●", "degraded": "◐", "offline": "✗"}[self.state]
