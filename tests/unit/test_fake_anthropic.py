"""Tests of the fake Anthropic server itself, through the unmodified ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import anthropic
import httpx2
import pytest
from fake_anthropic import (
    BETA_COUNT_TOKENS_FIELDS,
    BETA_MESSAGES_FIELDS,
    COUNT_TOKENS_FIELDS,
    MESSAGES_FIELDS,
    FakeAnthropic,
    ModelSpec,
    error_reply,
    estimate_input_tokens,
    raw_tool_use,
    reply,
    stream_error,
    text,
    text_reply,
    thinking,
    tool_reply,
    tool_use,
)

pytest_plugins = ("pytester",)

MODEL = "claude-sonnet-5-5"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def client(fake_api: FakeAnthropic) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)


async def _events(client: anthropic.AsyncAnthropic, **kwargs) -> list:
    kwargs = {"model": MODEL, "max_tokens": 1000, "messages": HI, **kwargs}
    stream = await client.messages.create(stream=True, **kwargs)
    return [event async for event in stream]


async def _final(client: anthropic.AsyncAnthropic, **kwargs) -> anthropic.types.Message:
    kwargs = {"model": MODEL, "max_tokens": 1000, "messages": HI, **kwargs}
    async with client.messages.stream(**kwargs) as stream:
        return await stream.get_final_message()


# --------------------------------------------------------------------------- replies


async def test_streaming_text_raw_events(fake_api, client):
    fake_api.enqueue(text_reply("The quick brown fox jumps over the lazy dog."))
    events = await _events(client)
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert "ping" not in types  # sent by the server, dropped by the SDK
    deltas = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "The quick brown fox jumps over the lazy dog."
    start, delta = events[0], events[-2]
    assert start.message.content == [] and start.message.usage.output_tokens == 1
    assert start.message.usage.input_tokens >= 1 and start.message.model == MODEL
    assert delta.delta.stop_reason == "end_turn" and delta.usage.output_tokens >= 1


async def test_chunk_size_and_callable_reply(fake_api, client):
    fake_api.enqueue(lambda body: text_reply("echo: " + body["messages"][-1]["content"], chunk_size=3))
    events = await _events(client, messages=[{"role": "user", "content": "abcd"}])
    assert [e.delta.text for e in events if e.type == "content_block_delta"] == ["ech", "o: ", "abc", "d"]


async def test_tool_use_round_trip(fake_api, client):
    call = tool_reply("bash", {"command": "ls -la", "timeout": 5}, text="Let me look.")
    fake_api.enqueue(call, text_reply("Done."))
    async with client.messages.stream(model=MODEL, max_tokens=1000, messages=HI) as stream:
        pieces = [e.partial_json async for e in stream if e.type == "input_json"]
        message = await stream.get_final_message()
    assert len([p for p in pieces if p]) > 1
    assert message.stop_reason == "tool_use"
    assert message.content[0].text == "Let me look."
    block = message.content[1]
    assert (block.type, block.name, block.input) == ("tool_use", "bash", {"command": "ls -la", "timeout": 5})
    assert block.id == call.blocks[-1].id and block.id.startswith("toolu_01")
    history = [
        *HI,
        {"role": "assistant", "content": [b.to_dict() for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "a b"}]},
    ]
    assert (await _final(client, messages=history)).content[0].text == "Done."


async def test_multiple_tool_uses_need_all_results(fake_api, client):
    fake_api.enqueue(reply(tool_use("read", {"path": "a"}), tool_use("read", {"path": "b"})))
    message = await _final(client)
    assert [b.input for b in message.content] == [{"path": "a"}, {"path": "b"}]
    fake_api.expect_invalid = True
    history = [
        *HI,
        {"role": "assistant", "content": [b.to_dict() for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message.content[0].id}]},
    ]
    with pytest.raises(anthropic.BadRequestError, match=message.content[1].id):
        await _final(client, messages=history)


async def test_thinking_and_signature(fake_api, client):
    fake_api.enqueue(
        reply(thinking("Considering the options carefully.", signature="sig-123"), text("Answer.")),
        text_reply("Second.", thinking="More thought."),
    )
    config = {"type": "enabled", "budget_tokens": 1024}
    async with client.messages.stream(model=MODEL, max_tokens=2000, thinking=config, messages=HI) as stream:
        kinds = [e.type async for e in stream]
        message = await stream.get_final_message()
    assert "thinking" in kinds and "signature" in kinds
    assert message.content[0].type == "thinking"
    assert (message.content[0].thinking, message.content[0].signature) == (
        "Considering the options carefully.",
        "sig-123",
    )
    history = [
        *HI,
        {"role": "assistant", "content": [b.to_dict() for b in message.content]},
        {"role": "user", "content": "and?"},
    ]
    second = await _final(client, messages=history, thinking=config, max_tokens=2000)
    assert second.content[0].signature.startswith("Eq") and second.content[1].text == "Second."


async def test_non_streaming(fake_api, client):
    fake_api.enqueue(text_reply("Plain answer.", stop_reason="max_tokens"), tool_reply("bash", {"command": "pwd"}))
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert message.content[0].text == "Plain answer." and message.stop_reason == "max_tokens"
    assert message.id.startswith("msg_01") and message._request_id.startswith("req_")
    assert message.usage.input_tokens >= 1 and message.usage.output_tokens >= 1
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert message.stop_reason == "tool_use" and message.content[0].input == {"command": "pwd"}
    assert [r.stream for r in fake_api.requests] == [False, False]


async def test_raw_tool_use_malformed_json(fake_api, client):
    fake_api.enqueue(reply(raw_tool_use("bash", '{"command": ]')), reply(raw_tool_use("bash", '{"command": "ls')))
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        await _final(client)
    # A truncated string value is silently dropped by the SDK's partial JSON parser.
    assert (await _final(client)).content[0].input == {}


async def test_slow_stream_delay(fake_api, client):
    fake_api.enqueue(text_reply("abcdef", chunk_size=2, delay_s=0.03))
    started = time.monotonic()
    await _events(client)
    assert time.monotonic() - started >= 0.09


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "kind", "exc"),
    [
        (400, "invalid_request_error", anthropic.BadRequestError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (413, "request_too_large", anthropic.ContentTooLargeError),
        (429, "rate_limit_error", anthropic.RateLimitError),
        (500, "api_error", anthropic.InternalServerError),
        (529, "overloaded_error", anthropic.OverloadedError),
    ],
)
async def test_error_replies(fake_api, client, stream, status, kind, exc):
    fake_api.enqueue(error_reply(status, headers={"retry-after": "7"}))
    with pytest.raises(exc) as info:
        await client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=stream)
    err = info.value
    assert (err.status_code, err.type) == (status, kind)
    assert err.body["type"] == "error" and err.body["request_id"].startswith("req_")
    assert err.request_id == err.body["request_id"] and err.response.headers["retry-after"] == "7"
    assert fake_api.requests[0].status == status and not fake_api.invalid_requests


@pytest.mark.parametrize("kind", ["overloaded_error", "api_error"])
async def test_mid_stream_error(fake_api, client, kind):
    fake_api.enqueue(stream_error(kind, after_events=4, text="Partial words here"))
    seen = []
    with pytest.raises(anthropic.APIStatusError) as info:
        stream = await client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)
        async for event in stream:
            seen.append(event)
    assert type(info.value) is anthropic.APIStatusError  # status 200 maps to no subclass
    assert (info.value.status_code, info.value.type) == (200, kind)
    assert [e.type for e in seen] == ["message_start", "content_block_start", "content_block_delta"]


async def test_stream_error_when_not_streaming(fake_api, client):
    fake_api.enqueue(stream_error("overloaded_error"))
    with pytest.raises(anthropic.OverloadedError):
        await client.messages.create(model=MODEL, max_tokens=100, messages=HI)


async def test_auth_check(fake_api):
    bad = anthropic.AsyncAnthropic(api_key="sk-ant-wrong", base_url=fake_api.url, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as info:
        await bad.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert info.value.type == "authentication_error"
    assert fake_api.requests[0].headers["authorization"] == "Bearer sk-ant-wrong"
    fake_api.enqueue(text_reply("ok"))
    by_header = anthropic.AsyncAnthropic(
        api_key="placeholder",
        base_url=fake_api.url,
        max_retries=0,
        default_headers={"x-api-key": fake_api.api_key, "Authorization": anthropic.omit},
    )
    message = await by_header.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert message.content[0].text == "ok"
    assert "authorization" not in fake_api.requests[1].headers
    assert fake_api.pending == 0  # the rejected request consumed no reply


async def test_no_scripted_reply_left(fake_api, client):
    fake_api.expect_invalid = True
    with pytest.raises(anthropic.BadRequestError, match="no scripted reply left"):
        await client.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert fake_api.invalid_requests[0][1] == "fake server: no scripted reply left"


async def test_reply_callable_failure_is_recorded(fake_api, client):
    fake_api.enqueue(lambda body: 1 / 0)
    with pytest.raises(anthropic.InternalServerError):
        await client.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert "ZeroDivisionError" in fake_api.errors[0]
    fake_api.errors.clear()  # otherwise the fixture fails this test at teardown


# --------------------------------------------------------------------------- validation

TOOL = {"name": "bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {}}}
CC = {"cache_control": {"type": "ephemeral"}}
USE = {"type": "tool_use", "id": "toolu_01abc", "name": "bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01abc", "content": "ok"}


def _png(width: int = 1, height: int = 1) -> str:
    """The base64 of a PNG header saying `width` x `height` (enough for a check of its kind and size)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    ihdr = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + ihdr).decode()


