"""`cmdop-tui mcp list`: every configured MCP server, where it comes from, how it is reached,
its state after trying to connect (with a timeout), and its tools as the model sees them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cmdop_tui.config.settings import Settings
from cmdop_tui.tools.registry import ToolRegistry

from .servers import McpServers, ServerState
from .specs import PROJECT_FILE, configured_servers

LIST_TIMEOUT_S = 10.0

NO_SERVERS = (
    "No MCP servers. Add one to the settings as [mcp.NAME] (`cmdop-tui config edit`), or to a "
    f"{PROJECT_FILE} in the project's directory."
)


async def list_servers_text(settings: Settings, cwd: Path, timeout: float = LIST_TIMEOUT_S) -> str:
    """Connect to every server (each within `timeout` seconds), describe them all, disconnect."""
    specs, notes = configured_servers(settings, cwd)
    if not specs:
        return "\n".join([*notes, NO_SERVERS])
    specs = [replace(spec, timeout_s=min(spec.timeout_s, timeout)) for spec in specs]
    registry = ToolRegistry()
    servers = McpServers(specs, registry, cwd=cwd)
    servers.start()
    try:
        await servers.wait(timeout + 1.0)
        lines = [*notes, *(line for state in servers.states() for line in describe(state, registry))]
    finally:
        await servers.close()
    return "\n".join(lines)


def describe(state: ServerState, registry: ToolRegistry) -> list[str]:
    """One server: a heading line, its state, then its tools (read-only ones marked)."""
    how = f", {state.transport}: {state.target}" if state.target else ""
    lines = [f"{state.name}  ({state.source}{how})", f"  {state.summary()}"]
    for name in state.tools:
        tool = registry.get(name)
        marker = "  (read-only)" if tool is not None and not tool.mutating else ""
        lines.append(f"    {name}{marker}")
    return lines
