"""The editor's MCP servers (`mcpServers` of session/new and session/load) beside ours.

Each becomes a `[mcp.NAME]` table of the session's settings, so it starts, is listed, trusted
and judged as a server of the settings file is (the editor is the user's own program, like the
settings file). A server of the settings with the same name wins: the editor's is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from cmdop_tui.config.settings import Settings

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
TABLE = "mcpServers"  # the spelling the editor's servers are kept under (config/keys.py MCP_TABLES)


def with_editor_servers(settings: Settings, servers: Sequence[McpServer]) -> Settings:
    """`settings` with the editor's servers as tables of their own (ours win a name)."""
    ours = {name for tables in settings.mcp_tables.values() for name in tables}
    added = {server.name: table for server in servers if server.name not in ours and (table := _table(server))}
    if not added:
        return settings
    mine: Mapping[str, Any] = settings.mcp_tables.get(TABLE, {})
    return replace(settings, mcp_tables={**settings.mcp_tables, TABLE: {**mine, **added}})


def _table(server: McpServer) -> dict[str, Any] | None:
    """The settings table of one editor server; None for a kind we do not take (ACP's own)."""
    if isinstance(server, McpServerStdio):
        return {"command": server.command, "args": list(server.args), "env": {e.name: e.value for e in server.env}}
    if isinstance(server, HttpMcpServer | SseMcpServer):
        headers = {h.name: h.value for h in server.headers}
        return {"type": server.type, "url": server.url, "headers": headers}
    return None
