"""Every tool outcome drawn by kind, as a user meets it: the chat card, the Tools row and its
detail, the output view's header (the app driven with Pilot against the fake API), and headless
mode's stderr, exit status and stream-json (the CLI run as a child process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fake_anthropic import text_reply, tool_reply
from textual.widgets import Label, Static
from tui_helpers import finish_turn, make_app, showing, submit, wait_until

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.headless import EXIT_NO_ONE_TO_ASK
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.widgets.tool_card import ToolCard

SIZE = (100, 30)
AUTO = Settings(run=RunOptions(auto_approve=True))


def card_text(app) -> str:
    return str(app.query_one(ToolCard).render())


def row_mark(app) -> str:
    """The first row's outcome cell, as wide as the column shows it."""
    table = app.query_one("#tool-table")
    mark = str(table.get_row_at(0)[0])
    assert table.ordered_columns[0].content_width >= len(mark)  # shown whole, not cut by the column
    return mark


def detail(app) -> str:
    return str(app.query_one("#tool-preview", Static).render())


async def test_a_command_that_exits_1_is_drawn_failed_with_its_code_everywhere(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo nope; exit 1"}), text_reply("It failed."))
    app = make_app(fake_api, settings=AUTO)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "run it")
        await finish_turn(pilot)
        first_line = card_text(app).splitlines()[0]
        assert first_line.startswith("✗ execute_command") and "failed (exit code 1)" in first_line
        assert " ok " not in first_line
        assert row_mark(app) == "✗ exit 1"
        assert "failed (exit code 1): the command exited with code 1" in detail(app)
        app.query_one(ToolCard).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: showing(app, OutputScreen), what="the output view")
        assert "failed (exit code 1)" in str(app.screen.query_one("#output-title", Label).render())
        assert "the command exited with code 1" in str(app.screen.query_one("#output-reason", Label).render())


async def test_a_denied_write_shows_who_said_no_and_no_diff_as_applied(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "notes.txt"
    fake_api.enqueue(
        tool_reply("write_file", {"path": str(target), "content": "fresh line\n"}), text_reply("Understood.")
    )
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "write it")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval modal")
        await pilot.press("n")
        await finish_turn(pilot)
        assert not target.exists()
        text = card_text(app)
        assert text.startswith("⊘ write_file") and "denied by you" in text.splitlines()[0]
        assert "+fresh line" not in text and "+1 -0" not in text
        assert "denied by you: the user chose Deny" in text and "The change was not applied" in text
        assert row_mark(app) == "⊘ denied"
        assert "denied by you: the user chose Deny" in detail(app) and "+fresh line" not in detail(app)


async def test_the_floors_refusal_reads_as_the_floors_and_its_reason_whole(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(tool_reply("execute_command", {"command": "rm -rf /"}), text_reply("Not done."))
    app = make_app(fake_api, settings=AUTO)
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "wipe it")
        await finish_turn(pilot)
        record = app.query_one(ToolCard).record
        assert record.outcome is not None and record.outcome.reason
        text = card_text(app)
        assert "refused by the safety floor" in text.splitlines()[0]
        assert f"refused by the safety floor: {record.outcome.reason}" in text  # whole: the card wraps it
        assert "user denied" not in text
        assert row_mark(app) == "⊘ floor"


async def test_no_answer_in_time_reads_as_an_approval_timeout(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch never"}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings(approval_timeout_s=0.3))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await finish_turn(pilot)
        assert "approval timed out" in card_text(app).splitlines()[0]
        assert row_mark(app) == "⊘ no answer"
        assert "no answer in time (asked for 0.3 s)" in detail(app)


def ended(app) -> int:
    """How many tool calls have ended."""
    return sum(card.record.outcome is not None for card in app.query(ToolCard))


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")])
def test_the_outcomes_as_drawn(snap_compare, fake_api, tmp_path, monkeypatch, size):
    """A failure, a person's denial of a write and the floor's refusal, as a user sees them:
    each by its kind, the reasons whole (wrapped at a word), no diff drawn as applied."""
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo nope; exit 1"}),
        tool_reply("write_file", {"path": "notes.txt", "content": "fresh line\n"}),
        tool_reply("execute_command", {"command": "rm -rf /"}),
        text_reply("One failed, one you denied, one the floor refused."),
    )
    app = make_app(fake_api)

    async def run_before(pilot):
        await submit(pilot, "three things")
        for done, key in enumerate(("y", "n"), 1):
            await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval modal")
            await pilot.press(key)
            await wait_until(pilot, lambda done=done: ended(app) >= done, what="the call to end")
        await finish_turn(pilot)
        for card in app.query(ToolCard):
            card.record.duration_s = 0.1  # pinned: real durations differ run to run
            card.refresh()
        for table in app.query("#tool-table"):
            for row in range(table.row_count):
                table.update_cell_at((row, 3), "0.1s")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


# --- headless ---------------------------------------------------------------------------------

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def run_cli(args: list[str], env: dict[str, str], cwd) -> subprocess.CompletedProcess[str]:
    """No terminal: stdin is a pipe that says nothing, so no one can be asked."""
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, input="", timeout=60, cwd=cwd)


def test_headless_with_no_one_to_ask_says_so_and_exits_4(fake_api, cli_env, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "touch made"}), text_reply("The file is made."))
    done = run_cli(["-p", "make a file"], cli_env, tmp_path)
    assert done.returncode == EXIT_NO_ONE_TO_ASK == 4, done.stderr
    assert not (tmp_path / "made").exists()
    assert done.stdout == "The file is made.\n"  # the answer is still given; the status says the truth
    lines = done.stderr.splitlines()
    said = [line for line in lines if "execute_command" in line]
    assert len(said) == 1 and said[0].startswith("cmdop-tui: tool execute_command: denied: no one to ask: ")
    assert "--yes" in said[0]
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "no person could be asked" in result["content"]


def test_headless_stream_json_carries_the_kind_and_the_reason(fake_api, cli_env, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "exit 3"}), text_reply("It exited 3."))
    done = run_cli(["-p", "run it", "--output-format", "stream-json", "--yes"], cli_env, tmp_path)
    assert done.returncode == 0, done.stderr
    (end,) = [event for event in map(json.loads, done.stdout.splitlines()) if event["type"] == "tool_end"]
    assert end["outcome"] == {"kind": "failed", "reason": "the command exited with code 3", "exit_code": 3}
    assert "execute_command" not in done.stderr  # stdout has it


def test_headless_text_says_a_failed_call_on_stderr_in_one_line(fake_api, cli_env, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "exit 3"}), text_reply("It exited 3."))
    done = run_cli(["-p", "run it", "--yes"], cli_env, tmp_path)
    assert (done.returncode, done.stdout) == (0, "It exited 3.\n")
    assert "cmdop-tui: tool execute_command: failed (exit code 3): the command exited with code 3" in (
        done.stderr.splitlines()
    )
