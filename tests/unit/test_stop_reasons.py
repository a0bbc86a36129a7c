"""A reply that is not a whole answer is said as such: cut, refused, or paused and continued."""

from __future__ import annotations

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import reply, text, text_reply

from cmdop_tui.agent.events import Error, Final

pytestmark = pytest.mark.fault


async def test_an_answer_cut_at_max_tokens_is_a_cut_not_a_final(fake_api, tmp_path):
    fake_api.enqueue(text_reply("The first half of", stop_reason="max_tokens"))
    runner = make_runner(fake_api, cwd=tmp_path, max_tokens=64)
    events = Recorder()
    result = await runner.run("explain", events)
    assert result.status == "cut" and result.code == "max_tokens" and result.text == "The first half of"
    assert "max_tokens = 64" in result.message
    assert not any(isinstance(e, Final) for e in events.events)
    (error,) = [e for e in events.events if isinstance(e, Error)]
    assert error.code == "max_tokens" and "cut" in error.message


async def test_a_refusal_is_said(fake_api, tmp_path):
    fake_api.enqueue(text_reply("I can't", stop_reason="refusal"), text_reply("Fine."))
    runner = make_runner(fake_api, cwd=tmp_path)
    result = await runner.run("do it", Recorder())
    assert result.status == "refused" and "refused" in result.message
    assert (await runner.run("something else", Recorder())).status == "final"  # the history stays valid


async def test_a_paused_turn_is_sent_back_and_goes_on(fake_api, tmp_path):
    fake_api.enqueue(reply(text("Searching"), stop_reason="pause_turn"), text_reply(" and here is the answer."))
    runner = make_runner(fake_api, cwd=tmp_path)
    result = await runner.run("find it", Recorder())
    assert result.status == "final" and result.text == " and here is the answer."
    assert len(fake_api.requests) == 2
    resent = fake_api.requests[1].body["messages"]
    assert resent[-1]["role"] == "assistant" and resent[-1]["content"][0]["text"] == "Searching"


async def test_an_answer_without_a_stop_reason_is_not_taken_for_a_whole_one(fake_api, tmp_path):
    """A compatible server that ends a reply with no stop_reason (null): the answer may be cut, so
    it is said, not taken for a final one without a word."""
    fake_api.enqueue(text_reply("The first half of", stop_reason=""))
    result = await make_runner(fake_api, cwd=tmp_path).run("explain", Recorder())
    assert fake_api.requests[0].status == 200
    assert result.status != "final" and result.text == "The first half of"
    assert "stop_reason" in result.message or "stop reason" in result.message
