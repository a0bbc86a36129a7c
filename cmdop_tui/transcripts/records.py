"""The transcript file format: one JSON object per line.

Version 1, UTF-8, each record written with ``separators=(",", ":")``::

    {"op":"session","version":1,"id":"...","created":"2025-01-02T13:04:05.123+00:00","cwd":"...","model":"..."}
    {"op":"append","role":"user","blocks":[{"type":"text","text":"list my files"}]}
    {"op":"append","role":"assistant","blocks":[{"type":"tool_use","id":"toolu_1","name":"list_dir","input":{}}]}
    {"op":"event","kind":"tool_end","ts":1735823045.5,...}
    {"op":"append","role":"user","blocks":[{"type":"tool_result","tool_use_id":"toolu_1","content":"..."}]}
    {"op":"replace","messages":[...]}
    {"op":"compact","summary":{"type":"text","text":"<conversation-summary>..."},"drop":42,"trigger":"auto",...}
    {"op":"retract","blocks":1}
    {"op":"clear"}

``append``/``replace``/``compact``/``retract``/``clear`` are `Conversation`'s operation records (see
``cmdop_tui.agent.history.Conversation.apply``), stored as they were told: replaying them through a
`Conversation` rebuilds the history exactly, merges included. A ``compact`` replaces the first
``drop`` messages of the conversation by its summary; the messages stay in the file above it, so
the whole history can always be read back (`LoadedSession.whole`). ``event`` lines are UI events
kept for export and never touch the history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard

from cmdop_tui.agent.messages import Block, OperationRecord, are_blocks

VERSION = 1
# The event a writer closing with records it could not write leaves last, when even that fits:
# {"op":"event","kind":"unstored","records":N}. Loading then knows why the last turn looks cut.
UNSTORED_EVENT = "unstored"
# The whole output of a tool call whose result the history holds capped (`recall` reads it).
KEPT_OUTPUT_EVENT = "kept_output"
ROLES = ("user", "assistant")

# How the writer starts each kind of line. The listing recognises lines by these prefixes
# instead of parsing them, which is what keeps it fast on long sessions.
APPEND_USER_PREFIX = b'{"op":"append","role":"user",'
APPEND_ASSISTANT_PREFIX = b'{"op":"append","role":"assistant",'
APPEND_PREFIX = b'{"op":"append"'
REPLACE_PREFIX = b'{"op":"replace"'
CLEAR_PREFIX = b'{"op":"clear"'
EVENT_PREFIX = b'{"op":"event"'
EMPTY_APPEND_SUFFIX = b'"blocks":[]}'


def json_default(value: Any) -> Any:
    """What `json.dumps` stores for a value it does not know: SDK objects as their dicts."""
    dump = getattr(value, "model_dump", None)  # SDK (pydantic) objects
    if callable(dump):
        return dump(exclude_none=True)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One line: compact JSON + newline. Lone surrogates fall back to \\u escapes (still valid)."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=json_default)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":"), default=json_default) + "\n").encode("ascii")


def parse_record(line: bytes) -> OperationRecord | None:
    """The record on `line`; None when it is not JSON or not an object with a string ``op``."""
    try:
        record = json.loads(line)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return None
    return record if isinstance(record, dict) and isinstance(record.get("op"), str) else None


def valid_blocks(blocks: object) -> TypeGuard[list[Block]]:
    """Whether `blocks` is a list of content blocks, each a dict with a string ``type``."""
    return are_blocks(blocks)


def valid_message(message: Any) -> bool:
    """Whether `message` is a stored message: a known role and text or valid blocks as content."""
    return (
        isinstance(message, dict)
        and message.get("role") in ROLES
        and (isinstance(message.get("content"), str) or valid_blocks(message.get("content")))
    )
