"""Which MCP servers a session has: `[mcp.NAME]` in the settings, then the project's `.mcp.json`
in the working directory (the format Claude Code reads: `{"mcpServers": {"NAME": {...}}}`), whose
entries win over settings of the same name. And `${VAR}` / `${VAR:-default}` in their values,
expanded from the environment when a server starts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from cmdop_tui.config.settings import SettingsError

from .server_tables import McpServerSpec, mcp_server_from

PROJECT_FILE = ".mcp.json"
PROJECT_SOURCE = ".mcp.json"
_SERVER_TABLES = ("mcpServers", "servers", "mcp_servers")  # Claude Code's; VS Code's; a guess
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def project_servers(cwd: Path) -> tuple[list[McpServerSpec], list[str]]:
    """The servers of `cwd/.mcp.json`. An entry that cannot be used comes back with its
    `problem` set (it shows as failed); a file that cannot be read at all is a note."""
    path = cwd / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{path}: cannot read it ({exc}); its MCP servers are not started"]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"{path}: invalid JSON ({exc}); its MCP servers are not started"]
    table = next((data[key] for key in _SERVER_TABLES if isinstance(data, dict) and key in data), None)
    if not isinstance(table, dict):
        return [], [f'{path}: no "mcpServers" object; no MCP server started from it']
    return [_project_entry(str(name), entry, path) for name, entry in table.items()], []


def _project_entry(name: str, entry: object, path: Path) -> McpServerSpec:
    try:
        return mcp_server_from(name, entry, f"{path}: {name}", source=PROJECT_SOURCE)
    except SettingsError as exc:
        return McpServerSpec(name=name, source=PROJECT_SOURCE, problem=str(exc))


def expand(spec: McpServerSpec, environ: Mapping[str, str] = os.environ) -> McpServerSpec:
    """`spec` with `${VAR}` and `${VAR:-default}` replaced everywhere they may appear (and `~`
    in `command` and `cwd`). Raises ValueError naming a variable that is not set and has no default."""

    def one(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = environ.get(name)
            if found is None or (found == "" and default is not None):
                if default is None:
                    raise ValueError(
                        f"the environment variable {name} is not set (it is used by the server's settings)"
                    )
                return default
            return found

        return _VARIABLE.sub(value, text)

    def each(values: Sequence[str]) -> tuple[str, ...]:
        return tuple(one(item) for item in values)

    return replace(
        spec,
        command=os.path.expanduser(one(spec.command)),
        args=each(spec.args),
        env={name: one(item) for name, item in spec.env.items()},
        cwd=os.path.expanduser(one(spec.cwd)) if spec.cwd else None,
        url=one(spec.url),
        headers={name: one(item) for name, item in spec.headers.items()},
    )


def describe_target(spec: McpServerSpec) -> str:
    """What a server is, in a line: its command line or its URL (as configured, not expanded)."""
    if spec.transport == "stdio":
        return " ".join([spec.command, *spec.args])
    return spec.url
