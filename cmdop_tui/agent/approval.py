"""A tool call as the approval gate sees it, and the gate's answer.

Kept apart from the runner so that a UI can import these without loading the model SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.tools.base import Tool
from cmdop_tui.tools.placement import LOCAL, Placement


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]
    tool: Tool | None
    # where it runs: its `machine` argument, else the machines it fans out to, else the session's
    # target (tools/placement.py `place`, computed once by the loop); permissions decide from it
    placement: Placement = LOCAL
    escalation: SandboxRefusal | None = None  # asked again to run outside the sandbox: what it refused
    preview: str | None = None  # what it would change (a write's or an edit's diff), read before asking
    # Why only a person may decide this call (the floor could not tell what it does, and it could
    # reach a protected place); set by the gate before it asks. None: rules and modes may answer.
    person_only: str | None = None
    # What a PreToolUse hook said of it (agent/hook_points.py): "allow" spares asking a person
    # when no rule asks (the floor and the rules still decide), "ask" asks one whatever the rules.
    hook_word: Literal["allow", "ask"] | None = None
    hook_reason: str = ""

    @property
    def machine(self) -> str:
        """Where it runs, for people: the one machine's name, or "3 machines"."""
        return self.placement.label

    @property
    def needs_person(self) -> bool:
        """Whether only a person may allow this call: it asks to leave the sandbox, or the floor
        left it to a person. An approval function allows such a call only with
        `Approval(True, by_person=True)`."""
        return self.escalation is not None or self.person_only is not None


@dataclass(frozen=True)
class Approval:
    """The answer for one call. `by_person`: a person made this decision (a program that asked
    one says so); only such an approval allows a call that `needs_person`."""

    allowed: bool
    reason: str = ""
    by_person: bool = False


Approver = Callable[[ToolCall], Awaitable[Approval]]

# Why the rules deny this call on this machine (a tool that runs on many hosts asks it per host),
# or None: never asks a person.
HostRules = Callable[[ToolCall, str], str | None]


class ChangeHook(Protocol):
    """Told of what is about to change machines (the session's checkpoints: /rewind)."""

    async def before_change(self, call: ToolCall) -> None:
        """A mutating tool's call, allowed, is about to run (never raises: a failure is said)."""
        ...

    def left_sandbox(self, call: ToolCall, needs: SandboxRefusal) -> None:
        """A person let `call` do outside the sandbox what the sandbox refused (`needs`)."""
        ...
