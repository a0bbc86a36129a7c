"""The app driven as a user drives it: Pilot keys against the fake Messages API."""

from __future__ import annotations

import os
import re
import threading

import pytest
from agent_helpers import running
from fake_anthropic import error_reply, reply, text_reply, thinking, tool_reply, tool_use
from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.tool_card import ToolCard

SIZE = (100, 30)


def status_text(app) -> str:
    return str(app.query_one(StatusLine).render())


async def test_a_prompt_streams_a_markdown_reply(fake_api):
    fake_api.enqueue(text_reply("# Result\n\nAll **good** here.", chunk_size=4))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "how are things?")
        await finish_turn(pilot)
        assert replies(app) == ["# Result\n\nAll **good** here."]
        assert fake_api.requests[0].body["messages"][0]["content"][0]["text"] == "how are things?"
        assert "turn 1/30" in status_text(app)
        await pilot.resize_terminal(140, 30)  # the tokens, with their unit, where there is room
        await wait_until(pilot, lambda: re.search(r"↑[\d.]+k? ↓[\d.]+k? tok", status_text(app)), what="tokens")
        assert app.query_one("#prompt").text == ""


async def test_thinking_is_shown_folded(fake_api):
    fake_api.enqueue(
        reply(thinking("Considering the options."), tool_use("glob", {"pattern": "*.q"})), text_reply("Done.")
    )
    app = make_app(fake_api, thinking_budget=2048)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "think first")
        await finish_turn(pilot)
        block = app.query_one(".thinking")
        assert block.collapsed and block.text == "Considering the options."


async def test_tool_call_with_approval_allowed(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the workspace: the host's /tmp is not the session's
    target = tmp_path / "made-by-tool"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"touch {target} && echo created"}), text_reply("Made it.")
    )
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make the file")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval modal")
        assert "touch" in str(app.screen.query_one("#approval-arguments Static").content)
        await pilot.press("y")
        await finish_turn(pilot)
        assert target.exists()
        card = app.query_one(ToolCard)
        assert card.record.status == "ok" and "created" in card.record.output
        assert replies(app)[-1] == "Made it."
        assert app.query_one("#tool-table").row_count == 1


async def test_tool_call_denied_tells_the_model(fake_api, tmp_path):
    target = tmp_path / "never"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("Understood."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make it")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen))
        await pilot.press("n")
        await finish_turn(pilot)
        assert not target.exists()
        result = fake_api.requests[1].body["messages"][-1]["content"][0]
        assert result["is_error"] and "denied" in result["content"]
        assert app.query_one(ToolCard).record.status == "error"


async def test_allow_for_session_asks_only_once(fake_api, tmp_path):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo one"}),
        tool_reply("execute_command", {"command": "echo two"}),
        text_reply("both"),
    )
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "run two")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen))
        await pilot.press("a")
        await finish_turn(pilot)
        assert [c.record.status for c in app.query(ToolCard)] == ["ok", "ok"]


async def test_stop_mid_stream_then_continue(fake_api):
    gate = threading.Event()
    fake_api.enqueue(
        text_reply("Partial words that go on " * 20, stall_after=8, gate=gate), text_reply("Fresh answer.")
    )
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "long answer please")
        await wait_until(pilot, lambda: any(replies(app)), what="streamed text")
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped"), what="the stopped notice")
        assert notices(app, "stopped") == ["■ Stopped."]
        assert not app.running and app.query_one("#stop").disabled
        gate.set()
        await submit(pilot, "again")
        await finish_turn(pilot)
        assert replies(app)[-1] == "Fresh answer."
        assert [m["role"] for m in fake_api.requests[1].body["messages"]] == ["user"]


async def test_stop_button_mid_command_kills_it(fake_api, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo started; sleep 30.4217"}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "run it")
        await wait_until(pilot, lambda: app.query(ToolCard) and "started" in app.query_one(ToolCard).record.live_output)
        await pilot.click("#stop")
        await wait_until(pilot, lambda: notices(app, "stopped"))
        await wait_until(pilot, lambda: not running("sleep", "30.4217"))
        assert app.query_one(ToolCard).record.status == "error"
        await submit(pilot, "next")
        await finish_turn(pilot)
        assert replies(app)[-1] == "ok"


async def test_no_answer_in_time_means_deny(fake_api, tmp_path):
    target = tmp_path / "never"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings(approval_timeout_s=0.3))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        # The modal may open and time out between two polls: its reason proves it was asked.
        await finish_turn(pilot)
        assert not target.exists() and not isinstance(app.screen, ApprovalScreen)
        result = fake_api.requests[1].body["messages"][-1]["content"][0]
        assert result["is_error"] and "denied" in result["content"] and "no answer in time" in result["content"]


