"""An MCP server's tool as a `Tool` of the session: its name for the model, its schema, its
declarations for the permission gate, and a `run` that goes to the server.

A tool is `mutating` (approval asked in the default mode) unless the server marks it
`readOnlyHint: true` (which spares it the question, never the floor). Its `Subject` follows its
schema, so argument rules judge it as they judge the built-in tools: a string `command` argument
is a shell command, a string `path` argument (or `file_path`, ...) a path. Whatever its
arguments are called, the safety floor judges every string in them (`Subject.every_string`):
each that names a path (`paths: ["~/.ssh/id_rsa"]`, `source`, `destination`, a `file://` URI)
by the path rules, each under a key named like a command as a shell command.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cmdop_tui.support.text import truncate_middle
from cmdop_tui.tools.base import Subject, Tool, ToolContext, ToolResult

from .names import McpName, extra_name, tool_names

MCP_TAG = "mcp"
DESCRIPTION_LIMIT = 4_000  # characters of a server's description of a tool
_COMMAND_ARGUMENTS = ("command", "cmd")
_PATH_ARGUMENTS = ("path", "file_path", "filepath", "filename", "file")

McpCall = Callable[[str, dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    read_only: bool = False
    task_support: str | None = None  # "forbidden", "optional", "required" (run only as a task)

    @property
    def task_only(self) -> bool:
        """The server runs it only as a task, which this client does not do: it is not offered."""
        return self.task_support == "required"


TASK_ONLY = "runs only as a task, which this client does not do"


def mcp_tool(server: str, key: str, remote: RemoteTool, call: McpCall, naming: McpName | None = None) -> Tool:
    """The session's tool for `remote`, a tool of the server `server` (whose name in tool names
    is `key`) named `naming` (`names.tool_names` among the server's tools; None: as if it were
    its only one); `call(tool, args, ctx)` runs it on the server."""
    naming = naming or tool_names(server, key, [remote.name])[remote.name]

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await call(remote.name, args, ctx)

    schema = input_schema(remote.input_schema)
    description = remote.description.strip() or f"The tool {remote.name} of the MCP server {server}."
    return Tool(
        name=naming.name,
        description=truncate_middle(description, DESCRIPTION_LIMIT),
        input_schema=schema,
        run=run,
        tags=frozenset({MCP_TAG, f"{MCP_TAG}:{key}"}),
        mutating=not remote.read_only,
        subject=subject_of(schema),
        aliases=frozenset({naming.full}) if naming.full else frozenset(),
    )


def input_schema(schema: Any) -> dict[str, Any]:
    """The server's input schema, as the Messages API takes it: an object at the root."""
    root: dict[str, Any] = dict(schema) if isinstance(schema, dict) else {}
    root["type"] = "object"
    if not isinstance(root.get("properties"), dict):
        root["properties"] = {}
    return root


def subject_of(schema: dict[str, Any]) -> Subject:
    """What argument rules match in a call, from the schema's argument names (a command, a
    path, or none: then the first command, path, pattern or hostname given); the floor judges
    every string of every call whatever it is called (`every_string`)."""
    properties = schema.get("properties", {})

    def is_text(name: str) -> bool:
        spec = properties.get(name)
        return isinstance(spec, dict) and spec.get("type") == "string"

    for name in _COMMAND_ARGUMENTS:
        if is_text(name):
            return Subject("command", name, every_string=True)
    for name in _PATH_ARGUMENTS:
        if is_text(name):
            return Subject("path", name, reads_content=True, reach="parent", every_string=True)
    return Subject("path", "", every_string=True)


READ_RESOURCE = "read_resource"
LIST_RESOURCES = "list_resources"
ResourceRead = Callable[[str, ToolContext], Awaitable[ToolResult]]
ResourceListing = Callable[[ToolContext], Awaitable[ToolResult]]


def resource_tools(
    server: str, key: str, taken: Iterable[str], read: ResourceRead, listing: ResourceListing
) -> tuple[Tool, Tool]:
    """The tools that read a server's resources, `mcp__KEY__read_resource(uri)` and
    `mcp__KEY__list_resources` (with a digest where the server has tools of those names,
    `taken`). Reads of the server's data: read-only, judged as its own tools are (`mcp__KEY__*`
    rules; the floor sees the URI, a `file://` one as the path it names)."""
    taken = set(taken)
    reader, lister = extra_name(key, READ_RESOURCE, taken), extra_name(key, LIST_RESOURCES, taken)
    tags = frozenset({MCP_TAG, f"{MCP_TAG}:{key}"})
    uri = {"type": "string", "description": "The resource's URI."}
    read_schema = {"type": "object", "properties": {"uri": uri}, "required": ["uri"]}

    async def run_read(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await read(str(args.get("uri", "")), ctx)

    async def run_listing(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await listing(ctx)

    read_tool = Tool(
        name=reader,
        description=(
            f"Read a resource of the MCP server {server} by its URI: one {lister} lists, one a resource link "
            "in a result names, or a URI template filled in. Text comes back as text, images as images."
        ),
        input_schema=read_schema,
        run=run_read,
        tags=tags,
        subject=subject_of(read_schema),
    )
    list_tool = Tool(
        name=lister,
        description=f"List the resources of the MCP server {server} (URI, name, type, size) and its URI templates.",
        input_schema={"type": "object", "properties": {}},
        run=run_listing,
        tags=tags,
        subject=subject_of({"properties": {}}),
    )
    return read_tool, list_tool