def _image(data: str = "", media_type: str = "image/png") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data or _png()}}


def _with_parts(*parts: dict) -> dict:
    return dict(messages=_convo("hi", [USE], [{**RESULT, "content": [{"type": "text", "text": "look"}, *parts]}]))


def _convo(*turns):
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": c} for i, c in enumerate(turns)]


INVALID = {
    "orphan tool_use": (
        dict(messages=_convo("hi", [USE], "what?")),
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01abc",
    ),
    "orphan tool_result": (dict(messages=_convo("hi", "sure", [RESULT])), "unexpected `tool_use_id`"),
    "tool_result after text": (
        dict(messages=_convo("hi", [USE], [{"type": "text", "text": "x"}, RESULT])),
        "must come first",
    ),
    "duplicate tool_use id": (dict(messages=_convo("hi", [USE, USE], [RESULT])), "ids must be unique"),
    "tool_use input not object": (
        dict(messages=_convo("hi", [{**USE, "input": "ls"}], [RESULT])),
        "Input should be a valid dictionary",
    ),
    "five cache_control blocks": (
        dict(
            tools=[{**TOOL, **CC}],
            system=[{"type": "text", "text": f"s{i}", **CC} for i in range(3)],
            messages=[{"role": "user", "content": [{"type": "text", "text": "hi", **CC}]}],
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "temperature with thinking": (
        dict(thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2000, extra_body={"temperature": 0.3}),
        "`temperature` may only be set to 1",
    ),
    "budget >= max_tokens": (
        dict(thinking={"type": "enabled", "budget_tokens": 1024}),
        "`max_tokens` must be greater than `thinking.budget_tokens`",
    ),
    "budget < 1024": (
        dict(thinking={"type": "enabled", "budget_tokens": 500}, max_tokens=2000),
        "greater than or equal to 1024",
    ),
    "temperature > 1": (dict(extra_body={"temperature": 1.5}), "temperature: Input should be less than or equal to 1"),
    "bad tool name": (dict(tools=[{**TOOL, "name": "run shell"}]), "tools.0.custom.name"),
    "tool schema not object": (dict(tools=[{**TOOL, "input_schema": {"type": "string"}}]), "input_schema.type"),
    "duplicate tool names": (dict(tools=[TOOL, TOOL]), "Tool names must be unique"),
    "tool_choice without tools": (dict(tool_choice={"type": "auto"}), "tool_choice may only be specified"),
    "forced tool with thinking": (
        dict(
            tools=[TOOL],
            tool_choice={"type": "any"},
            max_tokens=2000,
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        "forces tool use",
    ),
    "bad system": (dict(system=[{"type": "image", "source": {}}]), "system.0"),
    "first message assistant": (dict(messages=_convo("x", "y")[1:]), 'first message must use the "user" role'),
    "bad role": (dict(messages=[{"role": "system", "content": "x"}]), "messages.0.role"),
    "empty content": (dict(messages=_convo("hi", "", "more")), "messages.1: all messages must have non-empty content"),
    "whitespace text": (dict(messages=_convo("  ")), "non-whitespace text"),
    "trailing whitespace prefill": (dict(messages=_convo("hi", "Sure ")), "cannot end with trailing whitespace"),
    "max_tokens zero": (dict(max_tokens=0), "max_tokens: Input should be greater than or equal to 1"),
    "no messages": (dict(messages=[]), "at least one message"),
    "audio in a tool result": (
        _with_parts({"type": "audio", "source": {"type": "base64", "media_type": "audio/wav", "data": "AAAA"}}),
        "messages.2.content.0.tool_result.content.1: Input tag 'audio' found using 'type' does not match",
    ),
    "a resource in a tool result": (_with_parts({"type": "resource", "uri": "file:///x"}), "Input tag 'resource'"),
    "empty text in a tool result": (_with_parts({"type": "text", "text": ""}), "text content blocks must be non-empty"),
    "image of a type the API does not take": (
        _with_parts(_image("Qk0=", "image/bmp")),
        "tool_result.content.1.image.source.base64.media_type: Input should be 'image/jpeg'",
    ),
    "image that is not base64": (_with_parts(_image("not base64!")), "not valid base64"),
    "image that is not what it says": (
        _with_parts(_image(media_type="image/jpeg")),
        "Image does not match the provided media type image/jpeg",
    ),
    "image past 5 MB": (_with_parts(_image("A" * (5 * 1024 * 1024 + 4))), "image exceeds 5 MB maximum"),
    "image past 8000 pixels": (_with_parts(_image(_png(8001, 10))), "image dimensions exceed max allowed size"),
    "image source without a kind": (_with_parts({"type": "image", "source": {"data": _png()}}), "source: Input tag"),
    "image in a user message, not a PNG": (
        dict(messages=[{"role": "user", "content": [_image(base64.b64encode(b"GIF89a....").decode())]}]),
        "messages.0.content.0.image.source.base64.data: Image does not match",
    ),
}


@pytest.mark.parametrize("case", INVALID)
async def test_validation_rejects(fake_api, client, case):
    kwargs, expected = INVALID[case]
    kwargs = {"messages": HI, "max_tokens": 100, **kwargs}
    fake_api.expect_invalid = True
    fake_api.enqueue(text_reply("never sent"))
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.messages.create(model=MODEL, **kwargs)
    assert info.value.type == "invalid_request_error"
    assert expected in info.value.api_message
    assert fake_api.invalid_requests[0][1] == info.value.api_message
    assert fake_api.requests[0].status == 400 and fake_api.pending == 1


@pytest.mark.parametrize(
    "messages",
    [
        _convo("hi", "partial answer"),  # assistant prefill
        _convo("hi", ""),  # empty final assistant message
        [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],  # merged by the API
        _convo(
            "hi",
            [USE],
            [RESULT],
            [USE | {"id": "toolu_01def"}],
            [{**RESULT, "tool_use_id": "toolu_01def"}, {"type": "text", "text": "go on"}],
        ),
        _with_parts(_image())["messages"],  # text and a PNG
        _with_parts(
            _image(base64.b64encode(b"\xff\xd8\xff\xe0").decode(), "image/jpeg"),
            _image(base64.b64encode(b"GIF89a\x01\x00\x01\x00").decode(), "image/gif"),
            _image(base64.b64encode(b"RIFF\x00\x00\x00\x00WEBPVP8 ").decode(), "image/webp"),
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        )["messages"],
        _convo("hi", [USE], [{**RESULT, "content": [_image()]}]),  # an image alone
    ],
)
async def test_validation_accepts(fake_api, client, messages):
    fake_api.enqueue(text_reply("fine"))
    message = await client.messages.create(
        model=MODEL, max_tokens=100, messages=messages, tools=[TOOL], extra_body={"temperature": 0.5}
    )
    assert message.content[0].text == "fine"


# --------------------------------------------------------------------------- cache simulation


async def test_prompt_cache_simulation(fake_api, client):
    system = [{"type": "text", "text": "You are a careful operator. " * 40, **CC}]
    fake_api.enqueue(*(text_reply(f"r{i}") for i in range(3)))
    first = (await _final(client, system=system)).usage
    second = (await _final(client, system=system)).usage
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    total = lambda u: u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens  # noqa: E731
    assert total(first) == total(second)
    longer = [{"role": "user", "content": [{"type": "text", "text": "a longer question " * 20, **CC}]}]
    third = (await _final(client, system=system, messages=longer)).usage
    assert third.cache_read_input_tokens == first.cache_creation_input_tokens
    assert third.cache_creation_input_tokens > 0


# --------------------------------------------------------------------------- context limit


def _long(chars: int) -> list[dict]:
    return [{"role": "user", "content": "x" * chars}]


async def test_context_window_answers_prompt_too_long(fake_api, client):
    fake_api.context_window = 300
    fake_api.enqueue(text_reply("fits"), text_reply("after"))
    fits = await client.messages.create(model=MODEL, max_tokens=10, messages=_long(1000))
    used = fits.usage.input_tokens + fits.usage.cache_read_input_tokens + fits.usage.cache_creation_input_tokens
    body = {"model": MODEL, "max_tokens": 10, "messages": _long(2000)}
    tokens = estimate_input_tokens(body)
    assert used == estimate_input_tokens({**body, "messages": _long(1000)}) and tokens > 300
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.messages.create(**body)
    err = info.value
    assert err.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > 300 maximum"},
        "request_id": err.request_id,
    }
    assert fake_api.too_long == [(tokens, 300)] and not fake_api.invalid_requests
    assert fake_api.requests[-1].status == 400 and fake_api.pending == 1  # no reply consumed
    counted = await client.messages.count_tokens(model=MODEL, messages=_long(2000))
    assert counted.input_tokens == tokens  # count_tokens applies no limit, and agrees
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        await _events(client, messages=_long(2000))  # streaming: the same 400 before any event


async def test_context_limit_precedence(fake_api, client):
    fake = FakeAnthropic(context_window=1000)
    assert fake.context_limit("any") == 1000
    fake.models = {"a": ModelSpec(max_input_tokens=500), "b": ModelSpec(max_input_tokens=None)}
    assert (fake.context_limit("a"), fake.context_limit("b")) == (500, 1000)
    fake.context_windows = {"a": 50}
    assert fake.context_limit("a") == 50
    assert FakeAnthropic().context_limit("a") is None
    fake_api.models = {MODEL: ModelSpec(max_input_tokens=200)}
    fake_api.context_windows = {"claude-haiku-5-5": 100}
    fake_api.enqueue(text_reply("big model"))
    message = await client.messages.create(model="claude-opus-5-5", max_tokens=10, messages=_long(1200))
    assert message.content[0].text == "big model"  # no limit for an unknown, unregistered model
    for model, limit in [(MODEL, 200), ("claude-haiku-5-5", 100)]:
        with pytest.raises(anthropic.BadRequestError, match=f"tokens > {limit} maximum"):
            await client.messages.create(model=model, max_tokens=10, messages=_long(1200))
    assert [m for _, m in fake_api.too_long] == [200, 100]


async def test_request_too_large(fake_api, client):
    fake_api.enqueue(error_reply(413), text_reply("small enough"))
    with pytest.raises(anthropic.ContentTooLargeError) as info:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert (info.value.status_code, info.value.type) == (413, "request_too_large")
    assert info.value.api_message == "Request exceeds the maximum allowed number of bytes."
    fake_api.max_request_bytes = 500
    with pytest.raises(anthropic.ContentTooLargeError):
        await client.messages.create(model=MODEL, max_tokens=10, messages=_long(600))
    assert len(fake_api.too_large) == 1 and fake_api.too_large[0] > 600 and fake_api.pending == 1
    assert (await client.messages.create(model=MODEL, max_tokens=10, messages=HI)).content[0].text == "small enough"
    assert not fake_api.invalid_requests


async def test_max_tokens_above_model_limit_is_invalid(fake_api, client):
    fake_api.models = {MODEL: ModelSpec(max_tokens=8000)}
    fake_api.expect_invalid = True
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.messages.create(model=MODEL, max_tokens=8001, messages=HI)
    expected = f"max_tokens: 8001 > 8000, which is the maximum allowed number of output tokens for {MODEL}"
    assert info.value.api_message == expected and fake_api.invalid_requests[0][1] == expected


# --------------------------------------------------------------------------- models API

SONNET = ModelSpec(max_input_tokens=200_000, max_tokens=64_000, context_management=True, line="sonnet")


async def test_models_retrieve(fake_api, client):
    fake_api.models = {MODEL: SONNET, "claude-haiku-5-5": ModelSpec(max_input_tokens=16_000, capabilities=False)}
    info = await client.models.retrieve(MODEL)
    assert isinstance(info, anthropic.types.ModelInfo) and info.type == "model"
    assert (info.id, info.display_name, info.max_input_tokens, info.max_tokens) == (
        MODEL,
        "Claude Sonnet 5.5",
        200_000,
        64_000,
    )
    assert info.created_at.year == 2026 and info.lifecycle == "active" and info.line == "sonnet"
    cm = info.capabilities.context_management
    assert cm.supported and cm.clear_tool_uses_20250919.supported and cm.clear_thinking_20251015.supported
    assert info.capabilities.thinking.types.enabled.supported
    raw = await client.models.with_raw_response.retrieve(MODEL)
    anthropic.types.ModelInfo.model_validate(raw.http_response.json())  # strictly valid, not just tolerated
    haiku = await client.models.retrieve("claude-haiku-5-5")
    assert haiku.capabilities is None and haiku.max_input_tokens == 16_000
    assert (
        "capabilities" not in (await client.models.with_raw_response.retrieve("claude-haiku-5-5")).http_response.json()
    )
    no_cm = ModelSpec().info("m")
    assert no_cm["capabilities"]["context_management"]["supported"] is False
    anthropic.types.ModelInfo.model_validate(no_cm)
    assert len(fake_api.model_requests) == 4 and fake_api.requests == []


async def test_models_unknown_id_and_no_models_api(fake_api, client):
    with pytest.raises(anthropic.NotFoundError) as info:
        await client.models.retrieve("claude-nonexistent")
    assert info.value.type == "not_found_error" and info.value.body["request_id"].startswith("req_")
    assert info.value.api_message == "model: claude-nonexistent"
    fake_api.models = {MODEL: SONNET}
    fake_api.models_api = False
    with pytest.raises(anthropic.NotFoundError):
        await client.models.retrieve(MODEL)
    with pytest.raises(anthropic.NotFoundError):
        await client.models.list()
    assert [r.status for r in fake_api.model_requests] == [404, 404, 404] and not fake_api.invalid_requests


async def test_models_list_pages(fake_api, client):
    assert (await client.models.list()).data == []
    fake_api.models = {
        "claude-haiku-5-5": ModelSpec(created_at="2026-01-01T00:00:00Z"),
        "claude-opus-5-5": ModelSpec(created_at="2026-03-01T00:00:00Z"),
        MODEL: ModelSpec(created_at="2026-02-01T00:00:00Z"),
        "claude-old-1": ModelSpec(created_at="2024-01-01T00:00:00Z", lifecycle="retired"),
    }
    newest_first = ["claude-opus-5-5", MODEL, "claude-haiku-5-5"]
    page = await client.models.list(limit=2)
    assert [m.id for m in page.data] == newest_first[:2]
    assert (page.has_more, page.first_id, page.last_id) == (True, "claude-opus-5-5", MODEL)
    assert [m.id async for m in client.models.list(limit=2)] == newest_first  # the SDK follows the pages
    raw = (await client.models.with_raw_response.list(after_id=MODEL)).http_response.json()
    assert raw == {
        "data": [fake_api.models["claude-haiku-5-5"].info("claude-haiku-5-5")],
        "has_more": False,
        "first_id": "claude-haiku-5-5",
        "last_id": "claude-haiku-5-5",
    }
    before = await client.models.list(before_id="claude-haiku-5-5", limit=1)
    assert [m.id for m in before.data] == [MODEL] and before.has_more
    retired = await client.models.list(lifecycle=["retired"])
    assert [m.id for m in retired.data] == ["claude-old-1"]
    fake_api.expect_invalid = True
    with pytest.raises(anthropic.BadRequestError, match="limit: Input should be less than or equal to 1000"):
        await client.models.list(limit=1001)


# --------------------------------------------------------------------------- count_tokens


async def test_count_tokens(fake_api, client):
    system = "You are terse."
    counted = await client.messages.count_tokens(model=MODEL, messages=HI, system=system, tools=[TOOL])
    assert isinstance(counted, anthropic.types.MessageTokensCount)
    assert counted.input_tokens == estimate_input_tokens({"messages": HI, "system": system, "tools": [TOOL]})
    fake_api.enqueue(text_reply("ok"))
    usage = (await client.messages.create(model=MODEL, max_tokens=10, messages=HI, system=system, tools=[TOOL])).usage
    assert (
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens == counted.input_tokens
    )
    beta = await client.beta.messages.count_tokens(
        model=MODEL, messages=HI, betas=["context-management-2025-06-27"], context_management={"edits": []}
    )
    assert beta.context_management.original_input_tokens == beta.input_tokens
    assert [r.path for r in fake_api.count_requests] == ["/v1/messages/count_tokens"] * 2
    assert [r.path for r in fake_api.requests] == ["/v1/messages"] and fake_api.pending == 0


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(extra_body={"max_tokens": 10}), "max_tokens: Extra inputs are not permitted"),
        (dict(tool_choice={"type": "auto"}), "tool_choice may only be specified"),
        (dict(messages=_convo("hi", [USE], "what?")), "without `tool_result` blocks"),
        (dict(extra_body={"context_management": {}}), "context_management: Extra inputs are not permitted"),
    ],
)
async def test_count_tokens_validation(fake_api, client, kwargs, expected):
    fake_api.expect_invalid = True
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.messages.count_tokens(model=MODEL, **{"messages": HI, **kwargs})
    assert expected in info.value.api_message and fake_api.invalid_requests[0][1] == info.value.api_message


