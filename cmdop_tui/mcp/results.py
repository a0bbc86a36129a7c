"""An MCP `CallToolResult` as the `ToolResult` the model reads.

Text blocks are joined; images, audio and blobs are described (`[image: image/png, 12 kB]`);
resources are named (`[resource: URI]`) with their embedded text; structured content is given
as JSON when the result has no text; `isError` is `is_error`. The text is made inert (no
terminal sequences) and cut in the middle past `OUTPUT_LIMIT` characters, as command output is.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from cmdop_tui.support.text import strip_terminal_sequences, truncate_middle
from cmdop_tui.tools.base import ToolResult

OUTPUT_LIMIT = 50_000  # characters of one result the model gets


def tool_result(result: types.CallToolResult) -> ToolResult:
    """What the model gets for `result`."""
    parts = [_block(block) for block in result.content]
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2, default=str))
    text = "\n".join(part for part in parts if part)
    if not text:
        text = "(the tool reported an error and said nothing more)" if result.is_error else "(no output)"
    text = truncate_middle(strip_terminal_sequences(text), OUTPUT_LIMIT)
    return ToolResult(text, is_error=bool(result.is_error))


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {size_of(block.data)}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {size_of(block.data)}]"
    if isinstance(block, types.ResourceLink):
        named = f" ({block.name})" if block.name and block.name != block.uri else ""
        return f"[resource link: {block.uri}{named}]"
    if isinstance(block, types.EmbeddedResource):
        return _resource(block.resource)
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content]"


def _resource(resource: types.TextResourceContents | types.BlobResourceContents) -> str:
    if isinstance(resource, types.TextResourceContents):
        return f"[resource: {resource.uri}]\n{resource.text}"
    mime = f"{resource.mime_type}, " if resource.mime_type else ""
    return f"[resource: {resource.uri}, {mime}{size_of(resource.blob)}]"


def size_of(base64_data: str) -> str:
    """The size of what `base64_data` encodes, for people: `812 B`, `12 kB`, `3.4 MB`."""
    data = base64_data.strip()
    count = max(0, len(data) * 3 // 4 - data[-2:].count("="))
    if count < 1000:
        return f"{count} B"
    if count < 1_000_000:
        return f"{round(count / 1000)} kB"
    return f"{count / 1_000_000:.1f} MB"
