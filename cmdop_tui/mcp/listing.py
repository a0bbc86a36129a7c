"""`cmdop-tui mcp list`: every configured MCP server, where it comes from, how it is reached,
what it runs from the project (its trust covers those files), its state after trying to connect
(with a timeout), its tools as the model sees them, and those it is not offered (with why). The
client declares what a session declares (roots, sampling, elicitation), so the tools listed are
those a session is offered; a server that asks anything meanwhile is told that only a session
answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cmdop_tui.config.settings import Settings
from cmdop_tui.support.text import inert_line
from cmdop_tui.tools.registry import ToolRegistry

from .asks import ClientAnswers, Refusal, Root
from .configured import configured_servers
from .files import server_files
from .servers import McpServers, ServerState
from .specs import PROJECT_FILE, PROJECT_SOURCE

LIST_TIMEOUT_S = 10.0

NO_SERVERS = (
    "No MCP servers. Add one to the settings as [mcp.NAME] (`cmdop-tui config edit`), or to a "
    f"{PROJECT_FILE} in the project's directory."
)


async def list_servers_text(settings: Settings, cwd: Path, timeout: float = LIST_TIMEOUT_S) -> str:
    """Connect to every server (each within `timeout` seconds), describe them all, disconnect."""
    specs, notes = configured_servers(settings, cwd)
    if not specs:
        return _inert([*notes, NO_SERVERS])
    specs = [replace(spec, timeout_s=min(spec.timeout_s, timeout)) for spec in specs]
    registry = ToolRegistry()
    servers = McpServers(specs, registry, cwd=cwd, answers=listing_answers(cwd))
    servers.start()
    try:
        await servers.wait(timeout + 1.0)
        runs = {spec.name: server_files(spec, cwd) for spec in specs if spec.source == PROJECT_SOURCE}
        lines = [*notes]
        for state in servers.states():
            lines += describe(state, registry, runs.get(state.name, []), cwd)
    finally:
        await servers.close()
    return _inert(lines)


def _inert(lines: list[str]) -> str:
    """The lines for a terminal: a project's `.mcp.json` (a cloned repository's) names its
    servers, and a server says why it failed; either may hold terminal sequences."""
    return "\n".join(map(inert_line, lines))


def listing_answers(cwd: Path) -> ClientAnswers:
    """What `mcp list` declares: all a session does, answered by a refusal (nothing is run)."""

    async def refuse(request: object) -> Any:
        raise Refusal("`cmdop-tui mcp list` only lists tools; a session answers this")

    return ClientAnswers(roots=lambda: [Root.of(cwd, "workspace")], sample=refuse, elicit=refuse)


def describe(
    state: ServerState, registry: ToolRegistry, runs: Sequence[Path] = (), cwd: Path | None = None
) -> list[str]:
    """One server: a heading line, what it runs from the project (`runs`, shown relative to
    `cwd`), its state, then its tools (read-only ones marked)."""
    how = f", {state.transport}: {state.target}" if state.target else ""
    lines = [f"{state.name}  ({state.source}{how})"]
    if runs:
        shown = ", ".join(inert_line(_relative(path, cwd)) for path in runs)
        lines.append(f"  runs from the project (trusted with {PROJECT_FILE}): {shown}")
    lines.append(f"  {state.summary()}")
    for name in state.tools:
        tool = registry.get(name)
        marker = "  (read-only)" if tool is not None and not tool.mutating else ""
        lines.append(f"    {name}{marker}")
    lines += [f"    {line}" for line in state.hidden_lines()]
    return lines


def _relative(path: Path, cwd: Path | None) -> str:
    if cwd is not None and path.is_relative_to(cwd):
        return str(path.relative_to(cwd)) + ("/" if path.is_dir() and not path.is_symlink() else "")
    return str(path)
