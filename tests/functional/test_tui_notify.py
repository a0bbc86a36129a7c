"""Notifications from the real app (the fake API through the real SDK): told while the terminal
is away (the focus reports a terminal sends arrive as the app's AppBlur and AppFocus events) when
an approval waits, a long command finished, a question waits and a turn ended; nothing while it
is focused. The bytes are the ones the driver would be handed."""

from __future__ import annotations

import threading
from dataclasses import replace

from fake_anthropic import text_reply, tool_reply
from textual import events
from tui_helpers import finish_turn, make_app, showing, submit, wait_until

from cmdop_tui.config.model import NotifySettings
from cmdop_tui.config.settings import Settings
from cmdop_tui.mcp.asks import ElicitationRequest
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.screens.elicitation import ElicitationScreen

OSC9 = "\x1b]9;cmdop-tui: "


async def away(app, pilot) -> None:
    app.post_message(events.AppBlur())  # as the driver posts the terminal's `ESC [ O`
    await wait_until(pilot, lambda: not app.app_focus, what="the app unfocused")


async def test_what_waits_for_the_person_is_told_only_while_the_terminal_is_away(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    held = threading.Event()
    fake_api.enqueue(
        text_reply("First, while you watch."),
        replace(
            tool_reply("execute_command", {"command": "until [ -e go ]; do sleep 0.01; done; echo went"}), gate=held
        ),
        text_reply("Second, while you were away."),
        text_reply("Third, you are back."),
    )
    settings = replace(Settings(), notify=NotifySettings(method="osc9", min_seconds=0.001))
    app = make_app(fake_api, settings=settings)
    async with app.run_test(size=(100, 30)) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        await submit(pilot, "hello")
        await finish_turn(pilot)
        assert written == []  # focused: the person saw it end

        await submit(pilot, "run it")
        await away(app, pilot)
        held.set()
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval")
        await wait_until(pilot, lambda: written, what="a notification")
        assert written == [f"{OSC9}Approval needed: execute_command on local\x07\x07"]
        await pilot.press("y")  # a key: the terminal has focus again
        assert app.app_focus
        await away(app, pilot)
        (tmp_path / "go").touch()
        await finish_turn(pilot)
        assert written[1].startswith(f"{OSC9}`until [ -e go ], do sleep 0.01, done, echo went` finished after ")
        assert written[2:] == [f"{OSC9}The turn is over: the operator waits for you.\x07\x07"]  # each told once

        app.post_message(events.AppFocus())
        await wait_until(pilot, lambda: app.app_focus, what="the app focused")
        await submit(pilot, "and now?")
        await finish_turn(pilot)
        assert len(written) == 3

        await away(app, pilot)
        app.push_screen(ElicitationScreen(ElicitationRequest("docs\x1b[2J", "Which branch?")))
        await wait_until(pilot, lambda: len(written) == 4, what="the question told")
        assert written[3] == f"{OSC9}The MCP server docs asks a question\x07\x07"


async def test_notifications_off_send_nothing(fake_api):
    fake_api.enqueue(text_reply("Done."))
    app = make_app(fake_api, settings=replace(Settings(), notify=NotifySettings(enabled=False)))
    async with app.run_test(size=(80, 24)) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        await submit(pilot, "hello")
        await away(app, pilot)
        await finish_turn(pilot)
        assert written == []


def test_the_terminal_gets_the_notification_after_its_focus_report(fake_api, anthropic_env, tmp_path):
    """The real app in a pty: the terminal reports losing focus (`ESC [ O`) in the same read
    as the Enter that starts the turn; when the turn ends, OSC 9 and the bell reach it."""
    import os

    from pty_app import PROMPT_DRAWN, PtyApp

    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    for name in ("TMUX", "VTE_VERSION", "TERM_PROGRAM"):
        env.pop(name, None)
    (tmp_path / "c.toml").write_text('[notify]\nmethod = "osc9"\n')
    fake_api.enqueue(text_reply("All done."), text_reply("Here again."))
    app = PtyApp(env, size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=20)
        start = app.mark()
        app.write(b"hello\r\x1b[O")
        app.wait_for(b"\x1b]9;cmdop-tui: The turn is over: the operator waits for you.\x07\x07", start, timeout=20)
        app.write(b"\x1b[I")  # back: the next turn's end is seen, not told
        start = app.mark()
        app.write(b"again\r")
        app.wait_for_text("Here again.", timeout=20)
        app.wait_quiet(0.3)
        assert b"\x1b]9;" not in app.output[start:]
    finally:
        app.close()
