"""The conversation's types: messages and their blocks as the Messages API takes them, and the guards
that tell one block kind from another.

The shapes mirror the SDK's param TypedDicts (`anthropic.types.MessageParam`, `TextBlockParam`,
`ToolUseBlockParam`, `ToolResultBlockParam`, `ThinkingBlockParam`, ...) but are declared here:
the loop's UI-free modules are imported by the TUI before its first paint, which must not wait
for the SDK; and stored content is always a list (the SDK's is `str | Iterable`), so the history
can be concatenated and indexed without conversion.

A block's kind is its `"type"` tag and nothing else: every test of that tag is one of the guards
below. They check the tag only, never the other fields, so a block read from a transcript is
sorted exactly as before; whether its fields are whole is the loader's question
(`transcripts/records.py`). Anything may be passed to a guard (a transcript line can hold a
string where a block should be): what is not a mapping is no kind of block.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NotRequired, Required, TypeAlias, TypedDict, TypeGuard

from cmdop_tui.support.images import MEDIA_TYPES

Role: TypeAlias = Literal["user", "assistant"]
# A tool's input and a tool call's JSON object: the tool's own schema gives it a shape, not this one.
JsonObject: TypeAlias = dict[str, object]


class CacheControl(TypedDict):
    type: Literal["ephemeral"]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: JsonObject
    cache_control: NotRequired[CacheControl]


class Base64ImageSource(TypedDict):
    type: Literal["base64"]
    media_type: str  # one of support/images.py MEDIA_TYPES
    data: str


class UrlImageSource(TypedDict):
    type: Literal["url"]
    url: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: Base64ImageSource | UrlImageSource
    cache_control: NotRequired[CacheControl]


# What a tool result's content list may hold, of what the API takes there (text and images).
ResultPart: TypeAlias = TextBlock | ImageBlock


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ResultPart]
    is_error: NotRequired[bool]
    cache_control: NotRequired[CacheControl]


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: str
    cache_control: NotRequired[CacheControl]


class RedactedThinkingBlock(TypedDict):
    type: Literal["redacted_thinking"]
    data: str
    cache_control: NotRequired[CacheControl]


class CompactionBlock(TypedDict):
    """The endpoint's own compaction of everything before it (its summary in `content`)."""

    type: Literal["compaction"]
    content: NotRequired[str]
    cache_control: NotRequired[CacheControl]


# Every kind may carry a cache breakpoint: it goes on the last block of a user turn, whatever its kind.
Block: TypeAlias = (
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock | CompactionBlock
)


class Message(TypedDict):
    role: Role
    content: list[Block]


class TextMessage(TypedDict):
    """A message whose content is one string, as the API also takes it (a one-off request's)."""

    role: Role
    content: str


class ApiRequest(TypedDict, total=False):
    """The keyword arguments of one `client.messages.create` (`agent/request.py` builds them)."""

    model: Required[str]
    max_tokens: Required[int]
    system: str | list[TextBlock]
    messages: Required[Sequence[Message | TextMessage]]
    tools: list[JsonObject]
    tool_choice: JsonObject
    betas: list[str]
    context_management: JsonObject
    thinking: JsonObject
    extra_body: JsonObject  # what the SDK has no keyword for (temperature)


ROLES: frozenset[str] = frozenset({"user", "assistant"})
# One change of the conversation as a transcript line stores it: its "op" ("append", "replace",
# "compact", ...) and that op's fields (`history.Conversation` tells them, `apply` replays them).
OperationRecord: TypeAlias = dict[str, object]


