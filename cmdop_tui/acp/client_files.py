"""The editor's files: read_file, write_file and edit_file on the working tree through the
editor (`fs/read_text_file`, `fs/write_text_file`) when it offers them, so the model sees the
buffers as the person has them, unsaved changes included, and its writes land in them.

Only where our own tools would go unconfined: the local machine with the sandbox off (or none
here; the editor reads and writes outside our sandbox, by a path a concurrent command could swap
for a symlink after our check), a path inside the session's working tree
(its real path), and what the sandbox lets the file tools do there. The gate has decided before
any of it (floor, rules, mode, the person). A read is made by our own tool first, so whatever it
refuses (a secret the sandbox hides, a binary file, a missing one) is refused as always, and only
then is the editor's text given instead. A write or an edit is judged by the sandbox's write
rules on the real path; one they refuse goes the usual way (the sandbox's refusal, which a person
may lift). Everything else, other machines, `run_on_machines`, `ask_machine`, paths outside the
tree, an editor that fails to answer, uses our own tools unchanged.

The replaced tools have no preview of their own: the editor is shown each edit's diff in the
tool call (tool_calls.py), and reads the buffers it diffs against.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from acp import Client
from acp.schema import FileSystemCapabilities

from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.local_files import numbered_text, show
from cmdop_tui.machines.local_fs import resolve_path
from cmdop_tui.machines.local_rules import FileRules
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.session import Session
from cmdop_tui.support.diffs import apply_edit
from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.edit import EDIT_FILE
from cmdop_tui.tools.files import READ_FILE, WRITE_FILE


class EditorFiles:
    """The editor's side of one session's files: what it offers, and asking it."""

    def __init__(self, client: Client, session_id: Callable[[], str], offered: FileSystemCapabilities) -> None:
        self._client = client
        self._session_id = session_id
        self.reads = bool(offered.read_text_file)
        self.writes = bool(offered.write_text_file)

    async def read(self, path: Path) -> str | None:
        """The editor's text of `path`; None when it did not give it (said on stderr)."""
        try:
            answer = await self._client.read_text_file(session_id=self._session_id(), path=str(path))
        except Exception as exc:  # the editor's error: our own read stands
            _say(f"the editor did not read {path}: {exc}")
            return None
        return answer.content

    async def write(self, path: Path, content: str) -> bool:
        """Write `content` to `path` through the editor; False when it did not."""
        try:
            await self._client.write_text_file(session_id=self._session_id(), path=str(path), content=content)
        except Exception as exc:  # the editor's error: our own write is made instead
            _say(f"the editor did not write {path}: {exc}")
            return False
        return True


def use_editor_files(session: Session, files: EditorFiles) -> None:
    """Give `session` the file tools that go through the editor, for what it offers."""
    tools = session.runner.tools
    chosen: list[Tool] = []
    if files.reads:
        chosen.append(replace(READ_FILE, run=lambda args, ctx: _read_file(files, args, ctx)))
    if files.writes:
        chosen.append(replace(WRITE_FILE, run=lambda args, ctx: _write_file(files, args, ctx)))
    if files.reads and files.writes:
        chosen.append(replace(EDIT_FILE, run=lambda args, ctx: _edit_file(files, args, ctx)))
    for tool in chosen:
        tools.remove(tool.name)
        tools.add(tool)


def in_working_tree(args: dict[str, Any], ctx: ToolContext) -> Path | None:
    """The real path the call's `path` names when the call is on this machine, where our sandbox
    confines nothing, and the path is inside the session's working tree; else None (our own tools
    then). The editor reads and writes outside our sandbox, by a path a concurrent command could
    swap for a symlink after our check: it does so only where our own tools would not be held."""
    try:
        machine = ctx.machine(args)
    except MachineError:
        return None
    if not isinstance(machine, LocalMachine) or machine.sandbox.confines:
        return None
    real = Path(os.path.realpath(resolve_path(str(args["path"]), ctx.cwd)))
    tree = Path(os.path.realpath(ctx.cwd))
    return real if real == tree or tree in real.parents else None


def may_write(args: dict[str, Any], ctx: ToolContext, real: Path) -> bool:
    """Whether the sandbox's file rules let a write of `real` through (not a folder)."""
    machine = ctx.machine(args)
    assert isinstance(machine, LocalMachine)
    if real.is_dir():
        return False
    try:
        FileRules(machine.sandbox.view(machine.cwd)).check_write(real, str(args["path"]))
    except PermissionError:  # Refused or HiddenPath: our own tool says it, and offers the person
        return False
    return True


async def _read_file(files: EditorFiles, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    ours = await READ_FILE.run(args, ctx)
    real = in_working_tree(args, ctx)
    if ours.is_error or real is None:
        return ours
    text = await files.read(real)
    if text is None:
        return ours
    return ToolResult.of(numbered_text(text, args.get("start", 1), args.get("end")))


async def _write_file(files: EditorFiles, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    real = in_working_tree(args, ctx)
    if real is None or not may_write(args, ctx, real):
        return await WRITE_FILE.run(args, ctx)
    existed = real.exists()
    content = str(args["content"])
    if not await files.write(real, content):
        return await WRITE_FILE.run(args, ctx)
    verb = "replaced" if existed else "created"
    size = len(content.encode("utf-8", "surrogatepass"))
    return ToolResult(f"wrote {size:,} bytes to {show(real)} ({verb}, through the editor)")


async def _edit_file(files: EditorFiles, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    real = in_working_tree(args, ctx)
    if real is None or not real.is_file() or not may_write(args, ctx, real):
        return await EDIT_FILE.run(args, ctx)
    text = await files.read(real)
    if text is None:
        return await EDIT_FILE.run(args, ctx)
    edit = apply_edit(
        text.encode("utf-8", "surrogatepass"),
        str(args["old_string"]),
        str(args["new_string"]),
        replace_all=bool(args.get("replace_all", False)),
        name=show(real),
    )
    if edit.error is not None:
        return ToolResult.error(edit.error)
    if not await files.write(real, edit.after):
        return await EDIT_FILE.run(args, ctx)
    return ToolResult(f"{edit.summary(show(real))} (through the editor)")


def _say(text: str) -> None:
    sys.stderr.write(f"cmdop-tui acp: {text}\n")
