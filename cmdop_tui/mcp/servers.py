"""The session's MCP servers: started in the background, their tools in the session's registry
while they are connected, their state for the app and for `cmdop-tui mcp list`.

    servers = McpServers(specs, registry, cwd=cwd)
    servers.start()                 # returns at once: connecting happens in the background
    servers.listeners.append(show)  # show(state) on every change of a server's state
    await servers.wait(10)          # until none is still connecting (headless mode)
    await servers.close()           # every connection and every server process ended

A server that cannot start is `failed`, with the reason; one whose connection ends is `crashed`:
its tools stay, a call to one of them starts it again first (once per call) and says why if it
cannot. A changed tool list (`notifications/tools/list_changed`) updates the registry, which
the agent loop reads every turn. Nothing here raises into the session: a server's trouble is its
state, and a call's trouble is an error result. A project's servers waiting for the user's trust
are `untrusted`: shown, never started. What servers ask of the client (roots, sampling,
elicitation) goes to the session's `ClientAnswers` (mcp/asks.py).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from cmdop_tui.support.text import inert_line
from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.registry import ToolRegistry

from .asks import ClientAnswers
from .configured import UNTRUSTED_REASON
from .names import server_key, tool_names, unique_keys
from .server_tables import McpServerSpec
from .specs import PROJECT_FILE, PROJECT_SOURCE, describe_target, expand
from .tools import TASK_ONLY, RemoteTool, ResourceListing, ResourceRead, mcp_tool, resource_tools
from .trust import UNTRUSTED_AGAIN, still_trusted

if TYPE_CHECKING:
    from .client import Connection

log = logging.getLogger(__name__)

Status = Literal["connecting", "connected", "failed", "crashed", "disabled", "untrusted"]
POLL_S = 0.05  # how often a wait looks at its stop signal
SDK_LOAD_S = 5.0  # loading the MCP SDK, at most (about half a second)


@dataclass(frozen=True)
class ServerState:
    """One server as the user sees it."""

    name: str
    source: str  # "settings" or ".mcp.json"
    transport: str  # "stdio", "http" or "sse"
    target: str  # its command line or its URL
    status: Status
    tools: tuple[str, ...] = ()  # the names the model sees
    reason: str = ""  # why it failed or crashed
    hidden: tuple[str, ...] = ()  # the server's tools not offered, each with why ("name: why")

    def summary(self) -> str:
        """`connected: 4 tools`, `failed: cannot start 'x': no such program`..."""
        count = len(self.tools)
        if self.status == "connected":
            return f"connected: {count} tool{'s' if count != 1 else ''}"
        return f"{self.status}: {self.reason}" if self.reason else self.status

    def hidden_lines(self) -> list[str]:
        """One line for each of the server's tools the model is not offered, with why."""
        return [f"not offered: {inert_line(line)}" for line in self.hidden]


@dataclass
class _Server:
    spec: McpServerSpec
    key: str
    state: ServerState
    connection: Connection | None = None
    tools: dict[str, Tool] = field(default_factory=dict)  # by the model's name
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reader: str | None = None  # the model's name of the tool that reads its resources (None: none)


