"""MCP in the real app (Pilot, the fake Messages API, real servers): `/mcp` lists the servers
configured before and after the session opens; a project's `.mcp.json` waiting for trust is said
at start, shown in the MCP panel and by `/mcp`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import DEMO, HOSTILE, new_tag, settings_with, stdio_spec, tagged, wait_gone
from real_tools import real_tool
from textual.widgets import Input, Label, Static
from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.screens.elicitation import ElicitationScreen
from cmdop_tui.tui.widgets.mcp_panel import McpPanel


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the app's session works in the current directory
    return tmp_path


def panel_text(app) -> str:
    return str(app.query_one(McpPanel).query_one("#mcp-servers", Static).content)


async def test_slash_mcp_lists_the_configured_servers_before_and_after_the_session_opens(fake_api, project):
    tag = new_tag()
    app = make_app(fake_api, settings=settings_with(stdio_spec("demo", tag=tag)))
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "/mcp")  # the session is still opening
        await pilot.pause()
        first = notices(app)[-1]
        assert first.startswith("MCP servers:\n  demo: ") and "none configured" not in first
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await wait_until(pilot, lambda: not app.session.mcp.connecting, timeout=30, what="the server")
        await submit(pilot, "/mcp")
        await pilot.pause()
        assert notices(app)[-1] == "MCP servers:\n  demo: connected: 16 tools"
    assert wait_gone(tag) == []


async def test_a_projects_mcp_json_waiting_for_trust_is_said_shown_and_listed(fake_api, project):
    tag = new_tag()
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [str(DEMO), "--tag", tag]}}})
    )
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await wait_until(pilot, lambda: any("trust" in n for n in notices(app)), what="the trust note")
        note = next(n for n in notices(app) if "trust" in n)
        assert "(proj)" in note and "start only once you trust this project" in note and "/mcp trust" in note
        await pilot.pause()
        assert app.query_one(McpPanel).display
        shown = panel_text(app)
        assert "⊘ proj not trusted yet · /mcp trust" in shown
        assert f"stdio: {sys.executable}" in " ".join(shown.split())  # folded between words on a narrow panel
        await submit(pilot, "/mcp")
        await pilot.pause()
        assert notices(app)[-1].startswith("MCP servers:\n  proj: untrusted: waits for your trust: /mcp trust")
        assert tagged(tag) == []  # never started
        await submit(pilot, "/mcp trust")
        await pilot.pause()
        assert notices(app)[-1].startswith(f"Trusted {project / '.mcp.json'} (proj)")


# --- what a server asks: the elicitation dialog, the sampling approval ---------------------------------


ELICIT = "mcp__everything__trigger-elicitation-request"
SAMPLE = "mcp__everything__trigger-sampling-request"


def everything_settings():
    spec = McpServerSpec(name="everything", command=str(real_tool("mcp-server-everything")), timeout_s=30)
    return settings_with(spec).with_run(auto_approve=True)  # --yes: the tool call itself runs


async def until_the_server_is_up(pilot, app) -> None:
    await wait_until(pilot, lambda: app.session is not None, what="the session")
    await wait_until(pilot, lambda: not app.session.mcp.connecting, timeout=30, what="the server")


def record_of(app, name: str):
    return next((record for record in app.tool_records.values() if record.name == name), None)


async def the_servers_question(pilot, app) -> ElicitationScreen:
    """Once the server is up, a prompt whose tool call makes it ask: its dialog, on top."""
    await until_the_server_is_up(pilot, app)
    await submit(pilot, "ask me")
    await wait_until(pilot, lambda: showing(app, ElicitationScreen), timeout=20, what="the dialog")
    dialog = app.screen
    await wait_until(pilot, lambda: dialog.query("#field-0") and app.focused is not None, what="its fields")
    return dialog


async def test_a_servers_form_is_a_dialog_that_checks_the_answer_before_sending_it(fake_api, project):
    fake_api.enqueue(tool_reply(ELICIT, {}), text_reply("thanks for answering"))
    app = make_app(fake_api, settings=everything_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await the_servers_question(pilot, app)
        assert "everything" in str(dialog.query_one(Label).content)
        first = dialog.query_one("#field-0", Input)
        assert app.focused is first  # keyboard only: the first field has the focus
        await pilot.press("ctrl+s")  # `name` is required and empty: not sent
        await pilot.pause()
        assert app.screen is dialog
        assert str(dialog.query_one("#elicit-error", Static).content) == "String: required"
        await pilot.press("A", "d", "a", "enter")  # Enter goes on to the next field
        assert app.focused is not first
        await pilot.press("ctrl+s")
        await finish_turn(pilot)
        record = record_of(app, ELICIT)
        assert record is not None and record.status == "ok"
        assert "- Name: Ada" in record.output and "- Favorite Integer: 42" in record.output  # a default kept
        assert replies(app)[-1] == "thanks for answering"


async def test_stop_closes_a_servers_question_and_ends_the_run(fake_api, project):
    fake_api.enqueue(tool_reply(ELICIT, {}), text_reply("not reached"))
    app = make_app(fake_api, settings=everything_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await the_servers_question(pilot, app)
        app.action_stop()
        await finish_turn(pilot)
        assert not isinstance(app.screen, ElicitationScreen) and not app.running
        assert record_of(app, ELICIT).status != "running"
        assert any("Stopped" in n for n in notices(app))


async def test_a_servers_sampling_request_is_asked_in_the_approval_modal_and_a_deny_is_told_to_it(fake_api, project):
    fake_api.enqueue(tool_reply(SAMPLE, {"prompt": "write a haiku", "maxTokens": 50}), text_reply("it was refused"))
    spec = McpServerSpec(name="everything", command=str(real_tool("mcp-server-everything")), timeout_s=30)
    app = make_app(fake_api, settings=settings_with(spec))
    async with app.run_test(size=(80, 24)) as pilot:
        await until_the_server_is_up(pilot, app)
        await submit(pilot, "sample")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), timeout=20, what="the tool's approval")
        assert app.screen.tool == SAMPLE
        await pilot.press("y")
        asked = lambda: showing(app, ApprovalScreen) and app.screen.tool != SAMPLE  # noqa: E731
        await wait_until(pilot, asked, timeout=20, what="the sampling's approval")
        modal = app.screen
        assert modal.tool == "mcp__everything__sampling"
        assert modal.arguments["server"] == "everything" and modal.arguments["max_tokens"] == 50
        assert "user: Resource trigger-sampling-request context: write a haiku" in modal.arguments["messages"]
        await pilot.press("n")
        await finish_turn(pilot)
        output = record_of(app, SAMPLE).output
        assert "the MCP server 'everything' was not allowed to sample the model: the user chose Deny" in output
        assert len(fake_api.requests) == 2  # the model was never sampled


HOSTILE_TEXT = "\x1b]0;owned\x07\x1b[2J"
HOSTILE_FORM = {
    "type": "object",
    "properties": {
        "token": {
            "type": "string",
            "title": "T" * 5000,
            "description": "why" + HOSTILE_TEXT,
            "format": "x" + HOSTILE_TEXT,
            "default": "d" + HOSTILE_TEXT,
        },
        "region": {"type": "string", "enum": ["eu", "us"], "enumNames": ["E" + HOSTILE_TEXT, "U" * 5000]},
        "zones": {"type": "array", "items": {"enum": ["a"]}},
    },
}


async def test_a_hostile_form_is_shown_inert_and_bounded_and_an_optional_choice_may_be_left(fake_api, project):
    from cmdop_tui.mcp.asks import ElicitationRequest, Elicited
    from cmdop_tui.mcp.forms import form_fields

    request = ElicitationRequest("srv", "hello" + HOSTILE_TEXT, form_fields(HOSTILE_FORM), url="")
    answers: list[Elicited | None] = []
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ElicitationScreen(request), answers.append)
        await wait_until(pilot, lambda: showing(app, ElicitationScreen), what="the dialog")
        await pilot.pause()
        shown = app.export_screenshot()
        await pilot.press("ctrl+s")  # nothing chosen: the choice is optional
        await wait_until(pilot, lambda: answers != [], what="the answer")
    assert "\x1b" not in shown and "\x07" not in shown
    assert "T" * 400 not in shown and "U" * 400 not in shown
    answer = answers[0]
    assert answer is not None and answer.action == "accept"
    assert set(answer.content) == {"token"} and "\x1b" not in str(answer.content["token"])


async def test_questions_asked_at_once_are_shown_one_at_a_time_and_a_stop_leaves_none(fake_api, project):
    spec = McpServerSpec(name="hostile", command=sys.executable, args=(str(HOSTILE), "--tag", new_tag()), timeout_s=30)
    fake_api.enqueue(tool_reply("mcp__hostile__ask", {"count": 5}), text_reply("not reached"))
    app = make_app(fake_api, settings=settings_with(spec).with_run(auto_approve=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await until_the_server_is_up(pilot, app)
        await submit(pilot, "ask me")
        await wait_until(pilot, lambda: showing(app, ElicitationScreen), timeout=20, what="the dialog")
        await pilot.press("ctrl+s")  # the first answered: the next shows
        await wait_until(pilot, lambda: showing(app, ElicitationScreen), what="the next dialog")
        dialogs = [screen for screen in app.screen_stack if isinstance(screen, ElicitationScreen)]
        assert len(dialogs) == 1  # never a pile of them
        app.action_stop()
        await finish_turn(pilot)
        assert not any(isinstance(screen, ElicitationScreen) for screen in app.screen_stack)


async def test_a_url_to_visit_is_shown_inert_and_bounded_and_done_sends_no_values(fake_api, project):
    from cmdop_tui.mcp.asks import ElicitationRequest, Elicited

    url = "javascript:alert(1)//" + HOSTILE_TEXT + "x" * 10_000
    answers: list[Elicited | None] = []
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ElicitationScreen(ElicitationRequest("srv", "visit", url=url)), answers.append)
        await wait_until(pilot, lambda: showing(app, ElicitationScreen), what="the dialog")
        await pilot.pause()
        shown = str(app.screen.query_one("#elicit-url", Static).content)
        done = app.screen.query_one("#accept").region
        assert done.bottom <= 24 and done.width > 0  # the buttons stay in view
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: answers != [], what="the answer")
    assert shown.startswith("javascript:alert(1)//x") and "\x1b" not in shown and len(shown) < 2100
    assert answers == [Elicited("accept")]
