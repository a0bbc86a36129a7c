from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.loop_mode import (
    DEFAULT_LOOP_BREAKERS,
    RepeatGuard,
    contains_breaker,
    prepare_next_loop,
    remove_loop_messages,
)
from cmdop_tui.agent.messages import text_block

LOOP = "Proceed."


def test_breakers_are_exact_case_sensitive_substrings():
    assert contains_breaker("All good. The task is done.", DEFAULT_LOOP_BREAKERS)
    assert not contains_breaker("the task is done.", DEFAULT_LOOP_BREAKERS)
    assert not contains_breaker("The task is done", DEFAULT_LOOP_BREAKERS)
    assert not contains_breaker("anything", ())


def test_prepare_next_loop_removes_old_loop_messages_and_merges_replies():
    conversation = Conversation()
    conversation.append_user("do the thing")
    conversation.append_assistant([text_block("step 1")])
    prepare_next_loop(conversation, LOOP)
    conversation.append_assistant([text_block("step 2")])
    prepare_next_loop(conversation, LOOP)
    assert conversation.messages == [
        {"role": "user", "content": [text_block("do the thing")]},
        {"role": "assistant", "content": [text_block("step 1"), text_block("step 2")]},
        {"role": "user", "content": [text_block(LOOP)]},
    ]


def test_remove_loop_messages_keeps_user_text_that_differs():
    messages = [
        {"role": "user", "content": [text_block("Proceed. please")]},
        {"role": "assistant", "content": [text_block("ok")]},
    ]
    assert remove_loop_messages(messages, LOOP) == messages


def test_repeat_guard_trips_on_the_third_identical_call_in_a_row():
    guard = RepeatGuard(limit=3)
    assert not guard.observe("ls", {"path": "."})
    assert not guard.observe("ls", {"path": "."})
    assert guard.observe("ls", {"path": "."})


def test_repeat_guard_resets_on_a_different_call_and_ignores_key_order():
    guard = RepeatGuard(limit=3)
    assert not guard.observe("grep", {"a": 1, "b": 2})
    assert not guard.observe("grep", {"b": 2, "a": 1})
    assert not guard.observe("grep", {"a": 1, "b": 3})
    assert not guard.observe("grep", {"a": 1, "b": 3})
    assert guard.observe("grep", {"b": 3, "a": 1})
