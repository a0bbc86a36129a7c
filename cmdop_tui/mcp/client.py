"""The MCP SDK's side: one connection to one server, held open by a task of its own.

Imported only when a session has MCP servers, and then in a thread (the SDK takes about half a
second to import), so nothing here delays the prompt.

A connection's task enters the transport (a child process over stdio, or streamable HTTP, or
SSE) and the SDK's `ClientSession`, initialises, lists the tools, and then waits: for a
`notifications/tools/list_changed` (it lists them again), for the end of the connection (a
crash: the server's stdout closed, or its HTTP endpoint went away), or for `close()`. Anyio's
cancel scopes must be left by the task that entered them, hence the one task. Calls are made
from the caller's task (the agent loop's): a Stop cancels the call at once, the SDK tells the
server (`notifications/cancelled`), and the connection stays usable; a question the server asked
meanwhile (mcp/answering.py: an approval to sample the model, a form) ends with it.

What the client declares comes from the session's `ClientAnswers` (mcp/asks.py): the roots (the
workspace) always, sampling and elicitation when the session can answer them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import tempfile
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from cmdop_tui.machines.machine import ProgressSink
from cmdop_tui.support.secrets import CREDENTIAL_ENV
from cmdop_tui.support.version import VERSION
from cmdop_tui.tools.base import ToolResult

from .answering import Asking, callbacks
from .asks import ClientAnswers
from .results import resource_result, resources_listing, tool_result
from .server_tables import McpServerSpec
from .tools import RemoteTool

__all__ = ["ConnectError", "Connection"]

CLIENT_INFO = types.Implementation(name="cmdop-tui", version=VERSION)
CLOSE_TIMEOUT_S = 8.0  # the SDK's own stdio shutdown: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL
MAX_PAGES = 50  # of tools/list
STDERR_TAIL = 400  # characters of a failed server's stderr in its reason
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: an SSE stream may be quiet

Item = SessionMessage | Exception

# The SDK logs through `mcp.*` and `client`; with no handler Python would print its warnings on
# stderr, over the full-screen app. The app's own logging, if any, still gets them.
for _name in ("mcp", "client"):
    logging.getLogger(_name).addHandler(logging.NullHandler())


class ConnectError(Exception):
    """A server could not be reached, started or initialised; the message says why."""


class Connection:
    """One MCP server's connection. `on_tools(tools)` hears a changed tool list; `on_lost(reason)`
    hears that the connection ended without `close()` (the server crashed or went away)."""

    def __init__(
        self,
        spec: McpServerSpec,
        cwd: Path,
        *,
        on_tools: Callable[[list[RemoteTool]], None],
        on_lost: Callable[[str], None],
        spawning: asyncio.Lock | None = None,
        answers: ClientAnswers | None = None,
        key: str = "",
    ) -> None:
        """`answers`: how the session answers what the server asks (None: roots only, none);
        `key`: the server's part of its tools' names (`mcp__KEY__...`)."""
        self.spec = spec
        self._answers = answers or ClientAnswers()
        self._key = key or spec.name
        self._asking = Asking()
        self._spawning = spawning or asyncio.Lock()
        self.cwd = cwd
        self._on_tools = on_tools
        self._on_lost = on_lost
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closing = False
        self._tools_changed = False
        self.lost: str | None = None  # why the connection ended, once it has
        self._errlog: IO[str] | None = None
        self._process: Any = None  # a stdio server's process (see `_server_process`)
        self._abandoned = False  # a call was stopped: the server may still be working on it

    @property
    def alive(self) -> bool:
        return self._session is not None and self.lost is None and not self._closing

    async def open(self) -> list[RemoteTool]:
        """Connect, initialise and list the tools, within the spec's timeout. Raises ConnectError."""
        ready: asyncio.Future[list[RemoteTool]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp {self.spec.name}")
        try:
            async with asyncio.timeout(self.spec.timeout_s):
                return await ready
        except TimeoutError:
            why = self._with_stderr(f"no answer within {self.spec.timeout_s:g} s")  # before close() ends the log
            await self.close()
            raise ConnectError(why) from None
        except BaseException:
            await self.close()
            raise

    @property
    def offers_resources(self) -> bool:
        """Whether the server said it has resources (then the model gets tools to read them)."""
        capabilities = self._session.server_capabilities if self._session is not None else None
        return capabilities is not None and capabilities.resources is not None

    async def call(
        self,
        name: str,
        args: dict[str, Any],
        report: ProgressSink,
        reader: str | None = None,
        keep: Callable[[str], object] = lambda text: None,
    ) -> ToolResult:
        """Call the tool `name`; what the server says, or why it could not, as a ToolResult
        (`reader`: the tool that reads the server's resources, named by its resource links;
        `keep`: where the whole text goes when the result is cut). Cancelling the caller cancels
        the call (and tells the server)."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            figure = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            report(f"[progress {figure}] {message or ''}".rstrip() + "\n", "info")

        async def send(session: ClientSession) -> ToolResult:
            return tool_result(await session.call_tool(name, args, progress_callback=on_progress), reader, keep)

        return await self._ask(send, "call")

    async def read_resource(self, uri: str, reader: str) -> ToolResult:
        """The resource `uri` of the server, as the model reads it."""

        async def send(session: ClientSession) -> ToolResult:
            return resource_result(await session.read_resource(uri), reader)

        return await self._ask(send, "read")

    async def list_resources(self, reader: str) -> ToolResult:
        """The server's resources and URI templates (MAX_PAGES pages of each at most)."""

        async def send(session: ClientSession) -> ToolResult:
            resources: list[types.Resource] = []
            templates: list[types.ResourceTemplate] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page = await session.list_resources(params=_page(cursor))
                resources += page.resources
                if not (cursor := page.next_cursor):
                    break
            cursor = None
            with contextlib.suppress(MCPError):  # templates are optional: a server may not list any
                for _ in range(MAX_PAGES):
                    listed = await session.list_resource_templates(params=_page(cursor))
                    templates += listed.resource_templates
                    if not (cursor := listed.next_cursor):
                        break
            return resources_listing(resources, templates, reader)

        return await self._ask(send, "listing")

    async def _ask(self, send: Callable[[ClientSession], Awaitable[ToolResult]], what: str) -> ToolResult:
        """`send(session)`, or why the server could not answer, as a ToolResult."""
        session = self._session
        if session is None or not self.alive:
            return ToolResult.error(f"the MCP server '{self.spec.name}' is not connected ({self.lost or 'closed'})")
        try:
            with self._asking.calling():  # the server may sample and elicit meanwhile, not after
                return await send(session)
        except asyncio.CancelledError:  # Stop: what the server asked meanwhile ends with the call
            self._abandoned = True
            self._asking.stop()
            raise
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                await asyncio.sleep(0)  # let the connection's task see the end and say why
                detail = exc.message if exc.message.lower() != "connection closed" else self._ended()
                self._end(self.lost or detail)  # HTTP: the transport may not notice by itself
                why = f" ({self.lost})" if self.lost else ""
                return ToolResult.error(
                    f"the MCP server '{self.spec.name}' closed the connection during the {what}{why}; "
                    "it is restarted on the next call"
                )
            return ToolResult.error(f"the MCP server '{self.spec.name}' refused the {what}: {exc}")
        except Exception as exc:  # a result the SDK could not read, a transport failure...
            return ToolResult.error(f"the {what} to the MCP server '{self.spec.name}' failed: {describe(exc)}")

    async def roots_changed(self) -> None:
        """Tell the server the roots changed (it asks for them again). Never raises."""
        session = self._session
        if session is None or not self.alive:
            return
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")  # deprecated for the protocol's next version, current in this one
            await session.send_roots_list_changed()

    async def close(self) -> None:
        """End the connection (and the server's process). Bounded; never raises."""
        self._closing = True
        self._wake.set()
        task = self._task
        if task is None or task.done():
            return
        if self._abandoned:
            self._end_process()
        if self._session is None:
            task.cancel()  # still connecting: nothing to wind down (the SDK still ends the process)
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)

    def _end_process(self) -> None:
        """End a stdio server's process group now. Closing waits for a server to leave by itself
        once its stdin is closed (the SDK gives it 2 s); one that was left working on a stopped
        call (it may ignore the cancellation) would hold the app's exit that long.

        The group, even when the process started has left: a launcher that forked the real
        server and exited leaves it in the group, and the SDK, seeing its process gone, ends
        nothing. The group's id (the first process's pid) is not given to another process while
        any member lives; once none does, it could in time be, and only a process leading a group
        of its own under that id would be hit (the SDK's own shutdown takes the same chance)."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGTERM)  # its own group: the SDK starts it in a new session

    # --- the connection's task ------------------------------------------------------------------

    async def _hold(self, ready: asyncio.Future[list[RemoteTool]]) -> None:
        try:
            async with self._transport() as (read, write), anyio.create_task_group() as group:
                sender, receiver = anyio.create_memory_object_stream[Item](0)
                group.start_soon(self._forward, read, sender)
                try:
                    async with ClientSession(
                        receiver,
                        write,
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                        **callbacks(self._answers, self.spec.name, self._key, self._asking),
                    ) as session:
                        await session.initialize()
                        tools = await self._list(session)
                        if ready.done():  # open() gave up meanwhile
                            return
                        self._session = session
                        ready.set_result(tools)
                        await self._serve(session)
                finally:
                    self._session = None
                    group.cancel_scope.cancel()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ConnectError("stopped while connecting"))
            raise
        except (Exception, BaseExceptionGroup) as exc:  # anyio's task groups raise groups of them
            self.lost = self.lost or self._with_stderr(reason(exc, self.spec))
        finally:
            self._session = None
            self._close_errlog()
        if not ready.done():
            ready.set_exception(ConnectError(self.lost or "the server closed the connection"))
        elif not self._closing:
            self._on_lost(self.lost or "the server closed the connection")

    async def _forward(self, source: MemoryObjectReceiveStream[Item], sink: MemoryObjectSendStream[Item]) -> None:
        """Pass the transport's messages on to the session, and notice when they end."""
        async with sink:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                async for item in source:
                    await sink.send(item)
        if not self._closing:
            self._end(self._with_stderr(self._ended()))

    def _end(self, why: str) -> None:
        """The connection is over (`why`): the task winds it down and reports it."""
        if self.lost is None:
            self.lost = why
        self._wake.set()

    async def _serve(self, session: ClientSession) -> None:
        """Until close() or the end of the connection: list the tools again when they change."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._closing or self.lost is not None:
                return
            if self._tools_changed:
                self._tools_changed = False
                try:
                    tools = await self._list(session)
                except Exception:
                    continue  # the next change, or the end of the connection, will come
                self._on_tools(tools)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed = True
            self._wake.set()

    async def _list(self, session: ClientSession) -> list[RemoteTool]:
        found: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            found += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return [remote_tool(tool) for tool in found]

    # --- transports -----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        spec = self.spec
        if spec.transport == "stdio":
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=server_environment(spec.env), cwd=spec.cwd or self.cwd
            )
            async with contextlib.AsyncExitStack() as stack:
                # One process started at a time, one per turn of the event loop: forking this
                # process takes ~5 ms, and twenty forks in one turn would hold a keypress 100 ms.
                async with self._spawning:
                    transport = stdio_client(params, errlog=self._errlog)
                    streams = await stack.enter_async_context(transport)
                    self._process = _server_process(transport)
                yield streams
        elif spec.transport == "sse":
            async with sse_client(spec.url, headers=dict(spec.headers)) as streams:
                yield streams
        else:
            async with (
                httpx2.AsyncClient(headers=dict(spec.headers), timeout=HTTP_TIMEOUT) as client,
                streamable_http_client(spec.url, http_client=client) as streams,
            ):
                yield streams

    def _ended(self) -> str:
        return "the server exited" if self.spec.transport == "stdio" else "the server closed the connection"

    def _with_stderr(self, why: str) -> str:
        """`why`, and the end of what the server wrote on stderr (where it says what went wrong)."""
        if self._errlog is None:
            return why
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return why
        tail = lines[-1][-STDERR_TAIL:] if lines else ""
        return f"{why}; it said: {tail}" if tail else why

    def _close_errlog(self) -> None:
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()


def _server_process(transport: Any) -> Any:
    """The server's process, which the SDK's `stdio_client` keeps to itself: the local
    `process` of its generator, suspended while the transport is open. None if the SDK changes
    that (closing then waits as the SDK does); tests/functional/test_mcp_stop.py pins it."""
    frame = getattr(getattr(transport, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    return process if isinstance(getattr(process, "pid", None), int) else None


def remote_tool(tool: types.Tool) -> RemoteTool:
    annotations = tool.annotations
    title = tool.title or (annotations.title if annotations else None) or ""
    return RemoteTool(
        name=tool.name,
        description=tool.description or title,
        input_schema=dict(tool.input_schema),
        read_only=bool(annotations and annotations.read_only_hint),
        task_support=tool.execution.task_support if tool.execution else None,
    )


def _page(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


def server_environment(extra: dict[str, str] | Any) -> dict[str, str]:
    """What a stdio server's process gets: our environment without the app's own credentials,
    then what its settings give (which may name them on purpose)."""
    environment = {name: value for name, value in os.environ.items() if name not in CREDENTIAL_ENV}
    return {**environment, **dict(extra)}


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions in `error`, groups opened (cancellations last: they only follow a failure)."""
    if isinstance(error, BaseExceptionGroup):
        found = [leaf for inner in error.exceptions for leaf in leaves(inner)]
        return sorted(found, key=lambda leaf: isinstance(leaf, asyncio.CancelledError))
    return [error]


def reason(error: BaseException, spec: McpServerSpec) -> str:
    """Why a connection failed or ended, in a line."""
    first = leaves(error)[0]
    if isinstance(first, FileNotFoundError) and spec.transport == "stdio":
        return f"cannot start {spec.command!r}: no such program"
    if isinstance(first, OSError) and spec.transport == "stdio":
        return f"cannot start {spec.command!r}: {first.strerror or first}"
    if isinstance(first, MCPError) and first.code == types.CONNECTION_CLOSED:
        return "the server exited" if spec.transport == "stdio" else "the server closed the connection"
    url = spec.url.partition("?")[0]  # a query may hold a key
    if isinstance(first, httpx2.HTTPStatusError):
        return f"HTTP {first.response.status_code} from {url}"
    if isinstance(first, httpx2.TransportError):
        return f"cannot reach {url}: {describe(first)}"
    return describe(first)


def describe(error: BaseException) -> str:
    first = leaves(error)[0]
    text = str(first).strip()
    return f"{type(first).__name__}: {text}" if text else type(first).__name__
