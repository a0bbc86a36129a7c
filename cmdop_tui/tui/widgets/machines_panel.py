"""The machines panel: the machines this session can work on, and their health.

For now the local machine only; remote machines over SSH join it later.
"""

from __future__ import annotations

import getpass
import os
import platform
import socket
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

LOAD_REFRESH_S = 5.0


@dataclass(frozen=True)
class MachineInfo:
    name: str
    os_name: str
    user: str
    status: str = "online"
    load: str | None = None  # fixed load figure (screenshots); None reads the live one


def local_machine() -> MachineInfo:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return MachineInfo(name=socket.gethostname(), os_name=f"{platform.system()} {platform.release()}", user=user)


def load_average() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "?"
    return f"{one:.2f} {five:.2f}"


class MachinesPanel(Vertical):
    def __init__(self, *, id: str | None = None, machine: MachineInfo | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Machines"
        self.machine = machine or local_machine()

    def compose(self) -> ComposeResult:
        yield Static(id="machine-local", markup=False)

    def on_mount(self) -> None:
        self.refresh_load()
        self.set_interval(LOAD_REFRESH_S, self.refresh_load)

    def refresh_load(self) -> None:
        machine = self.machine
        line = Content.assemble(
            ("● ", "$success"),
            (machine.name, "bold"),
            (f" {machine.status} · load {machine.load or load_average()}\n", "$text-muted"),
            (f"  {machine.os_name} · {machine.user}", "$text-muted"),
        )
        self.query_one("#machine-local", Static).update(line)
