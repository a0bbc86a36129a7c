"""How a person is asked to let a call out of the sandbox, or to decide what the floor left to
them: the whole command (never cut), what the sandbox itself refused, what running outside
means, and no "This session" or "Always" (no rule answers such a call next time)."""

from __future__ import annotations

import asyncio
import os
import pty
import sys
import threading

import pytest
from fake_anthropic import text_reply, tool_reply
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Button, Static
from tui_helpers import finish_turn, make_app, showing, submit, wait_until

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.headless import ask_on_terminal
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox import bubblewrap
from cmdop_tui.permissions import Decision, Permissions
from cmdop_tui.tools.describe import OUTSIDE_MEANS, PERSON_ONLY_MEANS, approval_question
from cmdop_tui.tui.screens.approval import ApprovalChoice, ApprovalScreen

REFUSAL = SandboxRefusal("write", ("/etc/nginx/nginx.conf",), "only /srv/app and /tmp are writable here")
FLOOR_REASON = "the floor cannot tell what `eval` runs here, and it could reach ~/.bashrc"
# A command far past any cut, whose tail is what matters: a person must see it.
LONG_COMMAND = "echo " + " ".join(f"harmless{n}" for n in range(800)) + " ; touch /tmp/the-tail-that-matters"


# --- the terminal question -----------------------------------------------------------------------


def test_the_terminal_question_shows_a_long_command_whole() -> None:
    question = approval_question("execute_command", "local", {"command": LONG_COMMAND, "timeout_ms": 5})
    assert LONG_COMMAND in question and question.endswith('{"timeout_ms": 5}\n[y/N] ')


def test_the_terminal_question_says_what_the_sandbox_refused_and_what_outside_means() -> None:
    question = approval_question("execute_command", "local", {"command": LONG_COMMAND}, escalation=REFUSAL)
    assert question.startswith("Allow execute_command on local OUTSIDE the sandbox:\n")
    assert "The sandbox refused to write: /etc/nginx/nginx.conf." in question
    assert "Sandbox rule: only /srv/app and /tmp are writable here." in question
    assert OUTSIDE_MEANS in question and LONG_COMMAND in question


def test_what_the_sandbox_refused_is_shown_inert_on_one_line_each() -> None:
    hostile = SandboxRefusal("write\x1b[2J", ("/etc/x\n[y/N] y\nAllow read_file on local:",), machine="web1\r")
    question = approval_question("execute_command", "web1", {"command": "true"}, escalation=hostile)
    lines = question.split("\n")
    refused = next(line for line in lines if line.startswith("The sandbox refused"))
    assert "^J" in refused and "\x1b" not in question and "\r" not in question
    assert [line for line in lines if line.startswith("Allow ")] == [
        "Allow execute_command on web1 OUTSIDE the sandbox:"
    ]


def test_the_terminal_question_says_why_only_a_person_may_decide() -> None:
    question = approval_question("execute_command", "local", {"command": "eval $x"}, person_only=FLOOR_REASON)
    assert f"The safety floor: {FLOOR_REASON}." in question and PERSON_ONLY_MEANS in question


