"""Tests of the fake Anthropic server itself, through the unmodified ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
import httpx2
import pytest
from fake_anthropic import (
    FakeAnthropic,
    error_reply,
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
    with pytest.raises(httpx2.TransportError):
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
        await client.models.list()
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
    here = Path(__file__).parent
    pytester.makeconftest((here / "conftest.py").read_text())
    pytester.makepyfile(
        fake_anthropic=(here / "fake_anthropic.py").read_text(),
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
