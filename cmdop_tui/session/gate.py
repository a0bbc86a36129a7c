"""The permission gate: the approver the loop consults before every tool call."""

from __future__ import annotations

import weakref
from dataclasses import replace

from cmdop_tui.agent.approval import Approval, Approver, HostRules, ToolCall
from cmdop_tui.config.settings import Settings
from cmdop_tui.hooks import Hooks
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import TAG_PREFIX, Inventory
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.permissions import Decision, Permissions
from cmdop_tui.support.secrets import configured_secrets, redact_json
from cmdop_tui.tools.outcome import OutcomeKind
from cmdop_tui.tools.placement import Placement

NO_ESCALATION = (
    "the sandbox refused it and only a person can allow it outside the sandbox; no one can be asked "
    'here (neither a rule nor --yes nor approval="auto" allows it: run with --sandbox off, or add '
    "the path to [sandbox] writable)"
)
PERSON_MUST_DECIDE = (
    "a person must decide this call and no one can be asked here (neither a rule nor --yes nor "
    'approval="auto" allows it: run it where a person approves it, in the app or on a terminal)'
)
NOBODY_TO_ASK = (
    "it needs approval and no one can approve it here (add a permission rule that allows it, or run "
    'in auto mode: --yes, or approval="auto" in the library)'
)


def load_permissions(settings: Settings) -> Permissions:
    """The rules file, in the mode the settings ask for (`--yes` is auto mode)."""
    return Permissions.load(mode="auto" if settings.run.auto_approve else settings.permission_mode)


def permission_gate(
    permissions: Permissions, ask: Approver | None, fleet: Fleet | None = None, hooks: Hooks | None = None
) -> Approver:
    """Floor, rules, mode, then the user, in that order.

    `ask` is the surface's question (TUI modal, terminal prompt: a person; the library's
    `Operator` wraps a program's function so that it must say `by_person`); with no way to ask,
    a call that needs asking is denied with a reason the model can relay. Two kinds of call only
    a person answers, whatever the rules and the mode (`--yes` included): leaving the sandbox
    (`ToolCall.escalation`) and what the floor leaves to a person (`Decision.person_only`; the
    call is asked with `ToolCall.person_only` set to why). Every decision is audited. A call
    is judged where it runs, `ToolCall.placement` (the loop resolved its selectors once): a call
    over several machines on each machine its selectors chose, so a rule that asks on db1 is not
    passed by naming db1's tag; `fleet` adds each machine's tags and groups (see :func:`selection`).
    A PreToolUse hook's word (`ToolCall.hook_word`) spares the question where no rule asks, or
    asks where the rules allow; before a person is asked, the PermissionRequest `hooks` may answer.
    """

    async def gate(call: ToolCall) -> Approval:
        decision = _decide(permissions, call, fleet)
        if call.escalation is not None or (decision.person_only and decision.verdict != "deny"):
            return await _ask_a_person(permissions, call, decision, ask)  # no rule, no mode answers
        verdict = _with_hook_word(decision, call)
        if verdict == "allow":
            approval = Approval(True)
        elif verdict == "deny":
            approval = Approval(False, decision.reason, denied_as=_denier(decision))
        elif (answered := await _permission_hooks(hooks, call)) is not None:
            approval = answered
        elif ask is None:
            approval = Approval(False, NOBODY_TO_ASK, denied_as=OutcomeKind.NO_ONE_TO_ASK)
        else:
            approval = await ask(call)
            _note_asked(permissions, call, approval)
        _audit(permissions, decision, call, approval)
        return approval

    return gate


def _with_hook_word(decision: Decision, call: ToolCall) -> str:
    """The rules' verdict as a PreToolUse hook's word turns it: its allow spares the question
    where no rule asks (the mode's default does), its ask asks where the rules allow."""
    if call.hook_word == "ask" and decision.verdict == "allow":
        return "ask"
    if call.hook_word == "allow" and decision.verdict == "ask" and decision.rule is None:
        return "allow"
    return decision.verdict


async def _permission_hooks(hooks: Hooks | None, call: ToolCall) -> Approval | None:
    """What the PermissionRequest hooks answer for a call about to be asked, or None: ask. An
    allow that would change the input is not taken (the person is asked)."""
    if hooks is None or not hooks.wants("PermissionRequest"):
        return None
    fields = {"tool_name": call.name, "tool_input": call.input, "tool_use_id": call.id, "permission_suggestions": []}
    verdict = await hooks.fire("PermissionRequest", fields, tool=call.name, placement=call.placement, call_id=call.id)
    if verdict.blocked:
        return Approval(
            False, verdict.reason or "a PermissionRequest hook denied it", denied_as=OutcomeKind.DENIED_BY_HOOK
        )
    if verdict.decision == "allow" and verdict.updated_input is None:
        return Approval(True)
    return None


def _denier(decision: Decision) -> OutcomeKind:
    """Who said no: the safety floor, or a permission rule or the mode."""
    return OutcomeKind.REFUSED_BY_FLOOR if decision.floor else OutcomeKind.DENIED_BY_RULE


def _decide(permissions: Permissions, call: ToolCall, fleet: Fleet | None) -> Decision:
    """The rules' decision on `call`, judged on the machines it runs on, each by its own name and
    by every name that covers it (see :func:`machine_scopes`)."""
    return permissions.decide(call.name, call.input, placement=scoped(call.placement, fleet), spec=call.tool)


def scoped(placement: Placement, fleet: Fleet | None) -> Placement:
    """`placement` with each machine also named by its tags and groups in `fleet`."""
    return placement.widened({name: machine_scopes(name, fleet) for name in placement.machines})


