"""Out of the sandbox, with a person's word: a refused operation may be done once outside it.

A command or a write the sandbox refused for lack of access comes back with what the sandbox
itself refused (`MachineResult.sandbox_denied`, a `SandboxRefusal` the machine builds from its
own rules, never from what the command printed). A person is asked, shown the whole call and
that refusal; `--yes`, permission rules, `approval="auto"` and a library's approval function
that does not say a person decided do not answer for them (see session/gate.py and
session/operator.py). Allowed, the operation runs again outside the sandbox (still contained);
denied, the model gets the refusal and why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cmdop_tui.machines.machine import MachineResult, SandboxRefusal

from .base import ToolContext, ToolResult
from .outcome import OutcomeKind, ToolOutcome

Attempt = Callable[[bool], Awaitable[MachineResult]]  # sandboxed -> the machine's answer


async def with_escalation(ctx: ToolContext, attempt: Attempt) -> ToolResult:
    """`attempt(sandboxed=True)`; when the sandbox refused it, ask, then `attempt(False)`."""
    result = await attempt(True)
    refusal = result.sandbox_denied
    if refusal is None:
        return ToolResult.of(result)
    denial = NO_ONE_HERE if ctx.escalate is None else await ctx.escalate(refusal)
    if denial is not None:
        return ToolResult(
            f"{result.text}\n[The sandbox refused to {refusal.needs}. The user did not allow it outside "
            f"the sandbox{_because(denial.reason)}.]",
            is_error=True,
            outcome=refused(refusal, denial),
        )
    return ToolResult.of(await attempt(False))


NO_ONE_HERE = ToolOutcome(OutcomeKind.NO_ONE_TO_ASK, "no one can be asked here")


def refused(refusal: SandboxRefusal, denial: ToolOutcome) -> ToolOutcome:
    """How a call the sandbox refused ended when it was not let out (`denial`: why not): refused
    by the sandbox; denied for want of a person when no one could be asked (headless mode says so)."""
    said = f"the sandbox refused to {refusal.needs}; it was not allowed outside the sandbox{_because(denial.reason)}"
    kind = OutcomeKind.NO_ONE_TO_ASK if denial.kind is OutcomeKind.NO_ONE_TO_ASK else OutcomeKind.REFUSED_BY_SANDBOX
    return ToolOutcome(kind, said)


def _because(why: str) -> str:
    return f": {why}" if why else ""
