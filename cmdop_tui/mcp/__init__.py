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

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .configured import configured_servers
from .server_tables import McpServerSpec, settings_servers

if TYPE_CHECKING:
    from .servers import McpServers, ServerState


def __getattr__(name: str) -> Any:
    """`McpServers` and `ServerState` load with the session: `servers` brings the tool registry
    and every machine's code, which the first paint (and /mcp's listing) does without."""
    if name not in ("McpServers", "ServerState"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(".servers", __name__), name)


__all__ = ["McpServerSpec", "McpServers", "ServerState", "configured_servers", "settings_servers"]
