"""Compaction in the TUI: /compact, its chat item, Stop, the status line, /export and a resumed session."""

from __future__ import annotations

import copy
import threading

from fake_anthropic import error_reply, text_reply
from tui_helpers import finish_turn, make_app, notices, replies, submit, wait_until

from cmdop_tui.agent import events as ev
from cmdop_tui.agent.compaction import SUMMARISER_SYSTEM
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
from cmdop_tui.tui.widgets.compaction_item import STOPPED, CompactionItem
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.user_message import UserMessage

SIZE = (100, 30)
FIRST = "First answer. " + "It goes on at length. " * 100  # so that a summary makes the conversation smaller
SUMMARY = "## Findings\n- host **alpha** runs nginx 1.24\n- the disk on /srv is 91% full"


def is_summary_request(body: dict) -> bool:
    return body.get("system") == SUMMARISER_SYSTEM


def items(app) -> list[CompactionItem]:
    return list(app.query(CompactionItem))


def user_messages(app) -> list[str]:
    return [str(m.content) for m in app.query(UserMessage)]


async def two_exchanges(pilot) -> None:
    for prompt in ("first topic", "second topic"):
        await submit(pilot, prompt)
        await finish_turn(pilot)


async def test_compact_shows_an_item_that_unfolds_to_the_summary_and_the_next_request_starts_with_it(fake_api):
    fake_api.enqueue(text_reply(FIRST), text_reply("Second answer."), text_reply(SUMMARY), text_reply("Third answer."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        await submit(pilot, "/compact keep the host names")
        await finish_turn(pilot)
        summary_request = fake_api.requests[2].body
        assert is_summary_request(summary_request) and "keep the host names" in str(summary_request["messages"])
        (item,) = items(app)
        assert item.state == "done" and not app.running
        assert item.headline.startswith("Compacted: ") and "→" in item.headline
        assert " messages summarised · " in item.headline and item.headline.endswith(" s")
        assert not item.expanded and item.summary_shown == ""  # folded until asked
        assert notices(app, "error") == []

        item.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: item.summary_shown == SUMMARY, what="the unfolded summary")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not item.expanded, what="the summary folded again")
        await pilot.click(item)
        await wait_until(pilot, lambda: item.summary_shown == SUMMARY, what="the summary unfolded by a click")

        await submit(pilot, "third topic")
        await finish_turn(pilot)
        first = fake_api.requests[3].body["messages"][0]["content"][0]["text"]
        assert first.startswith("<conversation-summary>") and "nginx 1.24" in first
        assert "First answer." not in str(fake_api.requests[3].body["messages"])
        assert replies(app)[-1] == "Third answer."


async def test_stop_during_compact_leaves_the_conversation_as_it_was(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("First answer."), text_reply("Second answer."), text_reply(SUMMARY, gate=gate))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        before = copy.deepcopy(app.session.runner.conversation.messages)
        await submit(pilot, "/compact")
        await wait_until(pilot, lambda: items(app) and items(app)[0].state == "running", what="compacting")
        (item,) = items(app)
        assert item.headline.startswith("Compacting the conversation… (") and item.headline.endswith(" tokens)")
        assert app.running and not app.query_one("#stop").disabled
        await pilot.press("escape")
        await wait_until(pilot, lambda: item.state == "stopped", what="the stopped compaction")
        await wait_until(pilot, lambda: not app.running, what="the end of the compaction worker")
        assert item.headline == STOPPED
        assert notices(app, "stopped") == []  # the item says it; no second line
        assert app.session.runner.conversation.messages == before
        assert app.query_one("#stop").disabled
        gate.set()

        fake_api.enqueue(text_reply("Fresh answer."))
        await submit(pilot, "go on")
        await finish_turn(pilot)
        assert replies(app)[-1] == "Fresh answer."
        sent = fake_api.requests[-1].body["messages"]
        assert sent[0]["content"][0]["text"] == "first topic"


