"""Cheap reductions: old tool outputs sent as stubs, identical outputs sent once, and recall."""

from __future__ import annotations

from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator, RunOptions, Settings
from cmdop_tui.agent.messages import text_block, tool_result_block
from cmdop_tui.agent.reduction import OutputReducer, ReductionPolicy


def history(outputs: list[str]) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [text_block("go")]}]
    for i, output in enumerate(outputs):
        call = {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"/srv/f{i}"}}
        messages.append({"role": "assistant", "content": [call]})
        messages.append({"role": "user", "content": [tool_result_block(f"t{i}", output)]})
    return messages


def results(messages: list[dict]) -> dict[str, str]:
    return {b["tool_use_id"]: b["content"] for m in messages for b in m["content"] if b["type"] == "tool_result"}


def test_nothing_is_cleared_while_the_context_is_small():
    messages = history([f"{i}" * 4000 for i in range(6)])
    assert OutputReducer().reduce(messages, window=200_000, estimate=10_000) == messages
    assert OutputReducer().reduce(messages, window=None, estimate=10_000**2) == messages


def test_old_outputs_go_as_stubs_and_the_last_turns_whole():
    messages = history([f"{i}" * 4000 for i in range(6)])
    reducer = OutputReducer(ReductionPolicy(keep_turns=3))
    sent = results(reducer.reduce(messages, window=8_000, estimate=6_000))
    for old in ("t0", "t1", "t2"):
        assert sent[old].startswith(f'[output of read_file(path="/srv/f{old[1]}") cleared to save context')
        assert "4,000 characters" in sent[old] and f'recall(id="{old}")' in sent[old]
    assert [sent[recent] for recent in ("t3", "t4", "t5")] == ["3" * 4000, "4" * 4000, "5" * 4000]
    assert results(messages)["t0"] == "0" * 4000  # the history itself is untouched


def test_a_cleared_output_stays_cleared_so_the_prefix_stays_the_same():
    reducer = OutputReducer(ReductionPolicy(keep_turns=2))
    first = reducer.reduce(history([f"{i}" * 4000 for i in range(4)]), window=8_000, estimate=6_000)
    later = reducer.reduce(history([f"{i}" * 4000 for i in range(5)]), window=8_000, estimate=3_000)
    assert later[: len(first)] == first  # the same request prefix: the prompt cache still serves it


def test_small_batches_wait_until_they_are_worth_a_cache_miss():
    reducer = OutputReducer(ReductionPolicy(keep_turns=1, clear_at_least=0.5))
    sent = results(reducer.reduce(history(["x" * 800, "y" * 800, "z" * 800]), window=8_000, estimate=6_000))
    assert sent == {"t0": "x" * 800, "t1": "y" * 800, "t2": "z" * 800} and reducer.cleared == set()


def test_identical_outputs_are_sent_once():
    same = "the same long output\n" * 50
    sent = results(OutputReducer().reduce(history([same, "other" * 100, same]), window=200_000, estimate=1_000))
    assert sent["t0"] == same and sent["t2"] == "[the same output as call t0 above, word for word]"
    short = results(OutputReducer().reduce(history(["ok", "ok"]), window=200_000, estimate=10))
    assert short == {"t0": "ok", "t1": "ok"}  # not worth a pointer


def test_a_long_session_fits_its_window_and_recall_brings_an_output_back(fake_api, anthropic_env, tmp_path):
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("\n".join(f"file {i} line {n}" for n in range(250)) + "\n")
    fake_api.context_window = 12_000  # the fake answers 400 'prompt is too long' past this
    replies = [tool_reply("read_file", {"path": f"f{i}.txt"}, id=f"toolu_{i}") for i in range(8)]
    fake_api.enqueue(*replies, tool_reply("recall", {"id": "toolu_0"}), text_reply("read them all"))
    settings = Settings(run=RunOptions(max_context_tokens=12_000))
    with Operator(settings=settings, cwd=tmp_path, record=False) as operator:
        assert operator.chat("read every file") == "read them all"
        whole = {
            b["tool_use_id"]: b["content"]
            for m in operator.messages
            for b in m["content"]
            if b["type"] == "tool_result"
        }
    assert fake_api.too_long == []  # no request was refused
    assert "file 0 line 249" in whole["toolu_0"]  # the history keeps every output whole
    last = fake_api.requests[-1].body["messages"]
    sent = {b["tool_use_id"]: b["content"] for m in last for b in m["content"] if b["type"] == "tool_result"}
    assert sent["toolu_0"].startswith('[output of read_file(path="f0.txt") cleared to save context: ')
    assert sent["toolu_0"].endswith('; recall(id="toolu_0") brings it back]')
    recalled = sent["toolu_recall"] if "toolu_recall" in sent else list(sent.values())[-1]
    assert "page 1 of 1" in recalled and "file 0 line 249" in recalled
