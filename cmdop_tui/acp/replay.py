"""A stored conversation told to an editor again (`session/load`): each message as the
notifications the live turn sent, so a session begun in the TUI reads the same in the editor.

User text is a `user_message_chunk`, the model's text an `agent_message_chunk`, its thinking an
`agent_thought_chunk`; each tool call a `tool_call` and, with its result, a `tool_call_update`
completed or failed (a call with no result stored: failed, as interrupted).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from acp import (
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import SessionUpdate

from cmdop_tui.acp.tool_calls import (
    diff_content,
    output_content,
    plan_entries,
    tool_kind,
    tool_locations,
    tool_title,
)
from cmdop_tui.agent.messages import (
    Message,
    blocks_of,
    is_compaction,
    is_text,
    is_thinking,
    is_tool_result,
    is_tool_use,
    result_content_text,
)

INTERRUPTED = "(no result was stored: the call was interrupted)"


def replay(messages: Iterable[Message], cwd: Path) -> list[SessionUpdate]:
    """The notifications that tell `messages` again, in order."""
    updates: list[SessionUpdate] = []
    open_calls: set[str] = set()
    for message in messages:
        role = message.get("role")
        for block in blocks_of(message):
            if is_text(block) and block["text"]:
                tell = update_user_message_text if role == "user" else update_agent_message_text
                updates.append(tell(block["text"]))
            elif is_thinking(block) and block["thinking"]:
                updates.append(update_agent_thought_text(block["thinking"]))
            elif is_compaction(block):
                updates.append(
                    update_agent_thought_text(f"(summary of the earlier conversation)\n{block.get('content', '')}")
                )
            elif is_tool_use(block):
                open_calls.add(block["id"])
                updates += _call(block["id"], block["name"], dict(block["input"]), cwd)
            elif is_tool_result(block) and block["tool_use_id"] in open_calls:
                open_calls.discard(block["tool_use_id"])
                failed = bool(block.get("is_error", False))
                output = result_content_text(block["content"])
                updates.append(
                    update_tool_call(
                        block["tool_use_id"], status="failed" if failed else "completed", content=output_content(output)
                    )
                )
    for call_id in open_calls:
        updates.append(update_tool_call(call_id, status="failed", content=output_content(INTERRUPTED)))
    return updates


def _call(call_id: str, name: str, args: dict[str, object], cwd: Path) -> list[SessionUpdate]:
    machine = str(args.get("machine") or "local")
    start = start_tool_call(
        call_id,
        tool_title(name, args, machine),
        kind=tool_kind(name),
        status="pending",
        content=diff_content(name, args, machine, cwd) or None,
        locations=tool_locations(name, args, machine, cwd) or None,
        raw_input=args,
    )
    updates: list[SessionUpdate] = [start]
    if name == "todo" and (entries := plan_entries(args)) is not None:
        updates.append(update_plan(entries))
    return updates
