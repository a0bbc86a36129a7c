"""edit_file, and what a write_file or an edit_file call would change (its preview).

edit_file replaces an exact string in a text file on a machine; the machine does it
(machines/local_files.py here, machines/remote.py over ssh) and support/diffs.py says how. A
preview reads the file as it is now through the same machine and gives the unified diff of what
the call would change, for the person asked to allow it and for the tool card; it never writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cmdop_tui.machines.machine import EDIT_MAX_BYTES, FileBytes
from cmdop_tui.support.diffs import apply_edit, decode_text, unified_diff
from cmdop_tui.support.text import inert_line

from .base import Subject, Tool, ToolContext, ToolResult
from .escalation import with_escalation
from .files import WRITE_FILE
from .schema import MACHINE_PROPERTY, object_schema, prop

__all__ = ["EDIT_FILE", "PREVIEWS", "PreviewFn", "edit_preview", "write_preview"]

PREVIEW_MAX_BYTES = 16 * 1024 * 1024  # write_file's diff compares with files up to this size

PreviewFn = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


# --- edit_file ---------------------------------------------------------------------------------


async def _edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    machine = ctx.machine(args)
    return await with_escalation(
        ctx,
        lambda sandboxed: machine.edit_file(
            args["path"],
            args["old_string"],
            args["new_string"],
            replace_all=args.get("replace_all", False),
            sandboxed=sandboxed,
        ),
    )


EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Edit a text file on a machine (this one unless `machine` says otherwise) by exact string replacement: "
        "old_string becomes new_string. old_string must occur exactly once (include enough surrounding lines to "
        "make it unique) unless replace_all is true; copy it exactly from read_file's output, without the line "
        "numbers. The file keeps its encoding, line endings and permissions; the write is atomic. Prefer it to "
        "write_file for changing part of an existing file."
    ),
    input_schema=object_schema(
        {
            "path": prop("string", "File path; relative paths start at the working directory."),
            "old_string": prop("string", "The exact text to replace (not empty)."),
            "new_string": prop("string", "The text to put in its place (different from old_string)."),
            "replace_all": prop("boolean", "Replace every occurrence of old_string (default false: exactly one)."),
            "machine": MACHINE_PROPERTY,
        },
        required=["path", "old_string", "new_string"],
    ),
    run=_edit_file,
    tags=WRITE_FILE.tags,
    mutating=True,
    subject=Subject("path", "path", reach="parent"),
)


# --- previews ----------------------------------------------------------------------------------


async def _preview_write(args: dict[str, Any], ctx: ToolContext) -> str:
    current = await ctx.machine(args).read_bytes(args["path"], max_bytes=PREVIEW_MAX_BYTES)
    return await asyncio.to_thread(write_preview, args["path"], current, args["content"])


async def _preview_edit(args: dict[str, Any], ctx: ToolContext) -> str:
    current = await ctx.machine(args).read_bytes(args["path"], max_bytes=EDIT_MAX_BYTES)
    replace_all = bool(args.get("replace_all", False))
    return await asyncio.to_thread(
        edit_preview, args["path"], current, args["old_string"], args["new_string"], replace_all
    )


def write_preview(path: str, current: FileBytes, content: str) -> str:
    """What write_file would change: a diff from the file as it is (from nothing: a new file)."""
    shown = inert_line(path)
    if current.error is not None:
        return f"[no diff: {inert_line(current.error)}]"
    if not current.exists:
        return unified_diff("", content, path, created=True)
    decoded = decode_text(current.data)
    if decoded is None:
        return f"[{shown} is a binary file ({len(current.data):,} bytes): write_file would replace it with text]"
    return unified_diff(decoded.text, content, path) or "[no change: the file already holds exactly this]"


def edit_preview(path: str, current: FileBytes, old: str, new: str, replace_all: bool = False) -> str:
    """What edit_file would change, or why it would fail (the same edit the machine makes)."""
    shown = inert_line(path)
    if current.error is not None:
        return f"[no diff: {inert_line(current.error)}]"
    if not current.exists:
        return f"[edit_file would fail: there is no file {shown}]"
    edit = apply_edit(current.data, old, new, replace_all=replace_all, name=shown)
    if edit.error is not None:
        return f"[edit_file would fail: {edit.error}]"
    return unified_diff(edit.before, edit.after, path)


PREVIEWS: tuple[tuple[Tool, PreviewFn], ...] = ((WRITE_FILE, _preview_write), (EDIT_FILE, _preview_edit))
"""The tools whose calls can be previewed, and how."""