class Terminal:
    """A pseudo-terminal standing in for the user's: what the app writes to it, and a reply."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.master, slave = pty.openpty()
        self.input = os.fdopen(slave, "r", encoding="utf-8")
        self.output = os.fdopen(os.dup(slave), "w", encoding="utf-8")
        monkeypatch.setattr(sys, "stdin", self.input)
        monkeypatch.setattr(sys, "stderr", self.output)
        self.written = bytearray()
        self.asked = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self.asked.is_set():
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            self.written += data
            if self.written.endswith(b"[y/N] "):
                self.asked.set()

    def text(self) -> str:
        return self.written.decode("utf-8").replace("\r\n", "\n")

    def close(self) -> None:
        self.input.close()
        self.output.close()
        os.close(self.master)
        self._reader.join(5)


@pytest.mark.parametrize("fields", [{"escalation": REFUSAL}, {"person_only": FLOOR_REASON}])
async def test_a_person_at_the_terminal_sees_it_whole_and_their_yes_is_a_persons(monkeypatch, fields) -> None:
    terminal = Terminal(monkeypatch)
    try:
        call = ToolCall("c1", "execute_command", {"command": LONG_COMMAND}, None, **fields)
        asking = asyncio.create_task(ask_on_terminal(call))
        assert await asyncio.to_thread(terminal.asked.wait, 10)
        assert LONG_COMMAND in terminal.text()
        assert (OUTSIDE_MEANS if "escalation" in fields else PERSON_ONLY_MEANS) in terminal.text()
        os.write(terminal.master, b"y\n")
        assert await asyncio.wait_for(asking, 10) == Approval(True, "", by_person=True)
    finally:
        terminal.close()


# --- the TUI's dialog ----------------------------------------------------------------------------


class DialogApp(App[None]):
    def __init__(self, screen: ApprovalScreen) -> None:
        super().__init__()
        self.dialog = screen
        self.choices: list[ApprovalChoice | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.choices.append)


def dialog_text(screen: ApprovalScreen) -> str:
    return "\n".join(str(widget.render()) for widget in screen.query("Label, #approval-why"))


@pytest.mark.parametrize("fields", [{"escalation": REFUSAL}, {"person_only": FLOOR_REASON}])
async def test_the_dialog_shows_the_whole_command_in_a_scrollable_area_and_allows_once_only(fields) -> None:
    screen = ApprovalScreen("execute_command", "local", {"command": LONG_COMMAND}, **fields)
    app = DialogApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        shown = screen.query_one("#approval-arguments Static", Static)
        assert str(shown.content) == LONG_COMMAND  # whole, wrapped by the widget
        area = screen.query_one("#approval-arguments", VerticalScroll)
        assert area.max_scroll_y > 0  # longer than its room: it scrolls
        area.scroll_end(animate=False)  # done after the next refresh, which a loaded machine delays
        await wait_until(pilot, lambda: area.scroll_y == area.max_scroll_y, what="scrolled to the end")
        assert {button.id for button in screen.query(Button)} == {"once", "deny"}
        for key in ("a", "p"):
            await pilot.press(key)
        assert app.choices == []
        await pilot.press("y")
        await pilot.pause()
        assert app.choices == [ApprovalChoice.ONCE]


async def test_the_dialog_says_what_the_sandbox_refused_and_what_outside_means() -> None:
    screen = ApprovalScreen("execute_command", "web1", {"command": "nginx -s reload"}, escalation=REFUSAL)
    async with DialogApp(screen).run_test(size=(100, 30)):
        text = dialog_text(screen)
        assert "outside the sandbox" in text
        assert "The sandbox refused to write: /etc/nginx/nginx.conf." in text
        assert "Sandbox rule: only /srv/app and /tmp are writable here." in text and OUTSIDE_MEANS in text


async def test_the_dialog_says_why_only_a_person_may_decide() -> None:
    screen = ApprovalScreen("execute_command", "local", {"command": "eval $x"}, person_only=FLOOR_REASON)
    async with DialogApp(screen).run_test(size=(100, 30)):
        text = dialog_text(screen)
        assert FLOOR_REASON in text and PERSON_ONLY_MEANS in text and "outside the sandbox" not in text


async def test_the_app_asks_in_auto_mode_what_the_floor_leaves_to_a_person(fake_api, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    monkeypatch.setattr(Permissions, "decide", lambda *a, **k: Decision("ask", FLOOR_REASON, person_only=True))
    fake_api.enqueue(tool_reply("execute_command", {"command": f"eval 'touch {marker}'"}), text_reply("ran"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True, sandbox_mode="off")))
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "go")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen) and app.screen.query(Button), what="the dialog")
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.person_only == FLOOR_REASON
        assert {button.id for button in screen.query(Button)} == {"once", "deny"}
        await pilot.press("y")
        await finish_turn(pilot)
    assert marker.exists()


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_the_app_asks_to_leave_the_sandbox_with_what_it_refused(fake_api, tmp_path, monkeypatch):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    monkeypatch.chdir(work)
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}/made"}), text_reply("made"))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True, sandbox_mode="strict")))
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "make it")
        asked = lambda: showing(app, ApprovalScreen) and app.screen.query(Button)  # noqa: E731
        await wait_until(pilot, asked, timeout=20, what="the dialog")
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.escalation is not None
        assert f"{outside}/made" in screen.escalation.paths and OUTSIDE_MEANS in dialog_text(screen)
        assert {button.id for button in screen.query(Button)} == {"once", "deny"}
        await pilot.press("y")
        await finish_turn(pilot)
    assert (outside / "made").exists()
