"""A local fake of the Anthropic Messages API that speaks the real wire format.

Tests talk to it through the unmodified ``anthropic`` SDK over real HTTP, so the
SDK's own request building, SSE parsing, error mapping and retry logic are exercised::

    server = FakeAnthropic().start()           # or the ``fake_api`` fixture
    server.enqueue(text_reply("Hello there"), tool_reply("bash", {"command": "ls"}))
    client = anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
    ...
    server.stop()

Each ``POST /v1/messages`` pops the next scripted :class:`Reply` (or calls a queued
``callable(body) -> Reply``). Requests are validated like the real API does; a rejected
request gets a 400 ``invalid_request_error`` and is recorded in ``invalid_requests`` (the
``fake_api`` fixture fails the test on those unless ``expect_invalid`` is set). That
includes a top-level field the real API does not know ("<field>: Extra inputs are not
permitted"; beta fields such as ``context_management`` or ``mcp_servers`` need an
``anthropic-beta`` header, as ``client.beta.messages.create(betas=[...])`` sends) and a
``max_tokens`` above a registered model's ``max_tokens``.

Answers the client must handle, which consume no scripted reply and do not fail the test
(each kept in its own list on the server):

context limit (``too_long``)
    ``FakeAnthropic(context_window=N)``, ``server.context_windows = {"model-id": N}`` or a
    registered model's ``max_input_tokens``: a request whose input estimate
    (:func:`estimate_input_tokens`, the same figure usage reports) exceeds it gets 400
    "prompt is too long: N tokens > M maximum", recorded as ``(N, M)``.
unsupported fields (``unsupported``)
    ``server.unsupported_fields = {"context_management"}``: a body with such a top-level
    field gets 400 "context_management: Extra inputs are not permitted", as from an
    endpoint or account without the feature (so a client can try it and fall back).
request size (``too_large``)
    ``server.max_request_bytes = N``: a larger body gets 413 ``request_too_large``
    (``anthropic.ContentTooLargeError``); ``error_reply(413)`` scripts the same answer.

Other endpoints, recorded apart so ``requests`` stays the list of Messages requests:

``POST /v1/messages/count_tokens`` (``count_requests``)
    Validated like a Messages request where it applies (no ``max_tokens``; its own set of
    fields); answers ``{"input_tokens": N}`` with the same estimate (plus
    ``context_management.original_input_tokens`` when that field is sent). No context limit.
``GET /v1/models`` and ``GET /v1/models/{id}`` (``model_requests``)
    ``server.models = {"claude-sonnet-5-5": ModelSpec(max_input_tokens=200_000,
    max_tokens=64_000, context_management=True)}`` registers models; retrieve answers the
    real ``ModelInfo`` JSON (``capabilities`` included), an unknown id 404
    ``not_found_error``; list answers the real page format (newest first; ``limit``,
    ``after_id``, ``before_id``, ``lifecycle``). ``server.models_api = False`` answers 404
    to all of them, like an endpoint without the Models API.

A request carrying ``context_management`` (beta) is answered normally; a ``compact_20260112``
edit whose trigger the request passes puts a ``compaction`` block first in the reply (its
content: "Server summary of N messages."; recorded in ``server_compactions``); the other edits
are not applied, and the answer has ``context_management: {"applied_edits": [...]}`` (the non-
streaming message, or the streamed ``message_delta``) with the reply's ``applied_edits``
option (default none), e.g. ``text_reply("ok", applied_edits=[{"type":
"clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 900}])``.

Reply builders: :func:`text_reply`, :func:`tool_reply`, :func:`reply` (with the block
helpers :func:`text`, :func:`tool_use`, :func:`raw_tool_use`, :func:`thinking`),
:func:`error_reply`, :func:`html_error`, :func:`body_reply` and :func:`stream_error`. A reply's
``stop_reason=""`` is sent as null (a compatible server that does not say why it stopped). Every
builder takes these options:

``stall_after=N``
    Streaming: send N SSE events, then hold the connection open. Without a gate it is
    held until the server stops; with a gate, until the gate is set, after which the
    connection is dropped mid-body (the client sees ``httpx2.RemoteProtocolError``) unless
    ``gate_release_continues=True``, in which case the rest of the stream is sent.
    Non-streaming: the same, before the status line.
``gate=threading.Event()``
    Without ``stall_after``: hold before the first byte until the gate is set, then answer.
``hang_before_headers=True``
    Hold before the status line (until ``gate`` is set, or forever without one), for
    connect/first-byte timeout tests.
``delay_s``
    Pause before every ``content_block_delta`` (slow streams).
``dribble="head"`` / ``dribble="body"``
    An endpoint that is alive and goes nowhere: one byte every ``dribble_every_s`` (default
    0.05 s) until stop(), after the status line (an endless header: the headers never end) or
    after the first SSE event (an endless SSE comment: no further event is ever complete).
``model``, ``headers``
    Override the echoed model; add response headers (e.g. ``{"retry-after": "0"}``).
``applied_edits``
    The ``context_management.applied_edits`` to report (see above).

``stop()`` is prompt: it sets every gate a held reply waits on, shuts down open
connections and joins the handler threads. Usage figures are estimates (about four
characters a token) with a simulated prompt cache; see :meth:`FakeAnthropic._account`.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import secrets
import socket
import string
import sys
import threading
import time
import traceback
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_API_KEY = "sk-ant-test-fake-key-0123456789"
MAX_CACHE_BREAKPOINTS = 4
NO_REPLY_LEFT = "fake server: no scripted reply left"

_ALPHABET = string.ascii_letters + string.digits
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")  # a tool_use id, and the tool_use_id of its result
_DOCS = "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
_ERROR_TYPE = {status: kind for kind, status in _ERROR_STATUS.items()}
_DEFAULT_MESSAGE = {"request_too_large": "Request exceeds the maximum allowed number of bytes."}

# Top-level request fields the real API knows (those the SDK 2.14 sends, plus the sampling
# fields the API still takes but the SDK has no keyword for). Beta fields need an
# ``anthropic-beta`` header (any value, as ``client.beta.messages`` sends); anything else
# answers 400 "<field>: Extra inputs are not permitted".
MESSAGES_FIELDS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "stream",
        "stop_sequences",
        "metadata",
        "service_tier",
        "container",
        "cache_control",
        "diagnostics",
        "inference_geo",
        "output_config",
        "speed",
        "temperature",
        "top_k",
        "top_p",
    }
)
BETA_MESSAGES_FIELDS = frozenset(
    {
        "context_management",
        "mcp_servers",
        "compaction",
        "billing_policy",
        "fallbacks",
        "fallback_credit_token",
        "thread",
        "output_format",
    }
)
COUNT_TOKENS_FIELDS = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control", "output_config", "speed"}
)
BETA_COUNT_TOKENS_FIELDS = frozenset({"context_management", "mcp_servers", "compaction", "billing_policy"})


def new_id(prefix: str) -> str:
    """A realistic id such as ``toolu_01Abc...`` (prefix + ``01`` + 22 base62 characters)."""
    return prefix + "01" + "".join(secrets.choice(_ALPHABET) for _ in range(22))


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _pieces(s: str, size: int) -> list[str]:
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _split_text(s: str, chunk_size: int | None) -> list[str]:
    """Split text into deltas: ``chunk_size`` characters each, or about three words each."""
    if chunk_size:
        return _pieces(s, chunk_size)
    words = re.findall(r"\s+|\S+\s*", s)
    return ["".join(words[i : i + 3]) for i in range(0, len(words), 3)] or [""]


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class TextBlock:
    """A ``text`` content block, streamed as ``text_delta`` events."""

    text: str
    chunk_size: int | None = None

    def start(self) -> dict:
        return {"type": "text", "text": ""}

    def deltas(self) -> list[dict]:
        return [{"type": "text_delta", "text": p} for p in _split_text(self.text, self.chunk_size)]

    def final(self) -> dict:
        return {"type": "text", "text": self.text}

    def output_chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class ToolUseBlock:
    """A ``tool_use`` block. ``input_json`` is streamed verbatim in several
    ``input_json_delta`` pieces (after an empty first piece, as the real API does); it may
    be invalid JSON (see :func:`raw_tool_use`)."""

    name: str
    input_json: str
    id: str

    @property
    def input(self) -> Any:
        """The parsed input, or the raw string if ``input_json`` is not valid JSON."""
        try:
            return json.loads(self.input_json)
        except ValueError:
            return self.input_json

    def start(self) -> dict:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": {}}

    def deltas(self) -> list[dict]:
        size = max(1, -(-len(self.input_json) // 4))  # about four pieces
        return [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(self.input_json, size)]]

    def final(self) -> dict:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}

    def output_chars(self) -> int:
        return len(self.name) + len(self.input_json)


@dataclass(frozen=True)
class ThinkingBlock:
    """A ``thinking`` block: ``thinking_delta`` events, then one ``signature_delta``."""

    thinking: str
    signature: str
    chunk_size: int | None = None

    def start(self) -> dict:
        return {"type": "thinking", "thinking": "", "signature": ""}

    def deltas(self) -> list[dict]:
        parts = _split_text(self.thinking, self.chunk_size)
        return [{"type": "thinking_delta", "thinking": p} for p in parts] + [
            {"type": "signature_delta", "signature": self.signature}
        ]

    def final(self) -> dict:
        return {"type": "thinking", "thinking": self.thinking, "signature": self.signature}

    def output_chars(self) -> int:
        return len(self.thinking)


def text(text: str, *, chunk_size: int | None = None) -> TextBlock:
    """A text block (deltas of ``chunk_size`` characters, or about three words each)."""
    return TextBlock(text, chunk_size)


def tool_use(name: str, input: Any, id: str | None = None) -> ToolUseBlock:
    """A tool_use block; ``id`` defaults to a fresh ``toolu_01...`` (fixed at build time,
    so read it back from ``block.id``; build a new reply for each turn)."""
    return ToolUseBlock(name, json.dumps(input), id or new_id("toolu_"))


def raw_tool_use(name: str, partial_json: str, id: str | None = None) -> ToolUseBlock:
    """A tool_use block whose streamed input is ``partial_json`` verbatim, valid or not.

    The SDK's stream helper raises ``ValueError`` on JSON it cannot parse, but its partial
    parser silently turns a truncated value (``'{"command": "ls'``) into ``{}``. A
    non-streaming answer carries the raw string as ``input`` when it is not valid JSON."""
    return ToolUseBlock(name, partial_json, id or new_id("toolu_"))


def thinking(text: str, signature: str | None = None, *, chunk_size: int | None = None) -> ThinkingBlock:
    """A thinking block; the default signature is a realistic-looking base64 string."""
    if signature is None:
        signature = "Eq" + base64.b64encode(hashlib.sha256(text.encode()).digest() * 2).decode()
    return ThinkingBlock(text, signature, chunk_size)


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class CompactionBlock:
    """A ``compaction`` block (server-side compaction, beta ``compact_20260112``): the summary
    streams as one ``compaction_delta``, as the real API sends it."""

    content: str

    def start(self) -> dict:
        return {"type": "compaction", "content": None}

    def deltas(self) -> list[dict]:
        return [{"type": "compaction_delta", "content": self.content}]

    def final(self) -> dict:
        return {"type": "compaction", "content": self.content}

    def output_chars(self) -> int:
        return len(self.content)


Block = TextBlock | ToolUseBlock | ThinkingBlock | CompactionBlock


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the helpers below rather than directly;
    ``dataclasses.replace(r, gate=...)`` derives variants."""

    blocks: tuple[Block, ...] = ()
    stop_reason: str | None = None  # default: "tool_use" if any tool_use block, else "end_turn"
    stop_sequence: str | None = None
    status: int = 200
    error: Mapping[str, str] | None = None  # {"type", "message"} for error replies
    page: str | None = None  # an error answered as this HTML page, as a proxy in front of an API does
    page_type: str = "text/html"  # the content type `page` is sent with
    error_after_events: int | None = None  # stream_error: `event: error` after this many events
    headers: tuple[tuple[str, str], ...] = ()
    stall_after: int | None = None
    gate: threading.Event | None = None
    gate_release_continues: bool = False
    hang_before_headers: bool = False
    delay_s: float = 0.0
    dribble: str | None = None  # "head" or "body": one byte at a time, forever (see the docstring)
    dribble_every_s: float = 0.05
    model: str | None = None
    applied_edits: Sequence[Mapping[str, Any]] = ()  # echoed when the request has context_management

    @property
    def resolved_stop_reason(self) -> str | None:
        if self.stop_reason == "":
            return None  # sent as null, as a compatible server that does not say why it stopped
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"