# --------------------------------------------------------------------------- request fields


async def test_fields_the_real_api_accepts(fake_api, client):
    fake_api.enqueue(text_reply("fine"), text_reply("beta fine"))
    await client.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=HI,
        tools=[TOOL],
        tool_choice={"type": "auto"},
        stop_sequences=["END"],
        metadata={"user_id": "u-1"},
        service_tier="auto",
        cache_control={"type": "ephemeral"},
        extra_body={"temperature": 0.2, "top_k": 5, "top_p": 0.9},
    )
    await client.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=HI,
        betas=["mcp-client-2025-04-04"],
        mcp_servers=[{"type": "url", "url": "https://mcp.example.com/sse", "name": "example"}],
    )
    assert fake_api.pending == 0


def test_known_fields_cover_the_sdk():
    from anthropic.types import message_count_tokens_params, message_create_params
    from anthropic.types.beta import message_count_tokens_params as beta_count
    from anthropic.types.beta import message_create_params as beta_create

    def keys(params: type) -> set[str]:
        return set(params.__required_keys__ | params.__optional_keys__) - {"betas", "user_profile_id", "workspace_id"}

    assert keys(message_create_params.MessageCreateParamsBase) <= MESSAGES_FIELDS
    assert keys(beta_create.MessageCreateParamsBase) <= MESSAGES_FIELDS | BETA_MESSAGES_FIELDS
    assert keys(message_count_tokens_params.MessageCountTokensParams) <= COUNT_TOKENS_FIELDS
    assert keys(beta_count.MessageCountTokensParams) <= COUNT_TOKENS_FIELDS | BETA_COUNT_TOKENS_FIELDS


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"max_output_tokens": 10}, "max_output_tokens"),
        ({"context_management": {"edits": []}}, "context_management"),  # beta field without the beta header
        ({"mcp_servers": []}, "mcp_servers"),
    ],
)
async def test_unknown_fields_are_invalid(fake_api, client, extra, field):
    fake_api.expect_invalid = True
    fake_api.enqueue(text_reply("never sent"))
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HI, extra_body=extra)
    assert info.value.api_message == f"{field}: Extra inputs are not permitted"
    assert fake_api.invalid_requests[0][1] == info.value.api_message and fake_api.pending == 1


