"""The agent loop end to end, through the real SDK against the fake Messages API.

The fake server validates every request like the real API (orphan tool_use, cache_control count,
temperature with thinking...), and the `fake_api` fixture fails any test whose loop sent an invalid
request, so "the next turn is valid" is checked simply by making one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from dataclasses import replace

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import (
    error_reply,
    raw_tool_use,
    reply,
    stream_error,
    text_reply,
    thinking,
    tool_reply,
    tool_use,
)

from cmdop_tui.agent.approval import Approval
from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.events import (
    Cancelled,
    Error,
    Final,
    LoopContinued,
    Retrying,
    Thinking,
    Token,
    ToolEnd,
    ToolProgress,
    ToolStart,
    Usage,
    Waiting,
)
from cmdop_tui.agent.history import CANCELLED_RESULT, sanitize
from cmdop_tui.agent.loop_mode import LoopSettings
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.routing import ToolPolicy


def last_tool_results(body):
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


async def wait_for_request(fake_api, n):
    assert await asyncio.to_thread(fake_api.wait_for_requests, n, 10)


# --- the plain path ----------------------------------------------------------------------------


async def test_final_answer_streams_tokens_and_builds_a_well_formed_request(fake_api):
    fake_api.enqueue(text_reply("Hello there, operator."))
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("hi", events)

    assert result.status == "final" and result.text == "Hello there, operator."
    assert "".join(e.text for e in events.of(Token)) == "Hello there, operator."
    assert events.kinds()[0] == "turn_start" and events.kinds()[-1] == "final"
    body = fake_api.requests[0].body
    assert body["temperature"] == 0.3 and body["stream"] is True
    assert body["tool_choice"] == {"type": "auto"}
    assert {"execute_command", "read_file", "list_dir", "write_file", "grep", "glob"} <= {
        t["name"] for t in body["tools"]
    }
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "I'm CMDOP Operator on testhost." in body["system"][1]["text"]
    assert runner.conversation.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello there, operator."}],
    }
    assert all("cache_control" not in str(m) for m in runner.conversation.messages)  # breakpoints are per request


async def test_usage_is_reported_per_response_and_summed(fake_api):
    fake_api.enqueue(text_reply("one"), text_reply("two"))
    runner, events = make_runner(fake_api), Recorder()
    await runner.run("first", events)
    result = await runner.run("second", events)
    usages = events.of(Usage)
    assert len(usages) == 2 and all(u.output_tokens >= 1 and u.total_input_tokens > 0 for u in usages)
    assert usages[1].cache_read_input_tokens > 0  # the static prefix was cached by the first request
    assert result.usage.output_tokens == usages[1].output_tokens


async def test_tool_call_round_trip_keeps_ids_paired(fake_api, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    fake_api.enqueue(
        tool_reply("list_dir", {"path": str(tmp_path)}, id="toolu_01A", text="Looking."), text_reply("One file.")
    )
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("what is here?", events)

    assert result.status == "final" and result.turns == 2
    start, end = events.of(ToolStart)[0], events.of(ToolEnd)[0]
    assert (start.call_id, start.name, end.is_error) == ("toolu_01A", "list_dir", False)
    assert "notes.txt" in end.output
    results = last_tool_results(fake_api.requests[1].body)
    assert [r["tool_use_id"] for r in results] == ["toolu_01A"] and "notes.txt" in str(results[0]["content"])


async def test_thinking_is_streamed_and_sent_back_unmodified(fake_api):
    fake_api.enqueue(
        reply(thinking("Let me think.", signature="sig-abc"), tool_use("glob", {"pattern": "*.none"}, id="toolu_T")),
        text_reply("done"),
    )
    runner, events = make_runner(fake_api, thinking_budget=2048), Recorder()
    await runner.run("think", events)
    assert "".join(e.text for e in events.of(Thinking)) == "Let me think."
    body = fake_api.requests[1].body
    assert "temperature" not in body and body["thinking"]["budget_tokens"] == 2048
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "sig-abc",
    }


async def test_non_streaming_mode_gives_the_same_result(fake_api):
    fake_api.enqueue(tool_reply("glob", {"pattern": "*.nothing"}), text_reply("nothing found"))
    runner, events = make_runner(fake_api, stream=StreamPolicy(enabled=False)), Recorder()
    result = await runner.run("find", events)
    assert result.status == "final" and result.text == "nothing found"
    assert all(not r.body.get("stream") for r in fake_api.requests)
    assert events.of(ToolEnd)


# --- tool execution ----------------------------------------------------------------------------

WAIT_FOR_OTHER = "touch {me}; for i in $(seq 500); do [ -e {other} ] && exit 0; sleep 0.01; done; exit 9"


async def test_parallel_tool_calls_really_run_at_the_same_time(fake_api, tmp_path):
    # Each command waits for the other's marker: only concurrent execution lets both succeed.
    a = WAIT_FOR_OTHER.format(me=tmp_path / "a", other=tmp_path / "b")
    b = WAIT_FOR_OTHER.format(me=tmp_path / "b", other=tmp_path / "a")
    fake_api.enqueue(
        reply(tool_use("execute_command", {"command": a}), tool_use("execute_command", {"command": b})),
        text_reply("both ran"),
    )
    runner, events = make_runner(fake_api, parallel_tools=True), Recorder()
    await runner.run("run both", events)
    assert [("exit code: 0" in e.output) for e in events.of(ToolEnd)] == [True, True]


async def test_sequential_tool_calls_run_in_order(fake_api, tmp_path):
    fake_api.enqueue(
        reply(
            tool_use("write_file", {"path": str(tmp_path / "f"), "content": "1"}, id="toolu_1"),
            tool_use("read_file", {"path": str(tmp_path / "f")}, id="toolu_2"),
        ),
        text_reply("ok"),
    )
    runner, events = make_runner(fake_api, parallel_tools=False), Recorder()
    await runner.run("write then read", events)
    order = [(e.kind, e.call_id) for e in events.events if isinstance(e, (ToolStart, ToolEnd))]
    assert order == [
        ("tool_start", "toolu_1"),
        ("tool_end", "toolu_1"),
        ("tool_start", "toolu_2"),
        ("tool_end", "toolu_2"),
    ]
    assert "1" in events.of(ToolEnd)[1].output
    assert [r["tool_use_id"] for r in last_tool_results(fake_api.requests[1].body)] == ["toolu_1", "toolu_2"]


async def test_command_output_streams_as_progress(fake_api):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo one; echo two >&2"}), text_reply("ok"))
    runner, events = make_runner(fake_api), Recorder()
    await runner.run("run", events)
    streams = {(e.stream, e.text.strip()) for e in events.of(ToolProgress)}
    assert ("stdout", "one") in streams and ("stderr", "two") in streams


@pytest.mark.parametrize(
    "call, expected",
    [
        (tool_use("no_such_tool", {}), "does not exist"),
        (tool_use("write_file", {"path": "/tmp/never-written-by-cmdop", "content": "x"}), "is not available"),
        (raw_tool_use("list_dir", '{"path": "/tmp"'), "not valid JSON"),
        (tool_use("list_dir", {"path": 7}), "must be a string"),
        (tool_use("read_file", {}), "missing required field 'path'"),
    ],
    ids=["unknown", "hidden", "malformed-json", "wrong-type", "missing-field"],
)
async def test_bad_tool_calls_get_an_error_result_and_the_loop_goes_on(fake_api, call, expected):
    fake_api.enqueue(reply(call), text_reply("sorry"))
    runner = make_runner(fake_api, tool_policy=ToolPolicy(hidden=frozenset({"write_file"})))
    result = await runner.run("try", Recorder())
    assert result.status == "final"
    (tool_result,) = last_tool_results(fake_api.requests[1].body)
    assert tool_result["is_error"] is True and expected in str(tool_result["content"])
    assert not os.path.exists("/tmp/never-written-by-cmdop")


async def test_turn1_allowlist_limits_the_first_request_only(fake_api):
    fake_api.enqueue(tool_reply("glob", {"pattern": "*.x"}), text_reply("ok"))
    runner = make_runner(fake_api, tool_policy=ToolPolicy(turn1_allow_tags=frozenset({"nothing-matches"})))
    await runner.run("go", Recorder())
    first = {t["name"] for t in fake_api.requests[0].body["tools"]}
    second = {t["name"] for t in fake_api.requests[1].body["tools"]}
    assert first == {"execute_command", "read_file", "list_dir"}  # core tools only
    assert {"glob", "grep", "write_file"} <= second


async def test_denied_approval_tells_the_model_and_runs_nothing(fake_api, tmp_path):
    target = tmp_path / "never"
    asked = []

    async def deny(call):
        asked.append(call.name)
        return Approval(False, "not today")

    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("ok"))
    runner = make_runner(fake_api, approve=deny)
    await runner.run("touch it", Recorder())
    (tool_result,) = last_tool_results(fake_api.requests[1].body)
    assert asked == ["execute_command"] and "denied" in tool_result["content"] and "not today" in tool_result["content"]
    assert not target.exists()


# --- retries, dead streams, errors -------------------------------------------------------------


async def test_retryable_errors_are_retried_with_exponential_backoff(fake_api):
    fake_api.enqueue(
        error_reply(529), error_reply(429), error_reply(500), stream_error("overloaded_error"), text_reply("finally")
    )
    policy = RetryPolicy(attempts=6, initial_s=0.01, max_s=0.04, jitter_s=0.0)
    runner, events = make_runner(fake_api, retry=policy), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "final" and result.text == "finally"
    assert [e.delay_s for e in events.of(Retrying)] == [0.01, 0.02, 0.04, 0.04]
    assert [e.attempt for e in events.of(Retrying)] == [1, 2, 3, 4]
    assert len(fake_api.requests) == 5


async def test_six_attempts_then_a_clear_error_and_the_next_turn_still_works(fake_api):
    fake_api.enqueue(*[error_reply(529) for _ in range(6)], text_reply("back"))
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "error" and result.code == "overloaded"
    assert len(fake_api.requests) == 6 and len(events.of(Retrying)) == 5
    assert events.events[-1] == Error(code="overloaded", message=result.message)
    assert (await runner.run("again", Recorder())).text == "back"


async def test_retry_after_header_is_honoured_within_the_cap(fake_api):
    fake_api.enqueue(error_reply(429, headers={"retry-after": "0.03"}), text_reply("ok"))
    policy = RetryPolicy(initial_s=0.001, max_s=0.05, jitter_s=0.0)
    runner, events = make_runner(fake_api, retry=policy), Recorder()
    await runner.run("hi", events)
    assert events.of(Retrying)[0].delay_s == 0.03


@pytest.mark.parametrize("status, code", [(400, "bad_request"), (401, "auth"), (404, "not_found")])
async def test_non_retryable_errors_fail_at_once(fake_api, status, code):
    fake_api.enqueue(error_reply(status))
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("hi", events)
    assert (result.status, result.code) == ("error", code)
    assert len(fake_api.requests) == 1 and not events.of(Retrying)


async def test_unreachable_endpoint_is_a_connection_error(fake_api):
    fake_api.stop()
    runner = make_runner(fake_api, retry=RetryPolicy(attempts=2, initial_s=0.001, jitter_s=0))
    result = await runner.run("hi", Recorder())
    assert result.code == "connection" and "could not reach" in result.message


async def test_dead_stream_is_retried(fake_api):
    fake_api.enqueue(text_reply("never finished " * 10, stall_after=4), text_reply("complete"))
    runner, events = make_runner(fake_api, stream=StreamPolicy(idle_timeout_s=0.2)), Recorder()
    result = await runner.run("hi", events)
    assert result.text == "complete"
    assert "no event for 0.2 s" in events.of(Retrying)[0].reason


@pytest.mark.fault
async def test_a_stopped_process_reads_its_buffered_stream_and_does_not_ask_again(fake_api):
    """As after Ctrl-Z and fg: the app does not run for longer than the idle timeout while the
    whole reply arrives; on waking it reads what came instead of calling the stream dead."""
    fake_api.enqueue(text_reply("one two three four five six seven eight", chunk_size=4))
    stalled: list[bool] = []

    def sink(event):
        if isinstance(event, Token) and not stalled:
            stalled.append(True)  # the loop stops dead for 3 idle timeouts, as a stopped process does
            asyncio.get_running_loop().call_later(0.01, time.sleep, 0.6)
        events(event)

    events = Recorder()
    runner = make_runner(fake_api, stream=StreamPolicy(idle_timeout_s=0.2, stall_grace_s=0.5))
    result = await runner.run("hi", sink)
    assert stalled and result.status == "final" and result.text == "one two three four five six seven eight"
    assert len(fake_api.requests) == 1 and not events.of(Retrying)  # asked once, paid once


@pytest.mark.fault
async def test_a_network_pause_over_2_s_is_not_a_stall(fake_api):
    """The link pauses 3 s in the middle of a reply (with the shipped stream policy): the stream
    is read on, not thrown away, asked for again and paid twice."""
    fake_api.enqueue(text_reply("after a pause", delay_s=3.0))
    runner, events = make_runner(fake_api, stream=StreamPolicy()), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "final" and result.text == "after a pause"
    assert len(fake_api.requests) == 1 and not events.of(Retrying)


@pytest.mark.fault
async def test_a_silent_endpoint_is_said_long_before_its_deadline(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("late", hang_before_headers=True, gate=gate), text_reply("here"))
    events = Recorder()
    stream = StreamPolicy(waiting_notice_s=0.1, first_event_timeout_s=30)
    runner = make_runner(fake_api, stream=stream)
    task = asyncio.create_task(runner.run("hi", events))
    waiting = await events.wait_for(lambda e: isinstance(e, Waiting))
    assert waiting.seconds == 0.1 and waiting.deadline_s == 30 and "No answer" in waiting.describe()
    gate.set()
    result = await task
    assert result.status == "final" and len(events.of(Waiting)) == 1


@pytest.mark.fault
async def test_an_endpoint_that_never_answers_ends_within_its_silence_deadline(fake_api):
    fake_api.enqueue(*[text_reply("never", hang_before_headers=True) for _ in range(6)])
    stream = StreamPolicy(waiting_notice_s=0.1, first_event_timeout_s=10, silence_deadline_s=1.0)
    runner, events = make_runner(fake_api, stream=stream), Recorder()
    started = time.monotonic()
    result = await runner.run("hi", events)
    assert result.status == "error" and time.monotonic() - started < 5  # not 6 attempts of 10 s
    assert events.of(Waiting)  # said while it waited
    assert len(fake_api.requests) < 6


@pytest.mark.fault
@pytest.mark.parametrize("where", ["head", "body"])
async def test_an_endpoint_that_dribbles_bytes_without_progress_ends_within_its_deadline(fake_api, where):
    """Alive but going nowhere (a byte at a time of an endless header, or of an endless SSE
    comment): the bytes are not progress; the request ends with an error, retries bounded."""
    fake_api.enqueue(*[text_reply("never", dribble=where) for _ in range(6)])
    stream = StreamPolicy(first_event_timeout_s=0.5, idle_timeout_s=0.3, silence_deadline_s=1.5)
    runner, events = make_runner(fake_api, stream=stream), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "error", result
    assert "no event" in result.message or "answer" in result.message.lower(), result.message
    assert len(fake_api.requests) < 6


async def test_dead_stream_near_the_deadline_falls_back_to_one_non_streaming_call(fake_api):
    fake_api.enqueue(text_reply("stalls", stall_after=4), text_reply("whole answer"))
    stream = StreamPolicy(idle_timeout_s=0.2, near_deadline_s=60)
    runner, events = make_runner(fake_api, stream=stream), Recorder()
    result = await runner.run("hi", events, Operation.with_timeout(30))
    assert result.text == "whole answer"
    assert [r.body.get("stream", False) for r in fake_api.requests] == [True, False]
    assert not events.of(Retrying)


# --- cancel at every stage -------------------------------------------------------------------


async def run_and_stop(runner, events, ready):
    """Start a run, wait for `ready`, fire Stop; return the result and the stop latency."""
    task = asyncio.create_task(runner.run("go", events))
    await events.wait_for(ready)
    fired = time.monotonic()
    runner.ui_cancel.fire()
    result = await task
    return result, time.monotonic() - fired


async def test_stop_mid_stream_is_instant_and_leaves_no_half_reply(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("partial answer that never ends", stall_after=5, gate=gate), text_reply("fresh"))
    runner, events = make_runner(fake_api, stream=StreamPolicy(idle_timeout_s=30)), Recorder()
    result, latency = await run_and_stop(runner, events, Token)
    assert result.status == "cancelled" and latency < 0.5
    assert events.events[-1] == Cancelled(reason="ui", message="stopped by the user")
    assert runner.conversation.messages == [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    assert (await runner.run("next", Recorder())).text == "fresh"


async def test_stop_mid_command_kills_it_and_answers_the_call(fake_api, tmp_path):
    pid_file = tmp_path / "pid"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"echo $$ > {pid_file}; echo started; sleep 30"}), text_reply("ok")
    )
    runner, events = make_runner(fake_api), Recorder()
    result, latency = await run_and_stop(runner, events, lambda e: isinstance(e, ToolProgress) and "started" in e.text)
    assert result.status == "cancelled" and latency < 1.0
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    end = events.of(ToolEnd)[0]
    assert end.is_error and end.output == CANCELLED_RESULT
    last = runner.conversation.messages[-1]["content"][0]
    assert last["type"] == "tool_result" and last["is_error"] is True
    assert sanitize(runner.conversation.messages) == runner.conversation.messages
    assert (await runner.run("next", Recorder())).text == "ok"


async def test_stop_during_backoff_does_not_wait_it_out(fake_api):
    fake_api.enqueue(error_reply(529), text_reply("unused"))
    runner, events = make_runner(fake_api, retry=RetryPolicy(initial_s=30, jitter_s=0)), Recorder()
    result, latency = await run_and_stop(runner, events, Retrying)
    assert result.status == "cancelled" and latency < 0.5
    fake_api.requests.clear()
    assert (await runner.run("next", Recorder())).text == "unused"


async def test_stop_while_waiting_for_approval(fake_api):
    never = asyncio.Event()

    async def ask_forever(call):
        await never.wait()
        return Approval(True)

    fake_api.enqueue(tool_reply("execute_command", {"command": "true"}), text_reply("next"))
    runner, events = make_runner(fake_api, approve=ask_forever), Recorder()
    result, _ = await run_and_stop(runner, events, ToolStart)
    assert result.status == "cancelled"
    assert (await runner.run("again", Recorder())).text == "next"


async def test_parallel_tools_are_all_cancelled(fake_api):
    fake_api.enqueue(
        reply(
            tool_use("execute_command", {"command": "echo a-up; sleep 30"}),
            tool_use("execute_command", {"command": "echo b-up; sleep 30"}),
        ),
        text_reply("ok"),
    )
    runner, events = make_runner(fake_api), Recorder()
    result, latency = await run_and_stop(
        runner, events, lambda e: len([p for p in events.of(ToolProgress) if "up" in p.text]) == 2
    )
    assert result.status == "cancelled" and latency < 1.0
    assert [e.is_error for e in events.of(ToolEnd)] == [True, True]
    assert len(last_tool_results({"messages": runner.conversation.messages})) == 2


async def test_operation_cancel_is_honoured_at_the_next_boundary(fake_api, tmp_path):
    operation = Operation()
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo working"}), text_reply("never requested"))
    events = Recorder()

    def sink(event):
        events(event)
        if isinstance(event, ToolStart):
            operation.cancel()  # mid-tool: the tool finishes, then the loop stops

    runner = make_runner(fake_api)
    result = await runner.run("go", sink, operation)
    assert result.status == "cancelled" and events.events[-1].reason == "operation"
    assert events.of(ToolEnd)[0].is_error is False and len(fake_api.requests) == 1
    fake_api.requests.clear()
    assert (await runner.run("next", Recorder())).text == "never requested"


async def test_deadline_ends_the_run(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("slow", gate=gate), text_reply("after"))
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("go", events, Operation.with_timeout(0.3))
    assert result.status == "cancelled" and events.events[-1].reason == "deadline"
    gate.set()
    assert (await runner.run("next", Recorder())).text == "after"


async def test_an_outside_task_cancel_propagates_after_repairing_history(fake_api, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo up; sleep 30"}))
    runner, events = make_runner(fake_api), Recorder()
    task = asyncio.create_task(runner.run("go", events))
    await events.wait_for(ToolProgress)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events.events[-1].kind == "cancelled"
    assert sanitize(runner.conversation.messages) == runner.conversation.messages


# --- limits and loop mode ----------------------------------------------------------------------


async def test_turn_limit(fake_api):
    fake_api.enqueue(*[tool_reply("glob", {"pattern": f"*.{i}"}) for i in range(2)], text_reply("next"))
    runner, events = make_runner(fake_api, max_turns=2), Recorder()
    result = await runner.run("go", events)
    assert result.status == "max_turns" and events.events[-1].code == "max_turns"
    assert (await runner.run("again", Recorder())).text == "next"


async def test_the_same_call_three_times_in_a_row_stops_the_run(fake_api, tmp_path):
    marker = tmp_path / "count"
    same = {"command": f"echo x >> {marker}"}
    fake_api.enqueue(*[tool_reply("execute_command", same) for _ in range(3)], text_reply("next"))
    runner, events = make_runner(fake_api), Recorder()
    result = await runner.run("go", events)
    assert result.status == "repeated_tool_call" and "execute_command" in result.message
    assert marker.read_text().count("x") == 2  # the third call was not run
    assert (await runner.run("again", Recorder())).text == "next"


BREAKERS = ("The task is done.",)


async def test_loop_mode_reprompts_until_a_breaker_and_cleans_up_loop_messages(fake_api):
    fake_api.enqueue(text_reply("Step one."), text_reply("Step two."), text_reply("All good. The task is done."))
    loop = LoopSettings(enabled=True, message="Keep going.", breakers=BREAKERS, max_loops=5)
    runner, events = make_runner(fake_api, loop=loop), Recorder()
    result = await runner.run("do it", events)

    assert result.status == "final" and result.loops == 2
    assert [e.loop for e in events.of(LoopContinued)] == [1, 2]
    third = fake_api.requests[2].body["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user"]
    assert third[1]["content"] == [{"type": "text", "text": "Step one."}, {"type": "text", "text": "Step two."}]
    assert third[2]["content"][0]["text"] == "Keep going."
    assert isinstance(events.events[-1], Final)


async def test_loop_breakers_are_case_sensitive(fake_api):
    fake_api.enqueue(text_reply("the task is done."), text_reply("The task is done."))
    loop = LoopSettings(enabled=True, message="Go on.", breakers=BREAKERS)
    result = await make_runner(fake_api, loop=loop).run("x", Recorder())
    assert result.loops == 1


async def test_loop_cap(fake_api):
    fake_api.enqueue(*[text_reply(f"still working {i}") for i in range(3)])
    loop = LoopSettings(enabled=True, message="Go on.", breakers=BREAKERS, max_loops=2)
    runner, events = make_runner(fake_api, loop=loop), Recorder()
    result = await runner.run("x", events)
    assert result.status == "max_loops" and events.events[-1].code == "max_loops"


# --- routing -----------------------------------------------------------------------------------


async def test_intent_router_direct_sends_no_tools(fake_api):
    fake_api.enqueue(text_reply("DIRECT"), text_reply("Paris."))
    runner = make_runner(fake_api, intent_router=True, router_model="claude-haiku-5-5")
    result = await runner.run("capital of France?", Recorder())
    classify, answer = fake_api.requests[0].body, fake_api.requests[1].body
    assert classify["model"] == "claude-haiku-5-5" and "tools" not in classify
    assert "tools" not in answer and "Never invent command output" in answer["system"][1]["text"]
    assert result.text == "Paris."


async def test_intent_router_agent_and_router_failure_keep_tools(fake_api):
    fake_api.enqueue(text_reply("AGENT"), text_reply("ok"), error_reply(400), text_reply("ok"))
    runner = make_runner(fake_api, intent_router=True)
    await runner.run("list files", Recorder())
    await runner.run("again", Recorder())
    assert "tools" in fake_api.requests[1].body and "tools" in fake_api.requests[3].body
    fake_api.expect_invalid = True  # the router's scripted 400 counts as rejected


async def test_history_with_orphans_is_sanitised_before_the_request(fake_api):
    fake_api.enqueue(text_reply("fine"))
    runner = make_runner(fake_api)
    runner.conversation.append_user("earlier")
    runner.conversation.append_assistant([{"type": "tool_use", "id": "toolu_orphan", "name": "glob", "input": {}}])
    result = await runner.run("now", Recorder())
    assert result.text == "fine"
    assert "toolu_orphan" not in str(fake_api.requests[0].body["messages"])


async def test_runner_config_is_frozen():
    from cmdop_tui.agent.runner import AgentConfig

    config = AgentConfig(model="m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.model = "other"  # type: ignore[misc]
    assert replace(config, max_turns=3).max_turns == 3


async def test_reconfigure_is_the_one_writer_and_the_next_request_sees_the_change(fake_api):
    fake_api.enqueue(text_reply("one"), text_reply("two"))
    runner = make_runner(fake_api)
    await runner.run("first", Recorder())
    config = runner.reconfigure(model="claude-haiku-5-5", temperature=0.7)
    assert runner.config is config and config.model == "claude-haiku-5-5"
    await runner.run("second", Recorder())
    first, second = (request.body for request in fake_api.requests)
    assert first["model"] == "claude-sonnet-5-5" and first["temperature"] == 0.3
    assert second["model"] == "claude-haiku-5-5" and second["temperature"] == 0.7

    with pytest.raises(TypeError, match="no field modle"):
        runner.reconfigure(modle="typo")
    assert runner.config is config  # a refused change changes nothing
    with pytest.raises(AttributeError):
        runner.config = config  # type: ignore[misc]


async def test_reconfigure_from_a_base_replaces_the_whole_configuration(fake_api):
    from cmdop_tui.agent.runner import AgentConfig

    runner = make_runner(fake_api, max_budget_usd=1.0, max_turns=5)
    config = runner.reconfigure(AgentConfig(model="other"), max_budget_usd=runner.config.max_budget_usd)
    assert (config.model, config.max_turns, config.max_budget_usd) == ("other", 30, 1.0)


# --- budgets -----------------------------------------------------------------------------------

PRICES = {"claude-sonnet-5-5": (3.0, 15.0)}


async def test_budget_warns_at_80_percent_then_stops_before_crossing(fake_api, tmp_path):
    from cmdop_tui.agent.events import BudgetWarning

    fake_api.enqueue(*[tool_reply("glob", {"pattern": f"*.{i}", "cwd": str(tmp_path)}) for i in range(40)])
    runner, events = make_runner(fake_api, prices=PRICES, max_budget_usd=0.025, max_turns=40), Recorder()
    result = await runner.run("keep working", events)

    assert result.status == "budget" and "would cross the budget" in result.message
    warning = events.of(BudgetWarning)[0]
    assert warning.budget_usd == 0.025 and warning.spent_usd < 0.02
    assert events.kinds().index("budget_warning") < events.kinds().index("error")
    assert 0.01 < runner.spent_usd <= 0.025  # never crossed: it stopped before the request
    assert len(fake_api.requests) == len(events.of(Usage))
    costs = [u.cost_usd for u in events.of(Usage)]
    assert all(c and c > 0 for c in costs) and abs(events.of(Usage)[-1].session_cost_usd - sum(costs)) < 1e-9
    fake_api.discard_pending()


async def test_no_price_means_no_enforcement_and_no_cost(fake_api):
    fake_api.enqueue(text_reply("free"))
    runner, events = make_runner(fake_api, max_budget_usd=0.000001), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "final" and events.of(Usage)[0].cost_usd is None


async def test_a_models_own_idle_timeout_judges_its_stream(fake_api):
    fake_api.enqueue(text_reply("never finished " * 10, stall_after=4), text_reply("complete"))
    stream = StreamPolicy(idle_timeout_s=3600, idle_timeouts={"claude-sonnet-5-5": 0.2})  # the one in use
    runner, events = make_runner(fake_api, stream=stream), Recorder()
    result = await runner.run("hi", events)
    assert result.text == "complete"
    assert "no event for 0.2 s" in events.of(Retrying)[0].reason
