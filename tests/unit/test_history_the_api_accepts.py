"""Every reply shape the API (or a compatible server) sends leaves a history the API accepts.

The fake API validates each request as the real one does (blank text, tool-call ids: their
pattern and uniqueness, pairing) and the `fake_api` fixture fails a test on any request it
rejected; a history stored before (an old transcript) is repaired on load and on the next request.
"""

from __future__ import annotations

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import reply, text_reply, tool_reply, tool_use, validate_request

from cmdop_tui.agent.history import sanitize
from cmdop_tui.agent.messages import blocks_of, is_blank_text, tool_results, tool_uses
from cmdop_tui.transcripts.repair import repair

pytestmark = pytest.mark.fault


def stored_blocks(runner):
    return [b for m in runner.conversation.messages for b in blocks_of(m)]


def accepted(messages) -> str | None:
    return validate_request({"model": "claude-sonnet-5-5", "max_tokens": 1024, "messages": messages})


REPLY_SHAPES = {
    "whitespace after tool results": [tool_reply("list_dir", {"path": "."}), text_reply("\n\n")],
    "whitespace before a tool call": [tool_reply("list_dir", {"path": "."}, text="\n\n"), text_reply("Done.")],
    "only spaces": [text_reply("   \t ")],
    "two calls sharing an id": [
        reply(tool_use("list_dir", {"path": "."}, id="toolu_dup"), tool_use("glob", {"pattern": "*"}, id="toolu_dup")),
        text_reply("Done."),
    ],
    "an id the pattern refuses": [tool_reply("list_dir", {"path": "."}, id="functions.list_dir:0"), text_reply("ok")],
    "an id with spaces": [tool_reply("list_dir", {"path": "."}, id="call 1"), text_reply("ok")],
}


@pytest.mark.parametrize("shape", REPLY_SHAPES)
async def test_the_next_request_after_each_reply_shape_is_accepted(fake_api, tmp_path, shape):
    fake_api.enqueue(*REPLY_SHAPES[shape], text_reply("Still here."))
    runner = make_runner(fake_api, cwd=tmp_path)
    first = await runner.run("look around", Recorder())
    assert first.status == "final", first
    second = await runner.run("and now?", Recorder())  # the request the stored history would wedge
    assert second.status == "final" and second.text == "Still here."
    stored = stored_blocks(runner)
    assert not any(is_blank_text(b) for b in stored)
    ids = [b["id"] for b in tool_uses(stored)]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(b["tool_use_id"] for b in tool_results(stored))  # each call answered
    assert accepted(runner.conversation.messages) is None


async def test_an_id_repeated_across_turns_is_made_new(fake_api, tmp_path):
    fake_api.enqueue(
        tool_reply("list_dir", {"path": "."}, id="toolu_same"),
        tool_reply("glob", {"pattern": "*"}, id="toolu_same"),
        text_reply("Done."),
    )
    runner = make_runner(fake_api, cwd=tmp_path)
    result = await runner.run("twice", Recorder())
    assert result.status == "final"
    ids = [b["id"] for b in tool_uses(stored_blocks(runner))]
    assert ids[0] == "toolu_same" and ids[1] != "toolu_same" and len(set(ids)) == 2
    assert len(fake_api.requests) == 3


def test_a_stored_history_the_api_refuses_is_repaired():
    broken = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}, _call("t.1"), _call("t.1")]},
        {"role": "user", "content": [_result("t.1", "first"), _result("t.1", "second")]},
        {"role": "assistant", "content": [_call("toolu_a")]},
        {"role": "user", "content": [_result("toolu_a", "a")]},
        {"role": "assistant", "content": [_call("toolu_a")]},  # the same id again, a later turn
        {"role": "user", "content": [_result("toolu_a", "again"), {"type": "text", "text": " "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    assert accepted(broken) is not None  # the API refuses it as stored
    for fixed in (sanitize(broken), repair(broken)):
        assert accepted(fixed) is None
        blocks = [b for m in fixed for b in blocks_of(m)]
        outputs = [b["content"] for b in tool_results(blocks)]
        assert outputs == ["first", "second", "a", "again"]  # every result kept, each with its call
        assert sanitize(fixed) == fixed  # a fixed point: the next request sends the same bytes
    assert sanitize(broken) == sanitize(broken)  # the same repair every time (the cache holds)


def _call(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "list_dir", "input": {"path": "."}}


def _result(call_id: str, output: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": output}