async def test_compact_on_an_empty_conversation_says_there_is_nothing_to_compact(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/compact")
        await wait_until(pilot, lambda: any("Nothing to compact" in n for n in notices(app)), what="the notice")
        await finish_turn(pilot)
        assert any("Nothing to compact" in n for n in notices(app, "info"))
        assert notices(app, "error") == [] and items(app) == [] and fake_api.requests == []
        assert not app.running


async def test_a_failed_compact_is_a_warning_line_and_the_conversation_stays(fake_api):
    fake_api.enqueue(
        text_reply("First answer."),
        text_reply("Second answer."),
        error_reply(400, message="the summary request was refused"),
    )
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        before = copy.deepcopy(app.session.runner.conversation.messages)
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        (item,) = items(app)
        assert item.state == "failed" and item.headline.startswith("Compaction failed: ")
        assert "the summary request was refused" in item.headline
        assert notices(app, "error") == []
        assert app.session.runner.conversation.messages == before


async def test_the_status_line_context_follows_the_compaction(fake_api):
    fake_api.enqueue(text_reply("First answer. " * 200), text_reply("Second answer. " * 200), text_reply(SUMMARY))
    app = make_app(fake_api, settings=Settings(run=RunOptions(max_context_tokens=20_000)))
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        status = app.query_one(StatusLine)
        before = status.facts.context_tokens
        output_before = status.facts.usage.output_tokens
        assert before > 0
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        after = app.session.runner.last_context_tokens
        assert after is not None and 0 < after < before
        assert status.facts.context_tokens == after
        assert f"ctx {after / 20_000:.0%}" in str(status.render())
        assert status.facts.usage.output_tokens > output_before  # the summary's tokens count as spent


async def test_export_after_a_compaction_has_the_whole_history(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(text_reply(FIRST), text_reply("Second answer."), text_reply(SUMMARY), text_reply("Third answer."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        await submit(pilot, "third topic")
        await finish_turn(pilot)
        await submit(pilot, "/export")
        await wait_until(pilot, lambda: any("Exported" in n for n in notices(app)), what="the export")
        exported = (tmp_path / f"cmdop-session-{app.session.recorder.session_id}.md").read_text()
    assert "## Compaction" in exported and "nginx 1.24" in exported
    for text in ("first topic", "First answer.", "second topic", "third topic", "Third answer."):
        assert text in exported
    assert exported.index("First answer.") < exported.index("## Compaction") < exported.index("Third answer.")


async def test_a_resumed_compacted_conversation_starts_with_the_folded_summary(fake_api):
    fake_api.enqueue(text_reply(FIRST), text_reply("Second answer."), text_reply(SUMMARY))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await two_exchanges(pilot)
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        assert items(app)[0].state == "done"
    again = make_app(fake_api, settings=Settings(run=RunOptions(continue_latest=True)))
    async with again.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("resumed session" in n for n in notices(again)), what="the resume")
        await wait_until(pilot, lambda: replies(again) == ["Second answer."], what="the resumed chat drawn")
        (item,) = items(again)
        assert item.state == "done" and not item.expanded
        assert not any("conversation-summary" in text for text in user_messages(again))
        chat = list(again.query_one("#chat").children)
        assert chat.index(item) < chat.index(again.query_one(AssistantReply))
        item.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: item.summary_shown == SUMMARY, what="the resumed summary")


async def test_events_of_a_compaction_in_a_turn_are_shown(fake_api):
    """Automatic compactions: the endpoint's refusal is a notice, a failure a warning; a summary's
    usage costs but leaves the context figure alone."""
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        status = app.query_one(StatusLine)
        deliver = app.event_router.deliver
        deliver(ev.Usage(input_tokens=5000, output_tokens=100))
        await wait_until(pilot, lambda: status.facts.context_tokens == 5100)
        reason = "the endpoint refused the request as too long (210,000 tokens > 200,000)"
        deliver(ev.CompactionStarted(trigger="too_long", tokens_before=152_300, reason=reason))
        deliver(ev.Usage(input_tokens=40_000, output_tokens=900, purpose="summary"))
        await wait_until(pilot, lambda: items(app), what="the compaction item")
        await wait_until(pilot, lambda: status.facts.usage.output_tokens == 1000)
        assert status.facts.context_tokens == 5100
        (notice,) = [n for n in notices(app, "warning") if "context was full" in n]
        assert notice == (
            "The model's context was full: compacting and retrying. The endpoint refused the request as too long "
            "(210,000 tokens > 200,000)."
        )
        assert items(app)[0].headline == "Compacting the conversation… (152k tokens)"
        deliver(ev.CompactionFailed(trigger="too_long", message="compaction failed: overloaded"))
        await wait_until(pilot, lambda: items(app)[0].state == "failed")
        assert items(app)[0].headline == "Compaction failed: overloaded"

        deliver(ev.CompactionStarted(trigger="auto", tokens_before=152_300))
        deliver(
            ev.Compacted(
                trigger="auto",
                tokens_before=152_300,
                tokens_after=21_000,
                summary=SUMMARY,
                messages=143,
                duration_s=2.1,
            )
        )
        await wait_until(pilot, lambda: len(items(app)) == 2 and items(app)[1].state == "done")
        assert items(app)[1].headline == "Compacted: 152.3k → 21.0k tokens · 143 messages summarised · 2.1 s"
        assert status.facts.context_tokens == 21_000
        assert notices(app, "error") == []


async def test_help_and_the_palette_offer_compact(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: any("Commands:" in n for n in notices(app)), what="the help")
        assert any("/compact [INSTRUCTIONS]" in n for n in notices(app))
        titles = [c.title for c in app.commands.palette_commands(app)]
        assert "Compact the conversation" in titles