class McpServers:
    """The MCP servers of a session (see the module doc)."""

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        registry: ToolRegistry | None = None,
        *,
        cwd: Path,
        untrusted: Sequence[McpServerSpec] = (),
        answers: ClientAnswers | None = None,
    ) -> None:
        """`untrusted`: a project's servers waiting for the user's trust, shown and never started;
        `answers`: how the session answers what servers ask (mcp/asks.py; None: roots only, none)."""
        self.answers = answers
        self.registry = registry if registry is not None else ToolRegistry()
        self.cwd = cwd
        self.listeners: list[Callable[[ServerState], None]] = []
        self._specs = tuple(specs)
        self._untrusted = tuple(spec for spec in untrusted if spec.name not in {s.name for s in specs})
        self._table: dict[str, _Server] | None = None  # made on first use: opening a session stays instant
        self._client: ModuleType | None = None
        self._starting: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._spawning = asyncio.Lock()  # one server process started at a time (see client.py)
        self._closed = False

    @property
    def _servers(self) -> dict[str, _Server]:
        if self._table is None:
            keys = unique_keys(spec.name for spec in self._specs)
            self._table = {spec.name: _Server(spec, keys[spec.name], _first_state(spec)) for spec in self._specs}
            for spec in self._untrusted:  # shown, never started
                state = replace(_first_state(spec), status="untrusted", reason=UNTRUSTED_REASON)
                self._table[spec.name] = _Server(spec, server_key(spec.name), state)
        return self._table

    # --- what the user sees -----------------------------------------------------------------------

    def states(self) -> list[ServerState]:
        return [server.state for server in self._servers.values()]

    @property
    def connecting(self) -> bool:
        return any(server.state.status == "connecting" for server in self._servers.values())

    def __len__(self) -> int:
        return len(self._specs)

    def longest_connect_s(self) -> float:
        """How long connecting may take at most: the longest timeout of a server, and a margin for
        loading the SDK."""
        return max((spec.timeout_s for spec in self._specs), default=0.0) + SDK_LOAD_S

    # --- starting and stopping ----------------------------------------------------------------------

    def start(self) -> None:
        """Connect every enabled server, in the background; returns at once."""
        if self._starting is None and self._specs:
            self._starting = asyncio.create_task(self._start_all(), name="mcp servers")

    async def wait(self, timeout: float, stop: Callable[[], bool] = lambda: False) -> bool:
        """Until no server is connecting, `timeout` seconds pass, or `stop()` says so; whether
        none is connecting any more."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.connecting and not stop():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(POLL_S, left))
            except TimeoutError:
                pass
        return not self.connecting

    async def roots_changed(self) -> None:
        """Tell every connected server that the roots changed (they ask for them again)."""
        connections = [server.connection for server in self._servers.values() if server.connection is not None]
        await asyncio.gather(*(connection.roots_changed() for connection in connections))

    async def close(self) -> None:
        """End every connection (and every server process); their tools leave the registry."""
        self._closed = True
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            await asyncio.wait({self._starting})
        connections = [server.connection for server in self._servers.values() if server.connection is not None]
        await asyncio.gather(*(connection.close() for connection in connections), return_exceptions=True)
        for server in self._servers.values():
            server.connection = None
            self._withdraw(server)

    async def _start_all(self) -> None:
        if not self.connecting:
            return
        try:
            self._client = await asyncio.to_thread(importlib.import_module, "cmdop_tui.mcp.client")
        except Exception as exc:  # the SDK is missing or broken: every server says so
            for server in self._servers.values():
                if server.state.status == "connecting":
                    self._set(server, status="failed", reason=f"the MCP SDK cannot be loaded: {exc}")
            return
        waiting = [server for server in self._servers.values() if server.state.status == "connecting"]
        async with asyncio.TaskGroup() as group:  # cancelled (close()), it cancels them all
            for server in waiting:
                group.create_task(self._connect(server))

    async def _connect(self, server: _Server) -> Connection | None:
        """Connect `server` and offer its tools; the connection, or None (its state says why)."""
        assert self._client is not None
        try:
            spec = expand(server.spec)
        except ValueError as exc:
            self._set(server, status="failed", reason=str(exc))
            return None
        connection: Connection = self._client.Connection(
            spec,
            self.cwd,
            spawning=self._spawning,
            on_tools=lambda tools: self._offer(server, tools),
            on_lost=lambda why: self._lost(server, connection, why),
            answers=self.answers,
            key=server.key,
        )
        try:
            tools = await connection.open()
        except self._client.ConnectError as exc:
            self._set(server, status="failed", reason=str(exc))
            return None
        except Exception as exc:  # never expected (the connection says why as ConnectError)
            log.exception("connecting to the MCP server %s failed", server.spec.name)
            self._set(server, status="failed", reason=f"{type(exc).__name__}: {exc}")
            return None
        if self._closed:
            await connection.close()
            return None
        server.connection = connection
        self._offer(server, tools)
        return connection

    # --- the registry -------------------------------------------------------------------------------

    def _offer(self, server: _Server, remote: list[RemoteTool]) -> None:
        """The server's tools are `remote` now: the registry gets the new ones, loses the gone.
        A tool that runs only as a task is not offered (its state says so); a server with
        resources gets the tools that list and read them."""
        if self._closed:
            return
        offered = [item for item in remote if not item.task_only]
        names = tool_names(server.spec.name, server.key, [item.name for item in offered])
        made = [
            mcp_tool(server.spec.name, server.key, item, self._caller(server), names[item.name]) for item in offered
        ]
        server.reader = None
        if server.connection is not None and server.connection.offers_resources:
            reading = resource_tools(
                server.spec.name, server.key, (tool.name for tool in made), *self._resource_readers(server)
            )
            server.reader = reading[0].name
            made += reading
        fresh: dict[str, Tool] = {}
        for tool in made:
            old = server.tools.get(tool.name)
            fresh[tool.name] = old if old is not None and _same(old, tool) else tool
        for name, old in server.tools.items():
            if fresh.get(name) is not old:
                self.registry.remove(name)
        for name, tool in fresh.items():
            if name not in self.registry:
                try:
                    self.registry.add(tool)
                except ValueError:  # a name taken by another tool: this one is left out
                    log.warning("MCP tool %s of %s is left out: the name is taken", name, server.spec.name)
        server.tools = {name: tool for name, tool in fresh.items() if self.registry.get(name) is tool}
        hidden = tuple(f"{item.name}: {TASK_ONLY}" for item in remote if item.task_only)
        self._set(server, status="connected", tools=tuple(server.tools), reason="", hidden=hidden)

    def _withdraw(self, server: _Server) -> None:
        for name in server.tools:
            self.registry.remove(name)
        server.tools = {}

    def _lost(self, server: _Server, connection: Connection, why: str) -> None:
        """A connection ended by itself: the server is `crashed`; its tools stay (a call restarts it)."""
        if server.connection is connection and not self._closed:
            self._set(server, status="crashed", reason=why)

    # --- calls --------------------------------------------------------------------------------------

    def _caller(self, server: _Server) -> Callable[[str, dict[str, Any], ToolContext], Any]:
        async def call(tool: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            connection = await self._live(server)
            if isinstance(connection, str):
                return ToolResult.error(connection)
            return await connection.call(tool, args, ctx.progress, server.reader, keep=ctx.keep)

        return call

    def _resource_readers(self, server: _Server) -> tuple[ResourceRead, ResourceListing]:
        """How the tools that read a server's resources reach it (restarting it, as a call does)."""

        async def read(uri: str, ctx: ToolContext) -> ToolResult:
            connection = await self._live(server)
            if isinstance(connection, str):
                return ToolResult.error(connection)
            return await connection.read_resource(uri, server.reader or "")

        async def listing(ctx: ToolContext) -> ToolResult:
            connection = await self._live(server)
            if isinstance(connection, str):
                return ToolResult.error(connection)
            return await connection.list_resources(server.reader or "")

        return read, listing

    async def _live(self, server: _Server) -> Connection | str:
        """The server's connection, started again if it crashed; or why there is none."""
        async with server.lock:
            current = server.connection
            if current is not None and current.alive:
                return current
            if self._closed or server.state.status not in ("crashed", "connected"):
                return f"the MCP server '{server.spec.name}' is {server.state.summary()}"
            crashed = server.state.reason or "its connection ended"
            server.connection = None
            if current is not None:
                await current.close()
            project = server.spec.source == PROJECT_SOURCE  # its trust is checked again: what it runs may have changed
            if project and not await asyncio.to_thread(still_trusted, self.cwd / PROJECT_FILE):
                self._set(server, status="failed", reason=f"not started again: {UNTRUSTED_AGAIN}")
                return f"the MCP server '{server.spec.name}' is not started again: {UNTRUSTED_AGAIN}"
            self._set(server, status="connecting", reason="")
            try:
                fresh = await self._connect(server)
            except asyncio.CancelledError:  # Stop while it starts: it stays crashed, the next call tries again
                self._set(server, status="crashed", reason=crashed)
                raise
            if fresh is not None:
                return fresh
            why = server.state.reason
            self._set(server, status="crashed", reason=f"{crashed}; starting it again failed: {why}")
            return f"the MCP server '{server.spec.name}' crashed ({crashed}) and could not be started again: {why}"

    # --- states -------------------------------------------------------------------------------------

    def _set(self, server: _Server, **changes: Any) -> None:
        server.state = replace(server.state, **changes)
        self._changed.set()
        for listener in list(self.listeners):
            try:
                listener(server.state)
            except Exception:  # a broken display must not break a connection
                log.exception("an MCP state listener failed")


def _same(one: Tool, other: Tool) -> bool:
    """The same tool as the model and the permission gate see it."""
    return (one.definition(), one.mutating, one.subject) == (other.definition(), other.mutating, other.subject)


def _first_state(spec: McpServerSpec) -> ServerState:
    if spec.problem is not None:
        status: Status = "failed"
    else:
        status = "connecting" if spec.enabled else "disabled"
    return ServerState(
        name=spec.name,
        source=spec.source,
        transport=spec.transport,
        target=describe_target(spec),
        status=status,
        reason=spec.problem or "",
    )
