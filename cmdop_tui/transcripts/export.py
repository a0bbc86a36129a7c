"""Markdown export of a conversation, redacted, for reading or sharing outside the app."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cmdop_tui.agent.history import is_summary_block
from cmdop_tui.agent.messages import Message, blocks_of, is_kind, is_text, is_tool_result, is_tool_use, kind_of
from cmdop_tui.support.secrets import Redactor

_BACKTICKS = re.compile(r"`{3,}+")
_NOT_EXPORTED = ("thinking", "redacted_thinking")
_PLACEHOLDER_ONLY = ("image", "document")


def export_markdown(
    messages: Sequence[Message],
    *,
    title: str = "cmdop-tui session",
    meta: Mapping[str, Any] | None = None,
    extra_secrets: Iterable[str | None] = (),
) -> str:
    """A readable Markdown transcript: user and assistant turns, tool calls with their input as a
    JSON code block, tool results fenced (errors marked). Thinking is omitted. Every piece of text
    is redacted (patterns + `extra_secrets`) before it is placed. `meta` (e.g. the session
    header's id/created/model/cwd) becomes a short list under the title."""
    redactor = Redactor(extra_secrets)
    out: list[str] = [f"# {_one_line(redactor.text(title)) or 'Session'}", ""]
    if meta:
        out += [
            f"- {key}: {_one_line(redactor.text(str(value)))}"
            for key, value in meta.items()
            if key != "op" and value not in (None, "")
        ]
        out.append("")
    tool_names: dict[str, str] = {}  # tool_use id -> name, to label its result
    speaker: str | None = None
    for message in messages:
        role = message.get("role")
        for block in blocks_of(message):
            if is_kind(block, _NOT_EXPORTED):
                continue
            if is_tool_result(block):
                out += _result_markdown(block, redactor, tool_names)
                continue
            if is_summary_block(block):
                out += _summary_markdown(block, redactor)
                speaker = None
                continue
            if role != speaker:
                out += ["## User" if role == "user" else "## Assistant", ""]
                speaker = role
            out += _block_markdown(block, redactor, tool_names)
    return "\n".join(out).rstrip() + "\n"


def _summary_markdown(block: Mapping[str, Any], redactor: Redactor) -> list[str]:
    """A compaction: from here on the model saw this summary instead of what is above it."""
    text = redactor.text(str(block.get("text", ""))).strip()
    quoted = [f"> {line}" if line else ">" for line in text.splitlines()]
    return ["## Compaction", "", "*The messages above were summarised for the model as:*", "", *quoted, ""]


def _result_markdown(block: Mapping[str, Any], redactor: Redactor, tool_names: Mapping[str, str]) -> list[str]:
    name = tool_names.get(str(block.get("tool_use_id")), "tool")
    label = "Error" if block.get("is_error") else "Result"
    body = redactor.text(_result_text(block.get("content")))
    return [f"**{label}** of `{name}`:", "", *_fence(body, ""), ""]


def _block_markdown(block: Mapping[str, Any], redactor: Redactor, tool_names: dict[str, str]) -> list[str]:
    """One text, tool call or other block of a turn; records each tool call's name in `tool_names`."""
    kind = kind_of(block)
    if is_text(block):
        text = redactor.text(str(block.get("text", ""))).strip()
        return [text, ""] if text else []
    if is_tool_use(block):
        name = str(block.get("name", "tool"))
        tool_names[str(block.get("id"))] = name
        return [f"**Tool call** `{name}`", "", *_fence(_json_text(block.get("input", {}), redactor), "json"), ""]
    if kind in _PLACEHOLDER_ONLY:
        return [f"*[{kind}]*", ""]
    return [f"*[{kind}]*", "", *_fence(_json_text(block, redactor), "json"), ""]


def _json_text(value: Any, redactor: Redactor) -> str:
    return json.dumps(redactor.json(value), indent=2, ensure_ascii=False, default=str)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if is_text(item):
                parts.append(str(item.get("text", "")))
            elif isinstance(item, dict):
                parts.append(f"[{item.get('type', 'content')}]")
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _fence(body: str, info_string: str) -> list[str]:
    """`body` in a code fence longer than any backtick run inside it (CommonMark)."""
    longest = max((len(m) for m in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info_string, body.rstrip("\n"), fence]
