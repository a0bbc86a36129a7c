"""Approvals in the editor: the session's gate asks `session/request_permission`.

The gate (session/gate.py) decides first, floor, rules and mode; only what it leaves to a person
reaches here. The editor's four answers map to our rules as the TUI's modal does: allow once;
allow always (the rule "Always" makes, saved); reject once; reject always (the same rule with
the verdict deny, saved). A call only a person may allow each time (it leaves the sandbox, or
the floor cannot tell what it does) is offered once-only answers: no rule may answer it later.
The person answering in the editor is a person (`by_person`).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from acp import text_block, tool_content
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from cmdop_tui.acp.tool_calls import diff_content, tool_kind, tool_locations, tool_title
from cmdop_tui.acp.updates import Updates
from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.permissions import Permissions, PermissionsError, derive_rule
from cmdop_tui.tools.describe import refusal_lines
from cmdop_tui.tools.outcome import OutcomeKind

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = "allow_once", "allow_always", "reject_once", "reject_always"
OPTIONS = {
    ALLOW_ONCE: PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    ALLOW_ALWAYS: PermissionOption(option_id=ALLOW_ALWAYS, name="Always allow", kind="allow_always"),
    REJECT_ONCE: PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    REJECT_ALWAYS: PermissionOption(option_id=REJECT_ALWAYS, name="Always reject", kind="reject_always"),
}

Ask = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]


class EditorApprovals:
    """The approver a session opened for an editor gets (`Session(ask=...)`)."""

    def __init__(self, ask: Ask, updates: Updates, permissions: Callable[[], Permissions | None]) -> None:
        self._ask = ask
        self._updates = updates
        self._permissions = permissions

    async def __call__(self, call: ToolCall) -> Approval:
        await self._updates.flush()  # the editor knows the call before it is asked about it
        options = [OPTIONS[ALLOW_ONCE], OPTIONS[REJECT_ONCE]]
        if not call.needs_person:
            options = [OPTIONS[ALLOW_ONCE], OPTIONS[ALLOW_ALWAYS], OPTIONS[REJECT_ONCE], OPTIONS[REJECT_ALWAYS]]
        response = await self._ask(asked_call(call, self._updates.cwd), options)
        outcome = response.outcome
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
        if chosen in (ALLOW_ALWAYS, REJECT_ALWAYS) and not call.needs_person:
            self._remember(call, allow=chosen == ALLOW_ALWAYS)
        if chosen in (ALLOW_ONCE, ALLOW_ALWAYS):
            self._updates.running(call.id)
            return Approval(True, by_person=True)
        reason = "the user rejected it in the editor" if chosen is not None else "the prompt was cancelled"
        if chosen is None:
            return Approval(False, reason, denied_as=OutcomeKind.CANCELLED)
        return Approval(False, reason, by_person=True)

    def _remember(self, call: ToolCall, *, allow: bool) -> None:
        """The rule an "always" answer makes, saved; one that cannot be is said on stderr (the
        answer still holds for this call)."""
        permissions = self._permissions()
        if permissions is None:
            return
        try:
            if allow:
                permissions.allow_always(call.name, call.input, placement=call.placement, spec=call.tool)
            else:
                rule = derive_rule(call.name, call.input, placement=call.placement, spec=call.tool)
                permissions.add_rule(replace(rule, verdict="deny"))
        except (PermissionsError, OSError) as exc:
            sys.stderr.write(f"cmdop-tui acp: the rule was not saved: {exc}\n")


def asked_call(call: ToolCall, cwd: Path) -> ToolCallUpdate:
    """The call as the permission request shows it: its title, kind, where, why only a person
    may decide (the sandbox's refusal, the floor's doubt), and an edit's diff."""
    title = tool_title(call.name, call.input, call.machine)
    why: list[str] = refusal_lines(call.escalation) if call.escalation is not None else []
    if call.escalation is not None:
        title = f"{title} (outside the sandbox)"
    if call.person_only:
        why.append(f"The safety floor: {call.person_only}. Only a person may allow it, each time.")
    content = [tool_content(text_block("\n".join(why)))] if why else []
    return ToolCallUpdate(
        tool_call_id=call.id,
        title=title,
        kind=tool_kind(call.name),
        status="pending",
        content=[*diff_content(call.name, call.input, call.machine, cwd), *content] or None,
        locations=tool_locations(call.name, call.input, call.machine, cwd) or None,
        raw_input=call.input,
    )
