"""The conversation as the Messages API sees it, and the pure functions that keep it valid.

Messages are plain dicts in the API's own format (`{"role": ..., "content": [blocks]}`) so they go
into a request without conversion. Stored content is always a list of blocks.

Invariants the API enforces, and which `sanitize` restores:
* the first message is from the user;
* every `tool_use` is answered by a `tool_result` with its id in the very next (user) message, and
  every `tool_result` answers a `tool_use` of the message just before it;
* no message is empty; neighbours with the same role are merged (tool results first in a user turn);
* no text block is empty or only whitespace;
* every `tool_use` id matches the API's pattern (`TOOL_ID`) and is unique in the conversation.

Replies are held to the last two on the way in (`Conversation.adopt_ids`, and the loop drops blank
text), and `sanitize` restores them in a history that somehow breaks them (an old transcript, a
compatible server that reuses ids): a session never wedges on a history the API refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from cmdop_tui.agent.messages import (
    Block,
    Message,
    OperationRecord,
    ResultPart,
    Role,
    TextBlock,
    ToolResultBlock,
    are_blocks,
    are_messages,
    blocks_of,
    is_blank_text,
    is_sendable_image,
    is_text,
    is_tool_result,
    is_tool_use,
    text_block,
    tool_result_block,
    tool_results,
    tool_uses,
)

CANCELLED_RESULT = "Cancelled by the user before this tool call finished."
SUMMARY_OPEN = "<conversation-summary>"
SUMMARY_CLOSE = "</conversation-summary>"
SUMMARY_PREAMBLE = (
    "The earlier part of this conversation was compacted to save context: this summary replaces it. "
    "Everything is still in the session transcript; recall(id) brings back a tool output by its call id."
)


def tool_use_ids(message: Mapping[str, object]) -> list[str]:
    if message.get("role") != "assistant":
        return []
    return [b["id"] for b in tool_uses(blocks_of(message))]


def tool_result_ids(message: Mapping[str, object]) -> list[str]:
    if message.get("role") != "user":
        return []
    return [b["tool_use_id"] for b in tool_results(blocks_of(message))]


CURRENT_REQUEST_LABEL = "The user's current request, verbatim:"


def summary_block(summary: str, current_request: str | None = None) -> TextBlock:
    """The text block that stands for the compacted head of a conversation."""
    parts = [SUMMARY_OPEN, SUMMARY_PREAMBLE, "", summary.strip()]
    if current_request:
        parts += ["", CURRENT_REQUEST_LABEL, current_request]
    return text_block("\n".join([*parts, SUMMARY_CLOSE]))


def is_summary_block(block: object) -> TypeGuard[TextBlock]:
    return is_text(block) and str(block.get("text", "")).startswith(SUMMARY_OPEN)


def summary_of(messages: Sequence[Message]) -> str | None:
    """The summary the conversation starts with (None: it was never compacted)."""
    if not messages or messages[0].get("role") != "user":
        return None
    for block in blocks_of(messages[0]):
        if is_summary_block(block):
            return str(block["text"])
    return None


def previous_summary(messages: Sequence[Message]) -> str:
    """The text of the summary the conversation starts with, without its wrapper ("" if none)."""
    text = summary_of(messages)
    if text is None:
        return ""
    body = text.removeprefix(SUMMARY_OPEN).removesuffix(SUMMARY_CLOSE).strip()
    body = body.removeprefix(SUMMARY_PREAMBLE).strip()
    return body.split("\n\n" + CURRENT_REQUEST_LABEL, 1)[0].strip()


def without_summaries(messages: Iterable[Message]) -> list[Message]:
    """`messages` with the summary blocks taken out (and messages left empty dropped)."""
    kept: list[Message] = [{**m, "content": [b for b in blocks_of(m) if not is_summary_block(b)]} for m in messages]
    return [m for m in kept if m["content"]]


# --- sanitize ------------------------------------------------------------------------------

TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")  # the API's pattern for a tool_use id


def _usable_id(call_id: object, taken: set[str]) -> bool:
    return isinstance(call_id, str) and TOOL_ID.fullmatch(call_id) is not None and call_id not in taken


def renamed_tool_ids(
    blocks: Sequence[Block], taken: set[str], prefix: str
) -> tuple[list[Block], list[tuple[str, str]]]:
    """`blocks` with every tool_use id that is malformed or already `taken` replaced by a fresh one
    (`toolu_<prefix>_<n>`, the same for the same history, so repaired requests stay cacheable), and
    each call's (id it had, id it has), in order, to pair its result. `taken` gets the ids used."""
    fixed: list[Block] = []
    pairs: list[tuple[str, str]] = []
    for index, block in enumerate(blocks):
        if is_tool_use(block):
            old = block.get("id")
            if not _usable_id(old, taken):
                fresh = f"toolu_{prefix}_{index}"
                while fresh in taken:
                    fresh += "x"
                block = {**block, "id": fresh}
            taken.add(block["id"])
            pairs.append((str(old), block["id"]))
        fixed.append(block)
    return fixed, pairs


