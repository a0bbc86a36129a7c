"""`Operator.steer`: more for the running prompt, from another thread while `chat()` blocks or from
async code while `run()` yields, through the real SDK against the fake Messages API."""

from __future__ import annotations

import threading

from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator


def waiting_command(flag) -> str:
    return f"echo started; while [ ! -e {flag} ]; do sleep 0.02; done; echo finished"


def steered_message(fake_api, index: int) -> list[tuple[str, str]]:
    """The last message of request `index`, as (type, text or tool_use_id) per block."""
    content = fake_api.requests[index].body["messages"][-1]["content"]
    return [(b["type"], b.get("text") or b.get("tool_use_id", "")) for b in content]


def test_steer_from_another_thread_while_chat_runs(fake_api, anthropic_env, tmp_path):
    flag = tmp_path / "go-on"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": waiting_command(flag)}, id="toolu_op1"), text_reply("Did both.")
    )
    started, seen, answers = threading.Event(), [], []

    def on_event(event: dict) -> None:
        seen.append(event)
        if event["type"] == "tool_progress" and "started" in event["text"]:
            started.set()

    with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        chat = threading.Thread(target=lambda: answers.append(operator.chat("check it", on_event=on_event)))
        chat.start()
        assert started.wait(30)
        assert operator.steer("and the disk too")
        assert operator.pending_steering == ["and the disk too"]
        flag.touch()
        chat.join(30)
        assert operator.pending_steering == []
    assert answers == ["Did both."]
    assert steered_message(fake_api, 1) == [("tool_result", "toolu_op1"), ("text", "and the disk too")]
    assert {"type": "steering", "text": "and the disk too"} in seen


async def test_steer_from_async_code_while_run_yields(fake_api, anthropic_env, tmp_path):
    flag = tmp_path / "go-on"
    fake_api.enqueue(tool_reply("execute_command", {"command": waiting_command(flag)}), text_reply("Both done."))
    kinds = []
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        async for event in operator.run("check it"):
            kinds.append(event["type"])
            if event["type"] == "tool_progress" and "started" in event["text"]:
                operator.steer("then say so")
                flag.touch()
    assert operator.last_result is not None and operator.last_result.text == "Both done."
    assert steered_message(fake_api, 1)[1:] == [("text", "then say so")]
    assert kinds.index("steering") > kinds.index("tool_end")


def test_steering_sent_before_the_session_opens_goes_with_the_first_prompt(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("ok"))
    with Operator(cwd=tmp_path, record=False) as operator:
        assert operator.steer("be brief")
        assert not operator.steer("   ")
        assert operator.chat("hello") == "ok"
    assert steered_message(fake_api, 0) == [("text", "hello"), ("text", "be brief")]
    assert len(fake_api.requests) == 1


def test_take_steering_gives_back_what_no_step_took(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("ok"))
    with Operator(cwd=tmp_path, record=False) as operator:
        operator.steer("never mind")
        assert operator.take_steering() == ["never mind"]
        assert operator.chat("hello") == "ok"
    assert steered_message(fake_api, 0) == [("text", "hello")]
