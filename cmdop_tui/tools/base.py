"""The shape of a tool: what the model sees (name, description, schema) and what runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ProgressSink = Callable[[str, Literal["stdout", "stderr", "info"]], None]


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model as a `tool_result`."""

    content: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True)


@dataclass
class ToolContext:
    """Everything a running tool may use besides its arguments."""

    call_id: str
    cwd: Path
    progress: ProgressSink = lambda text, stream: None
    deps: Any = None


ToolFn = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    """A tool the model can call.

    `tags` are categories for the turn-1 allowlist; `core` tools survive that allowlist;
    `mutating` tools change the machine and need approval unless the user waived it.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    run: ToolFn
    tags: frozenset[str] = field(default_factory=frozenset)
    core: bool = False
    mutating: bool = False

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API expects it in `tools`."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
