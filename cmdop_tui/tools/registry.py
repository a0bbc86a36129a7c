"""The set of tools a session offers, and the one safe way to run a tool call.

`run_tool` is where model input meets our code: the input is validated first (so tools can
trust their arguments) and an unexpected exception becomes an error result the model can read,
instead of killing the agent loop. Cancellation always propagates. It is also where tool output
meets the model: the app's own credentials (`support.secrets.configured_secrets`: the API key,
the auth token) are masked in every result, whatever printed them (`env`, a file that holds the
key, /proc/self/environ); only those literal values, so ordinary text reaches the model as it is.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from cmdop_tui.machines.spec import MachineError
from cmdop_tui.support.secrets import MARKER, Redactor, configured_secrets

from .ask import ASK_TOOLS
from .base import Tool, ToolContext, ToolResult
from .edit import EDIT_FILE, PREVIEWS
from .fanout import RUN_ON_MACHINES
from .files import FILE_TOOLS, WRITE_FILE
from .job_tools import JOB_TOOLS
from .recall import RECALL
from .schema import validate
from .shell import EXECUTE_COMMAND
from .todo import TODO

__all__ = ["ToolRegistry", "builtin_tools", "declared_tool", "mask_credentials", "preview_tool", "run_tool"]

# Where output was cut (support/text.py `cut_note`): a secret cut there leaves a piece each side.
_CUT = re.compile(r"(\n?\[\.\.\. [\d,]+ \w+ cut \.\.\.\]\n?)")
FRAGMENT = 8  # a piece of a credential this long, at the edge of a cut, is masked too
PREVIEW_TIMEOUT_S = 10.0  # reading the file for a diff: past this, the question comes without one


def builtin_tools() -> list[Tool]:
    """The local tools every session has: execute_command and the file tools (edit_file after
    write_file)."""
    files = list(FILE_TOOLS)
    files.insert(files.index(WRITE_FILE) + 1, EDIT_FILE)
    return [EXECUTE_COMMAND, *files]


def declared_tool(name: str) -> Tool | None:
    """The built-in tool called `name` (the machine tools included), whatever a session offers:
    its declaration (mutating, subject) is the one source of truth about it."""
    return next(
        (
            tool
            for tool in (*builtin_tools(), *JOB_TOOLS, RECALL, TODO, *ASK_TOOLS, RUN_ON_MACHINES)
            if tool.name == name
        ),
        None,
    )


class ToolRegistry:
    """Tools by name, in the order they were given (the order the model sees them in)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    def add(self, tool: Tool) -> None:
        """Offer `tool` from the next turn on (tools that come and go while a session runs: an MCP
        server's). ValueError when the name is taken."""
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool

    def remove(self, name: str) -> Tool | None:
        """Stop offering the tool called `name` (from the next turn); the tool, or None."""
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None (the model may invent names)."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """All tool names, in registry order."""
        return list(self._tools)

    def definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """API definitions of the named tools, in registry order; unknown names are ignored."""
        wanted = set(names)
        return [tool.definition() for tool in self._tools.values() if tool.name in wanted]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


async def run_tool(tool: Tool, raw_input: Any, ctx: ToolContext) -> ToolResult:
    """Validate `raw_input` against the tool's schema, run the tool, never raise an Exception.

    Invalid input gives an error result listing every problem, so the model can fix them all in
    one retry. `asyncio.CancelledError` (and other BaseExceptions) propagate: a Stop must stop.
    The app's credentials are masked in the result (see the module docstring).
    """
    return mask_credentials(await _run_tool(tool, raw_input, ctx))


async def preview_tool(tool: Tool, raw_input: Any, ctx: ToolContext) -> str | None:
    """What this call would change, as a person reads it before allowing it: a unified diff, or a
    note saying why there is none. None for a tool that has no preview (or invalid input).

    The file is read through the call's machine; nothing is written. Never raises an Exception
    (cancellation propagates); the app's credentials are masked, as in results.
    """
    preview = next((fn for known, fn in PREVIEWS if known.name == tool.name and known.run is tool.run), None)
    if preview is None or validate(raw_input, tool.input_schema):
        return None
    try:
        async with asyncio.timeout(PREVIEW_TIMEOUT_S):
            text = await preview(raw_input, ctx)
    except TimeoutError:
        text = f"[no diff: the file could not be read within {PREVIEW_TIMEOUT_S:.0f} s]"
    except MachineError as exc:
        text = f"[no diff: {exc}]"
    except Exception as exc:
        text = f"[no diff: {type(exc).__name__}: {exc}]"
    return mask_credentials(ToolResult(text)).content


def mask_credentials(result: ToolResult) -> ToolResult:
    """`result` with every configured credential (as the environment has them now) masked."""
    secrets = Redactor(configured_secrets()).literals  # the usable ones, longest first
    content = result.content
    for secret in secrets:
        if secret in content:
            content = content.replace(secret, MARKER)
    if secrets and "cut ...]" in content:
        content = _mask_cut_edges(content, secrets)
    return result if content == result.content else replace(result, content=content)


def _mask_cut_edges(text: str, secrets: tuple[str, ...]) -> str:
    """Mask the start of a credential just before a cut note, and its end just after one."""
    pieces = _CUT.split(text)  # text, note, text, note, ..., text
    for index in range(0, len(pieces), 2):
        for secret in secrets:
            if index + 2 < len(pieces):
                pieces[index] = _mask_edge(pieces[index], secret, at_end=True)
            if index > 0:
                pieces[index] = _mask_edge(pieces[index], secret, at_end=False)
    return "".join(pieces)


def _mask_edge(text: str, secret: str, *, at_end: bool) -> str:
    for size in range(len(secret) - 1, FRAGMENT - 1, -1):
        if at_end and text.endswith(secret[:size]):
            return text[:-size] + MARKER
        if not at_end and text.startswith(secret[-size:]):
            return MARKER + text[size:]
    return text


async def _run_tool(tool: Tool, raw_input: Any, ctx: ToolContext) -> ToolResult:
    problems = validate(raw_input, tool.input_schema)
    if problems:
        listing = "\n".join(f"- {problem}" for problem in problems)
        return ToolResult.error(f"invalid input for tool '{tool.name}':\n{listing}")
    try:
        result: object = await tool.run(raw_input, ctx)  # a tool may break its contract
    except MachineError as exc:  # unknown, ambiguous, offline or hidden machine: say just that
        return ToolResult.error(str(exc))
    except Exception as exc:
        return ToolResult.error(f"tool '{tool.name}' failed: {type(exc).__name__}: {exc}")
    if not isinstance(result, ToolResult):
        return ToolResult.error(f"tool '{tool.name}' failed: returned {type(result).__name__}, not a ToolResult")
    return result