def _answered_as(blocks: list[Block], pairs: list[tuple[str, str]]) -> list[Block]:
    """Tool results given the ids their calls now have: each result takes the first call that had
    its id and is not answered yet."""
    waiting = list(pairs)
    fixed: list[Block] = []
    for block in blocks:
        if is_tool_result(block):
            match = next((pair for pair in waiting if pair[0] == block.get("tool_use_id")), None)
            if match is not None:
                waiting.remove(match)
                block = {**block, "tool_use_id": match[1]}
        fixed.append(block)
    return fixed


UNSENDABLE_PART = "[a part of this result the API does not take was left out]"


def _sendable_parts(content: object) -> bool:
    """Whether a tool result's content is what the API takes: a string, or text (not blank) and
    images it takes."""
    if not isinstance(content, list):
        return True
    return all((is_text(part) and not is_blank_text(part)) or is_sendable_image(part) for part in content)


def _sendable_result(block: Block) -> Block:
    """A tool result whose content parts the API would refuse (an image of a type it does not
    take, a part of another kind, blank text, from an old or edited transcript) with each such
    part said in a line; any other block as it is."""
    if not is_tool_result(block):
        return block
    content = block.get("content")
    if not isinstance(content, list) or _sendable_parts(content):
        return block
    parts: list[ResultPart] = []
    for part in content:
        if is_sendable_image(part) or (is_text(part) and not is_blank_text(part)):
            parts.append(part)
        elif not is_blank_text(part):
            parts.append(text_block(UNSENDABLE_PART))
    fixed = block.copy()
    fixed["content"] = parts or [text_block("(no output)")]
    return fixed


def _valid_blocks(messages: Sequence[Message]) -> list[Message]:
    """Blank text dropped; parts of tool results the API refuses said instead; malformed and
    repeated tool_use ids renamed, with their results."""
    taken: set[str] = set()
    pairs: list[tuple[str, str]] = []
    fixed: list[Message] = []
    for index, message in enumerate(messages):
        blocks = [_sendable_result(b) for b in blocks_of(message) if not is_blank_text(b)]
        if message.get("role") == "assistant":
            blocks, pairs = renamed_tool_ids(blocks, taken, f"fixed{index}")
        elif pairs:
            blocks, pairs = _answered_as(blocks, pairs), []
        fixed.append({**message, "content": blocks})
    return fixed


