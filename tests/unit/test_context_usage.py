"""What fills the context, estimated by part."""

from cmdop_tui.agent.context_usage import estimate_tokens, measure
from cmdop_tui.agent.messages import text_block, tool_result_block


def test_tool_outputs_are_counted_apart_from_the_conversation():
    messages = [
        {"role": "user", "content": [text_block("list the logs")]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "list_dir", "input": {}}]},
        {"role": "user", "content": [tool_result_block("t1", "x" * 4000)]},
    ]
    usage = measure("system " * 100, [{"name": "list_dir", "input_schema": {}}], messages)
    assert 1000 <= usage.tool_outputs <= 1100
    assert 0 < usage.conversation < 100 and usage.summary == 0
    assert usage.system_and_tools >= estimate_tokens("system " * 100)
    assert usage.total == usage.system_and_tools + usage.conversation + usage.tool_outputs


def test_an_estimate_is_about_four_characters_a_token():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