ReplySource = Reply | Callable[[dict], Reply]


def reply(
    *blocks: Block,
    stop_reason: str | None = None,
    stop_sequence: str | None = None,
    delay_s: float = 0.0,
    headers: Mapping[str, str] | None = None,
    **options: Any,
) -> Reply:
    """A successful reply made of ``blocks`` (see the module docstring for ``options``)."""
    return Reply(
        blocks=tuple(blocks),
        stop_reason=stop_reason,
        stop_sequence=stop_sequence,
        delay_s=delay_s,
        headers=tuple((headers or {}).items()),
        **options,
    )


def text_reply(
    text: str,
    *,
    chunk_size: int | None = None,
    thinking: str | None = None,
    stop_reason: str | None = None,
    delay_s: float = 0.0,
    **options: Any,
) -> Reply:
    """A text answer, optionally preceded by a thinking block with ``thinking`` as its text."""
    blocks: list[Block] = [TextBlock(text, chunk_size)]
    if thinking is not None:
        blocks.insert(0, _thinking_block(thinking))
    return reply(*blocks, stop_reason=stop_reason, delay_s=delay_s, **options)


_thinking_block = thinking  # the parameter of text_reply shadows the helper


def tool_reply(name: str, input: Any, *, id: str | None = None, text: str | None = None, **options: Any) -> Reply:
    """A tool call (stop_reason ``tool_use``), optionally preceded by a text block."""
    blocks: list[Block] = [] if text is None else [TextBlock(text)]
    return reply(*blocks, tool_use(name, input, id), **options)


