"""Modes you can see and change, in the real app over the real SDK and the fake Messages API:
Shift+Tab goes round default → accept edits → plan; the status line always shows the mode and the
sandbox, down to 80 columns with a turn running; accept edits lets an edit in the tree run without
asking and still asks for a command; plan refuses a write with a reason the model reads, and the
model's next request says it is in plan mode until the user switches."""

from __future__ import annotations

import threading

import pytest
from fake_anthropic import text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, showing, submit, wait_until

from cmdop_tui.agent.context import PLAN_MODE
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.widgets.status_line import StatusLine


def status_text(app) -> str:
    return str(app.query_one(StatusLine).render())


def fits(app) -> bool:
    status = app.query_one(StatusLine)
    return len(str(status.render())) <= status.content_size.width


def system_text(request) -> str:
    system = request.body["system"]
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_shift_tab_goes_round_and_the_status_line_shows_mode_and_sandbox(fake_api, size):
    gate = threading.Event()
    fake_api.enqueue(text_reply("A long answer that streams " * 10, stall_after=6, gate=gate))
    app = make_app(fake_api, model="claude-sonnet-4-5-20250929-with-a-long-name")
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        session = app.session
        sandbox = session.status().sandbox
        assert sandbox and f"default · {sandbox}" in status_text(app)
        session.set_budget(2.5)
        session.set_loop(True)
        await submit(pilot, "go")
        await wait_until(pilot, lambda: "working" in status_text(app), what="the turn running")
        shown = []
        for _ in range(3):
            await pilot.press("shift+tab")
            await pilot.pause()
            shown.append(session.status().mode)
            assert "● working" in status_text(app) and fits(app)
            label = "accept edits" if shown[-1] == "accept_edits" else shown[-1]
            assert f"{label} · {sandbox}" in status_text(app), status_text(app)
        assert shown == ["accept_edits", "plan", "default"]
        said = notices(app)
        assert any(n.startswith("Mode: accept edits.") for n in said) and any(n.startswith("Mode: plan.") for n in said)
        await pilot.press("escape")  # loop mode would go on
        await finish_turn(pilot)


async def test_auto_joins_the_round_only_when_asked_for_by_name(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        for _ in range(3):
            await pilot.press("shift+tab")
        assert app.session.status().mode == "default"  # no auto without asking for it
        await submit(pilot, "/mode auto")
        await pilot.pause()
        assert app.session.status().mode == "auto" and "auto · " in status_text(app)
        assert any(n.startswith("Mode: auto.") for n in notices(app, "warning"))
        modes = []
        for _ in range(4):
            await pilot.press("shift+tab")
            modes.append(app.session.status().mode)
        assert modes == ["default", "accept_edits", "plan", "auto"]
        await submit(pilot, "/mode sideways")
        await pilot.pause()
        assert any("Unknown mode 'sideways'" in n for n in notices(app, "error"))


async def test_accept_edits_runs_an_edit_in_the_tree_and_still_asks_for_a_command(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("status: draft\n")
    fake_api.enqueue(
        tool_reply("edit_file", {"path": "notes.txt", "old_string": "draft", "new_string": "final"}),
        tool_reply("execute_command", {"command": "echo ran"}),
        text_reply("Edited and ran."),
    )
    app = make_app(fake_api)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await pilot.press("shift+tab")
        assert app.session.status().mode == "accept_edits"
        await submit(pilot, "edit then run")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the command's approval")
        assert app.screen.tool == "execute_command"
        assert notes.read_text() == "status: final\n"  # the edit ran before, unasked
        before = app.screen.focused
        await pilot.press("shift+tab")  # in a dialog it moves focus back, as it always did
        assert app.session.status().mode == "accept_edits" and app.screen.focused is not before
        await pilot.press("y")
        await finish_turn(pilot)
    first_result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert not first_result.get("is_error")


async def test_plan_mode_refuses_a_write_and_the_model_is_told_until_the_mode_changes(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(
        tool_reply("write_file", {"path": "deploy.sh", "content": "make deploy\n"}),
        text_reply("Plan: 1. write deploy.sh 2. run it. Shall I go on?"),
        text_reply("Going on."),
    )
    app = make_app(fake_api)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await submit(pilot, "/mode plan")
        await pilot.pause()
        assert "plan · " in status_text(app)
        await submit(pilot, "deploy it")
        await finish_turn(pilot)
        assert not (tmp_path / "deploy.sh").exists()
        assert not isinstance(app.screen, ApprovalScreen)  # refused, not asked
        await pilot.press("shift+tab")  # plan → default
        assert app.session.status().mode == "default"
        await submit(pilot, "go on")
        await finish_turn(pilot)
    first, second, after = fake_api.requests
    assert PLAN_MODE in system_text(first) and PLAN_MODE in system_text(second)
    result = second.body["messages"][-1]["content"][0]
    assert result["is_error"] and "plan mode: write_file was not run" in str(result["content"])
    assert PLAN_MODE not in system_text(after)
