"""Steering: text the user sends while a run goes on reaches the model at the run's next step,
through the real SDK against the fake Messages API (which refuses a request whose tool results
do not come first in their message)."""

from __future__ import annotations

import asyncio
import threading

from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.events import SteeringDelivered, ToolEnd, ToolProgress, TurnStarted
from cmdop_tui.agent.steering import SteeringInbox


def started(event: object) -> bool:
    return isinstance(event, ToolProgress) and "started" in event.text


async def test_steering_sent_while_a_tool_runs_follows_its_result_in_the_next_request(fake_api, tmp_path):
    flag = tmp_path / "go-on"
    command = f"echo started; while [ ! -e {flag} ]; do sleep 0.02; done; echo finished"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}, id="toolu_S1"), text_reply("Checked both."))
    runner, events = make_runner(fake_api, cwd=tmp_path), Recorder()
    task = asyncio.create_task(runner.run("run the check", events))
    await events.wait_for(started)
    # From another thread, as a library user's would: the loop is busy in the tool.
    assert await asyncio.to_thread(runner.steering.steer, "also look at /etc/hosts")
    flag.touch()
    result = await task

    assert result.status == "final" and result.text == "Checked both." and result.turns == 2
    last = fake_api.requests[1].body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][0]["tool_use_id"] == "toolu_S1" and "finished" in str(last["content"][0]["content"])
    assert last["content"][1]["text"] == "also look at /etc/hosts"
    kinds = [type(e) for e in events.events if isinstance(e, ToolEnd | SteeringDelivered | TurnStarted)]
    assert kinds == [TurnStarted, ToolEnd, SteeringDelivered, TurnStarted]  # after the result, before the next step
    assert events.of(SteeringDelivered)[0].to_json() == {"type": "steering", "text": "also look at /etc/hosts"}
    assert runner.steering.pending() == []


async def test_steering_after_a_final_reply_goes_on_with_it_instead_of_ending(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("Here is the summary.", gate=gate), text_reply("Shorter: done."))
    runner, events = make_runner(fake_api), Recorder()
    task = asyncio.create_task(runner.run("summarize", events))
    await events.wait_for(TurnStarted)
    assert await asyncio.to_thread(fake_api.wait_for_requests, 1, 10)  # the reply is on its way
    runner.steering.steer("make it shorter")
    gate.set()
    result = await task

    assert result.status == "final" and result.text == "Shorter: done." and result.turns == 2
    messages = fake_api.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [(b["type"], b["text"]) for b in messages[-1]["content"]] == [("text", "make it shorter")]
    assert [e.text for e in events.of(SteeringDelivered)] == ["make it shorter"]


async def test_a_stop_keeps_the_steering_that_was_not_delivered(fake_api, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo started; sleep 30"}), text_reply("unused"))
    runner, events = make_runner(fake_api, cwd=tmp_path), Recorder()
    task = asyncio.create_task(runner.run("go", events))
    await events.wait_for(started)
    runner.steering.steer("first thought")
    runner.steering.steer("second thought")
    runner.ui_cancel.fire()
    result = await task

    assert result.status == "cancelled" and not events.of(SteeringDelivered)
    assert runner.steering.pending() == ["first thought", "second thought"]
    assert "thought" not in str(runner.conversation.messages)
    assert runner.steering.take_all() == ["first thought", "second thought"] and runner.steering.pending() == []


def test_blank_steering_is_refused_and_queues_nothing():
    inbox = SteeringInbox()
    assert not inbox.steer("  \n")
    assert inbox.pending() == []