def error_reply(
    status: int,
    error_type: str | None = None,
    message: str | None = None,
    headers: Mapping[str, str] | None = None,
    **options: Any,
) -> Reply:
    """An HTTP error with the real envelope, e.g. ``error_reply(529)`` (overloaded_error),
    ``error_reply(429, headers={"retry-after": "0"})``, ``error_reply(413)`` (request_too_large,
    "Request exceeds the maximum allowed number of bytes.", as the real API answers a body over
    its size limit; the SDK raises ``anthropic.ContentTooLargeError``). ``error_type`` defaults
    from the status, ``message`` from the type."""
    kind = error_type or _ERROR_TYPE.get(status, "api_error")
    return Reply(
        status=status,
        error={"type": kind, "message": message or _DEFAULT_MESSAGE.get(kind, f"fake {kind}")},
        headers=tuple((headers or {}).items()),
        **options,
    )


def html_error(status: int, page: str, **options: Any) -> Reply:
    """An HTTP error answered with an HTML page (a load balancer's 502), not the API's envelope.
    With status 200, a page in place of any reply (a captive portal, a web server at the URL)."""
    if status == 200:
        return Reply(page=page, **options)
    return dataclasses.replace(error_reply(status, **options), page=page)


def body_reply(body: str, content_type: str, **options: Any) -> Reply:
    """A 200 with ``body`` of ``content_type`` in place of any reply, e.g. a whole message as
    ``application/json`` in answer to a streaming request (a server that does not stream)."""
    return Reply(page=body, page_type=content_type, **options)


def stream_error(
    error_type: str = "overloaded_error",
    after_events: int = 4,
    message: str = "Overloaded",
    *,
    text: str = "This answer is cut short by an error",
    **options: Any,
) -> Reply:
    """A 200 SSE stream of a text answer that sends ``after_events`` normal events
    (message_start, ping, content_block_start, deltas...) then ``event: error`` and ends.
    A non-streaming request gets the matching HTTP error (529, 500, ...) instead."""
    return Reply(
        blocks=(TextBlock(text),),
        error={"type": error_type, "message": message},
        error_after_events=after_events,
        **options,
    )


# --------------------------------------------------------------------------- validation


def _content_blocks(content: Any) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content if isinstance(content, list) else []


def _prefix_items(body: dict) -> list[tuple[Any, bool]]:
    """The cacheable prefix in the API's order (tools, system, message blocks), as
    ``(item, has_cache_control)``. A top-level ``cache_control`` (automatic caching) marks
    the last item."""
    items = [(t, isinstance(t, dict) and "cache_control" in t) for t in body.get("tools") or []]
    system = body.get("system")
    for b in _content_blocks(system) if system is not None else []:
        items.append((b, isinstance(b, dict) and "cache_control" in b))
    for m in body.get("messages") or []:
        for b in _content_blocks(m.get("content")):
            items.append(({"role": m.get("role"), "block": b}, isinstance(b, dict) and "cache_control" in b))
    if body.get("cache_control") and items:
        items[-1] = (items[-1][0], True)
    return items


def _check_top(body: Any, *, count: bool = False) -> str | None:
    if not isinstance(body, dict):
        return "There was an issue with the formatting of your request body: expected a JSON object"
    for key in ("model", "messages") if count else ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["model"], str) or not body["model"]:
        return "model: Input should be a valid string"
    mt = body.get("max_tokens", 1)
    if not isinstance(mt, int) or isinstance(mt, bool):
        return "max_tokens: Input should be a valid integer"
    if mt < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list):
            return "system: Input should be a valid string or a list of text blocks"
        for i, b in enumerate(system):
            if not isinstance(b, dict) or b.get("type") != "text" or not isinstance(b.get("text"), str):
                return f"system.{i}: Input should be a text block ({{'type': 'text', 'text': ...}})"
    return None


def _check_tools(body: dict) -> str | None:
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "tools: Input should be a valid list"
    names: set[str] = set()
    for i, t in enumerate(tools or []):
        if not isinstance(t, dict):
            return f"tools.{i}: Input should be a valid dictionary"
        if t.get("type") in (None, "custom"):
            if not isinstance(t.get("name"), str) or not _TOOL_NAME.match(t["name"]):
                return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            schema = t.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
        if t.get("name") in names:
            return "tools: Tool names must be unique."
        names.add(t.get("name"))
    choice = body.get("tool_choice")
    if choice is not None:
        if not tools:
            return "tool_choice: tool_choice may only be specified while providing tools."
        if isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("name") not in names:
            return f"tool_choice.tool.name: Tool '{choice.get('name')}' not found in tools"
    return None