def _is_valid(messages: Sequence[Message]) -> bool:
    """Fast check so that a healthy history (the common case) is not copied.

    Runs before every request over the whole history, so it is one tight loop.
    """
    previous_role: str | None = None
    asked: set[str] = set()
    seen: set[str] = set()
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if not content or role == previous_role or (previous_role is None and role != "user"):
            return False
        blocks = content if isinstance(content, list) else ()
        if any(is_blank_text(b) for b in blocks):
            return False
        if role == "user":
            answered = {b.get("tool_use_id") for b in tool_results(blocks)}
            if not all(_sendable_parts(b.get("content")) for b in tool_results(blocks)):
                return False
            if answered != asked:
                return False
            asked = set()
        else:
            asked = set()
            for call_id in (b.get("id") for b in tool_uses(blocks)):
                if not _usable_id(call_id, seen):
                    return False
                seen.add(call_id)
                asked.add(call_id)
        previous_role = role
    return not asked


def _drop_unpaired_tool_blocks(messages: Sequence[Message]) -> list[Message]:
    """Drop tool_use blocks with no answer next, and tool_result blocks with no question before."""
    kept: list[Message] = []
    for index, message in enumerate(messages):
        blocks = blocks_of(message)
        if message.get("role") == "assistant":
            answered = set(tool_result_ids(messages[index + 1])) if index + 1 < len(messages) else set()
            blocks = [b for b in blocks if not is_tool_use(b) or b.get("id") in answered]
        elif message.get("role") == "user":
            asked = set(tool_use_ids(messages[index - 1])) if index > 0 else set()
            blocks = [b for b in blocks if not is_tool_result(b) or b.get("tool_use_id") in asked]
        kept.append({**message, "content": blocks})
    return kept


def merge_adjacent(messages: Iterable[Message]) -> list[Message]:
    """Merge neighbouring messages with the same role; drop empty ones.

    In a merged user message tool results come first, as the API requires.
    """
    merged: list[Message] = []
    for message in messages:
        blocks = blocks_of(message)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message["role"]:
            blocks = merged[-1]["content"] + blocks
            if message["role"] == "user":
                blocks = _tool_results_first(blocks)
            merged[-1] = {**merged[-1], "content": blocks}
        else:
            merged.append({**message, "content": blocks})
    return merged


def _tool_results_first(blocks: list[Block]) -> list[Block]:
    results: list[Block] = [b for b in blocks if is_tool_result(b)]
    return results + [b for b in blocks if not is_tool_result(b)]


def sanitize(messages: Sequence[Message]) -> list[Message]:
    """A copy of `messages` that the API accepts: blank text dropped, tool ids made valid and
    unique (with their results), orphan tool calls and results dropped.

    Returns the same message objects when nothing needs fixing, so it is cheap on every turn.
    """
    if _is_valid(messages):
        return list(messages)
    current = _valid_blocks(messages)
    while True:
        fixed = merge_adjacent(_drop_unpaired_tool_blocks(current))
        while fixed and fixed[0]["role"] != "user":
            fixed.pop(0)
        if fixed == current:
            break
        current = fixed
    return current


# --- the conversation ----------------------------------------------------------------------


