"""MCP servers as configured: `McpServerSpec`, and the tables it is read from (`[mcp.NAME]` in the
settings, kept raw by config/ as `Settings.mcp_tables`; entries of a project's `.mcp.json`), with
the spellings other tools use. The keys a settings table takes are declared with the file's
other keys (config/keys.py: `MCP_SERVER`); their values are read here."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cmdop_tui.config.keys import MCP_CONNECT_TIMEOUT_S, MCP_SERVER
from cmdop_tui.config.model import Settings, SettingsError

MCP_TRANSPORTS = ("stdio", "http", "sse")
_MCP_KEYS = frozenset(MCP_SERVER.names)
_MCP_TRANSPORT_SPELLINGS = {
    "stdio": "stdio",
    "http": "http",
    "streamablehttp": "http",
    "streamable": "http",
    "sse": "sse",
}


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server: `[mcp.NAME]` in the settings, or an entry of a project's `.mcp.json`.

    `transport` is "stdio" (`command`, `args`, `env`, `cwd`: a child process), "http" (streamable
    HTTP: `url`, `headers`) or "sse" (the older HTTP transport). `timeout_s` bounds connecting
    and listing the tools. `problem` says why an entry of `.mcp.json` cannot be used (it is then
    shown as failed, never fatal). `${VAR}` in any value is expanded when the server starts.
    """

    name: str
    transport: str = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    timeout_s: float = MCP_CONNECT_TIMEOUT_S
    source: str = "settings"  # "settings" or ".mcp.json"
    problem: str | None = None


def settings_servers(settings: Settings) -> tuple[McpServerSpec, ...]:
    """The servers of the settings' `[mcp.NAME]` tables (and their other spellings), in order.
    Raises SettingsError, naming the file and the table, for one that cannot be used."""
    where = str(settings.source or "settings")
    return tuple(
        mcp_server_from(name, table, f"{where}: [{spelling}.{name}]")
        for spelling, tables in settings.mcp_tables.items()
        for name, table in tables.items()
    )


def mcp_server_from(name: str, table: Any, where: str, *, source: str = "settings") -> McpServerSpec:
    """An MCP server from its table: `[mcp.NAME]` in the settings, or an entry of `.mcp.json`.

    Takes the spellings other tools use: `type` or `transport` ("stdio", "http",
    "streamable-http", "streamableHttp", "sse"; left out, a `url` means HTTP), `command` as a
    list or as one line when no `args` are given, `args` as one line, `disabled = true`,
    numbers and booleans in `env` and `headers`. Raises SettingsError, naming `where`, for what
    cannot be used (the settings file refuses unknown keys; `.mcp.json` ignores them).
    """
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table")
    unknown = sorted(set(table) - _MCP_KEYS)
    if unknown and source == "settings":
        raise SettingsError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_MCP_KEYS))})")
    command, args = _mcp_command(table, where)
    url = _mcp_text(table, "url", where)
    transport = _mcp_transport(table, url, where)
    if transport == "stdio" and not command:
        raise SettingsError(f"{where}: a stdio server needs a command (or give a url for an HTTP server)")
    if transport != "stdio" and not url.startswith(("http://", "https://")):
        raise SettingsError(f"{where}: an {transport} server needs a url starting with http:// or https://")
    timeout = table.get("timeout", MCP_CONNECT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise SettingsError(f"{where}: timeout must be a positive number of seconds")
    enabled, disabled = table.get("enabled", True), table.get("disabled", False)
    if not isinstance(enabled, bool) or not isinstance(disabled, bool):
        raise SettingsError(f"{where}: enabled and disabled must be true or false")
    cwd = _mcp_text(table, "cwd", where)
    return McpServerSpec(
        name=name,
        transport=transport,
        command=command,
        args=args,
        env=_mcp_strings(table, "env", where),
        cwd=cwd or None,
        url=url,
        headers=_mcp_strings(table, "headers", where),
        enabled=enabled and not disabled,
        timeout_s=float(timeout),
        source=source,
    )


def _mcp_text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise SettingsError(f"{where}: {key} must be a string")
    return value.strip()


def _mcp_transport(table: Mapping[str, Any], url: str, where: str) -> str:
    given = table.get("type", table.get("transport"))
    if given is None:
        return "http" if url else "stdio"
    spelled = str(given).lower().replace("-", "").replace("_", "").strip()
    if spelled not in _MCP_TRANSPORT_SPELLINGS:
        raise SettingsError(f"{where}: unknown transport {given!r} (stdio, http or sse)")
    return _MCP_TRANSPORT_SPELLINGS[spelled]


def _mcp_command(table: Mapping[str, Any], where: str) -> tuple[str, tuple[str, ...]]:
    """The program and its arguments: `command` (a string or a list) and `args` (a list or a line)."""
    command, args = table.get("command", ""), table.get("args")
    if isinstance(command, list):
        words = [_scalar(word, where, "command") for word in command]
        command, extra = (words[0], words[1:]) if words else ("", [])
    elif isinstance(command, str):
        command, extra = command.strip(), []
        if args is None and " " in command and not shutil.which(command) and not Path(command).exists():
            words = shlex.split(command)  # "npx -y server": a whole line in `command`
            command, extra = words[0], words[1:]
    else:
        raise SettingsError(f"{where}: command must be a string or a list")
    if isinstance(args, str):
        extra += shlex.split(args)
    elif isinstance(args, list):
        extra += [_scalar(arg, where, "args") for arg in args]
    elif args is not None:
        raise SettingsError(f"{where}: args must be a list of strings")
    return command, tuple(extra)


def _mcp_strings(table: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    """`env` or `headers`: names to strings (numbers and booleans as JSON spells them)."""
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: {key} must be a table of names to strings")
    return {str(name): _scalar(item, where, key) for name, item in value.items()}


def _scalar(value: Any, where: str, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise SettingsError(f"{where}: {key} holds {type(value).__name__}, not a string")
