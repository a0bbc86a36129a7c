"""The app's parts that hold state: the session's life, `running`, the side column's fold, and
what the session says of itself (status line, /context)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fake_anthropic import text_reply
from textual.widgets import Button
from tui_helpers import finish_turn, make_app, notices, submit, wait_until

from cmdop_tui.config.settings import Settings
from cmdop_tui.tui import session_life
from cmdop_tui.tui.session_life import NO_KEY_HELP
from cmdop_tui.tui.widgets.queued_messages import QueuedMessages
from cmdop_tui.tui.widgets.status_line import StatusLine

SIZE = (100, 30)


def status_text(app) -> str:
    return str(app.query_one(StatusLine).render())


async def test_the_session_state_goes_from_loading_to_open(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "open", what="the session")
        assert app.session is app.session_state.session and app.session_state.error is None
        assert app.session_ready.is_set()
        await wait_until(pilot, lambda: "claude" in status_text(app), what="the model in the status line")


async def test_without_a_key_the_state_is_failed_and_says_why(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    app = make_app()  # no client given: the session looks for a key
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "failed", what="the failed opening")
        assert app.session is None and app.session_state.error == NO_KEY_HELP
        assert NO_KEY_HELP in notices(app, "error")
        assert "(no model)" in status_text(app)
        await submit(pilot, "hello?")
        await pilot.pause()
        assert notices(app, "error").count(NO_KEY_HELP) == 2  # the prompt is answered with why, not lost silently
        assert not app.running


@pytest.mark.fault
async def test_a_base_url_that_is_not_http_is_said_at_once(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    app = make_app()  # no client given: the session makes one from the environment
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "failed", what="the failed opening")
        error = app.session_state.error or ""
        assert "not an http(s) URL" in error and "did you mean https://localhost:8080?" in error
        assert error in notices(app, "error") and "\n" not in error


async def test_running_drives_stop_and_a_second_enter_is_queued(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("slow " * 20, stall_after=4, gate=gate, gate_release_continues=True), text_reply("2"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        stop = app.query_one("#stop", Button)
        assert stop.disabled and not app.running
        await app.send("first")
        await app.send("second")  # in the same write: the first turn has not even started
        assert app.running
        assert app.query_one(QueuedMessages).queued == ["second"]  # not a second turn at once
        await wait_until(pilot, lambda: not stop.disabled and "working" in status_text(app), what="Stop enabled")
        gate.set()
        await wait_until(pilot, lambda: len(fake_api.requests) == 2, what="the queued message sent")
        await finish_turn(pilot)
        await wait_until(pilot, lambda: stop.disabled and not app.running, what="Stop disabled again")
        assert "working" not in status_text(app)
        assert len(fake_api.requests) == 2  # one turn after the other
        assert fake_api.requests[1].body["messages"][-1]["content"][-1]["text"] == "second"


async def test_a_stop_as_the_session_opens_stops_the_prompt_that_waited_for_it(fake_api, monkeypatch):
    opening = threading.Event()

    def load_when_let(real=session_life.load_session_class):
        opening.wait(timeout=60)
        return real()

    monkeypatch.setattr(session_life, "load_session_class", load_when_let)
    fake_api.enqueue(text_reply("never asked"))
    app = make_app(fake_api)
    ready = app.session_ready

    def set_and_stop() -> None:  # the Stop lands between the session's opening and the prompt going on
        asyncio.Event.set(ready)
        app.action_stop()

    monkeypatch.setattr(ready, "set", set_and_stop)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "a prompt typed before the session opened")
        assert app.running and not ready.is_set()
        opening.set()
        await wait_until(pilot, lambda: notices(app, "stopped"), what="the Stop said")
        await finish_turn(pilot)
        assert fake_api.requests == [] and not app.running  # never sent


async def test_the_status_line_follows_what_the_session_changes(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        app.session.set_budget(2.5)
        app.session.set_loop(True)
        await pilot.pause()
        assert "/2.50" in status_text(app) and "loop 0/" in status_text(app)
        assert app.session.status().budget_usd == 2.5 and app.session.budget_usd == 2.5
        model = app.session.use_model("@fast")
        await pilot.pause()
        assert app.session.model_name == model and model in status_text(app)


async def test_context_report_comes_from_the_session(fake_api):
    fake_api.enqueue(text_reply("ok"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        await finish_turn(pilot)
        report = await app.session.context_report()
        assert report.window > 0 and report.usage.conversation > 0 and report.last_tokens
        await submit(pilot, "/context")
        await pilot.pause()
        assert any(f"Context window: {report.window:,} tokens." in n for n in notices(app))


async def test_a_panel_choice_holds_at_every_width():
    app = make_app(settings=Settings())
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert app.query_one("#side").display and app.query_one("#tools").display
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not app.query_one("#side").display  # folded by the breakpoint: no choice made yet
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert app.query_one("#side").display
        await pilot.press("f3")  # hide the machines: a choice
        await pilot.pause()
        assert app.query_one("#tools").display and not app.query_one("#machines").display
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.query_one("#side").display and app.query_one("#tools").display  # the choice holds
        assert not app.query_one("#machines").display
        await pilot.press("f2")
        await pilot.pause()
        assert not app.query_one("#side").display  # both hidden: the column goes
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert not app.query_one("#side").display
