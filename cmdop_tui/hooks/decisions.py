"""What a command hook said, read as Claude Code reads it, and the word of all of an event's hooks.

- Exit 0: stdout is JSON when it starts with `{` (else plain text: context for the model on
  `UserPromptSubmit` and `SessionStart`, ignored elsewhere). The JSON may hold `continue: false`
  (+ `stopReason`), `decision: "block"` + `reason` (PostToolUse, UserPromptSubmit, Stop; `approve`
  is the old spelling of allow), and `hookSpecificOutput` with `permissionDecision`
  (`allow`, `deny`, `ask`) + `permissionDecisionReason` and `updatedInput` (PreToolUse),
  `decision: {behavior, message, updatedInput}` (PermissionRequest) or `additionalContext`.
- Exit 2: blocks, with stderr as the reason.
- Another exit code, a crash, a timeout or invalid JSON is a failure: with `on_failure = "block"`
  it blocks, else it is said and the event goes on.

Of several hooks, a block or deny wins over ask, which wins over allow; the last changed input wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cmdop_tui.hooks.running import HookRun

Decision = Literal["allow", "deny", "ask"]
BLOCKING_EXIT = 2
_RANK: dict[Decision | None, int] = {None: 0, "allow": 1, "ask": 2, "deny": 3}
_PLAIN_CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})


@dataclass(frozen=True)
class HookWord:
    """One hook's word: its decision (deny also stands for block), why, a changed input, context
    for the model, and its failure (said to the user), if any."""

    decision: Decision | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: str = ""
    failure: str | None = None
    message: str = ""  # `systemMessage`: for the user

    @property
    def summary(self) -> str:
        """One word for the audit line and the screen."""
        if self.failure is not None:
            return "failed, blocked" if self.decision == "deny" else "failed"
        if self.updated_input is not None and self.decision in (None, "allow"):
            return "changed input"
        return {"deny": "blocked", "ask": "ask", "allow": "allowed", None: "ok"}[self.decision]


@dataclass(frozen=True)
class HookVerdict:
    """The word of all the hooks of one event: deny wins, then ask, then allow."""

    decision: Decision | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: str = ""
    failures: tuple[str, ...] = field(default=())
    messages: tuple[str, ...] = field(default=())

    @property
    def blocked(self) -> bool:
        return self.decision == "deny"


def read_run(run: HookRun, event: str) -> HookWord:
    """What one run of a hook says about `event`."""
    if run.error is not None:
        return _failed(run, run.error)
    if run.exit_code == BLOCKING_EXIT:
        return HookWord("deny", run.stderr or f"a hook blocked it: {run.hook.command}")
    if run.exit_code != 0:
        detail = f": {run.stderr.splitlines()[-1]}" if run.stderr else ""
        return _failed(run, f"exited with {run.exit_code}{detail}")
    out = run.stdout
    if not out.startswith("{"):
        return HookWord(context=out if event in _PLAIN_CONTEXT_EVENTS else "")
    try:
        data = json.loads(out)
    except ValueError as exc:
        return _failed(run, f"printed invalid JSON ({exc})")
    if not isinstance(data, dict):
        return _failed(run, "printed JSON that is no object")
    return _read_json(data, event)


def _failed(run: HookRun, why: str) -> HookWord:
    failure = f"hook `{run.hook.command}` {why}"
    if run.hook.on_failure == "block":
        return HookWord("deny", f"{failure} (it fails closed: on_failure = block)", failure=failure)
    return HookWord(failure=failure)


def _read_json(data: Mapping[str, Any], event: str) -> HookWord:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision: Decision | None = None
    reason = _text(data.get("reason"))
    updated = None
    top = data.get("decision")
    if top == "block":
        decision = "deny"
    elif top == "approve":
        decision = "allow"
    wanted = specific.get("permissionDecision")
    if wanted in ("allow", "deny", "ask"):
        decision = wanted
        reason = _text(specific.get("permissionDecisionReason")) or reason
    behaviour = specific.get("decision")
    if event == "PermissionRequest" and isinstance(behaviour, dict):
        if behaviour.get("behavior") in ("allow", "deny"):
            decision = behaviour["behavior"]
        reason = _text(behaviour.get("message")) or reason
        updated = behaviour.get("updatedInput")
    updated = specific.get("updatedInput", updated)
    if data.get("continue") is False:
        decision = "deny"
        reason = _text(data.get("stopReason")) or reason or "a hook said not to go on"
    return HookWord(
        decision=decision,
        reason=reason,
        updated_input=dict(updated) if isinstance(updated, dict) else None,
        context=_text(specific.get("additionalContext")),
        message=_text(data.get("systemMessage")),
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def combined(words: Sequence[HookWord]) -> HookVerdict:
    """All the hooks' word on one event, in the order they were configured."""
    decision: Decision | None = None
    reasons: list[str] = []
    updated: dict[str, Any] | None = None
    for word in words:
        if _RANK[word.decision] > _RANK[decision]:
            decision, reasons = word.decision, []
        if word.decision == decision and word.reason:
            reasons.append(word.reason)
        if word.updated_input is not None:
            updated = word.updated_input
    return HookVerdict(
        decision=decision,
        reason="; ".join(reasons),
        updated_input=updated,
        context="\n".join(w.context for w in words if w.context),
        failures=tuple(w.failure for w in words if w.failure),
        messages=tuple(w.message for w in words if w.message),
    )