def _check_sampling(body: dict) -> str | None:
    temp = body.get("temperature")
    if temp is not None:
        if not isinstance(temp, (int, float)) or isinstance(temp, bool):
            return "temperature: Input should be a valid number"
        if not 0 <= temp <= 1:
            return "temperature: Input should be " + (
                "greater than or equal to 0" if temp < 0 else "less than or equal to 1"
            )
    cfg = body.get("thinking")
    kind = cfg.get("type") if isinstance(cfg, dict) else None
    if kind == "enabled":
        budget = cfg.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool):
            return "thinking.enabled.budget_tokens: Field required"
        if budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if "max_tokens" in body and budget >= body["max_tokens"]:
            return f"`max_tokens` must be greater than `thinking.budget_tokens`. {_DOCS}#max-tokens-and-context-window-size"
    if kind in ("enabled", "adaptive"):
        if temp is not None and temp != 1:
            return f"`temperature` may only be set to 1 when thinking is enabled. {_DOCS}#feature-compatibility"
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def _check_messages(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    groups: list[tuple[str, list[tuple[int, int, dict]]]] = []  # consecutive same-role messages merged
    seen_ids: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"messages.{i}: Input should be a valid dictionary"
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        final_assistant = i == len(messages) - 1 and role == "assistant"
        if not isinstance(content, (str, list)):
            return f"messages.{i}.content: Input should be a valid string or a list of content blocks"
        if not content and not final_assistant:
            return f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        blocks = _content_blocks(content)
        for j, b in enumerate(blocks):
            where = f"messages.{i}.content.{j}"
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                return f"{where}: Input should be a content block object with a `type`"
            kind = b["type"]
            if kind == "text" and (not isinstance(b.get("text"), str) or not b["text"].strip()):
                return "messages: text content blocks must contain non-whitespace text"
            if kind in ("tool_use", "thinking", "redacted_thinking") and role != "assistant":
                return f"{where}: `{kind}` blocks are only allowed in assistant messages"
            if kind == "tool_result" and role != "user":
                return f"{where}: `tool_result` blocks are only allowed in user messages"
            if kind == "tool_result" and not _TOOL_ID.fullmatch(str(b.get("tool_use_id", ""))):
                return f"{where}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'"
            if kind == "tool_result" and (problem := _check_result_content(b.get("content"), f"{where}.tool_result")):
                return problem
            if kind == "image" and (problem := _check_image(b, f"{where}.image")):
                return problem
            if kind == "tool_use":
                if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
                    return f"{where}.tool_use: `id` and `name` are required strings"
                if not isinstance(b.get("input"), dict):
                    return f"{where}.tool_use.input: Input should be a valid dictionary"
                if not _TOOL_ID.fullmatch(b["id"]):
                    return f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                if b["id"] in seen_ids:
                    return f"{where}: `tool_use` ids must be unique"
                seen_ids.add(b["id"])
        if (
            final_assistant
            and blocks
            and blocks[-1].get("type") == "text"
            and blocks[-1]["text"] != blocks[-1]["text"].rstrip()
        ):
            return "messages: final assistant content cannot end with trailing whitespace"
        if groups and groups[-1][0] == role:
            groups[-1][1].extend((i, j, b) for j, b in enumerate(blocks))
        else:
            groups.append((role, [(i, j, b) for j, b in enumerate(blocks)]))
    for g, (role, blocks) in enumerate(groups):
        following = groups[g + 1][1] if g + 1 < len(groups) else []
        if role == "assistant":
            answered = {b.get("tool_use_id") for _, _, b in following if b["type"] == "tool_result"}
            missing = [b["id"] for _, _, b in blocks if b["type"] == "tool_use" and b["id"] not in answered]
            if missing:
                index = following[0][0] if following else blocks[-1][0] if blocks else len(messages) - 1
                return (
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    f"`tool_result` block in the next message."
                )
            continue
        previous = groups[g - 1][1] if g > 0 else []
        offered = {b["id"] for _, _, b in previous if b["type"] == "tool_use"}
        other_seen = False
        for i, j, b in blocks:
            if b["type"] != "tool_result":
                other_seen = True
                continue
            if b.get("tool_use_id") not in offered:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    f"`tool_use` block in the previous message."
                )
            if other_seen:
                return (
                    f"messages.{i}.content.{j}: `tool_result` blocks must come first in the user message, "
                    f"before any other content"
                )
    return None