CLEAR = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000}}]}
BETA = ["context-management-2025-06-27"]


async def test_unsupported_field_refused_then_fallback(fake_api, client):
    fake_api.unsupported_fields = {"context_management"}
    fake_api.enqueue(text_reply("without it"))
    with pytest.raises(anthropic.BadRequestError) as info:
        await client.beta.messages.create(model=MODEL, max_tokens=10, messages=HI, betas=BETA, context_management=CLEAR)
    assert info.value.body["error"] == {
        "type": "invalid_request_error",
        "message": "context_management: Extra inputs are not permitted",
    }
    assert fake_api.unsupported == ["context_management"] and not fake_api.invalid_requests
    assert fake_api.pending == 1 and fake_api.requests[0].status == 400
    with pytest.raises(anthropic.BadRequestError, match="context_management"):
        await client.beta.messages.count_tokens(model=MODEL, messages=HI, betas=BETA, context_management=CLEAR)
    message = await client.messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert message.content[0].text == "without it" and len(fake_api.unsupported) == 2


async def test_beta_context_management_echoed(fake_api, client):
    edit = {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 900}
    fake_api.enqueue(text_reply("plain"), text_reply("streamed", applied_edits=[edit]), text_reply("no field"))
    message = await client.beta.messages.create(
        model=MODEL, max_tokens=10, messages=HI, betas=BETA, context_management=CLEAR
    )
    assert message.context_management.applied_edits == []
    assert fake_api.requests[0].headers["anthropic-beta"] == BETA[0]
    assert fake_api.requests[0].body["context_management"] == CLEAR
    async with client.beta.messages.stream(
        model=MODEL, max_tokens=10, messages=HI, betas=BETA, context_management=CLEAR
    ) as stream:
        final = await stream.get_final_message()
    applied = final.context_management.applied_edits
    assert [(e.type, e.cleared_tool_uses, e.cleared_input_tokens) for e in applied] == [
        ("clear_tool_uses_20250919", 2, 900)
    ]
    plain = await client.beta.messages.with_raw_response.create(model=MODEL, max_tokens=10, messages=HI, betas=BETA)
    assert "context_management" not in plain.http_response.json()  # only when it was asked for


