"""What a surface shows of an open session: its status line, and what fills its context.

Frozen values read from the session (`Session.status()`, `Session.context_report()`), so a surface
never reaches into the runner or the fleet for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cmdop_tui.agent.context_usage import ContextUsage


@dataclass(frozen=True)
class SessionStatus:
    """The facts of the status line: the model, the budget, where commands run, the sandbox,
    the permission mode."""

    model: str
    budget_usd: float | None
    machine: str  # the machine a turn works on ("local": this one)
    sandbox: str  # the sandbox in force, for people ("" without a fleet)
    mode: str  # the permission mode: how freely the model may act (PERMISSION_MODES)
    loop_enabled: bool
    max_loops: int
    cost_usd: float | None = None  # what the session has cost so far (None: nothing known yet)


@dataclass(frozen=True)
class ContextReport:
    """/context's facts: the window, the last request's real size, the next one's estimate."""

    window: int  # tokens
    usage: ContextUsage  # the next request, estimated by part
    last_tokens: int | None  # the last request and its reply, as the API counted them