# What a tool_result's content list takes (the SDK's ToolResultBlockParam.Content); text and
# images are checked in depth, the others by their tag only (the project sends neither).
RESULT_CONTENT_KINDS = ("browser_state", "document", "image", "search_result", "text", "tool_reference")
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
IMAGE_MAX_BASE64 = 5 * 1024 * 1024
IMAGE_MAX_SIDE = 8000
_IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def _check_result_content(content: Any, where: str) -> str | None:
    """A tool_result's content as the real API checks it: a string, or a list of the kinds it
    takes there, text not empty, images well formed."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where}.content: Input should be a valid string or a list of content blocks"
    for k, part in enumerate(content):
        at = f"{where}.content.{k}"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in RESULT_CONTENT_KINDS:
            expected = ", ".join(f"'{name}'" for name in RESULT_CONTENT_KINDS)
            return f"{at}: Input tag '{kind}' found using 'type' does not match any of the expected tags: {expected}"
        if kind == "text" and (not isinstance(part.get("text"), str) or not part["text"]):
            return "messages: text content blocks must be non-empty"
        if kind == "image" and (problem := _check_image(part, f"{at}.image")):
            return problem
    return None


def _check_image(block: dict, where: str) -> str | None:
    """An image block as the real API checks it: a base64 source of one of its four media
    types whose bytes are that kind, at most 5 MB of base64 and 8000 pixels a side; or a URL."""
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "url":
        return None if isinstance(source.get("url"), str) else f"{where}.source.url.url: Field required"
    if kind == "file":
        return None if isinstance(source.get("file_id"), str) else f"{where}.source.file.file_id: Field required"
    if kind != "base64":
        return f"{where}.source: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'base64', 'file', 'url'"
    media, data = source.get("media_type"), source.get("data")
    if media not in IMAGE_MEDIA_TYPES:
        return (
            f"{where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )
    if not isinstance(data, str):
        return f"{where}.source.base64.data: Field required"
    if len(data) > IMAGE_MAX_BASE64:
        return f"{where}.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > {IMAGE_MAX_BASE64} bytes"
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return f"{where}.source.base64.data: The image data is not valid base64"
    if not raw.startswith(_IMAGE_MAGIC[media]) or (media == "image/webp" and raw[8:12] != b"WEBP"):
        return f"{where}.source.base64.data: Image does not match the provided media type {media}"
    if (
        media == "image/png"
        and len(raw) >= 24
        and max(int.from_bytes(raw[16:20]), int.from_bytes(raw[20:24])) > IMAGE_MAX_SIDE
    ):
        return f"{where}.source.base64.data: At least one of the image dimensions exceed max allowed size: {IMAGE_MAX_SIDE} pixels"
    return None


def check_fields(body: Any, *, beta: bool = False, count: bool = False) -> str | None:
    """The real API's answer to a top-level field it does not know: "<field>: Extra inputs
    are not permitted" (beta fields are known only with ``beta``, i.e. an ``anthropic-beta``
    header; ``count`` checks a ``/v1/messages/count_tokens`` body)."""
    if not isinstance(body, dict):
        return None
    known = COUNT_TOKENS_FIELDS if count else MESSAGES_FIELDS
    if beta:
        known = known | (BETA_COUNT_TOKENS_FIELDS if count else BETA_MESSAGES_FIELDS)
    unknown = next((key for key in body if key not in known), None)
    return None if unknown is None else f"{unknown}: Extra inputs are not permitted"


def validate_request(body: Any, *, count: bool = False) -> str | None:
    """Check a Messages API request body like the real API; return the 400 message or None.
    With ``count``, check a ``count_tokens`` body (no ``max_tokens``). Top-level field names
    are checked separately by :func:`check_fields`."""
    problem = (
        _check_top(body, count=count)
        or _check_tools(body)
        or _check_sampling(body)
        or _check_messages(body["messages"])
    )
    if problem:
        return problem
    found = sum(bp for _, bp in _prefix_items(body))
    if found > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
    return None


def _prefix_pieces(body: dict) -> Iterable[tuple[str, bool]]:
    """The canonical text of each prefix item (cache_control stripped) and its breakpoint flag."""
    for item, breakpoint in _prefix_items(body):
        yield _canonical(_strip_cache_control(item)), breakpoint


def server_compaction(body: dict) -> CompactionBlock | None:
    """The compaction block a request asks for: a ``compact_20260112`` edit in its
    ``context_management`` whose trigger (default 150,000 input tokens) the request passes.
    Its content names how many messages it summarised and the edit's instructions."""
    edits = (body.get("context_management") or {}).get("edits") or []
    edit = next((e for e in edits if isinstance(e, dict) and e.get("type") == "compact_20260112"), None)
    if edit is None:
        return None
    trigger = (edit.get("trigger") or {}).get("value") or 150_000
    if estimate_input_tokens(body) <= trigger:
        return None
    extra = f" ({edit['instructions']})" if edit.get("instructions") else ""
    return CompactionBlock(f"Server summary of {len(body['messages'])} messages{extra}.")


