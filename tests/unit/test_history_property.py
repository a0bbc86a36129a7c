"""Property: whatever the model does (text, tool calls, malformed calls, errors, dead streams) and
wherever the user stops a turn, the history stays one the API accepts.

Each example drives the real runner through the real SDK against the fake API, which validates
every request like the real one; after every run the next request is checked too.
"""

from __future__ import annotations

import asyncio

from agent_helpers import make_runner
from fake_anthropic import error_reply, raw_tool_use, reply, stream_error, text, text_reply, tool_use, validate_request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmdop_tui.agent.history import sanitize
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.request import RequestOptions, build_request

STEP = st.one_of(
    st.just(("text",)),
    st.tuples(st.just("tools"), st.integers(min_value=1, max_value=3)),
    st.just(("malformed",)),
    st.sampled_from([("error", 529), ("error", 500), ("error", 400), ("stream_error",)]),
    st.just(("dead_stream",)),
)
RUN = st.tuples(st.lists(STEP, min_size=1, max_size=4), st.one_of(st.none(), st.integers(min_value=1, max_value=12)))


def scripted(step):
    kind = step[0]
    if kind == "text":
        return text_reply("an answer")
    if kind == "tools":
        return reply(text("working"), *[tool_use("glob", {"pattern": f"*.{i}"}) for i in range(step[1])])
    if kind == "malformed":
        return reply(raw_tool_use("list_dir", '{"path": '))
    if kind == "error":
        return error_reply(step[1])
    if kind == "stream_error":
        return stream_error("overloaded_error", after_events=3)
    return text_reply("stalls " * 10, stall_after=4)  # dead stream: the idle timeout ends it


def next_request_problem(messages) -> str | None:
    history = [*messages, {"role": "user", "content": [{"type": "text", "text": "next"}]}]
    request = build_request(RequestOptions(model="m"), "system", sanitize(history), [])
    body = {key: value for key, value in request.items() if key != "extra_body"} | request.get("extra_body", {})
    return validate_request(body)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(RUN, min_size=1, max_size=3))
def test_any_sequence_of_replies_errors_and_cancels_leaves_a_valid_history(fake_api, runs):
    asyncio.run(_drive(fake_api, runs))


async def _drive(fake_api, runs) -> None:
    runner = make_runner(
        fake_api,
        retry=RetryPolicy(attempts=2, initial_s=0.001, max_s=0.002, jitter_s=0.0),
        stream=StreamPolicy(idle_timeout_s=0.05),
        max_turns=4,
    )
    for steps, cancel_after in runs:
        script = [scripted(step) for step in steps]
        fake_api.enqueue(*script, *[text_reply("fallback")] * 8)  # whatever the run still asks for
        seen = 0

        def sink(event, cancel_after=cancel_after):
            nonlocal seen
            seen += 1
            if cancel_after is not None and seen == cancel_after:
                runner.ui_cancel.fire()  # Stop, at an arbitrary event of the run

        await runner.run("do something", sink)
        messages = runner.conversation.messages
        assert sanitize(messages) == messages, "the stored history needs no repair"
        assert next_request_problem(messages) is None
        fake_api.discard_pending()  # what this run did not use