def machine_scopes(name: str, fleet: Fleet | None) -> list[str]:
    """The names besides its own that rules may scope machine `name` by: `tag:T` for each of its
    tags and each group of the settings that contains it. A rule scoped to a tag covers the
    machines tagged so whatever name a call uses: naming db1 rather than `tag:db` must not pass
    a deny on `tag:db` (and an allow on `tag:db` says db1 too). Empty without a fleet, or for a
    machine the fleet does not know."""
    if fleet is None:
        return []
    inventory = fleet.inventory
    spec = next((m for m in inventory if m.name == name), None)
    if spec is None:
        return []
    scopes = [f"{TAG_PREFIX}{tag}" for tag in spec.tags]
    return scopes + [group for group in inventory.groups if name in _group_members(inventory, group, ())]


def _group_members(inventory: Inventory, group: str, seen: tuple[str, ...]) -> set[str]:
    """The machines `group` contains, member by member: one member that names no machine (a typo
    in the settings) must not hide the group's rules from the machines it does name."""
    names: set[str] = set()
    for member in (m.strip() for m in inventory.groups[group]):
        if not member.startswith(TAG_PREFIX) and member in inventory.groups:
            if member not in (*seen, group):
                names |= _group_members(inventory, member, (*seen, group))
            continue
        try:
            names |= {m.name for m in inventory.select([member])}
        except MachineError:
            continue
    return names


def selection(call: ToolCall, fleet: Fleet | None) -> dict[str, list[str]] | None:
    """Where a call that fans out runs: each machine of its placement, with the selectors that
    chose it and its tags and groups (:func:`machine_scopes`; their rules, `tag\\:db:...`,
    apply to it too). None for a call on one machine."""
    if not call.placement.fans_out:
        return None
    placement = scoped(call.placement, fleet)
    return {name: list(placement.selectors[name]) for name in placement.machines}


def host_rules(permissions: Permissions, fleet: Fleet | None = None) -> HostRules:
    """Why the rules keep an approved call off one of the machines it fans out to: the rules of
    its own tool there (`web1:run_on_machines(...)`), and those of execute_command for its
    command there (`web1:execute_command(systemctl *)`). Nobody is asked per host: a rule that
    denies there skips the host, and so does a rule scoped to machines that asks there when no
    person approved this call (it was allowed by a rule over its selectors, or by a gate that
    could not tell which machines they choose). `fleet`: the gate's, for the same selection."""

    def denied(call: ToolCall, machine: str) -> str | None:
        command = call.input.get("command")
        checks = [(call.name, call.input, call.tool)]
        if isinstance(command, str):
            checks.append(("execute_command", {"command": command}, None))
        chose = (selection(call, fleet) or {}).get(machine) or machine_scopes(machine, fleet)
        here = Placement.one(machine, chose)  # this host alone, by every name that chose it
        for name, args, spec in checks:
            decision = permissions.decide(name, args, placement=here, spec=spec)
            rule = decision.rule
            if rule is None or decision.verdict == "allow":
                continue
            if decision.verdict == "ask" and (rule.machine is None or _was_asked(permissions, call)):
                continue
            audited = redact_json(call.input, configured_secrets())
            permissions.record(decision, call.name, audited, machine, outcome="denied", spec=call.tool)
            if decision.verdict == "deny":
                return f"denied by rule {rule}"
            return f"rule {rule} asks for approval there and no one was asked (name {machine} in machines to be asked)"
        return None

    return denied


# The calls over several machines a person approved, per Permissions (the gate and host_rules
# of one session share it): a rule that asks on one of the hosts was answered then.
_ASKED: weakref.WeakKeyDictionary[Permissions, dict[str, None]] = weakref.WeakKeyDictionary()
_ASKED_KEPT = 256  # calls; a call's hosts are checked while it runs, long before this many more


def _note_asked(permissions: Permissions, call: ToolCall, approval: Approval) -> None:
    if approval.allowed and call.placement.fans_out:
        asked = _ASKED.setdefault(permissions, {})
        asked[call.id] = None
        while len(asked) > _ASKED_KEPT:
            del asked[next(iter(asked))]


def _was_asked(permissions: Permissions, call: ToolCall) -> bool:
    return call.id in _ASKED.get(permissions, {})


async def _ask_a_person(permissions: Permissions, call: ToolCall, decision: Decision, ask: Approver | None) -> Approval:
    """A call only a person may allow (see :func:`permission_gate`): the floor still refuses what
    it refuses, inside the sandbox or out; else the person is asked, and without one it is denied."""
    if decision.person_only:
        call = replace(call, person_only=decision.reason)
    if decision.verdict == "deny" and decision.floor:  # the floor holds outside the sandbox too
        approval = Approval(False, decision.reason, denied_as=OutcomeKind.REFUSED_BY_FLOOR)
    elif ask is None:
        nobody = NO_ESCALATION if call.escalation is not None else PERSON_MUST_DECIDE
        reason = f"{decision.reason}; {nobody}" if decision.person_only else nobody
        approval = Approval(False, reason, denied_as=OutcomeKind.NO_ONE_TO_ASK)
    else:
        approval = await ask(call)
        _note_asked(permissions, call, approval)
    _audit(permissions, decision, call, approval)
    return approval


def _audit(permissions: Permissions, decision: Decision, call: ToolCall, approval: Approval) -> None:
    """One line of the audit log for the gate's answer (a file: no secrets in it)."""
    arguments = call.input
    if call.escalation is not None:
        arguments = {**arguments, "outside_sandbox": call.escalation.needs}
    audited = redact_json(arguments, configured_secrets())
    outcome = "allowed" if approval.allowed else "denied"
    permissions.record(decision, call.name, audited, call.machine, outcome=outcome, spec=call.tool)
