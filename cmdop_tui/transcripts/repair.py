"""Making a stored history valid for the next request after the app stopped mid-turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cmdop_tui.agent.history import Conversation, sanitize, tool_result_ids, tool_use_ids
from cmdop_tui.agent.messages import Message, OperationRecord, blocks_of, is_text, tool_result_block

INTERRUPTED_RESULT = (
    "The session was interrupted before this tool call finished (the app stopped); "
    "it may or may not have run, and its output is lost."
)
UNSTORED_RESULT = (
    "This tool call's result was not stored: the disk was full when the session ended, so the "
    "transcript lost its last records. The call may well have finished; its output is lost."
)


@dataclass(frozen=True)
class RepairedHistory:
    """A history made valid, how it was done, and what the user should hear about it."""

    messages: list[Message]  # `sanitize(messages) == messages`
    records: list[OperationRecord]  # the operation records that turn the input into `messages`
    notes: list[str]


def repair(messages: Sequence[Message]) -> list[Message]:
    """`messages` made valid for the next request, as `load` does it: open tool calls at the end get
    an ``is_error`` `INTERRUPTED_RESULT`, then `sanitize` drops whatever else is unpaired. The
    result is a fixed point of `sanitize`. The input is not modified."""
    return repair_history(messages).messages


def repair_history(
    messages: Sequence[Message], *, unstored: int = 0, ended: Mapping[str, object] | None = None
) -> RepairedHistory:
    """Close the tool calls a dead process left open, then `sanitize` whatever else is off.

    Open calls are those of the last assistant message with no result after it: the app died
    while they ran (or while their results were coming in). Each gets an ``is_error`` result
    saying the session was interrupted; or, when the file says its last `unstored` records were
    never written (a disk full to the end), saying their results were not stored. `ended`: the
    event the last run ended with, when it was stored after the history (a budget stop, an error).
    """
    conversation = Conversation(messages=[m.copy() for m in messages])
    records: list[OperationRecord] = []
    notes: list[str] = []
    conversation.listeners.append(records.append)
    missing = _open_tool_calls(conversation.messages)
    if unstored:
        notes.append(f"the transcript lost its last {unstored} record(s): the disk was full when the session ended")
    if missing:
        text = UNSTORED_RESULT if unstored else INTERRUPTED_RESULT
        conversation.append_tool_results([tool_result_block(i, text, is_error=True) for i in missing])
        if unstored:
            notes.append(f"the result of {len(missing)} tool call(s) was not stored; they are marked as such")
        else:
            notes.append(f"the session stopped while {len(missing)} tool call(s) ran; they are marked as interrupted")
    cleaned = sanitize(conversation.messages)
    if cleaned != conversation.messages:
        conversation.replace(cleaned)
        notes.append(
            "the history was repaired to be valid again (blank text, repeated or malformed tool-call ids, or unpaired tool calls and results)"
        )
    if not missing and conversation.messages and conversation.messages[-1]["role"] == "user":
        # Valid as it is (the next prompt joins this user turn), but worth telling.
        if any(is_text(b) for b in blocks_of(conversation.messages[-1])):
            notes.append(_unanswered(ended))
        else:
            notes.append("the session stopped before the model answered the last tool results")
    return RepairedHistory(conversation.messages, records, notes)


def _unanswered(ended: Mapping[str, object] | None) -> str:
    """Why the last prompt has no answer: how its run ended, when the transcript says."""
    kind, code, message = (ended or {}).get("kind"), (ended or {}).get("code"), (ended or {}).get("message")
    why = f": {message}" if isinstance(message, str) and message else ""
    if kind == "error" and code == "budget":
        return f"the last prompt has no answer: the turn was stopped by the budget{why} (/budget raises it)"
    if kind == "error":
        return f"the last prompt has no answer: the turn ended with an error{why}"
    if kind == "cancelled":
        return f"the last prompt has no answer: the turn was stopped{why}"
    return "the last prompt has no answer (the session stopped before the reply was stored)"


def _open_tool_calls(messages: Sequence[Message]) -> list[str]:
    """The ids of the last assistant message's tool calls that have no result after it."""
    last = messages[-1] if messages else None
    asked: list[str] = []
    answered: set[str] = set()
    if last is not None and last.get("role") == "assistant":
        asked = tool_use_ids(last)
    elif last is not None and len(messages) >= 2:
        asked = tool_use_ids(messages[-2])
        answered = set(tool_result_ids(last))
    return list(dict.fromkeys(i for i in asked if i not in answered))
