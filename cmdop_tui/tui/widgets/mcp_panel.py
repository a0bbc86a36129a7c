"""The MCP panel, beside the machines panel: each MCP server of the session and its state
(connecting, connected with its number of tools, failed or crashed with the reason, disabled,
or a project's server waiting for the user's trust, with how to give it). Hidden while the session
has no MCP server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from cmdop_tui.support.folding import fold
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.widgets.side_panel import SidePanel

if TYPE_CHECKING:
    from cmdop_tui.mcp import McpServers, ServerState

DEFAULT_WIDTH = 40  # before the panel has a size: the side column's usual width
GLYPH = {
    "connecting": ("◌", "$warning"),
    "connected": ("●", "$success"),
    "failed": ("✕", "$error"),
    "crashed": ("✕", "$error"),
    "disabled": ("○", "$text-muted"),
    "untrusted": ("⊘", "$warning"),
}


class McpPanel(SidePanel):
    DEFAULT_CSS = """
    McpPanel {
        height: auto;
        max-height: 12;

        #mcp-servers {
            height: auto;
            max-height: 10;
            overflow-y: auto;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "MCP servers"
        self.states: dict[str, ServerState] = {}
        self.display = False

    def compose(self) -> ComposeResult:
        yield Static("", id="mcp-servers", markup=False)

    def follow(self, servers: McpServers | None) -> None:
        """Show `servers` (those of a session opened again replace the last ones) now, and every
        change of their state from now on."""
        self.states = {}
        if servers is None:
            self.redraw()
            return
        for state in servers.states():
            self.states[state.name] = state
        servers.listeners.append(self.set_state)
        self.redraw()

    def set_state(self, state: ServerState) -> None:
        self.states[state.name] = state
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()  # folded to the panel's width

    def redraw(self) -> None:
        self.display = bool(self.states)
        if not self.is_mounted or not self.states:
            return
        servers = self.query_one("#mcp-servers", Static)
        width = servers.content_size.width or self.content_size.width or DEFAULT_WIDTH
        lines = [self._line(state, width) for state in self.states.values()]
        servers.update(Content("\n").join(lines))

    @staticmethod
    def _line(state: ServerState, width: int) -> Content:
        """Two lines a server, folded to `width` without cutting a word (a path breaks after a
        `/`): its name and state, then the reason it failed or where it runs."""
        glyph, style = GLYPH.get(state.status, ("?", "$text-muted"))
        count = len(state.tools)
        facts = f"{count} tool{'s' if count != 1 else ''}" if state.status == "connected" else state.status
        if state.status == "crashed":
            facts += " · restarts on its next call"
        elif state.status == "untrusted":
            facts = "not trusted yet · /mcp trust"
        problem = state.reason if state.status in ("failed", "crashed") else ""
        detail = problem or f"{state.transport}: {state.target}"
        name = inert_line(state.name)
        head = fold(f"{glyph} {name} {facts}", width, hang=2)
        first = head[0]
        rows = [
            Content.assemble((f"{glyph} ", style), (name, "bold"), (first[len(glyph) + 1 + len(name) :], "$text-muted"))
            if first.startswith(f"{glyph} {name}")
            else Content.styled(first, "bold"),
            *(Content.styled(row, "$text-muted") for row in head[1:]),
            *(
                Content.styled(row, "$error" if problem else "$text-muted")
                for row in fold(f"  {inert_line(detail)}", width, hang=4)
            ),
        ]
        return Content("\n").join(rows)