def kind_of(block: object) -> str | None:
    """The block's `"type"` tag (None for what is not a block, or has no tag)."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def is_text(block: object) -> TypeGuard[TextBlock]:
    return kind_of(block) == "text"


def is_blank_text(block: object) -> bool:
    """A text block the API refuses: no text, or only whitespace."""
    if not is_text(block):
        return False
    text = block.get("text")
    return not isinstance(text, str) or not text.strip()


def is_image(block: object) -> TypeGuard[ImageBlock]:
    return kind_of(block) == "image"


def is_sendable_image(block: object) -> TypeGuard[ImageBlock]:
    """An image block the API takes: base64 data of one of its media types, or a URL."""
    if not is_image(block):
        return False
    source: object = block.get("source")
    if not isinstance(source, Mapping):
        return False
    if source.get("type") == "base64":
        return source.get("media_type") in MEDIA_TYPES and isinstance(source.get("data"), str) and bool(source["data"])
    return source.get("type") == "url" and isinstance(source.get("url"), str) and bool(source["url"])


def is_tool_use(block: object) -> TypeGuard[ToolUseBlock]:
    return kind_of(block) == "tool_use"


def is_tool_result(block: object) -> TypeGuard[ToolResultBlock]:
    return kind_of(block) == "tool_result"


def is_thinking(block: object) -> TypeGuard[ThinkingBlock]:
    return kind_of(block) == "thinking"


def is_compaction(block: object) -> TypeGuard[CompactionBlock]:
    return kind_of(block) == "compaction"


def are_blocks(value: object) -> TypeGuard[list[Block]]:
    """Whether `value` is a list of blocks, each a mapping with a string tag (their other fields
    are not checked: a block of a kind this version does not know is kept as it is)."""
    return isinstance(value, list) and all(kind_of(b) is not None for b in value)


def are_messages(value: object) -> TypeGuard[list[Message]]:
    """Whether `value` is a list of stored messages: a known role and a list of blocks each."""
    return isinstance(value, list) and all(
        isinstance(m, Mapping) and m.get("role") in ROLES and are_blocks(m.get("content")) for m in value
    )


def is_kind(block: object, kinds: Iterable[str]) -> bool:
    """Whether the block's tag is one of `kinds`."""
    return kind_of(block) in set(kinds)


# --- building and reading blocks -------------------------------------------------------------


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def image_block(media_type: str, data: str) -> ImageBlock:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def tool_result_block(
    tool_use_id: str, content: str, is_error: bool = False, images: Sequence[ImageBlock] = ()
) -> ToolResultBlock:
    """A tool result: its text alone as a string (as it always was), or its text then its images."""
    text = content or "(no output)"
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if images:
        block["content"] = [text_block(text), *images]
    if is_error:
        block["is_error"] = True
    return block


def result_images(block: Mapping[str, object]) -> list[ImageBlock]:
    """The image blocks of a tool result's content."""
    content = block.get("content")
    return [part for part in content if is_image(part)] if isinstance(content, list) else []


def blocks_of(message: Mapping[str, object]) -> list[Block]:
    """A message's blocks as a list (a string content, as the API also allows, is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [text_block(content)] if content else []
    return list(content) if isinstance(content, list) else []


def text_of(block: object) -> str:
    """The text of a text block ("" for any other block, or a text block without its text)."""
    return str(block.get("text", "")) if is_text(block) else ""


def result_content_text(content: object) -> str:
    """A tool result's content as plain text: a string as it is, the texts of a list's parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(part) for part in content)
    return ""


def tool_uses(blocks: Iterable[object]) -> list[ToolUseBlock]:
    return [b for b in blocks if is_tool_use(b)]


def tool_results(blocks: Iterable[object]) -> list[ToolResultBlock]:
    return [b for b in blocks if is_tool_result(b)]


def result_for(blocks: Iterable[object], call_id: str) -> ToolResultBlock | None:
    """The tool result among `blocks` that answers the call `call_id`."""
    return next((b for b in tool_results(blocks) if b.get("tool_use_id") == call_id), None)


def message_text(message: Mapping[str, object]) -> str:
    """The plain text of a message (text blocks only)."""
    return "".join(text_of(b) for b in blocks_of(message))