# --------------------------------------------------------------------------- gates and stalls


async def test_gate_holds_until_set(fake_api, client):
    gate = threading.Event()
    fake_api.enqueue(text_reply("released", gate=gate))
    task = asyncio.create_task(_events(client))
    assert await asyncio.to_thread(fake_api.wait_for_requests, 1)
    done, _ = await asyncio.wait({task}, timeout=0.1)
    assert not done
    gate.set()
    events = await task
    assert "".join(e.delta.text for e in events if e.type == "content_block_delta") == "released"


async def test_stall_then_continue(fake_api, client):
    gate = threading.Event()
    fake_api.enqueue(
        text_reply("one two three four five six seven", stall_after=3, gate=gate, gate_release_continues=True)
    )
    seen: list = []
    first_two = asyncio.Event()

    async def read() -> None:
        stream = await client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)
        async for event in stream:
            seen.append(event)
            if len(seen) == 2:
                first_two.set()

    task = asyncio.create_task(read())
    async with asyncio.timeout(2):
        await first_two.wait()
    done, _ = await asyncio.wait({task}, timeout=0.1)
    assert not done and [e.type for e in seen] == ["message_start", "content_block_start"]
    gate.set()
    await task
    assert seen[-1].type == "message_stop"
    assert "".join(e.delta.text for e in seen if e.type == "content_block_delta") == "one two three four five six seven"


