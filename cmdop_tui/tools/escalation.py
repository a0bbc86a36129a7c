"""Out of the sandbox, with the user's word: a refused operation may be done once outside it.

A command or a write the sandbox refused for lack of access comes back with what it needed
(`MachineResult.sandbox_denied`, e.g. "write /etc/nginx/nginx.conf"). The user is asked, with
that reason; `--yes` and permission rules do not answer for them (see session/gate.py). Allowed,
the operation runs again outside the sandbox (still contained); denied, the model gets the
refusal and why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cmdop_tui.machines.machine import MachineResult

from .base import ToolContext, ToolResult

Attempt = Callable[[bool], Awaitable[MachineResult]]  # sandboxed -> the machine's answer


async def with_escalation(ctx: ToolContext, attempt: Attempt) -> ToolResult:
    """`attempt(sandboxed=True)`; when the sandbox refused it, ask, then `attempt(False)`."""
    result = await attempt(True)
    needs = result.sandbox_denied
    if needs is None:
        return ToolResult.of(result)
    allowed, why = (False, "no one can be asked here") if ctx.escalate is None else await ctx.escalate(needs)
    if not allowed:
        because = f": {why}" if why else ""
        return ToolResult(f"{result.text}\n[The user did not allow it outside the sandbox{because}.]", is_error=True)
    return ToolResult.of(await attempt(False))
