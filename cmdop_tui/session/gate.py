"""The permission gate: the approver the loop consults before every tool call."""

from __future__ import annotations

from cmdop_tui.agent.approval import Approval, Approver, HostRules, ToolCall
from cmdop_tui.config.settings import Settings
from cmdop_tui.permissions import Permissions
from cmdop_tui.support.secrets import configured_secrets, redact_json

NO_ESCALATION = (
    "the sandbox refused it and only a person can allow it outside the sandbox; no one can be asked "
    "here (--yes does not allow it: run with --sandbox off, or add the path to [sandbox] writable)"
)
NOBODY_TO_ASK = (
    "it needs approval and no one can approve it here (add a permission rule that allows it, or run "
    'in auto mode: --yes, or approval="auto" in the library)'
)


def load_permissions(settings: Settings) -> Permissions:
    """The rules file, in the mode the settings ask for (`--yes` is auto mode)."""
    return Permissions.load(mode="auto" if settings.auto_approve else settings.permission_mode)


def permission_gate(permissions: Permissions, ask: Approver | None) -> Approver:
    """Floor, rules, mode, then the user, in that order.

    `ask` is the surface's question (TUI modal, terminal prompt); with no way to ask, a call that
    needs asking is denied with a reason the model can relay. Every decision is audited.
    """

    async def gate(call: ToolCall) -> Approval:
        if call.escalation is not None:  # neither rules nor --yes answer for leaving the sandbox
            return await _ask_to_escalate(permissions, call, ask)
        decision = permissions.decide(call.name, call.input, machine=call.machine, spec=call.tool)
        if decision.verdict == "allow":
            approval = Approval(True)
        elif decision.verdict == "deny":
            approval = Approval(False, decision.reason)
        elif ask is None:
            approval = Approval(False, NOBODY_TO_ASK)
        else:
            approval = await ask(call)
        audited = redact_json(call.input, configured_secrets())  # the audit log is a file: no secrets
        outcome = "allowed" if approval.allowed else "denied"
        permissions.record(decision, call.name, audited, call.machine, outcome=outcome, spec=call.tool)
        return approval

    return gate


def host_rules(permissions: Permissions) -> HostRules:
    """Why a rule denies an approved call on one of the machines it fans out to: the rules of its
    own tool there (`web1:run_on_machines(...)`), and those of execute_command for its command
    there (`web1:execute_command(systemctl *)`). Only rules deny here: the floor, the mode and
    the person already judged the call as a whole, and nobody is asked per host."""

    def denied(call: ToolCall, machine: str) -> str | None:
        command = call.input.get("command")
        checks = [(call.name, call.input, call.tool)]
        if isinstance(command, str):
            checks.append(("execute_command", {"command": command}, None))
        for name, args, spec in checks:
            decision = permissions.decide(name, args, machine=machine, spec=spec)
            if decision.verdict == "deny" and decision.rule is not None:
                audited = redact_json(call.input, configured_secrets())
                permissions.record(decision, call.name, audited, machine, outcome="denied", spec=call.tool)
                return f"denied by rule {decision.rule}"
        return None

    return denied


async def _ask_to_escalate(permissions: Permissions, call: ToolCall, ask: Approver | None) -> Approval:
    approval = Approval(False, NO_ESCALATION) if ask is None else await ask(call)
    decision = permissions.decide(call.name, call.input, machine=call.machine, spec=call.tool)
    if decision.verdict == "deny" and decision.floor:  # the floor holds outside the sandbox too
        approval = Approval(False, decision.reason)
    audited = redact_json({**call.input, "outside_sandbox": call.escalation}, configured_secrets())
    outcome = "allowed" if approval.allowed else "denied"
    permissions.record(decision, call.name, audited, call.machine, outcome=outcome, spec=call.tool)
    return approval
