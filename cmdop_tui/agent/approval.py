"""A tool call as the approval gate sees it, and the gate's answer.

Kept apart from the runner so that a UI can import these without loading the model SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.tools.base import Tool, ToolResult
from cmdop_tui.tools.outcome import OutcomeKind, ToolOutcome
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
    one says so); only such an approval allows a call that `needs_person`. `denied_as`: who or
    what said no, decided where it is known (the gate: a rule, the floor, no one to ask; the
    question: a person, no answer in time), so every surface draws the denial as it was."""

    allowed: bool
    reason: str = ""
    by_person: bool = False
    denied_as: OutcomeKind = OutcomeKind.DENIED


# What the model is told of a call that was not run, by who said no: the kind named, so that it
# cannot take the call for done (nor a denial for a person's when no one was asked).
NOT_RUN = {
    OutcomeKind.DENIED: "The user denied this tool call; it was not run.",
    OutcomeKind.APPROVAL_TIMEOUT: (
        "Not run: denied, because the user was asked to approve this tool call and did not answer in time."
    ),
    OutcomeKind.DENIED_BY_RULE: "Not run: denied by the permission rules.",
    OutcomeKind.DENIED_BY_HOOK: "A hook blocked this tool call; it was not run.",
    OutcomeKind.NO_ONE_TO_ASK: (
        "Not run: denied, because this tool call needs a person's approval and no person could be asked here."
    ),
    OutcomeKind.REFUSED_BY_FLOOR: "Not run: refused by the safety floor (no rule or mode can allow it).",
    OutcomeKind.CANCELLED: "Not run: the user stopped the run before this tool call ran.",
}


def not_run(approval: Approval) -> ToolResult:
    """The result of a call its approval denied: the model's text and the outcome, by kind."""
    kind = approval.denied_as if approval.denied_as in NOT_RUN else OutcomeKind.DENIED
    why = f" Reason: {approval.reason}" if approval.reason else ""
    return ToolResult(f"{NOT_RUN[kind]}{why}", is_error=True, outcome=ToolOutcome(kind, approval.reason))


def escalation_denial(approval: Approval) -> ToolOutcome | None:
    """An escalation's answer as `ToolContext.escalate` gives it: None when allowed, else how the
    asking ended and why."""
    if approval.allowed:
        return None
    return ToolOutcome(approval.denied_as, approval.reason)


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
