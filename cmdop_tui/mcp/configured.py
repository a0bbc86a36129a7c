"""The servers a session starts: the settings' `[mcp.NAME]`, then the project's `.mcp.json` once
the user trusts it (and what its servers run) as it is; the project's entries win by name. The
project's servers that wait for that trust are kept too: the app shows them (the MCP panel,
`/mcp`) as waiting for `/mcp trust`, and never starts them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.config.settings import Settings

from .server_tables import McpServerSpec, settings_servers
from .specs import PROJECT_FILE, project_servers
from .trust import is_trusted

__all__ = ["Configured", "configured", "configured_servers"]

UNTRUSTED_REASON = "waits for your trust: /mcp trust in the app, or `cmdop-tui mcp trust` here"


@dataclass(frozen=True)
class Configured:
    """What the settings and the project's `.mcp.json` configure."""

    servers: list[McpServerSpec]  # to start, in order
    untrusted: list[McpServerSpec] = field(default_factory=list)  # the project's, not trusted yet: never started
    notes: list[str] = field(default_factory=list)  # for the user: a broken .mcp.json, one to trust


def configured(settings: Settings, cwd: Path) -> Configured:
    """The servers to start, those waiting for trust, and notes for the user (a broken
    `.mcp.json`, or one the user has not trusted yet: its servers are programs, so they start
    only once trusted). Raises SettingsError for a `[mcp.NAME]` table that cannot be used."""
    servers = {spec.name: spec for spec in settings_servers(settings)}
    project, notes = project_servers(cwd)
    path = cwd / PROJECT_FILE
    untrusted: list[McpServerSpec] = []
    if project and not _trusted(path):
        names = ", ".join(spec.name for spec in project)
        notes.append(
            f"{path} names MCP servers ({names}) that start only once you trust this project: "
            "`cmdop-tui mcp trust` here, or /mcp trust in the app"
        )
        untrusted, project = [spec for spec in project if spec.name not in servers], []
    for spec in project:
        servers.pop(spec.name, None)  # the project's entry replaces the settings' one
        servers[spec.name] = spec
    return Configured(list(servers.values()), untrusted, notes)


def configured_servers(settings: Settings, cwd: Path) -> tuple[list[McpServerSpec], list[str]]:
    """The servers to start and the notes of :func:`configured`."""
    found = configured(settings, cwd)
    return found.servers, found.notes


def _trusted(path: Path) -> bool:
    try:
        return is_trusted(path, path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
