"""The servers a session starts: the settings' `[mcp.NAME]`, then the project's `.mcp.json` once
the user trusts it (and what its servers run) as it is; the project's entries win by name."""

from __future__ import annotations

from pathlib import Path

from cmdop_tui.config.settings import Settings

from .server_tables import McpServerSpec, settings_servers
from .specs import PROJECT_FILE, project_servers
from .trust import is_trusted

__all__ = ["configured_servers"]


def configured_servers(settings: Settings, cwd: Path) -> tuple[list[McpServerSpec], list[str]]:
    """The servers to start, in order, and notes for the user (a broken `.mcp.json`, or one the
    user has not trusted yet: its servers are programs, so they start only once trusted).
    Raises SettingsError for a `[mcp.NAME]` table that cannot be used."""
    servers = {spec.name: spec for spec in settings_servers(settings)}
    project, notes = project_servers(cwd)
    path = cwd / PROJECT_FILE
    if project and not _trusted(path):
        names = ", ".join(spec.name for spec in project)
        notes.append(
            f"{path} names MCP servers ({names}) that start only once you trust this project: "
            "`cmdop-tui mcp trust` here, or /mcp trust in the app"
        )
        project = []
    for spec in project:
        servers.pop(spec.name, None)  # the project's entry replaces the settings' one
        servers[spec.name] = spec
    return list(servers.values()), notes


def _trusted(path: Path) -> bool:
    try:
        return is_trusted(path, path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
