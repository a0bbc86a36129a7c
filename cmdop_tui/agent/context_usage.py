"""What fills the context: the system prompt and tools, a summary, the conversation, tool outputs.

Token counts are estimates, about four characters a token (the SDK has no local tokenizer), and
an image (width * height) / 750 tokens, as the API counts it; the real count of the last request
comes with its usage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cmdop_tui.agent.messages import Block, ImageBlock, Message, blocks_of, is_image, is_tool_result, result_images
from cmdop_tui.support.images import MAX_IMAGE_TOKENS, decode_head, decoded_size, image_tokens, sniff

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A rough token count for `text` (the SDK has no local tokenizer)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def block_tokens(block: Block) -> int:
    """A rough token count for a block: its JSON, but an image (alone or in a tool result) as
    the model counts it, by its pixels (`support/images.py`), never by its base64."""
    images = result_images(block) if is_tool_result(block) else [block] if is_image(block) else []
    if not images:
        return estimate_tokens(json.dumps(block, ensure_ascii=False))
    if is_image(block):
        return image_block_tokens(block)
    parts = block.get("content")
    rest = {**block, "content": [part for part in parts if not is_image(part)] if isinstance(parts, list) else parts}
    return estimate_tokens(json.dumps(rest, ensure_ascii=False)) + sum(image_block_tokens(image) for image in images)


def message_tokens(message: Mapping[str, object]) -> int:
    """A rough token count for a message (its blocks, as `block_tokens` counts them)."""
    return sum(block_tokens(block) for block in blocks_of(message)) + 4


def image_block_tokens(block: ImageBlock) -> int:
    source = block.get("source")
    data = source.get("data") if isinstance(source, Mapping) else None
    return _image_tokens(data) if isinstance(data, str) else MAX_IMAGE_TOKENS


_WEIGHED: dict[tuple[int, int], int] = {}  # the same images are weighed at every request
_WEIGHED_MAX = 1024


def _image_tokens(data: str) -> int:
    key = (hash(data), len(data))  # a str keeps its hash; the key holds no reference to the image
    tokens = _WEIGHED.get(key)
    if tokens is None:
        facts = sniff(decode_head(data))
        size = decoded_size(data)
        tokens = image_tokens(facts.width, facts.height, size) if facts else image_tokens(None, None, size)
        if len(_WEIGHED) >= _WEIGHED_MAX:
            _WEIGHED.clear()
        _WEIGHED[key] = tokens
    return tokens


@dataclass(frozen=True)
class ContextUsage:
    """Tokens by what they are; `summary` is what earlier turns were summarised into."""

    system_and_tools: int = 0
    summary: int = 0
    conversation: int = 0
    tool_outputs: int = 0

    @property
    def total(self) -> int:
        return self.system_and_tools + self.summary + self.conversation + self.tool_outputs


def measure(
    system: str, tools: Sequence[Mapping[str, object]], messages: list[Message], summary: str = ""
) -> ContextUsage:
    """Estimate what a request made of these parts holds."""
    outputs = 0
    rest = 0
    for message in messages:
        for block in blocks_of(message):
            size = block_tokens(block)
            if is_tool_result(block):
                outputs += size
            else:
                rest += size
    return ContextUsage(
        system_and_tools=estimate_tokens(system) + estimate_tokens(json.dumps(tools, ensure_ascii=False)),
        summary=estimate_tokens(summary),
        conversation=rest,
        tool_outputs=outputs,
    )
