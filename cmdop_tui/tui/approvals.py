"""The approval modal, awaited by the loop: a person's answer to a tool call, and the rule
"This session" or "Always" makes of it; and the dialog an MCP server's question (elicitation)
is answered in.

The loop calls `ask_approval` (through the session's gate) for each call that needs asking; the
app hands itself in as an `ApprovalHost`, the few things the modal needs of it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import Screen

from cmdop_tui.config.settings import Settings
from cmdop_tui.tui.widgets.chat_log import ChatLog

# The dialogs and what they answer are imported when the first is asked for: the loop (which
# loads them with the session) asks, never the first paint.
if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    from cmdop_tui.agent.approval import Approval, ToolCall
    from cmdop_tui.mcp.asks import ElicitationRequest, Elicited
    from cmdop_tui.session.session import Session
    from cmdop_tui.tui.screens.approval import ApprovalChoice


class ApprovalHost(Protocol):
    """What the approval modal uses of the app."""

    settings: Settings

    @property
    def chat(self) -> ChatLog: ...
    @property
    def session(self) -> Session | None: ...
    @property
    def screen(self) -> Screen[object]: ...
    def push_screen(self, screen: Any, callback: Any = None, wait_for_dismiss: bool = False) -> Any: ...
    def action_stop(self) -> None: ...


async def ask_approval(host: ApprovalHost, call: ToolCall) -> Approval:
    """The approval modal, awaited by the loop. Stop dismisses it."""
    from cmdop_tui.agent.approval import Approval
    from cmdop_tui.tools.outcome import OutcomeKind
    from cmdop_tui.tui.screens.approval import ApprovalChoice, ApprovalScreen

    answer: asyncio.Future[ApprovalChoice | None] = asyncio.get_running_loop().create_future()
    screen = ApprovalScreen(
        call.name,
        call.machine,
        call.input,
        timeout_s=host.settings.approval_timeout_s,
        escalation=call.escalation,
        preview=call.preview,
        person_only=call.person_only,
    )

    def answered(choice: ApprovalChoice | None) -> None:
        if not answer.done():
            answer.set_result(choice)

    host.push_screen(screen, answered)
    try:
        choice = await answer
    finally:
        if screen.is_attached and screen is host.screen:
            screen.dismiss(ApprovalChoice.DENY)
    if choice in (ApprovalChoice.SESSION, ApprovalChoice.ALWAYS):
        await remember_allowed(host, call, session=choice is ApprovalChoice.SESSION)
    if choice is ApprovalChoice.STOP:
        host.action_stop()
    if choice in (ApprovalChoice.ONCE, ApprovalChoice.SESSION, ApprovalChoice.ALWAYS):
        return Approval(True)
    if choice is ApprovalChoice.DENY:
        return Approval(False, "the user chose Deny", by_person=True)
    if choice is ApprovalChoice.STOP:
        return Approval(False, "the user chose Stop", by_person=True, denied_as=OutcomeKind.CANCELLED)
    waited = f"{host.settings.approval_timeout_s:g} s"
    return Approval(False, f"no answer in time (asked for {waited})", denied_as=OutcomeKind.APPROVAL_TIMEOUT)


class Questions:
    """The app's answers to MCP servers' questions: one dialog at a time, the others waiting
    their turn (a server asking many at once would pile dialogs up, and a Stop could close only
    the one on top); a Stop ends the waiting ones before they show."""

    def __init__(self, host: ApprovalHost) -> None:
        self.host = host
        self._turn = asyncio.Lock()

    async def __call__(self, request: ElicitationRequest) -> Elicited:
        async with self._turn:
            return await ask_elicitation(self.host, request)


async def ask_elicitation(host: ApprovalHost, request: ElicitationRequest) -> Elicited:
    """The dialog of an MCP server's question, awaited by its connection; a Stop of the call that
    led to it (the connection cancels the question) closes it."""
    from cmdop_tui.mcp.asks import Elicited
    from cmdop_tui.tui.screens.elicitation import ElicitationScreen

    answer: asyncio.Future[Elicited | None] = asyncio.get_running_loop().create_future()
    screen = ElicitationScreen(request)

    def answered(elicited: Elicited | None) -> None:
        if not answer.done():
            answer.set_result(elicited)

    host.push_screen(screen, answered)
    try:
        return await answer or Elicited("cancel")
    finally:
        if screen.is_attached and screen is host.screen:
            screen.dismiss(Elicited("cancel"))


async def remember_allowed(host: ApprovalHost, call: ToolCall, *, session: bool) -> None:
    """The rule "This session" or "Always" makes; a rule that cannot be written as it would
    read back is not saved, and the call is still allowed this once."""
    from cmdop_tui.permissions import PermissionsError

    permissions = host.session.permissions if host.session is not None else None
    if permissions is None:
        return
    try:
        rule = permissions.allow_always(
            call.name, call.input, placement=call.placement, session=session, spec=call.tool
        )
    except PermissionsError as exc:
        await host.chat.add_notice(f"Allowed this once; {exc}", "warning")
        return
    except OSError as exc:  # the rules file could not be written (a read-only dir, a full disk)
        await host.chat.add_notice(f"Allowed this once; the rule was not saved: {exc.strerror or exc}", "warning")
        return
    where = "for this session" if session else "from now on (saved)"
    await host.chat.add_notice(f"Allowed {where}: {rule.text}")