async def test_stall_then_drop(fake_api, client):
    gate = threading.Event()
    fake_api.enqueue(text_reply("never finished", stall_after=4, gate=gate))
    stream = await client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)
    seen = []
    gate.set()
    # Older SDKs let the transport's error through; newer ones (2.17 here) wrap it as a connection error.
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)):
        async for event in stream:
            seen.append(event.type)
    assert seen == ["message_start", "content_block_start", "content_block_delta"]


@pytest.mark.parametrize("continues", [False, True])
async def test_non_streaming_stall(fake_api, client, continues):
    gate = threading.Event()
    fake_api.enqueue(text_reply("whole", stall_after=0, gate=gate, gate_release_continues=continues))
    task = asyncio.create_task(client.messages.create(model=MODEL, max_tokens=100, messages=HI))
    assert await asyncio.to_thread(fake_api.wait_for_requests, 1)
    gate.set()
    if continues:
        assert (await task).content[0].text == "whole"
    else:
        with pytest.raises(anthropic.APIConnectionError):
            await task


async def test_wait_for_requests_times_out_and_unknown_path(fake_api, client):
    assert fake_api.wait_for_requests(1, timeout=0.01) is False
    with pytest.raises(anthropic.NotFoundError):
        await client.beta.files.list()
    assert fake_api.requests[0].status == 404 and not fake_api.invalid_requests


