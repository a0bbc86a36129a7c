"""Compaction: the head summarised with one model call, the tail kept, never a dead end."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import error_reply, estimate_input_tokens, text_reply, tool_reply

from cmdop_tui.agent.compaction import (
    SUMMARISER_SYSTEM,
    CompactionPolicy,
    capped,
    previous_summary,
    render_head,
    split_point,
)
from cmdop_tui.agent.events import Cancelled, Compacted, CompactionStarted, Error, Final
from cmdop_tui.agent.history import summary_block, summary_of
from cmdop_tui.agent.messages import text_block, tool_result_block

OUTPUT = "".join(f"line {n}: " + "x" * 70 + "\n" for n in range(100))  # ~8 kB, ~2k tokens


def exchange(i: int, output: str = OUTPUT) -> list[dict]:
    call = {"type": "tool_use", "id": f"t{i}", "name": "execute_command", "input": {"command": f"step {i}"}}
    return [
        {"role": "assistant", "content": [text_block(f"running step {i}"), call]},
        {"role": "user", "content": [tool_result_block(f"t{i}", output)]},
    ]


def history(turns: int) -> list[dict]:
    messages = [{"role": "user", "content": [text_block("fix the web servers")]}]
    for i in range(turns):
        messages += exchange(i, OUTPUT.replace("x", str(i % 10)))  # distinct: none sent as a pointer
    return messages


def is_summary_request(body: dict) -> bool:
    system = body.get("system")
    text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system or [])
    return text == SUMMARISER_SYSTEM


def summary_text(body: dict) -> str:
    return body["messages"][0]["content"][0]["text"]


# --- the pieces ---------------------------------------------------------------------------


def test_the_tail_keeps_the_last_tokens_and_starts_on_a_clean_boundary():
    messages = history(10)
    split = split_point(messages, tail_tokens=5_000)
    assert messages[split.at]["role"] == "assistant"  # never a tool result without its call
    assert 2_000 < split.tail_tokens <= 5_000
    assert split_point(messages, tail_tokens=0).at == len(messages) - 2  # the last exchange at least
    assert split_point(messages[:1], tail_tokens=5_000).at == 0  # nothing to summarise


def test_every_default_scales_with_the_window():
    policy = CompactionPolicy()
    assert policy.limits(200_000) == (20_000, 4_000)
    tail, summary = policy.limits(16_000)
    assert tail + summary + 0.25 * 16_000 < policy.compact_at * 16_000  # room after a compaction


def test_a_summary_never_passes_its_cap():
    assert capped("short", 100) == "short"
    long = "\n".join(f"- finding {n}: " + "y" * 40 for n in range(500))
    cut = capped(long, 1_000)
    assert len(cut) <= 4_002 and cut.endswith("\n…") and cut.startswith("- finding 0")


def test_the_head_is_rendered_as_text_with_outputs_clipped():
    messages = [{"role": "user", "content": [summary_block("earlier: nginx on web1")]}] + history(3)[1:]
    text = render_head(messages, output_chars=500, budget_chars=100_000)
    assert "earlier: nginx" not in text  # the previous summary goes in apart
    assert 'Operator called execute_command {"command": "step 0"} [id t0]' in text
    assert "Output of t0:" in text and "characters" in text and len(text) < 3 * 1_000
    assert previous_summary(messages) == "earlier: nginx on web1"


# --- in the loop --------------------------------------------------------------------------


def scripted(summaries: list[str], work: list) -> list:
    """Reply sources: the next summary for a summary request (the last one repeats), else the
    next reply of `work`."""
    pending_summaries, pending_work = list(summaries), iter(work)

    def source(body: dict):
        if is_summary_request(body):
            return text_reply(pending_summaries.pop(0) if len(pending_summaries) > 1 else pending_summaries[0])
        return next(pending_work)

    return [source] * (len(work) + 20)


async def test_a_long_run_compacts_and_never_passes_the_threshold(fake_api, tmp_path):
    window = 16_000
    fake_api.context_window = window
    for i in range(30):
        (tmp_path / f"log{i}.txt").write_text(OUTPUT.replace("x", str(i % 10)))
    thoughts = "Reading the next log to see where the errors start. " * 30  # ~400 tokens a turn
    work = [tool_reply("read_file", {"path": f"log{i}.txt"}, id=f"toolu_{i}", text=thoughts) for i in range(30)]
    fake_api.enqueue(*scripted(["S1: read logs 0-4", "S2: read logs 0-9"], [*work, text_reply("done")]))
    runner = make_runner(fake_api, cwd=tmp_path, context_window=window, max_turns=40)
    events = Recorder()
    result = await runner.run("read every log", events)
    assert result.status == "final" and fake_api.too_long == []
    compactions = events.of(Compacted)
    assert len(compactions) >= 1
    summary_requests = [r.body for r in fake_api.requests if is_summary_request(r.body)]
    assert len(summary_requests) == len(compactions)  # one model call per compaction
    for request in fake_api.requests:
        if not is_summary_request(request.body):
            assert estimate_input_tokens(request.body) <= 0.8 * window
    if len(compactions) > 1:  # incremental: the previous summary goes into the next one
        assert "<previous-summary>\nS1: read logs 0-4\n</previous-summary>" in summary_text(summary_requests[1])
    first = compactions[0]
    assert first.tokens_after < first.tokens_before and first.trigger == "auto"
    messages = runner.conversation.messages
    assert summary_of(messages) is not None and "read every log" in summary_of(messages)  # the prompt, verbatim
    final_request = fake_api.requests[-1].body["messages"]
    assert final_request[0]["content"][0]["text"].startswith("<conversation-summary>")


async def test_prompt_too_long_leads_to_one_compaction_and_a_retry(fake_api, tmp_path):
    fake_api.context_window = 9_000  # the endpoint's real limit; the app believes in 200k
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000)
    runner.conversation.messages[:] = history(6)[:-1] + [history(6)[-1]]
    runner.conversation.append_assistant([text_block("all six steps ran")])
    fake_api.enqueue(text_reply("the summary"), text_reply("the answer"))
    events = Recorder()
    result = await runner.run("and now?", events)
    assert result.status == "final" and result.text == "the answer", (events.kinds(), fake_api.too_long)
    assert len(fake_api.too_long) == 1 and fake_api.too_long[0][1] == 9_000
    started = events.of(CompactionStarted)
    assert [s.trigger for s in started] == ["too_long"] and "9,000" in started[0].reason
    assert events.of(Error) == []
    assert runner.config.context_window == 9_000  # the endpoint said so: believed from now on


async def test_a_prompt_that_cannot_fit_is_refused_in_one_line_and_the_session_goes_on(fake_api, tmp_path):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=16_000)
    events = Recorder()
    result = await runner.run("x" * 100_000, events)
    assert result.status == "error" and result.code == "prompt_too_long"
    assert "too long for the model's context window" in result.message and "\n" not in result.message
    assert fake_api.requests == [] and runner.conversation.messages == []
    fake_api.enqueue(text_reply("hello"))
    assert (await runner.run("hi", Recorder())).text == "hello"


async def test_stop_cancels_a_compaction_and_leaves_the_history_as_it_was(fake_api, tmp_path):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000)
    runner.conversation.messages[:] = history(4) + [{"role": "assistant", "content": [text_block("ok")]}]
    before = json.dumps(runner.conversation.messages)
    gate = threading.Event()
    fake_api.enqueue(text_reply("never", gate=gate))
    events = Recorder()
    task = asyncio.create_task(runner.compact(events, "keep the hostnames"))
    await events.wait_for(CompactionStarted)
    while not fake_api.requests:
        await asyncio.sleep(0.01)
    runner.ui_cancel.fire()
    result = await task
    gate.set()
    assert result.status == "cancelled" and events.of(Cancelled) and not events.of(Compacted)
    assert json.dumps(runner.conversation.messages) == before
    assert "The user asks that this summary: keep the hostnames" in summary_text(fake_api.requests[0].body)


async def test_manual_compaction_keeps_only_the_last_exchange(fake_api, tmp_path):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000)
    runner.conversation.messages[:] = history(4) + [{"role": "assistant", "content": [text_block("ok")]}]
    fake_api.enqueue(text_reply("## Findings\n- four steps ran"))
    events = Recorder()
    result = await runner.compact(events)
    assert result.status == "compacted" and events.of(Final) == []
    (event,) = events.of(Compacted)
    assert event.trigger == "manual" and event.summary == "## Findings\n- four steps ran"
    assert event.messages == len(history(4)) and event.tokens_after < event.tokens_before
    messages = runner.conversation.messages
    assert len(messages) == 2 and messages[1]["content"] == [text_block("ok")]
    assert "fix the web servers" not in json.dumps(messages)  # an earlier prompt: in the summary's care
    fake_api.enqueue(text_reply("short"))
    result = await runner.compact(Recorder())
    assert result.status == "error" and result.code == "nothing_to_compact"


async def test_the_summary_uses_the_fast_model_and_falls_back_when_the_endpoint_lacks_it(fake_api, tmp_path):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000, summary_model="claude-haiku-5-5")
    runner.conversation.messages[:] = history(3) + [{"role": "assistant", "content": [text_block("ok")]}]
    fake_api.enqueue(error_reply(404, "not_found_error", "model: claude-haiku-5-5"), text_reply("a summary"))
    result = await runner.compact(Recorder())
    assert result.status == "compacted"
    assert [r.body["model"] for r in fake_api.requests] == ["claude-haiku-5-5", "claude-sonnet-5-5"]


@pytest.mark.parametrize("status", [413])
async def test_a_request_too_large_is_compacted_and_retried(fake_api, tmp_path, status):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000)
    # more than the 20k-token tail, so a summary makes it smaller
    runner.conversation.messages[:] = history(12) + [{"role": "assistant", "content": [text_block("ok")]}]
    fake_api.enqueue(error_reply(status), text_reply("the summary"), text_reply("fine"))
    events = Recorder()
    assert (await runner.run("go on", events)).text == "fine"
    assert [s.trigger for s in events.of(CompactionStarted)] == ["too_long"]


# --- in the transcript --------------------------------------------------------------------


def test_a_compaction_replays_from_the_transcript_and_the_whole_history_stays(tmp_path):
    from cmdop_tui.agent.history import Conversation
    from cmdop_tui.transcripts import Transcript, load, tool_output

    conversation = Conversation()
    with Transcript.create(model="m", cwd="/", directory=tmp_path) as transcript:
        conversation.listeners.append(transcript.append)
        for message in history(4):
            conversation._append(message["role"], message["content"])
        conversation.compact(summary_block("four steps ran"), 7, trigger="manual", tokens_before=9_000)
        conversation.append_user("next")
        conversation.retract(1)
        conversation.append_user("next, for real")
        conversation.append_assistant([text_block("done")])
        path = transcript.path
    loaded = load(path)
    assert loaded.messages == conversation.messages and not loaded.notes
    assert summary_of(loaded.messages) is not None and len(loaded.messages) == 4
    assert [m["role"] for m in loaded.whole].count("assistant") == 5  # every exchange, compacted or not
    assert "four steps ran" in json.dumps(loaded.whole) and "next, for real" in json.dumps(loaded.whole)
    assert tool_output(path, "t0") == OUTPUT.replace("x", "0") and tool_output(path, "nope") is None


def test_a_malformed_compaction_record_is_skipped_with_a_note(tmp_path):
    from cmdop_tui.transcripts import load

    path = tmp_path / "s.jsonl"
    lines = [
        {"op": "session", "version": 1, "id": "s"},
        {"op": "append", "role": "user", "blocks": [text_block("hi")]},
        {"op": "compact", "summary": {"type": "text", "text": "not a summary"}, "drop": 1},
        {"op": "compact", "summary": summary_block("ok"), "drop": "all"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    loaded = load(path)
    assert loaded.messages == [{"role": "user", "content": [text_block("hi")]}]
    assert [note.split(":")[0] for note in loaded.notes][:2] == ["line 3", "line 4"]


# --- server-side compaction -----------------------------------------------------------------


def long_task(tmp_path, turns: int) -> list:
    thoughts = "Reading the next log to see where the errors start. " * 30
    for i in range(turns):
        (tmp_path / f"log{i}.txt").write_text(OUTPUT.replace("x", str(i % 10)))
    return [tool_reply("read_file", {"path": f"log{i}.txt"}, id=f"toolu_{i}", text=thoughts) for i in range(turns)]


def test_where_the_model_compacts_server_side_the_api_does_it(fake_api, anthropic_env, tmp_path):
    from fake_anthropic import ModelSpec

    from cmdop_tui import Operator, Settings

    fake_api.models = {"claude-sonnet-5-5": ModelSpec(max_input_tokens=16_000, context_management=True)}
    fake_api.enqueue(*long_task(tmp_path, 20), text_reply("done"))
    events: list[dict] = []
    with Operator(settings=Settings(), cwd=tmp_path, record=False, max_turns=30) as operator:
        assert operator.chat("read every log", on_event=events.append) == "done"
        messages = operator.messages
    assert fake_api.server_compactions and fake_api.too_long == []
    assert not any(is_summary_request(r.body) for r in fake_api.requests)  # no call of ours
    first = fake_api.requests[0]
    assert first.headers["anthropic-beta"] == "compact-2026-01-12"
    assert first.body["context_management"]["edits"][0]["trigger"] == {"type": "input_tokens", "value": 12_000}
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions and all(c["server"] for c in compactions)
    assert "Server summary of" in summary_of(messages)  # kept as the conversation's summary
    assert not any(b.get("type") == "compaction" for m in messages for b in m["content"])


def test_an_endpoint_that_refuses_server_compaction_gets_ours(fake_api, anthropic_env, tmp_path):
    from fake_anthropic import ModelSpec

    from cmdop_tui import Operator, Settings

    fake_api.models = {"claude-sonnet-5-5": ModelSpec(max_input_tokens=16_000, context_management=True)}
    fake_api.unsupported_fields = {"context_management"}  # the Models API claims it; the endpoint refuses
    fake_api.enqueue(*scripted(["S1"], [*long_task(tmp_path, 20), text_reply("done")]))
    events: list[dict] = []
    with Operator(settings=Settings(), cwd=tmp_path, record=False, max_turns=30) as operator:
        assert operator.chat("read every log", on_event=events.append) == "done"
        fake_api.discard_pending()
        fake_api.enqueue(text_reply("and again"))
        assert operator.chat("once more") == "and again"  # the next prompt remembers the refusal
    assert fake_api.unsupported == ["context_management"]  # refused once, then never sent again
    assert "context_management" in fake_api.requests[0].body
    assert not any("context_management" in r.body for r in fake_api.requests[1:])
    assert fake_api.too_long == [] and not fake_api.server_compactions
    assert [e["server"] for e in events if e["type"] == "compaction"][:1] == [False]


async def test_a_compaction_that_would_not_shrink_the_conversation_says_so_and_changes_nothing(fake_api, tmp_path):
    runner = make_runner(fake_api, cwd=tmp_path, context_window=200_000)
    runner.conversation.messages[:] = [
        {"role": "user", "content": [text_block("hi")]},
        {"role": "assistant", "content": [text_block("hello")]},
        {"role": "user", "content": [text_block("and?")]},
        {"role": "assistant", "content": [text_block("ok")]},
    ]
    before = json.dumps(runner.conversation.messages)
    fake_api.enqueue(text_reply("## Findings\n" + "- a long-winded summary line\n" * 40))
    events = Recorder()
    result = await runner.compact(events)
    assert result.status == "error" and result.code == "nothing_to_compact"
    assert "would not make the conversation smaller" in result.message and not events.of(Compacted)
    assert json.dumps(runner.conversation.messages) == before