async def test_stop_while_the_approval_modal_is_open(fake_api):
    fake_api.enqueue(tool_reply("execute_command", {"command": "true"}), text_reply("after"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen))
        await pilot.press("s")
        await wait_until(pilot, lambda: notices(app, "stopped"))
        assert not isinstance(app.screen, ApprovalScreen)
        await submit(pilot, "again")
        await finish_turn(pilot)
        assert replies(app)[-1] == "after"


async def test_stop_during_retry_backoff(fake_api):
    from cmdop_tui.agent.policies import RetryPolicy

    fake_api.enqueue(error_reply(529), text_reply("later"))
    app = make_app(fake_api, retry=RetryPolicy(initial_s=30, jitter_s=0))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hi")
        await wait_until(pilot, lambda: notices(app, "warning"), what="the retry notice")
        assert "Retrying in 30.0 s" in notices(app, "warning")[0]
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped"))


async def test_loop_mode_toggle_and_indicator(fake_api):
    fake_api.enqueue(text_reply("Working on it."), text_reply("The task is done."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/loop on")  # typed while the session may still be opening

        def refused() -> bool:
            return any("still opening" in n for n in notices(app, "warning"))

        await wait_until(pilot, lambda: "loop 0/20" in status_text(app) or refused(), what="loop on")
        if refused():  # said, not a usage line; the session opened meanwhile or soon will
            await wait_until(pilot, lambda: app.session is not None, what="the session")
            await submit(pilot, "/loop on")
            await wait_until(pilot, lambda: "loop 0/20" in status_text(app), what="loop on")
        await submit(pilot, "do the task")
        await finish_turn(pilot)
        assert "loop 1/20" in status_text(app)
        assert any("Loop 1/20" in n for n in notices(app))
        assert replies(app) == ["Working on it.", "The task is done."]
        await submit(pilot, "/loop off")
        await pilot.pause()
        assert "loop" not in status_text(app)


async def test_api_error_is_readable_and_the_app_stays_up(fake_api):
    fake_api.enqueue(error_reply(401, message="invalid x-api-key"), text_reply("recovered"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hi")
        await finish_turn(pilot)
        (error,) = notices(app, "error")
        assert "API key was refused" in error and "invalid x-api-key" in error
        await submit(pilot, "again")
        await finish_turn(pilot)
        assert replies(app) == ["recovered"]


async def test_without_an_api_key_the_app_opens_and_says_how_to_set_one(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: notices(app, "error"), what="the missing key said")
        assert "ANTHROPIC_API_KEY" in notices(app, "error")[0]
        await submit(pilot, "hello?")
        await wait_until(pilot, lambda: len(notices(app, "error")) == 2, what="the prompt refused")
        assert app.is_running


async def test_slash_commands(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await app.session_ready.wait()  # before it, /model says the session is still opening
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: "/model NAME" in notices(app)[-1], what="/help")
        assert "ctrl+q" in notices(app)[-1]
        await submit(pilot, "/model @fast")
        await wait_until(pilot, lambda: "claude-haiku-5-5" in status_text(app), what="the model switched")
        assert app.session.runner.config.model == "claude-haiku-5-5"
        await submit(pilot, "/model @nope")
        await wait_until(pilot, lambda: notices(app, "error"), what="the alias refused")
        assert "unknown model alias" in notices(app, "error")[-1]
        await submit(pilot, "/frobnicate")
        await wait_until(pilot, lambda: notices(app, "warning"), what="the command refused")
        assert "Unknown command /frobnicate" in notices(app, "warning")[-1]
        await submit(pilot, "/clear")
        await wait_until(pilot, lambda: not notices(app), what="the chat cleared")
        assert fake_api.requests == []


async def test_palette_runs_the_same_actions(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await app.session_ready.wait()  # before it, /loop says the session is still opening
        await pilot.press("ctrl+p")
        await pilot.press(*"loop mode on")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.session.runner.config.loop.enabled, what="loop mode on from the palette")


async def test_prompt_keys_newline_and_history(fake_api):
    fake_api.enqueue(text_reply("a"), text_reply("b"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one("#prompt")
        prompt.focus()
        await pilot.press(*"first", "ctrl+j", *"line")
        assert prompt.text == "first\nline"
        await pilot.press("enter")
        await finish_turn(pilot)
        await submit(pilot, "second")
        await finish_turn(pilot)
        prompt.focus()
        await pilot.press("up")
        assert prompt.text == "second"
        await pilot.press("up")
        assert prompt.text == "first\nline"
        await pilot.press("down", "down")
        assert prompt.text == ""


@pytest.mark.fault
async def test_a_paste_from_any_driver_is_inert_text_that_waits_for_enter(fake_api):
    from textual import events

    fake_api.enqueue(text_reply("ok"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one("#prompt")
        prompt.focus()
        app.post_message(events.Paste("\x1b[31mred\x1b[0m line\r\nsecond\r\n"))
        await pilot.pause()
        assert prompt.text == "red line\nsecond\n"
        assert fake_api.requests == []
        await pilot.press("enter")
        await finish_turn(pilot)
    assert len(fake_api.requests) == 1


async def test_ctrl_c_never_quits_and_ctrl_q_asks_while_running(fake_api):
    gate = threading.Event()
    for _ in range(2):  # a slow machine may outlast the stall timeout: its retry stalls the same way
        fake_api.enqueue(text_reply("slow " * 30, stall_after=6, gate=gate))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        await submit(pilot, "go")
        await wait_until(pilot, lambda: app.running and any(replies(app)))
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: showing(app, ConfirmScreen))
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.running
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: showing(app, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    gate.set()


async def test_ctrl_c_stops_a_running_turn_but_copies_a_selection(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("streaming " * 30, stall_after=6, gate=gate))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await wait_until(pilot, lambda: any(replies(app)))
        prompt = app.query_one("#prompt")
        prompt.load_text("keep this")
        prompt.select_all()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.running and app.clipboard == "keep this"
        prompt.move_cursor(prompt.document.end)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: notices(app, "stopped"))
        assert not app.running
    gate.set()


async def test_ctrl_q_quits_at_once_when_idle():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running)


async def test_tool_panel_enter_opens_the_whole_output(fake_api):
    fake_api.enqueue(tool_reply("glob", {"pattern": "**/*.nothing"}), text_reply("none"))
    app = make_app(fake_api)
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "find")
        await finish_turn(pilot)
        app.query_one("#tool-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: showing(app, OutputScreen))
        assert app.screen.query_one("#output-text").text == app.query_one(ToolCard).record.output
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, OutputScreen))


async def test_panels_fold_at_80x24_and_toggle_by_key():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one("#side").display
        await pilot.press("f2")
        assert app.query_one("#tools").display and not app.query_one("#machines").display
        await pilot.press("f3")
        assert app.query_one("#machines").display
        await pilot.press("f2", "f3")
        assert not app.query_one("#side").display


async def test_tool_output_with_escape_sequences_is_shown_inert(fake_api):
    command = r"printf 'safe\033]52;c;aGk=\a\033[2J\033[31mred\033[0m\n'"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "print")
        await finish_turn(pilot)
        output = app.query_one(ToolCard).record.output
        assert "\x1b" not in output and "\x07" not in output and "safered" in output


async def test_theme_flag_and_palette_switch():
    app = make_app(settings=Settings(theme="cmdop-light"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "cmdop-light" and not app.current_theme.dark
        await pilot.press("ctrl+p")
        await pilot.press(*"theme")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(*"cmdop-amber")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.theme == "cmdop-amber", what="the theme picked in the palette")


async def test_unknown_theme_falls_back_with_a_warning():
    app = make_app(settings=Settings(theme="no-such-theme"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "cmdop-dark"
        assert any("Unknown theme 'no-such-theme'" in n for n in notices(app, "warning"))


def test_a_remote_agents_steps_show_under_its_call():
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord

    record = ToolRecord("toolu_1", "ask_machine", {"hostname": "alpha", "prompt": "uptime?"}, "alpha")
    record.add_nested(
        {"type": "tool_start", "name": "execute_command", "input": {"command": "uptime"}, "hostname": "alpha"}
    )
    record.add_nested(
        {"type": "tool_end", "name": "execute_command", "duration_s": 0.21, "is_error": False, "hostname": "alpha"}
    )
    record.add_nested({"type": "token", "text": "up 3 days\x1b[2J", "hostname": "alpha"})
    shown = record.shown_output
    assert "[alpha] ▶ execute_command uptime" in shown and "[alpha] ✓ execute_command 0.2 s" in shown
    assert "[alpha] …up 3 days" in shown and "\x1b" not in shown


async def test_sessions_are_recorded_resumed_and_exported(fake_api, tmp_path, monkeypatch):
    from cmdop_tui.tui.screens.sessions import SessionsScreen

    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo hi"}), text_reply("First answer."), text_reply("Other topic.")
    )
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first topic")
        await finish_turn(pilot)
        first_session = app.session.recorder.session_id
        await submit(pilot, "/clear")
        await pilot.pause()
        await submit(pilot, "second topic")
        await finish_turn(pilot)
        await submit(pilot, "/sessions")
        await wait_until(pilot, lambda: showing(app, SessionsScreen))
        assert app.screen.query_one("#sessions-list").option_count == 2
        app.screen.query_one("#sessions-list").focus()
        await pilot.press("down", "enter")  # newest first: the first session is second
        await wait_until(pilot, lambda: replies(app) == ["First answer."], what="the resumed conversation")
        assert app.session.recorder.session_id == first_session and app.query_one(ToolCard).record.output.startswith(
            "exit code: 0"
        )
        assert [m["role"] for m in app.session.runner.conversation.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        await submit(pilot, "/export")
        await pilot.pause()
        exported = (tmp_path / f"cmdop-session-{first_session}.md").read_text()
        assert "first topic" in exported and "First answer." in exported


async def test_continue_at_start_shows_the_last_conversation(fake_api):
    fake_api.enqueue(text_reply("Remembered."), text_reply("Still here."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "remember this")
        await finish_turn(pilot)
    again = make_app(fake_api, settings=Settings(run=RunOptions(continue_latest=True)))
    async with again.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("resumed session" in n for n in notices(again)), what="the resume note")
        assert replies(again) == ["Remembered."]
        await submit(pilot, "and now?")
        await finish_turn(pilot)
        assert [m["role"] for m in fake_api.requests[1].body["messages"]] == ["user", "assistant", "user"]


async def test_secrets_are_masked_on_screen(fake_api, monkeypatch):
    import cmdop_tui.support.secrets as secrets

    monkeypatch.setattr(secrets, "_display", None)  # masks the configured key of this test's env
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-configured-secret-value-123456")
    aws = "AKIAIOSFODNN7EXAMPLE"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"echo {aws}; echo PASSWORD=hunter2hunter2"}),
        text_reply(
            "Your key is sk-ant-api03-configured-secret-value-123456 and token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        ),
    )
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "show me")
        await finish_turn(pilot)
        card = app.query_one(ToolCard).record.shown_output
        assert aws not in card and "hunter2" not in card and "PASSWORD=" in card
        reply = app.query_one("AssistantReply")
        screen_text = "".join(seg.text for y in range(reply._total) for seg in reply.render_line(y))
        assert "configured-secret-value" not in screen_text and "ghp_abcdefghij" not in screen_text
        assert "[REDACTED]" in screen_text


async def test_a_100mb_flood_neither_freezes_the_ui_nor_fills_memory(fake_api):
    from cmdop_tui.tui.vocabulary.tool_records import LIVE_OUTPUT_LIMIT

    command = "head -c 100000000 /dev/zero | tr '\\0' 'x'; echo; echo flood-done; sleep 30"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "flood")
        await wait_until(
            pilot,
            lambda: app.query(ToolCard) and "flood-done" in app.query_one(ToolCard).record.live_output,
            timeout=60,
        )
        record = app.query_one(ToolCard).record
        assert len(record.live_output) <= LIVE_OUTPUT_LIMIT
        prompt = app.query_one("#prompt")
        prompt.focus()
        await pilot.press(*"still alive")
        assert prompt.text == "still alive"  # keys are handled while the command runs
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped"))


async def test_budget_command_warning_and_hard_stop(fake_api, tmp_path):
    from dataclasses import replace as with_

    prices = {"claude-sonnet-5-5": (3.0, 15.0)}
    fake_api.enqueue(*[tool_reply("glob", {"pattern": f"*.{i}", "cwd": str(tmp_path)}) for i in range(40)])
    app = make_app(fake_api, settings=with_(Settings(), prices=prices), max_turns=40)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.session is not None)
        await submit(pilot, "/budget 0.025")
        await pilot.pause()
        assert app.session.runner.config.max_budget_usd == 0.025 and "/0.025" in status_text(app)
        await submit(pilot, "work a lot")
        await finish_turn(pilot)
        # The request that would pass 80 % would also cross the budget: one notice says both.
        assert not any(n.startswith("Budget: $") for n in notices(app, "warning"))
        (stop,) = [n for n in notices(app, "error") if "would cross the budget" in n]
        assert "of $0.025 spent" in stop
        assert app.session.runner.spent_usd <= 0.025
        await submit(pilot, "/budget off")
        await pilot.pause()
        assert app.session.runner.config.max_budget_usd is None and "there is no budget" in notices(app)[-1]
    fake_api.discard_pending()


async def test_agent_profiles_switch_by_command(fake_api):
    fake_api.enqueue(text_reply("Working."), text_reply("The task is done."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session is not None)
        await submit(pilot, "/agent autonomous")
        await pilot.pause()
        assert app.session.runner.config.loop.enabled and "loop 0/20" in status_text(app)
        await submit(pilot, "go")
        await finish_turn(pilot)
        assert replies(app) == ["Working.", "The task is done."]
        await submit(pilot, "/agent nobody")
        await pilot.pause()
        assert "unknown agent profile 'nobody'" in notices(app, "error")[-1]


async def test_copy_the_last_reply_and_a_tool_output(fake_api):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo copied-output"}), text_reply("Copy **me**."))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(120, 40)) as pilot:
        await submit(pilot, "go")
        await finish_turn(pilot)
        await pilot.press("f4")
        assert app.clipboard == "Copy **me**."
        app.query_one("#tool-table").focus()
        await pilot.press("f4")  # in the tool panel: its output, not the last reply
        await pilot.pause()
        assert "copied-output" in app.clipboard and app.clipboard.startswith("exit code: 0")


def test_copy_reaches_the_terminal_as_osc_52(fake_api, anthropic_env, tmp_path):
    import base64

    from pty_app import PROMPT_DRAWN, PtyApp

    fake_api.enqueue(text_reply("Clipboard check 42."))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    app = PtyApp(env, size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=20)
        start = app.mark()
        app.write(b"hi\r")
        app.wait_for(b"Clipboard check 42.", start)
        app.wait_for(b"turn 1/30", start)
        start = app.mark()
        app.write(b"\x1bOS")  # F4
        payload = base64.b64encode(b"Clipboard check 42.")
        app.wait_for(b"\x1b]52;c;" + payload, start, timeout=10)
    finally:
        app.close()


def test_help_lines_up_every_command_and_key_in_one_column():
    from cmdop_tui.tui.slash_commands import build_registry

    keys = {"Keys:": [("ctrl+q", "leave the app")], "More keys:": [("Enter", "send the prompt")]}
    text = build_registry().help_text(keys)
    descriptions = ["the session's spending limit", "start a new conversation", "leave the app", "send the prompt"]
    columns = {next(line.index(d) for line in text.splitlines() if line.endswith(d)) for d in descriptions}
    assert len(columns) == 1, text


async def test_the_status_line_shows_how_full_the_context_is_and_context_says_what_fills_it(fake_api):
    fake_api.enqueue(tool_reply("list_dir", {"path": "."}), text_reply("listed"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(max_context_tokens=20_000)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "list")
        await finish_turn(pilot)
        status = app.query_one(StatusLine)
        last = app.session.runner.last_context_tokens
        assert status.facts.context_window == 20_000 and last is not None and last > 0
        assert f"ctx {last / 20_000:.0%}" in str(status.render())
        await submit(pilot, "/context")
        await wait_until(pilot, lambda: any("Context window" in n for n in notices(app)))
        report = next(n for n in notices(app) if "Context window" in n)
        assert "Context window: 20,000 tokens." in report and f"{last:,} tokens" in report
        for part in ("System prompt and tools", "Conversation", "Tool outputs", "Summary of earlier turns"):
            assert part in report


async def test_a_rule_that_cannot_be_saved_is_said_and_the_call_still_runs_once(fake_api):
    from cmdop_tui.agent.approval import ToolCall
    from cmdop_tui.permissions import PermissionsError
    from cmdop_tui.tui.approvals import remember_allowed

    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")

        def refuse(*args, **kwargs):
            raise PermissionsError("not saved: the rule would not read back as written")

        app.session.permissions.allow_always = refuse  # type: ignore[method-assign]  (the store's refusal)
        await remember_allowed(app, ToolCall("t1", "execute_command", {"command": "uptime"}, None), session=False)
        await pilot.pause()
        assert notices(app, "warning")[-1] == "Allowed this once; not saved: the rule would not read back as written"