async def test_hang_before_headers_times_out(fake_api):
    fake_api.enqueue(text_reply("too late", hang_before_headers=True))
    impatient = anthropic.AsyncAnthropic(
        api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0, timeout=anthropic.Timeout(0.2)
    )
    with pytest.raises(anthropic.APITimeoutError):
        await impatient.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)


@pytest.mark.parametrize(
    "options", [dict(hang_before_headers=True), dict(stall_after=3), dict(stall_after=3, gate=threading.Event())]
)
async def test_stop_releases_held_connections(options):
    server = FakeAnthropic().start()
    client = anthropic.AsyncAnthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
    server.enqueue(text_reply("held", **options))
    task = asyncio.create_task(_events(client))
    assert await asyncio.to_thread(server.wait_for_requests, 1)
    started = time.monotonic()
    await asyncio.to_thread(server.stop)
    assert time.monotonic() - started < 0.5
    with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
        await task
    assert not server._handler_threads and not server.errors
    assert not [t for t in threading.enumerate() if t.name == "fake-anthropic"]


# --------------------------------------------------------------------------- fixtures


async def test_anthropic_env_in_process(anthropic_env, fake_api):
    assert anthropic_env == {"ANTHROPIC_API_KEY": fake_api.api_key, "ANTHROPIC_BASE_URL": fake_api.url}
    fake_api.enqueue(text_reply("from env"))
    message = await anthropic.AsyncAnthropic(max_retries=0).messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert message.content[0].text == "from env"


