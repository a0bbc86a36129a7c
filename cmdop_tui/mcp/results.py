"""What an MCP server answers, as the `ToolResult` the model reads: a tool's `CallToolResult`, a
resource read (`ReadResourceResult`) and a resource listing.

- Text blocks are joined; `isError` is `is_error`.
- An image (a block, or an embedded resource's blob of an image type) goes as an image block the
  model sees, when its bytes are a JPEG, PNG, GIF or WebP (the kind read from the bytes, not the
  server's word) and valid base64; it is named in the text too (`[image: image/png, 4 kB,
  16x16]`). One the model cannot take is described instead; images past the bounds are left out
  and said (`ToolResult.bounded`).
- Audio is named only: the Messages API takes no audio in a tool result.
- A resource link names its URI and the tool that reads it (`mcp__SERVER__read_resource`).
- An embedded resource: its text inline (bounded); a blob decoded by its MIME type: text-like
  types as text, images as images, anything else described with its size.
- Structured content, when the result has no text, as compact JSON, with every long base64
  string in it replaced by a note of its size and kind; a text that is the structured content
  serialised (as the spec asks servers to send it) the same way.

The text is made inert (no terminal sequences) and cut in the middle past `OUTPUT_LIMIT`
characters, as command output is.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types

from cmdop_tui.support.images import decode_head, decoded_size, sniff
from cmdop_tui.support.text import strip_terminal_sequences, truncate_middle
from cmdop_tui.tools.base import ResultImage, ToolResult, first_line, size_text
from cmdop_tui.tools.outcome import OutcomeKind, ToolOutcome

OUTPUT_LIMIT = 50_000  # characters of one result the model gets
RESOURCE_TEXT_LIMIT = 20_000  # characters of one embedded or read resource's text
LISTED_RESOURCES = 200  # resources (and templates) named in one listing
BASE64_MIN = 200  # a string in structured content this long that is base64 is described, not given
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_DATA_URI = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(?:;[\w=.+-]+)*;base64,", re.IGNORECASE)
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
        "application/csv",
    }
)


class _Parts:
    """What a result says, gathered in order: lines of text and the images they name."""

    def __init__(self, reader: str | None) -> None:
        self.reader = reader
        self.texts: list[str] = []
        self.images: list[ResultImage] = []

    def add(self, text: str) -> None:
        if text:
            self.texts.append(text)

    def image(self, data: str, declared: str | None, label: str = "image") -> None:
        """An image the model sees, if it can; else a line saying what it was."""
        clean = "".join(data.split())
        facts = sniff(decode_head(clean))
        size = size_text(decoded_size(clean))
        if facts is None or not _is_base64(clean):
            self.add(f"[{label}: {declared or 'unknown type'}, {size}: not sent, not a JPEG, PNG, GIF or WebP]")
            return
        image = ResultImage(facts.media_type, clean, facts.width, facts.height)
        self.images.append(image)
        self.add(image.note if label == "image" else f"[{label}]\n{image.note}")

    def result(self, is_error: bool = False, keep: Callable[[str], object] = lambda text: None) -> ToolResult:
        """The result the model gets; the whole text, when it is cut, to `keep` (the session's
        kept outputs, which the output view pages through)."""
        text = "\n".join(self.texts)
        if not text:
            text = "(the tool reported an error and said nothing more)" if is_error else "(no output)"
        text = strip_terminal_sequences(text)
        if len(text) > OUTPUT_LIMIT:
            keep(text)
        text = truncate_middle(text, OUTPUT_LIMIT)
        # A server's tool that says it failed (isError): the reason its first line, so it reads whole.
        outcome = (
            ToolOutcome(OutcomeKind.FAILED, f"the tool reported an error: {first_line(text)}") if is_error else None
        )
        return ToolResult(text, is_error=is_error, images=tuple(self.images), outcome=outcome).bounded()


def tool_result(
    result: types.CallToolResult, reader: str | None = None, keep: Callable[[str], object] = lambda text: None
) -> ToolResult:
    """What the model gets for `result`; `reader` is the model's name of the tool that reads
    this server's resources (None: it offers none); `keep` takes the whole text of one cut."""
    parts = _Parts(reader)
    structured = result.structured_content
    for block in result.content:
        if structured is not None and isinstance(block, types.TextContent) and _says(block.text, structured):
            parts.add(compact_json(structured))  # the same JSON, without its base64 and spaces
        else:
            _block(parts, block)
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    if result.structured_content is not None and not has_text:
        parts.add(compact_json(result.structured_content))
    return parts.result(is_error=bool(result.is_error), keep=keep)


def _says(text: str, structured: object) -> bool:
    """Whether `text` is the structured content serialised (as the spec asks servers to send it)."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False


def resource_result(result: types.ReadResourceResult, reader: str | None = None) -> ToolResult:
    """What the model gets for a resource it read (each of its contents, as an embedded one)."""
    parts = _Parts(reader)
    for contents in result.contents:
        _resource(parts, contents)
    if not result.contents:
        parts.add("(the resource is empty)")
    return parts.result()


def resources_listing(
    resources: Sequence[types.Resource], templates: Sequence[types.ResourceTemplate], reader: str
) -> ToolResult:
    """The server's resources, one a line, and its URI templates; `reader` reads any of them."""
    lines = [f"{len(resources)} resource{'s' if len(resources) != 1 else ''}; read one with {reader}(uri):"]
    lines += [_listed(item.uri, item) for item in resources[:LISTED_RESOURCES]]
    if len(resources) > LISTED_RESOURCES:
        lines.append(f"... and {len(resources) - LISTED_RESOURCES} more")
    if templates:
        lines.append(f"{len(templates)} URI template{'s' if len(templates) != 1 else ''} (fill in the {{names}}):")
        lines += [_listed(item.uri_template, item) for item in templates[:LISTED_RESOURCES]]
    return ToolResult(truncate_middle(strip_terminal_sequences("\n".join(lines)), OUTPUT_LIMIT))


