"""Compaction and the context gauge say true figures: after a huge pasted prompt, /compact
reports what the next request really costs, keeps the paste bounded in the summary (its start
and end, the cut said, the whole recallable from the transcript) and never reports growth."""

from __future__ import annotations

import re

from fake_anthropic import estimate_input_tokens, text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, submit

from cmdop_tui.tui.widgets.status_line import StatusLine

SIZE = (100, 30)
SUMMARY = "## Findings\n- the user pasted a log of 5,000 lines to read"
PASTE = "\n".join(f"line {n:05d} GET /api/v1/items?page={n} 200 0.{n % 997:03d}s" for n in range(5000))


def recall_of_the_cut(body: dict):
    """The model asks for the request the summary cut, by the id the summary names."""
    summary = body["messages"][0]["content"][0]["text"]
    call_id = re.search(r'recall\("([^"]+)"\)', summary).group(1)
    return tool_reply("recall", {"id": call_id})


async def test_compact_after_a_huge_paste_reports_what_the_next_request_costs(fake_api):
    fake_api.enqueue(text_reply("Read it."), text_reply(SUMMARY), recall_of_the_cut, text_reply("Next answer."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, PASTE)
        await finish_turn(pilot)
        before_gauge = app.query_one(StatusLine).facts.context_tokens
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        gauge = app.query_one(StatusLine).facts.context_tokens
        await submit(pilot, "and now?")
        await finish_turn(pilot)

    next_request = fake_api.requests[-2].body
    recalled = str(fake_api.requests[-1].body["messages"][-1]["content"])
    pages = -(-len(PASTE) // 20_000)
    assert f"page 1 of {pages};" in recalled and "line 00000 " in recalled  # the whole request, kept
    summary = next_request["messages"][0]["content"][0]["text"]
    assert summary.startswith("<conversation-summary>")
    assert "line 00000 " in summary and "line 04999 " in summary  # its start and its end
    assert "line 02500 " not in summary  # not the whole paste again
    assert len(summary) < len(PASTE) // 10
    assert "cut here" in summary and "recall(" in summary
    real = estimate_input_tokens(next_request)
    assert gauge < before_gauge // 2, (gauge, before_gauge)
    assert abs(gauge - real) <= real // 10 + 200, (gauge, real)  # the gauge says what it costs
    assert notices(app, "error") == []
