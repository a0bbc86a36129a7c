"""Where the loop calls the session's hooks (cmdop_tui/hooks/): before a tool call (PreToolUse:
block it, change its input, allow or ask), after it (PostToolUse: a word the model gets with the
result), when a run would end (Stop: go on, with the hook's reason as the next message) and
before a compaction (PreCompact). Without hooks for an event, nothing runs and nothing waits.

A changed input is a new call: placed again, and judged by the floor and the rules as any call
(the gate runs after), so a hook cannot make a call pass what the floor refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from cmdop_tui.agent.approval import NOT_RUN, ToolCall
from cmdop_tui.hooks import Hooks
from cmdop_tui.tools.base import ToolResult
from cmdop_tui.tools.outcome import OutcomeKind
from cmdop_tui.tools.placement import Placement

STOP_HOOK_ROUNDS = 8  # a Stop hook that always asks to go on is heard this many times in a row


async def before_tool(
    hooks: Hooks | None, call: ToolCall, place: Callable[[ToolCall], Placement]
) -> tuple[ToolCall, ToolResult | None]:
    """The call as the PreToolUse hooks leave it, and the result that refuses it (a hook blocked
    it: the model reads why), or None to go on to the gate."""
    if hooks is None or not hooks.wants("PreToolUse"):
        return call, None
    fields = {"tool_name": call.name, "tool_input": call.input, "tool_use_id": call.id}
    verdict = await hooks.fire("PreToolUse", fields, tool=call.name, placement=call.placement, call_id=call.id)
    if verdict.blocked:
        why = f" Reason: {verdict.reason}" if verdict.reason else ""
        said = f"{NOT_RUN[OutcomeKind.DENIED_BY_HOOK]}{why}"
        return call, ToolResult.error(
            said, OutcomeKind.DENIED_BY_HOOK, verdict.reason or "a PreToolUse hook blocked it"
        )
    if verdict.updated_input is not None:
        call = replace(call, input=verdict.updated_input)
        call = replace(call, placement=place(call))
    if verdict.decision in ("allow", "ask"):
        call = replace(call, hook_word=verdict.decision, hook_reason=verdict.reason)
    return call, None


async def after_tool(hooks: Hooks | None, call: ToolCall, result: ToolResult) -> ToolResult:
    """The result with what the PostToolUse hooks tell the model (a block's reason, context)."""
    if hooks is None or not hooks.wants("PostToolUse"):
        return result
    fields = {
        "tool_name": call.name,
        "tool_input": call.input,
        "tool_use_id": call.id,
        "tool_response": {"content": result.content, "is_error": result.is_error},
    }
    verdict = await hooks.fire("PostToolUse", fields, tool=call.name, placement=call.placement, call_id=call.id)
    said = [f"A hook says: {verdict.reason}" if verdict.blocked and verdict.reason else "", verdict.context]
    notes = "\n".join(note for note in said if note)
    return replace(result, content=f"{result.content}\n\n{notes}") if notes else result


async def before_stop(hooks: Hooks | None, rounds: int) -> str | None:
    """Why the run must go on instead of ending (a Stop hook blocked it), or None to end.
    `rounds`: how many times in a row a Stop hook already made it go on."""
    if hooks is None or not hooks.wants("Stop") or rounds >= STOP_HOOK_ROUNDS:
        return None
    verdict = await hooks.fire("Stop", {"stop_hook_active": rounds > 0})
    if not verdict.blocked:
        return None
    return verdict.reason or "A Stop hook asked you to go on."


async def before_compaction(hooks: Hooks | None, trigger: str, instructions: str) -> None:
    """Tell the PreCompact hooks a compaction starts (`manual` or `auto`)."""
    if hooks is not None and hooks.wants("PreCompact"):
        manual = "manual" if trigger == "manual" else "auto"
        await hooks.fire("PreCompact", {"trigger": manual, "custom_instructions": instructions})