def estimate_input_tokens(body: dict) -> int:
    """The fake's input-token estimate for a request: about four characters a token over the
    canonical JSON of tools, system and message blocks (cache_control left out). It is the
    total input of usage accounting (``input_tokens`` + both cache figures), the answer of
    ``count_tokens`` and what the context limit compares against."""
    return max(1, sum(len(piece) for piece, _ in _prefix_pieces(body)) // 4)


# --------------------------------------------------------------------------- models


def _display_name(model_id: str) -> str:
    """``claude-sonnet-5-5`` -> ``Claude Sonnet 5.5`` (a trailing date is dropped)."""
    parts = [p for p in model_id.split("-") if not (p.isdigit() and len(p) == 8)]
    words = [p.capitalize() for p in parts if not p.isdigit()]
    version = ".".join(p for p in parts if p.isdigit())
    return " ".join(words + ([version] if version else []))


@dataclass(frozen=True)
class ModelSpec:
    """A model the Models API knows (register it in ``FakeAnthropic.models``).

    ``max_input_tokens`` is also the model's context limit on ``/v1/messages`` unless
    ``FakeAnthropic.context_windows`` has an entry for it; ``max_tokens`` caps the request's
    ``max_tokens`` (a larger one is an invalid request). ``context_management`` and
    ``thinking`` set the matching ``capabilities`` (every strategy supported or none);
    ``capabilities=False`` leaves the field out, as older API versions do. ``extra`` is merged
    last into the ModelInfo JSON (e.g. ``{"lifecycle": "deprecated", "deprecated_at": ...}``).
    """

    max_input_tokens: int | None = 200_000
    max_tokens: int | None = 64_000
    context_management: bool = False
    thinking: bool = True
    display_name: str | None = None
    created_at: str = "2026-01-01T00:00:00Z"  # RFC 3339
    lifecycle: str = "active"
    line: str | None = None
    capabilities: bool = True
    image_input: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def info(self, model_id: str) -> dict:
        """The ``ModelInfo`` object the API answers for this model."""
        info: dict[str, Any] = {
            "type": "model",
            "id": model_id,
            "display_name": self.display_name or _display_name(model_id),
            "created_at": self.created_at,
            "lifecycle": self.lifecycle,
            "line": self.line,
            "deprecated_at": None,
            "retires_at": None,
            "max_input_tokens": self.max_input_tokens,
            "max_tokens": self.max_tokens,
        }
        if self.capabilities:
            yes, cm, th = {"supported": True}, {"supported": self.context_management}, {"supported": self.thinking}
            info["capabilities"] = {
                "batch": yes,
                "citations": yes,
                "code_execution": yes,
                "context_management": {
                    **cm,
                    "clear_thinking_20251015": cm,
                    "clear_tool_uses_20250919": cm,
                    "compact_20260112": cm,
                },
                "effort": {**yes, "low": yes, "medium": yes, "high": yes, "max": yes, "xhigh": {"supported": False}},
                "image_input": {"supported": self.image_input},
                "pdf_input": yes,
                "server_tools": {**yes, "code_execution": yes, "web_search": yes},
                "structured_outputs": yes,
                "thinking": {
                    **th,
                    "types": {"adaptive": th, "enabled": th, "between_tools": th, "disabled": yes},
                },
            }
        return {**info, **self.extra}


# --------------------------------------------------------------------------- server


@dataclass
class RecordedRequest:
    """One request the server received. ``status`` is set once the answer is decided."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text if it was not JSON
    status: int | None = None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    do_GET = do_PUT = do_DELETE = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.fake._lock:  # registered before the handler thread starts, so stop() sees it
            self.fake._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.fake._lock:
            self.fake._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError) or self.fake._stopping.is_set():
            return  # client went away, or we are shutting down: nothing to report
        self.fake.errors.append(traceback.format_exc())


class FakeAnthropic:
    """The fake server. Attributes for tests:

    ``url`` (``http://127.0.0.1:PORT``, valid after ``start()``), ``api_key``,
    ``requests`` (list of :class:`RecordedRequest`: every request except token counting and
    the Models API), ``count_requests`` (``/v1/messages/count_tokens``), ``model_requests``
    (``/v1/models...``), ``invalid_requests`` (list of ``(body, message)`` for validation
    400s and "no scripted reply left"), ``errors`` (tracebacks of failures inside the fake,
    e.g. a reply callable that raised), ``expect_invalid`` (set True when a test provokes
    invalid requests on purpose).

    Legitimate refusals a client must handle are recorded apart from ``invalid_requests``
    (they do not fail the test) and consume no scripted reply: ``too_long`` (``(N, M)`` per
    "prompt is too long: N tokens > M maximum"), ``unsupported`` (the field name per
    "<field>: Extra inputs are not permitted" caused by ``unsupported_fields``) and
    ``too_large`` (the body size per 413 caused by ``max_request_bytes``).

    Settings (constructor keywords or attributes, changeable at any time):

    ``cache_min_tokens``
        Breakpoints whose prefix is shorter than this are not cached (the real minimum is
        1024+ tokens; the default 0 caches everything).
    ``context_window``, ``context_windows``
        The context limit in input tokens (see :func:`estimate_input_tokens`): per model in
        ``context_windows``, else the model's ``ModelSpec.max_input_tokens``, else
        ``context_window``; None means no limit (see :meth:`context_limit`).
    ``models``, ``models_api``
        ``{model_id: ModelSpec}`` served by ``GET /v1/models`` and ``/v1/models/{id}``
        (default none: an empty list, 404 for every id); ``models_api=False`` answers 404
        to every Models API request, like an endpoint without it.
    ``unsupported_fields``
        Top-level fields this endpoint refuses on ``/v1/messages`` and ``count_tokens``
        even though the real API knows them (e.g. ``{"context_management"}``).
    ``max_request_bytes``
        Bodies larger than this answer 413 ``request_too_large`` (the real limit is 32 MB).
    """

    def __init__(
        self,
        api_key: str = DEFAULT_API_KEY,
        *,
        cache_min_tokens: int = 0,
        context_window: int | None = None,
        context_windows: Mapping[str, int] | None = None,
        models: Mapping[str, ModelSpec] | None = None,
        unsupported_fields: Iterable[str] = (),
        max_request_bytes: int | None = None,
    ) -> None:
        self.api_key = api_key
        self.cache_min_tokens = cache_min_tokens
        self.context_window = context_window
        self.context_windows: dict[str, int] = dict(context_windows or {})
        self.models: dict[str, ModelSpec] = dict(models or {})
        self.models_api = True
        self.unsupported_fields: set[str] = set(unsupported_fields)
        self.max_request_bytes = max_request_bytes
        self.requests: list[RecordedRequest] = []
        self.count_requests: list[RecordedRequest] = []
        self.model_requests: list[RecordedRequest] = []
        self.invalid_requests: list[tuple[Any, str]] = []
        self.too_long: list[tuple[int, int]] = []
        self.unsupported: list[str] = []
        self.too_large: list[int] = []
        self.server_compactions: list[int] = []  # input tokens of each request compacted server-side
        self.errors: list[str] = []
        self.expect_invalid = False
        self._queue: deque[ReplySource] = deque()
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._held_gates: set[threading.Event] = set()
        self._connections: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeAnthropic is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FakeAnthropic:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop serving: release every held reply, close open connections, join threads."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or self._stopping.is_set():
            return
        self._stopping.set()
        httpd.shutdown()  # no new connections from here on
        with self._lock:
            gates, conns = list(self._held_gates), list(self._connections)
            handlers = list(self._handler_threads)
        for gate in gates:
            gate.set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        deadline = time.monotonic() + timeout
        for t in [thread, *handlers]:
            if t is not None:
                t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- scripting and inspection

    def enqueue(self, *replies: ReplySource) -> None:
        """Queue replies; each POST /v1/messages takes the next. A callable is called with the
        request body (a dict) and must return a :class:`Reply`."""
        with self._lock:
            self._queue.extend(replies)

    def discard_pending(self) -> int:
        """Drop every scripted reply not yet used; returns how many there were."""
        with self._lock:
            count = len(self._queue)
            self._queue.clear()
        return count

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        return len(self._queue)

    def context_limit(self, model: str) -> int | None:
        """The context limit for ``model``: ``context_windows[model]``, else the registered
        model's ``max_input_tokens``, else ``context_window`` (None: unlimited)."""
        if model in self.context_windows:
            return self.context_windows[model]
        spec = self.models.get(model)
        if spec is not None and spec.max_input_tokens is not None:
            return spec.max_input_tokens
        return self.context_window

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Block until at least ``n`` requests have arrived (recorded as soon as the body is
        read, before any gate); False on timeout. Thread-safe; from async code run it in a
        thread (``await asyncio.to_thread(server.wait_for_requests, 1)``)."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.requests) >= n, timeout)

    # ---- request handling (runs in handler threads)

    def _handle(self, h: _Handler) -> None:
        with self._lock:
            self._handler_threads.add(threading.current_thread())
        try:
            if not self._stopping.is_set():
                self._serve(h)
        finally:
            h.close_connection = True
            with self._lock:
                self._handler_threads.discard(threading.current_thread())

    def _serve(self, h: _Handler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in h.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rec = RecordedRequest(h.command, h.path, headers, body)
        path = h.path.split("?")[0]
        route = (
            "count"
            if path == "/v1/messages/count_tokens"
            else "models"
            if path == "/v1/models" or path.startswith("/v1/models/")
            else "messages"
        )
        log = {"count": self.count_requests, "models": self.model_requests}.get(route, self.requests)
        with self._cond:
            log.append(rec)
            self._cond.notify_all()
        req_id = new_id("req_")
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if key != self.api_key:
            return self._send_error(h, rec, req_id, 401, "authentication_error", "invalid x-api-key")
        if self.max_request_bytes is not None and len(raw) > self.max_request_bytes:
            with self._lock:
                self.too_large.append(len(raw))
            kind = "request_too_large"
            return self._send_error(h, rec, req_id, 413, kind, _DEFAULT_MESSAGE[kind])
        if route == "models":
            return self._serve_models(h, rec, req_id, headers, path)
        if (h.command, path) not in (("POST", "/v1/messages"), ("POST", "/v1/messages/count_tokens")):
            return self._send_error(h, rec, req_id, 404, "not_found_error", f"Not found: {h.command} {h.path}")
        refused = next((k for k in body if k in self.unsupported_fields), None) if isinstance(body, dict) else None
        if refused is not None:
            with self._lock:
                self.unsupported.append(refused)
            message = f"{refused}: Extra inputs are not permitted"
            return self._send_error(h, rec, req_id, 400, "invalid_request_error", message)
        count = route == "count"
        problem = (
            "anthropic-version: header is required"
            if "anthropic-version" not in headers
            else check_fields(body, beta="anthropic-beta" in headers, count=count)
            or validate_request(body, count=count)
        )
        spec = self.models.get(body["model"]) if problem is None else None
        if spec is not None and spec.max_tokens is not None and body.get("max_tokens", 0) > spec.max_tokens:
            problem = (
                f"max_tokens: {body['max_tokens']} > {spec.max_tokens}, which is the maximum allowed number "
                f"of output tokens for {body['model']}"
            )
        if problem is not None:
            return self._refuse_invalid(h, rec, req_id, body, problem)
        tokens = estimate_input_tokens(body)
        if count:
            counted: dict[str, Any] = {"input_tokens": tokens}
            if "context_management" in body:
                counted["context_management"] = {"original_input_tokens": tokens}
            rec.status = 200
            return self._send_json(h, 200, req_id, counted)
        limit = self.context_limit(body["model"])
        if limit is not None and tokens > limit:
            with self._lock:
                self.too_long.append((tokens, limit))
            message = f"prompt is too long: {tokens} tokens > {limit} maximum"
            return self._send_error(h, rec, req_id, 400, "invalid_request_error", message)
        with self._lock:
            source = self._queue.popleft() if self._queue else None
        if source is None:
            return self._refuse_invalid(h, rec, req_id, body, NO_REPLY_LEFT)
        try:
            answer = source(body) if callable(source) else source
            if not isinstance(answer, Reply):
                raise TypeError(f"reply callable returned {answer!r}, not a Reply")
        except Exception:
            self.errors.append(traceback.format_exc())
            return self._send_error(h, rec, req_id, 500, "api_error", "fake server: reply callable failed")
        self._answer(h, rec, req_id, body, answer)

    def _refuse_invalid(self, h: _Handler, rec: RecordedRequest, req_id: str, body: Any, problem: str) -> None:
        """A 400 for a request the real API would refuse as malformed (fails the test)."""
        with self._lock:
            self.invalid_requests.append((body, problem))
        self._send_error(h, rec, req_id, 400, "invalid_request_error", problem)

    def _serve_models(self, h: _Handler, rec: RecordedRequest, req_id: str, headers: dict, path: str) -> None:
        """``GET /v1/models`` (a page of ModelInfo, newest first) and ``GET /v1/models/{id}``."""
        if not self.models_api or h.command != "GET":
            return self._send_error(h, rec, req_id, 404, "not_found_error", f"Not found: {h.command} {h.path}")
        if "anthropic-version" not in headers:
            return self._refuse_invalid(h, rec, req_id, None, "anthropic-version: header is required")
        models = dict(self.models)
        if path != "/v1/models":
            model_id = urllib.parse.unquote(path.removeprefix("/v1/models/"))
            if model_id not in models:
                return self._send_error(h, rec, req_id, 404, "not_found_error", f"model: {model_id}")
            rec.status = 200
            return self._send_json(h, 200, req_id, models[model_id].info(model_id))
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
        wanted = {v for k in ("lifecycle", "lifecycle[]") for vs in query.get(k, []) for v in vs.split(",")}
        try:
            limit = int(query.get("limit", ["20"])[-1])
        except ValueError:
            return self._refuse_invalid(h, rec, req_id, None, "limit: Input should be a valid integer")
        if not 1 <= limit <= 1000:
            bound = "greater than or equal to 1" if limit < 1 else "less than or equal to 1000"
            return self._refuse_invalid(h, rec, req_id, None, f"limit: Input should be {bound}")
        infos = [spec.info(model_id) for model_id, spec in models.items()]
        infos = [i for i in infos if i["lifecycle"] in (wanted or {"active", "deprecated"})]
        infos.sort(key=lambda i: i["created_at"], reverse=True)  # stable: ties keep registration order
        ids = [i["id"] for i in infos]
        after, before = query.get("after_id", [None])[-1], query.get("before_id", [None])[-1]
        if before is not None:
            end = ids.index(before) if before in ids else 0
            start = max(0, end - limit)
            page, has_more = infos[start:end], start > 0
        else:
            start = ids.index(after) + 1 if after in ids else 0 if after is None else len(ids)
            page, has_more = infos[start : start + limit], start + limit < len(infos)
        listing = {
            "data": page,
            "has_more": has_more,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
        }
        rec.status = 200
        self._send_json(h, 200, req_id, listing)

    def _answer(self, h: _Handler, rec: RecordedRequest, req_id: str, body: dict, r: Reply) -> None:
        as_error = r.error is not None and (r.status != 200 or not rec.stream)  # else an `event: error`
        sse = rec.stream and not as_error
        rec.status = (r.status if r.status != 200 else _ERROR_STATUS.get(r.error["type"], 500)) if as_error else 200
        if (
            r.hang_before_headers
            or (r.gate is not None and r.stall_after is None)
            or (r.stall_after is not None and not sse)
        ):
            if not self._hold(r.gate):
                return
            if r.stall_after is not None and not sse and not r.gate_release_continues:
                return self._drop(h)
        if r.dribble == "head":
            return self._dribble(h, b"HTTP/1.1 200 OK\r\nX-Pad: ", r.dribble_every_s, write=h.wfile.write)
        if r.page is not None and (as_error or r.status == 200):
            data = r.page.encode()
            self._send_head(h, rec.status, req_id, r.page_type, r.headers, len(data))
            h.wfile.write(data)
            return h.wfile.flush()
        if as_error:
            envelope = {"type": "error", "error": dict(r.error), "request_id": req_id}
            return self._send_json(h, rec.status, req_id, envelope, r.headers)
        usage, model = self._account(body), r.model or body["model"]
        cm = {"applied_edits": [dict(e) for e in r.applied_edits]} if "context_management" in body else None
        compaction = server_compaction(body)
        if compaction is not None:
            with self._lock:
                self.server_compactions.append(estimate_input_tokens(body))
            r = dataclasses.replace(r, blocks=(compaction, *r.blocks))
        if not sse:
            message = _message(r, model, usage, [b.final() for b in r.blocks], done=True)
            if cm is not None:
                message["context_management"] = cm
            return self._send_json(h, 200, req_id, message, r.headers)
        self._send_head(h, 200, req_id, "text/event-stream; charset=utf-8", r.headers)
        events = _stream_events(r, model, usage, cm)
        for i in range(len(events) + 1):
            if i == r.stall_after:
                if not self._hold(r.gate):
                    return
                if not r.gate_release_continues:
                    return self._drop(h)
            if i == len(events):
                break
            name, data = events[i]
            if name == "content_block_delta" and r.delay_s and self._stopping.wait(r.delay_s):
                return
            self._write_chunk(h, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            if r.dribble == "body":
                return self._dribble(h, b": ", r.dribble_every_s, write=lambda b: self._write_chunk(h, b))
        self._write_chunk(h, b"")

    def _dribble(self, h: _Handler, start: bytes, every_s: float, write: Callable[[bytes], object]) -> None:
        """Write ``start``, then one byte every ``every_s`` until stop() or the client goes away."""
        try:
            write(start)
            h.wfile.flush()
            while not self._stopping.wait(every_s):
                write(b"x")
                h.wfile.flush()
        except OSError:
            return

    def _hold(self, gate: threading.Event | None) -> bool:
        """Wait for ``gate`` (or, without one, for stop()); True if the reply should go on."""
        with self._lock:
            if self._stopping.is_set():
                return False
            if gate is not None:
                self._held_gates.add(gate)
        (gate or self._stopping).wait()
        return not self._stopping.is_set()

    def _account(self, body: dict) -> dict:
        """Usage for a request, with simulated prompt caching.

        Each cache breakpoint (``cache_control`` on a tool, system block or message block)
        hashes the canonical prefix up to and including its block. The longest breakpoint
        prefix seen in an earlier successful request counts as ``cache_read_input_tokens``;
        the rest of the prefix up to the last breakpoint, if that one is new, counts as
        ``cache_creation_input_tokens``; ``input_tokens`` is what remains (at least 1)."""
        digest, length, points = hashlib.sha256(), 0, []
        for piece, breakpoint in _prefix_pieces(body):
            digest.update(piece.encode() + b"\x1e")
            length += len(piece)
            if breakpoint and length // 4 >= self.cache_min_tokens:
                points.append((digest.hexdigest(), length // 4))
        total = max(1, length // 4)
        with self._lock:
            read = max((size for key, size in points if key in self._cache), default=0)
            created = points[-1][1] - read if points and points[-1][0] not in self._cache else 0
            self._cache.update(key for key, _ in points)
        return {
            "input_tokens": max(1, total - read - created),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0},
        }

    # ---- low-level writing

    def _send_head(
        self,
        h: _Handler,
        status: int,
        req_id: str,
        content_type: str,
        extra: tuple[tuple[str, str], ...],
        length: int | None = None,
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        if length is None:
            h.send_header("Transfer-Encoding", "chunked")
            h.send_header("Cache-Control", "no-cache")
        else:
            h.send_header("Content-Length", str(length))
        h.send_header("Connection", "close")
        h.send_header("request-id", req_id)
        for name, value in extra:
            h.send_header(name, value)
        h.end_headers()

    def _send_json(
        self, h: _Handler, status: int, req_id: str, payload: dict, extra: tuple[tuple[str, str], ...] = ()
    ) -> None:
        data = json.dumps(payload).encode()
        self._send_head(h, status, req_id, "application/json", extra, len(data))
        h.wfile.write(data)
        h.wfile.flush()

    def _send_error(self, h: _Handler, rec: RecordedRequest, req_id: str, status: int, kind: str, message: str) -> None:
        rec.status = status
        self._send_json(
            h, status, req_id, {"type": "error", "error": {"type": kind, "message": message}, "request_id": req_id}
        )

    @staticmethod
    def _write_chunk(h: _Handler, data: bytes) -> None:
        h.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    @staticmethod
    def _drop(h: _Handler) -> None:
        """Cut the connection mid-body (no terminating chunk)."""
        try:
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _strip_cache_control(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: _strip_cache_control(v) for k, v in item.items() if k != "cache_control"}
    return item


def _message(r: Reply, model: str, usage: dict, content: list, *, done: bool) -> dict:
    """A ``Message`` object: the finished one, or the empty one for ``message_start``."""
    output = max(1, sum(b.output_chars() for b in r.blocks) // 4) if done else 1
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": r.resolved_stop_reason if done else None,
        "stop_sequence": r.stop_sequence if done else None,
        "usage": {**usage, "output_tokens": output, "service_tier": "standard"},
    }


def _stream_events(r: Reply, model: str, usage: dict, cm: dict | None = None) -> list[tuple[str, dict]]:
    """The full SSE event list for a reply (truncated + ``error`` for stream_error). ``cm``
    is the ``context_management`` answer, carried by ``message_delta``."""
    events = [
        ("message_start", {"type": "message_start", "message": _message(r, model, usage, [], done=False)}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(r.blocks):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block.start()})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in block.deltas()
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    output = max(1, sum(b.output_chars() for b in r.blocks) // 4)
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": r.resolved_stop_reason, "stop_sequence": r.stop_sequence},
                "usage": {k: v for k, v in usage.items() if k != "cache_creation"} | {"output_tokens": output},
            }
            | ({"context_management": cm} if cm is not None else {}),
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    if r.error_after_events is not None:
        events = events[: r.error_after_events] + [("error", {"type": "error", "error": dict(r.error or {})})]
    return events
