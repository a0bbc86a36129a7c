"""MCP servers: their tools offered to the model as `mcp__SERVER__TOOL`, through the official SDK.

    server_tables  McpServerSpec, read from [mcp.NAME] (kept raw by config/) or an .mcp.json entry
    specs       which servers: [mcp.NAME] in the settings, a project's .mcp.json; ${VAR} expansion
    names       tool names the Messages API accepts
    tools       a server's tool as a `Tool`: schema, tags, mutating, subject (for the floor, rules)
    servers     McpServers: background start, states, the registry kept up to date, calls, restarts
    client      the SDK's side (imported in a thread, only when there are servers): one connection
    results     an MCP result as a ToolResult
    listing     `cmdop-tui mcp list`
    asks        what a server may ask of the client (roots, sampling, elicitation), as plain data
    forms       an elicitation's flat schema as fields; answers checked against it
    answering   the SDK's callbacks for those questions (imported by client only)

Nothing imported here loads the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmdop_tui.support.lazy import loaded_on_use

if TYPE_CHECKING:
    from .configured import configured_servers
    from .server_tables import McpServerSpec, settings_servers
    from .servers import McpServers, ServerState

# Loaded on use: the CLI checks the settings' tables (server_tables) before the first paint,
# which needs neither the project's files and trust (configured) nor `servers`, which brings
# the tool registry and every machine's code.
_LOADED_ON_USE = {
    "configured_servers": ".configured",
    "McpServerSpec": ".server_tables",
    "settings_servers": ".server_tables",
    "McpServers": ".servers",
    "ServerState": ".servers",
}

__getattr__ = loaded_on_use(__name__, _LOADED_ON_USE)


__all__ = ["McpServerSpec", "McpServers", "ServerState", "configured_servers", "settings_servers"]
