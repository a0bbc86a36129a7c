"""The MCP panel: hidden without servers; each server's state as it changes (real servers)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_servers.harness import new_tag, stdio_spec, wait_gone
from textual.app import App, ComposeResult
from textual.widgets import Static

from cmdop_tui.mcp import McpServers
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.tools.registry import ToolRegistry
from cmdop_tui.tui.widgets.mcp_panel import McpPanel


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield McpPanel(id="mcp")


def shown(panel: McpPanel) -> str:
    return str(panel.query_one("#mcp-servers", Static).content)


async def test_the_panel_is_hidden_without_servers_and_follows_their_states(tmp_path: Path):
    tag = new_tag()
    specs = [
        stdio_spec("demo", tag=tag),
        McpServerSpec(name="gone", command="no-such-mcp-server-here"),
        McpServerSpec(name="off", command=sys.executable, enabled=False),
    ]
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(McpPanel)
        panel.follow(None)
        assert not panel.display
        servers = McpServers(specs, ToolRegistry(), cwd=tmp_path)
        panel.follow(servers)
        assert panel.display and "◌ demo connecting" in shown(panel)
        servers.start()
        try:
            assert await servers.wait(30)
            await pilot.pause()
            text = shown(panel)
            assert "● demo 16 tools" in text and f"stdio: {sys.executable}" in " ".join(text.split())
            assert "✕ gone failed" in text and "cannot start 'no-such-mcp-server-here'" in text
            assert "○ off disabled" in text
        finally:
            await servers.close()
    assert wait_gone(tag) == []
