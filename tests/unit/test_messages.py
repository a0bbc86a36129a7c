"""The conversation's types: the guards that tell a block's kind, and the helpers that read blocks.

Blocks come as the fake Messages API sends them (`final()`, what the SDK hands back) and through
the real loop, and malformed as a damaged transcript may hold them.
"""

from __future__ import annotations

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import CompactionBlock, reply, text, thinking, tool_use

from cmdop_tui.agent.messages import (
    are_blocks,
    are_messages,
    blocks_of,
    is_compaction,
    is_kind,
    is_text,
    is_thinking,
    is_tool_result,
    is_tool_use,
    kind_of,
    message_text,
    result_content_text,
    result_for,
    text_block,
    text_of,
    tool_result_block,
    tool_results,
    tool_uses,
)

GUARDS = {
    "text": is_text,
    "tool_use": is_tool_use,
    "tool_result": is_tool_result,
    "thinking": is_thinking,
    "compaction": is_compaction,
}
API_BLOCKS = {
    "text": text("Hello there.").final(),
    "tool_use": tool_use("list_dir", {"path": "."}, id="toolu_1").final(),
    "tool_result": tool_result_block("toolu_1", "a\nb"),
    "thinking": thinking("Let me look.").final(),
    "compaction": CompactionBlock("the summary").final(),
}
MALFORMED = [None, "text", 3, ["text"], {}, {"text": "no type"}, {"type": 7}, {"type": None, "text": "x"}]


@pytest.mark.parametrize("kind", GUARDS)
def test_each_guard_knows_its_kind_of_api_block_and_no_other(kind):
    for other, block in API_BLOCKS.items():
        assert GUARDS[kind](block) is (other == kind), (kind, block)
        assert kind_of(block) == other


@pytest.mark.parametrize("block", MALFORMED)
def test_a_malformed_block_is_no_kind_of_block(block):
    assert kind_of(block) is None
    assert not any(guard(block) for guard in GUARDS.values())
    assert text_of(block) == ""


def test_the_guards_read_the_tag_alone():
    # Whether a block's fields are whole is the loader's question: a tagged block keeps its kind.
    assert is_text({"type": "text"}) and text_of({"type": "text"}) == ""
    assert is_tool_use({"type": "tool_use"})
    assert is_kind({"type": "image"}, ("image", "document"))
    assert not is_kind({"type": "text"}, ("image", "document"))


def test_blocks_of_takes_a_list_a_string_or_nothing():
    assert blocks_of({"role": "user", "content": "hi"}) == [text_block("hi")]
    assert blocks_of({"role": "user", "content": ""}) == []
    assert blocks_of({"role": "user"}) == []
    assert blocks_of({"role": "user", "content": None}) == []
    listed = [API_BLOCKS["text"], API_BLOCKS["tool_use"]]
    assert blocks_of({"role": "assistant", "content": listed}) == listed
    assert blocks_of({"role": "assistant", "content": listed}) is not listed  # a copy


def test_message_text_joins_text_blocks_only():
    message = {"role": "assistant", "content": [text_block("a"), API_BLOCKS["tool_use"], text_block("b")]}
    assert message_text(message) == "ab"
    assert message_text({"role": "user", "content": "plain"}) == "plain"


def test_tool_calls_and_results_are_found_by_kind_and_id():
    blocks = [text_block("x"), API_BLOCKS["tool_use"], tool_result_block("toolu_1", "out"), "junk", {"type": 1}]
    assert tool_uses(blocks) == [API_BLOCKS["tool_use"]]
    assert tool_results(blocks) == [tool_result_block("toolu_1", "out")]
    assert result_for(blocks, "toolu_1") == tool_result_block("toolu_1", "out")
    assert result_for(blocks, "toolu_2") is None


def test_a_tool_result_block_is_built_as_the_api_takes_it():
    assert tool_result_block("t", "") == {"type": "tool_result", "tool_use_id": "t", "content": "(no output)"}
    assert tool_result_block("t", "no", is_error=True)["is_error"] is True
    assert "is_error" not in tool_result_block("t", "yes")


def test_result_content_text_reads_a_string_or_a_list_of_parts():
    assert result_content_text("out") == "out"
    assert result_content_text([text_block("a"), {"type": "image", "source": {}}, text_block("b")]) == "ab"
    assert result_content_text([text_block("a"), "junk", 3]) == "a"
    assert result_content_text(None) == ""


def test_are_blocks_and_are_messages_check_what_a_transcript_line_holds():
    assert are_blocks([]) and are_blocks(list(API_BLOCKS.values()))
    assert not are_blocks("text") and not are_blocks([{"text": "no type"}]) and not are_blocks([text_block("a"), 3])
    assert are_messages([{"role": "user", "content": [text_block("a")]}])
    assert not are_messages([{"role": "system", "content": [text_block("a")]}])
    assert not are_messages([{"role": "user", "content": "a string"}])
    assert not are_messages([["user", "a"]]) and not are_messages(None)


async def test_the_blocks_the_loop_stores_are_known_to_the_guards(fake_api, tmp_path):
    call = tool_use("list_dir", {"path": "."})
    fake_api.enqueue(reply(thinking("Look first."), text("Listing."), call), reply(text("Done.")))
    runner = make_runner(fake_api, cwd=tmp_path, thinking_budget=2048)
    result = await runner.run("what is here?", Recorder())

    assert result.status == "final"
    kinds = [[kind_of(b) for b in blocks_of(m)] for m in runner.conversation.messages]
    assert kinds == [["text"], ["thinking", "text", "tool_use"], ["tool_result"], ["text"]]
    stored = [b for m in runner.conversation.messages for b in blocks_of(m)]
    assert [b["id"] for b in tool_uses(stored)] == [call.id]
    assert result_for(stored, call.id) is not None
    assert are_messages(runner.conversation.messages)
