"""An MCP server for the tests, written with the official SDK (`MCPServer`, FastMCP's successor).

    python demo_server.py                  # over stdio
    python demo_server.py --http PORT      # streamable HTTP on http://127.0.0.1:PORT/mcp
    ... --tag TEXT                         # nothing but a mark on the command line (tests find
                                           # their servers' processes by it)

Its tools: `echo` (read-only), `slow` (sleeps; writes `cancelled` to $DEMO_MARK_FILE when a
Stop cancels it), `image` (a PNG of about 12 kB), `fail` (an isError result), `mixed` (an
embedded resource and a resource link), `structured` (structured content and no text),
`grow` (adds a tool and sends notifications/tools/list_changed), `crash` (the process exits),
`linked` (resource links to two of its resources: `demo://notes`, text, and `demo://logo.png`,
a PNG; and a template, `demo://{name}/readme`),
`env` (a variable of its environment), `where` (its working directory), `run` (a `command`
argument) and `peek` (a `path` argument), which only say what they would do, and `dotted.name`.
"""

from __future__ import annotations

import argparse
import os
import struct
import zlib
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

server = MCPServer("demo", log_level="WARNING")


def png(size: int) -> bytes:
    """A valid PNG of about `size` bytes (a square of grey noise)."""
    width = int((size - 80) ** 0.5)
    raw = b"".join(b"\x00" + os.urandom(width) for _ in range(width))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))  # noqa: E731
    header = struct.pack(">IIBBBBB", width, width, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for a while, then say so."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        mark = os.environ.get("DEMO_MARK_FILE")
        if mark:
            Path(mark).write_text("cancelled")
        raise
    return f"slept {seconds}s"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def image() -> Image:
    """A picture."""
    return Image(data=png(12_000), format="png")


@server.tool()
def fail(message: str) -> CallToolResult:
    """Report an error."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


@server.tool()
def mixed() -> CallToolResult:
    """Text, an embedded resource and a link."""
    embedded = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="the notes")
    link = ResourceLink(uri="https://example.com/report", name="report")
    return CallToolResult(content=[TextContent(text="see these"), EmbeddedResource(resource=embedded), link])


@server.tool()
def structured() -> CallToolResult:
    """Structured content without text."""
    return CallToolResult(content=[], structured_content={"answer": 42, "unit": "none"})


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name` (it says hello) and tell the client."""

    def hello() -> str:
        return f"hello from {name}"

    server.add_tool(hello, name=name, description=f"The tool {name}, added at run time.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
def crash() -> str:
    """The server process dies."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env(name: str) -> str:
    """A variable of the server's environment."""
    return os.environ.get(name, "(unset)")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def where() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool()
def run(command: str) -> str:
    """Pretend to run a shell command (nothing runs: the tests see what reached the server)."""
    return f"would run: {command}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek(path: str) -> str:
    """Pretend to read a file (nothing is read)."""
    return f"would read: {path}"


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name the Messages API would refuse."""
    return "dotted"


@server.resource("demo://notes", name="notes", mime_type="text/plain", description="The notes.")
def notes() -> str:
    return "the notes, read as a resource"


LOGO = png(3_000)


@server.resource("demo://logo.png", name="logo", mime_type="image/png")
def logo() -> bytes:
    return LOGO


@server.resource("demo://{name}/readme", name="readme", mime_type="text/markdown")
def readme(name: str) -> str:
    return f"# {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def linked() -> CallToolResult:
    """A link to the demo's logo, and one to its notes."""
    logo_link = ResourceLink(uri="demo://logo.png", name="logo", mime_type="image/png", size=len(LOGO))
    return CallToolResult(content=[logo_link, ResourceLink(uri="demo://notes", name="notes")])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    if args.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
