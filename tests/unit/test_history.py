"""The history invariants: sanitize, merge, conversation appends and cancel repair."""

from cmdop_tui.agent.history import CANCELLED_RESULT, Conversation, merge_adjacent, sanitize
from cmdop_tui.agent.messages import text_block, tool_result_block


def user(*blocks):
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def call(call_id, name="list_dir"):
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "."}}


def test_valid_history_is_returned_unchanged_and_not_copied():
    history = [
        user(text_block("hi")),
        assistant(call("a")),
        user(tool_result_block("a", "ok")),
        assistant(text_block("done")),
    ]
    cleaned = sanitize(history)
    assert cleaned == history
    assert all(x is y for x, y in zip(cleaned, history, strict=True))


def test_orphan_tool_use_is_dropped_with_its_empty_message():
    history = [user(text_block("hi")), assistant(call("a")), user(text_block("next question"))]
    assert sanitize(history) == [user(text_block("hi"), text_block("next question"))]


def test_orphan_tool_use_keeps_the_rest_of_its_message():
    history = [
        user(text_block("hi")),
        assistant(text_block("let me look"), call("a"), call("b")),
        user(tool_result_block("b", "ok")),
    ]
    cleaned = sanitize(history)
    assert cleaned[1] == assistant(text_block("let me look"), call("b"))
    assert cleaned[2] == user(tool_result_block("b", "ok"))


def test_trailing_unanswered_tool_use_is_dropped():
    history = [user(text_block("hi")), assistant(text_block("checking"), call("a"))]
    assert sanitize(history) == [user(text_block("hi")), assistant(text_block("checking"))]


def test_orphan_tool_result_is_dropped():
    history = [
        user(text_block("hi")),
        assistant(text_block("hello")),
        user(tool_result_block("zzz", "stale"), text_block("more")),
    ]
    assert sanitize(history)[-1] == user(text_block("more"))


def test_leading_assistant_message_is_dropped():
    history = [assistant(text_block("orphan")), user(text_block("hi"))]
    assert sanitize(history) == [user(text_block("hi"))]


def test_merge_puts_tool_results_first_and_drops_empties():
    merged = merge_adjacent([user(text_block("x")), {"role": "user", "content": []}, user(tool_result_block("a", "r"))])
    assert merged == [user(tool_result_block("a", "r"), text_block("x"))]


def test_string_content_is_accepted_and_normalised():
    assert sanitize([{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]) == [
        user(text_block("hi"))
    ]


def test_conversation_merges_consecutive_user_turns():
    conversation = Conversation()
    conversation.append_user("first")
    conversation.append_user("second")
    assert conversation.messages == [user(text_block("first"), text_block("second"))]


def test_close_open_tool_calls_keeps_finished_results_and_cancels_the_rest():
    conversation = Conversation()
    conversation.append_user("go")
    conversation.append_assistant([call("a"), call("b")])
    conversation.close_open_tool_calls({"a": tool_result_block("a", "done")})
    assert conversation.messages[-1] == user(
        tool_result_block("a", "done"), tool_result_block("b", CANCELLED_RESULT, is_error=True)
    )
    assert sanitize(conversation.messages) == conversation.messages
    conversation.close_open_tool_calls({})  # nothing open any more: no-op
    assert len(conversation.messages) == 3


def test_empty_tool_output_still_makes_a_valid_block():
    assert tool_result_block("a", "")["content"] == "(no output)"


def test_operation_records_replay_to_the_same_history():
    records = []
    conversation = Conversation(listeners=[records.append])
    conversation.append_user("go")
    conversation.append_assistant([call("a")])
    conversation.close_open_tool_calls({})
    conversation.append_user("and then")  # merges into the tool-result message
    conversation.replace(conversation.messages[:1])
    conversation.append_assistant([text_block("ok")])
    replayed = Conversation()
    for record in records:
        replayed.apply(record)
    assert replayed.messages == conversation.messages
    conversation.clear()
    replayed.apply(records[-1] if records[-1]["op"] == "clear" else {"op": "clear"})
    assert replayed.messages == [] and records[-1] == {"op": "clear"}