@dataclass
class Conversation:
    """The stored history of one session. Appends only; every append keeps it valid.

    Every change is also told to the `listeners` as an operation record, in a form that replays
    exactly (see `apply`): this is how a transcript follows the conversation as it happens.
    """

    messages: list[Message] = field(default_factory=list)
    listeners: list[Callable[[OperationRecord], None]] = field(default_factory=list, compare=False, repr=False)

    def append_user(self, content: str | list[Block]) -> None:
        blocks: list[Block] = [text_block(content)] if isinstance(content, str) else list(content)
        if not blocks:
            return
        self._append("user", blocks)

    def adopt_ids(self, blocks: list[Block]) -> list[Block]:
        """A reply's blocks with each tool call's id valid and new to this conversation (some
        compatible servers repeat ids, or send ones the API refuses); call before running them."""
        taken = {call_id for message in self.messages for call_id in tool_use_ids(message)}
        fixed, _ = renamed_tool_ids(blocks, taken, f"m{len(self.messages)}")
        return fixed

    def append_assistant(self, blocks: list[Block]) -> None:
        if blocks:
            self._append("assistant", blocks)

    def append_tool_results(self, results: list[Block]) -> None:
        if results:
            self._append("user", results)

    def _append(self, role: Role, blocks: list[Block]) -> None:
        self._merge_in(role, blocks)
        self._tell({"op": "append", "role": role, "blocks": blocks})

    def _merge_in(self, role: Role, blocks: list[Block]) -> None:
        if self.messages and self.messages[-1]["role"] == role:
            merged = self.messages[-1]["content"] + blocks
            if role == "user":
                merged = _tool_results_first(merged)
            self.messages[-1] = {"role": role, "content": merged}
        else:
            self.messages.append({"role": role, "content": blocks})

    def open_tool_calls(self) -> list[str]:
        """Ids of tool_use blocks in the last message still waiting for a result."""
        if not self.messages:
            return []
        return tool_use_ids(self.messages[-1])

    def close_open_tool_calls(self, done: Mapping[str, ToolResultBlock], note: str = CANCELLED_RESULT) -> None:
        """Answer every open tool call: with its result if it finished, else with an error `note`.

        This is the cancel repair: after it the history is valid for the next request.
        """
        open_ids = self.open_tool_calls()
        if open_ids:
            self.append_tool_results(
                [done.get(call_id) or tool_result_block(call_id, note, is_error=True) for call_id in open_ids]
            )

    def compact(self, summary: TextBlock, drop: int, **facts: object) -> None:
        """Replace the first `drop` messages by one user message holding `summary` (a compaction).

        `facts` (sizes, counts) travel with the record for the transcript; replaying needs only
        the summary and `drop`.
        """
        self._compact(summary, drop)
        self._tell({"op": "compact", "summary": summary, "drop": drop, **facts})

    def _compact(self, summary: TextBlock, drop: int) -> None:
        self.messages[:] = merge_adjacent([{"role": "user", "content": [summary]}, *self.messages[drop:]])

    def retract(self, blocks: int) -> None:
        """Take back the last `blocks` blocks of the last message (a prompt that could not be sent)."""
        self._retract(blocks)
        self._tell({"op": "retract", "blocks": blocks})

    def _retract(self, blocks: int) -> None:
        if not self.messages or blocks <= 0:
            return
        kept = self.messages[-1]["content"][:-blocks]
        if kept:
            self.messages[-1] = {**self.messages[-1], "content": kept}
        else:
            self.messages.pop()

    def replace(self, messages: list[Message]) -> None:
        """Rewrite the history (loop-mode cleanup, a repaired resume)."""
        self.messages[:] = messages
        self._tell({"op": "replace", "messages": list(messages)})

    def clear(self) -> None:
        self.messages.clear()
        self._tell({"op": "clear"})

    def apply(self, record: Mapping[str, object]) -> None:
        """Replay one operation record (without telling the listeners again).

        The record was checked when it was read (`transcripts/records.py`); a field of the wrong
        shape makes the record a no-op rather than a corrupt history.
        """
        op, role, blocks = record.get("op"), record.get("role"), record.get("blocks")
        if op == "append" and role in ("user", "assistant") and are_blocks(blocks):
            self._merge_in("user" if role == "user" else "assistant", list(blocks))
        elif op == "replace" and are_messages(messages := record.get("messages")):
            self.messages[:] = list(messages)
        elif op == "clear":
            self.messages.clear()
        elif op == "compact" and is_text(summary := record.get("summary")):
            self._compact(summary.copy(), _count(record.get("drop")))
        elif op == "retract":
            self._retract(_count(record.get("blocks")))

    def _tell(self, record: OperationRecord) -> None:
        for listener in self.listeners:
            listener(record)


def _count(value: object) -> int:
    """A record's count field (`drop`, `blocks`) as an int, as `int()` reads it."""
    return int(value) if isinstance(value, int | float | str) else 0
