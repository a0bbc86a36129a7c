"""A resumed session is the one that was left: its model, agent profile, permission mode and
spend come back, the theme chosen is the next launch's, a budget stop is said as such, the
session list leaves out launches that sent nothing and counts right, and Stop with nothing
running says so."""

from __future__ import annotations

from dataclasses import replace

from fake_anthropic import text_reply
from textual.widgets import OptionList
from tui_helpers import finish_turn, make_app, notices, submit, wait_until

from cmdop_tui.config.settings import AgentProfile, RunOptions, Settings, builtin_agents
from cmdop_tui.transcripts import latest, list_sessions, load, messages_count
from cmdop_tui.tui.screens.sessions import SessionsScreen, sessions_with_messages
from cmdop_tui.tui.slash_commands import NOTHING_TO_STOP
from cmdop_tui.tui.widgets.status_line import StatusLine

SIZE = (100, 30)
AGENTS = {**builtin_agents(), "careful": AgentProfile(name="careful", max_turns=10)}
CONTINUE = Settings(run=RunOptions(continue_latest=True))


async def opened(pilot) -> None:
    await wait_until(pilot, lambda: pilot.app.session is not None, what="the session open")
    await pilot.pause()


async def test_a_resumed_session_has_its_model_agent_mode_and_spend_back(fake_api):
    fake_api.enqueue(text_reply("First answer."))
    first = make_app(fake_api, settings=Settings(agents=AGENTS))
    async with first.run_test(size=SIZE) as pilot:
        await opened(pilot)
        for command in ("/agent careful", "/model claude-haiku-5-5", "/mode plan"):
            await submit(pilot, command)
            await pilot.pause()
        await submit(pilot, "hello")
        await finish_turn(pilot)
        spent = first.session.spent_usd
        assert spent > 0 and first.session.model_name == "claude-haiku-5-5"

    fake_api.enqueue(text_reply("Second answer."))
    again = make_app(fake_api, settings=replace(CONTINUE, agents=AGENTS))
    async with again.run_test(size=SIZE) as pilot:
        await opened(pilot)
        session = again.session
        assert session.model_name == "claude-haiku-5-5" and session.settings.agent.name == "careful"
        assert session.permissions.mode == "plan" and session.spent_usd == spent
        assert any(n.startswith("restored: model claude-haiku-5-5, agent careful, mode plan") for n in notices(again))
        assert again.query_one(StatusLine).facts.cost_usd == spent  # the line shows the spend at once
        await submit(pilot, "/budget")
        await wait_until(pilot, lambda: any(n.startswith("Spent about") for n in notices(again)), what="/budget")
        await submit(pilot, "and?")
        await finish_turn(pilot)
        assert fake_api.requests[-1].body["model"] == "claude-haiku-5-5"
        assert session.spent_usd > spent  # it goes on counting


async def test_auto_mode_is_not_given_back_without_yes(fake_api):
    fake_api.enqueue(text_reply("Done."))
    first = make_app(fake_api)
    async with first.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await submit(pilot, "/mode auto")
        await submit(pilot, "hello")
        await finish_turn(pilot)
        assert first.session.permissions.mode == "auto"
    again = make_app(fake_api, settings=CONTINUE)
    async with again.run_test(size=SIZE) as pilot:
        await opened(pilot)
        assert again.session.permissions.mode == "default"
        assert any("only --yes gives" in n for n in notices(again))


async def test_a_budget_stop_is_said_when_the_session_is_continued(fake_api):
    first = make_app(fake_api, settings=replace(Settings(), max_budget_usd=0.000001))
    async with first.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await submit(pilot, "an expensive question")
        await finish_turn(pilot)
    assert fake_api.requests == []  # stopped before the request
    assert any("stopped by the budget" in note for note in load(latest()).notes)
    again = make_app(fake_api, settings=CONTINUE)
    async with again.run_test(size=SIZE) as pilot:
        await opened(pilot)
        assert any("the turn was stopped by the budget" in n for n in notices(again))
        assert not any("the session stopped before the reply" in n for n in notices(again))


async def test_the_theme_chosen_is_the_next_launchs_until_the_settings_change_theirs(fake_api):
    first = make_app(fake_api)
    async with first.run_test(size=SIZE) as pilot:
        await opened(pilot)
        first.theme = "cmdop-light"  # as the palette's theme picker does
        await pilot.pause()
    again = make_app(fake_api)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "cmdop-light"
    changed = make_app(fake_api, settings=replace(Settings(), theme="cmdop-amber"))
    async with changed.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert changed.theme == "cmdop-amber"  # set in the settings since: the settings win


async def test_sessions_lists_only_sessions_with_messages_and_counts_right(fake_api):
    idle = make_app(fake_api)
    async with idle.run_test(size=SIZE) as pilot:
        await opened(pilot)  # a launch that sends nothing
    fake_api.enqueue(text_reply("An answer."))
    used = make_app(fake_api)
    async with used.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await submit(pilot, "one question")
        await finish_turn(pilot)
        await submit(pilot, "/sessions")
        await wait_until(pilot, lambda: isinstance(used.screen, SessionsScreen), what="the session list")
        assert sorted(info.messages for info in list_sessions()) == [0, 2]  # the idle launch's file is left out
        (listed,) = sessions_with_messages()
        assert listed.messages == 2
        (option,) = used.screen.query_one(OptionList).options
        assert "2 messages · " in str(option.prompt) and "(no prompt)" not in str(option.prompt)
    assert (messages_count(1), messages_count(2), messages_count(1200)) == ("1 message", "2 messages", "1,200 messages")


async def test_stop_and_ctrl_c_with_nothing_running_say_so(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await submit(pilot, "/stop")
        await wait_until(pilot, lambda: NOTHING_TO_STOP in notices(app), what="/stop said")
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: f"{NOTHING_TO_STOP} ctrl+q quits." in notices(app), what="ctrl+c said")
        assert app.is_running  # ctrl+c does not quit