def _listed(uri: str, item: types.Resource | types.ResourceTemplate) -> str:
    facts = [item.mime_type or ""]
    if isinstance(item, types.Resource) and item.size is not None:
        facts.append(size_text(item.size))
    said = ", ".join(fact for fact in facts if fact)
    line = f"- {uri}" + (f" ({item.name})" if item.name and item.name != uri else "") + (f" [{said}]" if said else "")
    description = " ".join((item.description or "").split())
    return f"{line}: {description[:200]}" if description else line


def _block(parts: _Parts, block: Any) -> None:
    if isinstance(block, types.TextContent):
        parts.add(block.text)
    elif isinstance(block, types.ImageContent):
        parts.image(block.data, block.mime_type)
    elif isinstance(block, types.AudioContent):
        parts.add(f"[audio: {block.mime_type}, {size_of(block.data)}: not sent, the model takes no audio; not kept]")
    elif isinstance(block, types.ResourceLink):
        parts.add(_link(block, parts.reader))
    elif isinstance(block, types.EmbeddedResource):
        _resource(parts, block.resource)
    else:
        parts.add(f"[{getattr(block, 'type', type(block).__name__)} content]")


def _link(link: types.ResourceLink, reader: str | None) -> str:
    named = f" ({link.name})" if link.name and link.name != link.uri else ""
    facts = ", ".join(fact for fact in (link.mime_type, size_text(link.size) if link.size else None) if fact)
    how = f"read it with {reader}" if reader else "this server offers no way to read it"
    return f"[resource link: {link.uri}{named}{', ' + facts if facts else ''}: {how}]"


def _resource(parts: _Parts, resource: types.TextResourceContents | types.BlobResourceContents) -> None:
    """An embedded (or read) resource: text inline, a blob by its MIME type."""
    mime = resource.mime_type
    heading = f"resource: {resource.uri}" + (f", {mime}" if mime else "")
    if isinstance(resource, types.TextResourceContents):
        parts.add(f"[{heading}]\n{truncate_middle(resource.text, RESOURCE_TEXT_LIMIT)}")
        return
    blob = resource.blob
    head = decode_head(blob)
    if (mime or "").startswith("image/") or (not mime and sniff(head) is not None):
        parts.image(blob, mime, label=heading)
    elif _is_text_type(mime) or (not mime and _looks_like_text(head)):
        text = _decoded(blob)
        if text is None:
            parts.add(f"[{heading}, {size_of(blob)}: not valid base64, not shown]")
        else:
            parts.add(f"[{heading}]\n{truncate_middle(text, RESOURCE_TEXT_LIMIT)}")
    else:
        parts.add(f"[{heading}, {size_of(blob)}: binary, not shown]")


def _is_text_type(mime: str | None) -> bool:
    if not mime:
        return False
    essence, _, parameters = mime.lower().partition(";")
    essence = essence.strip()
    return (
        essence.startswith("text/")
        or essence in _TEXT_TYPES
        or essence.endswith(("+json", "+xml", "+yaml"))
        or "charset=" in parameters
    )


def _looks_like_text(head: bytes) -> bool:
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # only a character cut at the end of the head
    return True


def _decoded(blob: str) -> str | None:
    try:
        return base64.b64decode("".join(blob.split()), validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return None


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# --- structured content -------------------------------------------------------------------------


def compact_json(value: Any) -> str:
    """`value` as compact JSON (no spaces, no indentation), each long base64 string in it (or
    a `data:` URI) replaced by a note of its size and kind: a model reads neither."""
    return json.dumps(_described(value), ensure_ascii=False, separators=(",", ":"), default=str)


def _described(value: Any) -> Any:
    if isinstance(value, str):
        return _base64_note(value) or value
    if isinstance(value, dict):
        return {key: _described(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_described(item) for item in value]
    return value


def _base64_note(text: str) -> str | None:
    """`[base64: 12 kB, image/png]` for a long base64 string or data URI; None for other text."""
    declared = None
    data = text
    if match := _DATA_URI.match(text):
        declared, data = match.group(1), text[match.end() :]
    data = "".join(data.split())
    if len(data) < BASE64_MIN or not _BASE64.fullmatch(data) or (not declared and data.isalpha()):
        return None
    head = decode_head(data.replace("-", "+").replace("_", "/"))
    if not head:
        return None
    facts = sniff(head)
    kind = facts.media_type if facts else declared or ("text" if _looks_like_text(head) else "binary")
    return f"[base64: {size_text(decoded_size(data))}, {kind}]"


def size_of(base64_data: str) -> str:
    """The size of what `base64_data` encodes, for people: `812 B`, `12 kB`, `3.4 MB`."""
    return size_text(decoded_size(base64_data))
