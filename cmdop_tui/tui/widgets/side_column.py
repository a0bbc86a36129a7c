"""The column beside the chat: machines, MCP servers and tool activity.

Below the app's narrow breakpoint the column folds away (app.tcss: `Screen.-narrow #side`) until
the user shows or hides a panel (F2, F3); from then on that choice, `chosen`, holds at every width.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive

from cmdop_tui.tui.widgets.machines_panel import MachineInfo, MachinesPanel
from cmdop_tui.tui.widgets.mcp_panel import McpPanel
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

Shown = tuple[bool, bool]  # (tool activity, machines)


class SideColumn(Vertical):
    chosen: reactive[Shown | None] = reactive(None, init=False)  # the user's choice; None: by width

    def __init__(self, *, id: str | None = None, machine: MachineInfo | None = None, narrow_below: int) -> None:
        super().__init__(id=id)
        self._machine = machine
        self.narrow_below = narrow_below

    def compose(self) -> ComposeResult:
        yield MachinesPanel(id="machines", machine=self._machine)
        yield McpPanel(id="mcp")
        yield ToolPanel(id="tools")

    def watch_chosen(self, chosen: Shown | None) -> None:
        tools, machines = chosen or (True, True)
        self.screen.set_class(chosen is not None, "-panels-chosen")
        self.query_one(ToolPanel).set_class(not tools, "-folded")
        self.query_one(MachinesPanel).set_class(not machines, "-folded")
        self.set_class(not (tools or machines), "-folded")
        self.set_class(machines and not tools, "-tools-folded")  # app.tcss: above the chat, across it

    @property
    def shown(self) -> Shown:
        """What is shown: the user's choice, else both panels on a wide screen and none on a narrow one."""
        wide = self.app.size.width >= self.narrow_below
        return self.chosen if self.chosen is not None else (wide, wide)

    def toggle_tools(self) -> None:
        tools, machines = self.shown
        self.chosen = (not tools, machines)
        if not tools:
            self.query_one(ToolPanel).table.focus()

    def toggle_machines(self) -> None:
        tools, machines = self.shown
        self.chosen = (tools, not machines)
        if not machines:
            self.query_one(MachinesPanel).options.focus()
