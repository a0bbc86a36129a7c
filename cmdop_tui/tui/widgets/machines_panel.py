"""The machines panel: every machine of the session with its health; pick the target with the
arrow keys and Enter."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cmdop_tui.machines.agent import agent_label
from cmdop_tui.machines.local_load import current_user, local_health
from cmdop_tui.machines.spec import LOCAL, Health, MachineError
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.widgets.side_panel import SidePanel

if TYPE_CHECKING:
    from cmdop_tui.machines.fleet import Fleet

LOAD_REFRESH_S = 5.0
HEALTH_REFRESH_S = 30.0  # remote machines are probed this often, in the background
STATE_STYLE = {"unknown": "$text-muted", "online": "$success", "degraded": "$warning", "offline": "$error"}


@dataclass(frozen=True)
class MachineInfo:
    """The local machine as shown (tests pin it so screenshots match on every machine)."""

    name: str
    os_name: str
    user: str
    status: str = "online"
    load: str | None = None  # fixed load figure (screenshots); None reads the live one


def local_machine() -> MachineInfo:
    return MachineInfo(name=socket.gethostname(), os_name=local_health().os_name, user=current_user())


def load_average() -> str:
    """The 1- and 5-minute load of this machine."""
    return " ".join(local_health().load.split()[:2]) or "?"


class MachineList(OptionList):
    """The list of machines: Textual's, with Enter said for what it does here (/help, footer)."""

    BINDINGS = [Binding("enter", "select", "Work on it", tooltip="the machines panel: work on that machine")]

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """Measure the lines in the layout that sizes the list, not in the paint after it:
        Textual's list measures them as it first paints, and the size that gives it laid the
        whole screen out again while a key typed as the app appeared waited."""
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        self._update_lines()
        return resized


class MachinesPanel(SidePanel):
    DEFAULT_CSS = """
    MachinesPanel {
        height: auto;
        max-height: 14;

        #machine-list {
            height: auto;
            max-height: 12;
            border: none;
            padding: 0;
            background: transparent;
            /* Two lines a machine, whatever the width: a narrow panel cuts them (with …) instead
               of wrapping them into four or five. */
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
    }
    """

    class TargetChosen(Message):
        """The user picked the machine the session works on (`local` for none)."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, id: str | None = None, machine: MachineInfo | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Machines"
        self.machine = machine or local_machine()
        self.remotes: list[str] = []
        self.health: dict[str, Health] = {}
        self.target = LOCAL
        self._fleet: Fleet | None = None

    def compose(self) -> ComposeResult:
        yield MachineList(id="machine-list")

    @property
    def options(self) -> OptionList:
        return self.query_one("#machine-list", OptionList)

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(LOAD_REFRESH_S, self.redraw)

    def follow(self, fleet: Fleet | None) -> None:
        """Show the fleet's machines and the one worked on, and their health as it changes:
        with remote machines, probed in the background every HEALTH_REFRESH_S."""
        if fleet is None:
            return
        self.set_machines([spec.name for spec in fleet.inventory if not spec.is_local])
        self.set_target(fleet.target_name or LOCAL)
        fleet.listeners.append(lambda spec, health: self.set_health(spec.name, health))
        if len(fleet.inventory) > 1:
            self._fleet = fleet
            self.probe()
            self.resolve()
            self.set_interval(HEALTH_REFRESH_S, self.probe)

    @work(group="health", exclusive=True, exit_on_error=False)
    async def probe(self) -> None:
        """Probe every machine of the fleet; the panel updates as the answers come."""
        if self._fleet is not None:
            await self._fleet.probe_all()

    @work(group="connections", exclusive=True, exit_on_error=False)
    async def resolve(self) -> None:
        """Ask ssh -G what each ssh_config alias's connection will do (after the first paint; the
        inventory's own reading is shown until the answers come)."""
        if self._fleet is not None:
            await self._fleet.resolve_connections()
            self.redraw()

    def set_machines(self, remotes: list[str]) -> None:
        self.remotes = remotes
        self.redraw()

    def set_health(self, name: str, health: Health) -> None:
        self.health[name] = health
        self.redraw()

    def set_target(self, name: str) -> None:
        self.target = name
        self.redraw()

    def redraw(self) -> None:
        options = self.options
        highlighted = options.highlighted
        fresh = [self._local_option(), *(self._remote_option(name) for name in self.remotes)]
        if [o.id for o in fresh] == [options.get_option_at_index(i).id for i in range(options.option_count)]:
            for option in fresh:  # same machines: only their text changes (cheaper than a rebuild)
                if option.id is not None:
                    options.replace_option_prompt(option.id, option.prompt)
            return
        options.clear_options()
        options.add_options(fresh)
        if highlighted is None or highlighted >= options.option_count:
            highlighted = [LOCAL, *self.remotes].index(self.target) if self.target in self.remotes else 0
        options.highlighted = highlighted

    def _marker(self, name: str) -> str:
        return "▶ " if name == self.target else "  "

    def _local_option(self) -> Option:
        machine = self.machine
        prompt = Content.assemble(
            self._marker(LOCAL),
            ("● ", "$success"),
            (LOCAL, "bold"),  # the name the tools and --machine take; the hostname is a fact of it
            (f" {machine.status} · load {machine.load or load_average()}\n", "$text-muted"),
            (f"    {machine.name} · {machine.os_name} · {machine.user}", "$text-muted"),
        )
        return Option(prompt, id=LOCAL)

    def _remote_option(self, name: str) -> Option:
        from cmdop_tui.machines.remote_sandbox import sandbox_label  # with the first remote, not at start

        health = self.health.get(name, Health())
        # Most telling first on each line: a narrow panel cuts the ends (nowrap, ellipsis).
        facts: list[str] = [health.state]
        if sandbox := sandbox_label(health.sandbox):  # what holds commands there, if anything
            facts.append(sandbox)
        if health.latency_ms is not None and health.state != "offline":
            facts.append(f"{health.latency_ms:.0f} ms")
        if health.load:
            facts.append(f"load {' '.join(health.load.split()[:2])}")
        detail = health.os_name or health.error or "not checked yet"
        if health.state != "offline" and (agent := agent_label(health.agent)):
            detail = f"{agent} · {detail}"  # whether ask_machine can work there
        if health.uptime:
            detail += f" · up {health.uptime}"
        if address := self._address(name):
            detail = f"{address} · {detail}"
        prompt = Content.assemble(
            self._marker(name),
            (f"{health.glyph} ", STATE_STYLE[health.state]),
            (name, "bold"),
            (f" {' · '.join(facts)}\n", "$text-muted"),
            (f"    {detail[:60]}", "$text-muted"),
        )
        return Option(prompt, id=name)

    def _address(self, name: str) -> str:
        """Where the machine's connection goes (`user@host:port via jump`), when the fleet knows."""
        if self._fleet is None:
            return ""
        try:
            spec = self._fleet.inventory.resolve(name)
        except MachineError:
            return ""
        connection = self._fleet.connection(spec)
        return inert_line(connection.label) if connection else ""  # ssh_config's values may hold controls

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.TargetChosen(event.option.id))