CHILD = """
import json, os, urllib.request
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
             "content-type": "application/json"})
print(json.load(urllib.request.urlopen(request, timeout=10))["content"][0]["text"])
"""


def test_anthropic_env_subprocess(anthropic_env, fake_api):
    # The stdlib keeps this fast; the SDK's own use of the variables is covered in-process.
    fake_api.enqueue(text_reply("from a child process"))
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env={**os.environ, **anthropic_env}, capture_output=True, text=True, timeout=30
    )
    assert out.stdout.strip() == "from a child process", out.stderr


def test_fixture_fails_on_unexpected_invalid_request(pytester):
    tests = Path(__file__).parents[1]
    pytester.makeconftest((tests / "conftest.py").read_text())
    pytester.makepyfile(
        fake_anthropic=(tests / "support" / "fake_anthropic.py").read_text(),
        test_inner="""
        import anthropic, pytest

        def _bad_request(server):
            c = anthropic.Anthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
            with pytest.raises(anthropic.BadRequestError):
                c.messages.create(model="m", max_tokens=10, messages=[{"role": "assistant", "content": "x"}])

        def test_unexpected(fake_api):
            _bad_request(fake_api)

        def test_expected(fake_api):
            fake_api.expect_invalid = True
            _bad_request(fake_api)
    """,
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-p", "no:textual-snapshot", "-p", "no:hypothesispytest", "-p", "no:asyncio"
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*fake Anthropic API rejected a request*first message must use*"])
