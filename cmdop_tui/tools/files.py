"""File tools: read_file, list_dir, write_file, grep, glob.

Each tool is a description, a schema and a call of the same operation on the machine the call
names (this one unless `machine` says otherwise); the machine does the work and keeps the output
bounded and inert (machines/local_files.py here, machines/remote.py over ssh).
"""

from __future__ import annotations

from typing import Any

from cmdop_tui.machines.machine import (
    GLOB_MAX_RESULTS,
    GREP_MAX_FILE_BYTES,
    GREP_MAX_MATCHES,
    LIST_MAX_ENTRIES,
    READ_MAX_CHARS,
    READ_MAX_LINES,
)

from .base import Subject, Tool, ToolContext, ToolResult
from .escalation import with_escalation
from .schema import MACHINE_PROPERTY, object_schema, prop

__all__ = ["FILE_TOOLS", "GLOB", "GREP", "LIST_DIR", "READ_FILE", "WRITE_FILE"]

_TAGS = frozenset({"files", "local"})
_FILE_PATH = "File path; relative paths start at the working directory."
_DEFAULT_CWD = "default the working directory"


# --- read_file ---------------------------------------------------------------------------------


async def _read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    machine = ctx.machine(args)
    return ToolResult.of(await machine.read_file(args["path"], start=args.get("start", 1), end=args.get("end")))


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file on a machine (this one unless `machine` says otherwise). Lines come numbered like `cat -n`. Use start and "
        "end (1-based, inclusive) to read part of a large file; at most "
        f"{READ_MAX_LINES:,} lines or about {READ_MAX_CHARS:,} characters come back per call."
    ),
    input_schema=object_schema(
        {
            "path": prop("string", _FILE_PATH),
            "start": prop("integer", "First line (default 1).", minimum=1),
            "end": prop("integer", "Last line (default: the end of the file).", minimum=1),
            "machine": MACHINE_PROPERTY,
        },
        required=["path"],
    ),
    run=_read_file,
    tags=_TAGS,
    core=True,
    subject=Subject("path", "path", reads_content=True, reach="parent"),
)


# --- list_dir ----------------------------------------------------------------------------------


async def _list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult.of(await ctx.machine(args).list_dir(args.get("path", ".")))


LIST_DIR = Tool(
    name="list_dir",
    description=(
        "List a directory on a machine (this one unless `machine` says otherwise), sorted by name: directories end with `/`, files "
        f"show their size, symlinks their target. At most {LIST_MAX_ENTRIES:,} entries."
    ),
    input_schema=object_schema({"path": prop("string", f"Directory; {_DEFAULT_CWD}."), "machine": MACHINE_PROPERTY}),
    run=_list_dir,
    tags=_TAGS,
    core=True,
    subject=Subject("path", "path", default=".", reach="itself"),
)


# --- write_file --------------------------------------------------------------------------------


async def _write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    machine = ctx.machine(args)
    return await with_escalation(
        ctx, lambda sandboxed: machine.write_file(args["path"], args["content"], sandboxed=sandboxed)
    )


WRITE_FILE = Tool(
    name="write_file",
    description=(
        "Write a text file on a machine (this one unless `machine` says otherwise) (UTF-8), replacing it if it exists and creating "
        "missing parent directories. The write is atomic and keeps the file's permissions."
    ),
    input_schema=object_schema(
        {
            "path": prop("string", _FILE_PATH),
            "content": prop("string", "The complete new content."),
            "machine": MACHINE_PROPERTY,
        },
        required=["path", "content"],
    ),
    run=_write_file,
    tags=_TAGS,
    mutating=True,
    subject=Subject("path", "path", reach="parent"),
)


# --- grep --------------------------------------------------------------------------------------


async def _grep(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    machine = ctx.machine(args)
    return ToolResult.of(await machine.grep(args["pattern"], path=args.get("path", "."), glob=args.get("glob")))


GREP = Tool(
    name="grep",
    description=(
        "Search file contents on a machine (this one unless `machine` says otherwise) with a Python regular expression. `path` is "
        "a file or a directory searched recursively (skipping .git, binary files and files over "
        f"{GREP_MAX_FILE_BYTES // (1024 * 1024)} MB); `glob` filters file names, e.g. `*.py`. "
        f"Prints `path:line:text`, at most {GREP_MAX_MATCHES} matches."
    ),
    input_schema=object_schema(
        {
            "pattern": prop("string", "Python `re` pattern (extended grep -E syntax on remote machines)."),
            "path": prop("string", f"File or directory; {_DEFAULT_CWD}."),
            "glob": prop("string", "Only files whose name matches, e.g. `*.py`."),
            "machine": MACHINE_PROPERTY,
        },
        required=["pattern"],
    ),
    run=_grep,
    tags=_TAGS,
    subject=Subject("path", "path", default=".", reads_content=True, reach="search"),
)


# --- glob --------------------------------------------------------------------------------------


async def _glob(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult.of(await ctx.machine(args).glob(args["pattern"], cwd=args.get("cwd", ".")))


GLOB = Tool(
    name="glob",
    description=(
        "Find paths on a machine (this one unless `machine` says otherwise) matching a glob pattern such as `**/*.py` (`**` spans "
        "directories). Results are sorted and relative to `cwd`; directories end with `/`. "
        f"At most {GLOB_MAX_RESULTS:,} results."
    ),
    input_schema=object_schema(
        {
            "pattern": prop("string", "Glob pattern relative to cwd."),
            "cwd": prop("string", f"Directory to search; {_DEFAULT_CWD}."),
            "machine": MACHINE_PROPERTY,
        },
        required=["pattern"],
    ),
    run=_glob,
    tags=_TAGS,
    subject=Subject("path", "pattern", relative_to="cwd"),
)

FILE_TOOLS: tuple[Tool, ...] = (READ_FILE, LIST_DIR, WRITE_FILE, GREP, GLOB)
