"""Focus and keys in the app: typing goes to the prompt wherever focus is on the main screen,
Esc between turns brings focus back, keys that arrive together (one read of the terminal, as
over SSH) are applied in the order they came, and /help lists every key from the bindings."""

from __future__ import annotations

import os
import threading

import pytest
from fake_anthropic import text_reply, tool_reply
from textual import events
from textual.binding import Binding
from textual.widgets import Input
from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.tui.keys import APP_BINDINGS, key_name
from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.notice import Notice
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.side_column import SideColumn
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage

SIZE = (100, 30)


def key_event(key: str) -> events.Key:
    """The event the driver makes of `key` (a printable character, or a key's name)."""
    character = key if len(key) == 1 else {"space": " "}.get(key)
    return events.Key(key, character)


def send_together(app, *keys: str | events.Paste) -> None:
    """`keys` posted to the app at once, as the driver posts what one read of the terminal held:
    none is handled before the next is posted."""
    for key in keys:
        app.post_message(key if isinstance(key, events.Paste) else key_event(key))


def typed(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize(
    "keys, text, cursor",
    [
        ([*typed("abc"), "backspace", *typed("xyz")], "abxyz", (0, 5)),
        ([*typed("abc"), "backspace", "backspace", *typed("xyz")], "axyz", (0, 4)),
        ([*typed("abc"), "left", *typed("xyz")], "abxyzc", (0, 5)),
        ([*typed("abc"), "home", "delete", *typed("xy")], "xybc", (0, 2)),
        ([*typed("hello"), "ctrl+a", "X", "ctrl+e", "Y"], "XhelloY", (0, 7)),
        ([*typed("ab"), "ctrl+j", *typed("cd"), "up", "Z"], "abZ\ncd", (0, 3)),
        ([*typed("ab"), "left", events.Paste("PASTE"), "x", "end", "y"], "aPASTExby", (0, 9)),
        ([*typed("foo bar"), "ctrl+w", *typed("baz")], "foo baz", (0, 7)),
        ([*typed("sent"), "enter", *typed("kepx"), "backspace", "t"], "kept", (0, 4)),
        ([*typed("sent"), "tab", "enter"], "", (0, 0)),  # Enter given to the prompt still sends
    ],
)
async def test_keys_that_arrive_together_are_applied_in_order(keys, text, cursor):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.pause()
        sent = ["sent"] if "enter" in keys else []
        send_together(app, *keys, "f2")  # F2 last: when the panels are chosen, every key before it was handled
        await wait_until(pilot, lambda: app.query_one(SideColumn).chosen, timeout=3, what="the keys handled")
        assert (prompt.text, prompt.cursor_location, prompt.sent) == (text, cursor, sent)
        if sent:  # the message in the chat, and its turn over (no model here), before the app closes
            await wait_until(pilot, lambda: app.query(UserMessage) and not app.running, what="the turn to end")


# What a terminal sends for each key, to write several keys in one os.write as SSH delivers them.
BACKSPACE, LEFT, HOME, END, DELETE = b"\x7f", b"\x1b[D", b"\x1b[H", b"\x1b[F", b"\x1b[3~"
CTRL_A, CTRL_E, ENTER = b"\x01", b"\x05", b"\r"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def prompt_row(app) -> str:
    """The prompt's line on the terminal (above the footer), without the Stop button."""
    return app.screen.display[app.rows - 2].replace("Stop", "").strip()


def test_keys_in_one_write_to_a_real_terminal_are_applied_in_order(fake_api, anthropic_env, tmp_path):
    from pty_app import PROMPT_DRAWN, PtyApp

    fake_api.enqueue(text_reply("Sent it."))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    cases = [
        (b"abc" + BACKSPACE + b"xyz", "abxyz"),
        (b"abc" + BACKSPACE * 2 + b"xyz", "axyz"),
        (b"abc" + LEFT + b"xyz", "abxyzc"),
        (b"abc" + HOME + DELETE + b"xy", "xybc"),
        (b"hello" + CTRL_A + b"X" + CTRL_E + b"Y", "XhelloY"),
        (b"ab" + LEFT + PASTE_START + b"PASTE" + PASTE_END + b"x" + END + b"y", "aPASTExby"),
    ]
    app = PtyApp(env, size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=20)
        for keys, shown in cases:
            app.write(keys)
            app.wait_until_screen(lambda shown=shown: prompt_row(app) == shown, timeout=10)
            app.wait_quiet(0.3)
            assert prompt_row(app) == shown, keys
            app.write(END + BACKSPACE * 20)
            app.wait_for_text("Ask the operator", timeout=10)
        app.write(b"\t")  # focus to the chat: what is typed next still goes into the prompt
        app.wait_quiet(0.3)
        app.write(b"typed")
        app.wait_until_screen(lambda: prompt_row(app) == "typed", timeout=10)
        app.wait_quiet(0.3)
        assert prompt_row(app) == "typed"
        app.write(BACKSPACE * 5)
        app.wait_for_text("Ask the operator", timeout=10)
        app.write(b"sent" + ENTER + b"kept" + BACKSPACE + b"t")  # Enter in the middle: "sent" goes
        app.wait_for_text("Sent it.", timeout=20)
        app.wait_quiet(0.3)
        assert prompt_row(app) == "kept"
    finally:
        app.close()
    assert [b["text"] for b in fake_api.requests[0].body["messages"][-1]["content"]] == ["sent"]


SIDE_SIZE = (120, 40)  # the panels beside the chat shown
PANELS = ["#chat", "#tool-table", "#machine-list", "tool card"]


async def one_tool_call(pilot, fake_api) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo panel-output"}), text_reply("Done."))
    await submit(pilot, "go")
    await finish_turn(pilot)


def focus(app, where: str) -> None:
    widget = app.query_one(ToolCard) if where == "tool card" else app.query_one(where)
    app.screen.set_focus(widget)
    assert app.focused is widget


@pytest.mark.parametrize("where", PANELS)
async def test_typing_while_a_panel_has_focus_goes_into_the_prompt_at_its_cursor(fake_api, where):
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIDE_SIZE) as pilot:
        await one_tool_call(pilot, fake_api)
        prompt = app.query_one(PromptInput)
        prompt.load_text("hello world")
        prompt.move_cursor((0, 5))
        focus(app, where)
        app.copy_to_clipboard("untouched")
        send_together(app, *typed(" c"), events.Paste("[pasted]"), "c", "space")
        await wait_until(pilot, lambda: prompt.text == "hello c[pasted]c  world", timeout=3, what=prompt.text)
        assert app.focused is prompt
        assert app.clipboard == "untouched"  # `c` typed, not a copy
        assert not app.query("OutputScreen")


async def test_f4_in_the_tool_panel_copies_the_output_and_f4_elsewhere_the_reply(fake_api):
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIDE_SIZE) as pilot:
        await one_tool_call(pilot, fake_api)
        for where in ("#tool-table", "tool card"):
            focus(app, where)
            app.copy_to_clipboard("")
            await pilot.press("f4")
            await wait_until(pilot, lambda: "panel-output" in app.clipboard, what=f"the output copied from {where}")
        focus(app, "#chat")
        await pilot.press("f4")
        await wait_until(pilot, lambda: app.clipboard == "Done.", what="the last reply copied")


async def test_esc_between_turns_brings_focus_back_to_the_prompt(fake_api):
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIDE_SIZE) as pilot:
        await one_tool_call(pilot, fake_api)  # the tool panel's table comes with the first call
        prompt = app.query_one(PromptInput)
        for where in ("#chat", "#machine-list", "#tool-table"):
            focus(app, where)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.focused is prompt, what=f"focus back from {where}")
        assert not notices(app, "stopped") and prompt.text == ""


async def test_esc_while_a_turn_runs_stops_it_from_a_panel(fake_api):
    gate = threading.Event()
    fake_api.enqueue(text_reply("Words that go on " * 20, stall_after=8, gate=gate))
    app = make_app(fake_api)
    async with app.run_test(size=SIDE_SIZE) as pilot:
        await submit(pilot, "long answer please")
        await wait_until(pilot, lambda: any(replies(app)), what="streamed text")
        focus(app, "#chat")
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped"), what="the stopped notice")
        assert not app.running
    gate.set()


async def test_a_dialog_keeps_its_own_letter_keys():
    app = make_app()
    async with app.run_test(size=SIDE_SIZE) as pilot:
        answers: list[bool | None] = []
        app.push_screen(ConfirmScreen("Go on?", yes="Yes", no="No"), answers.append)
        await wait_until(pilot, lambda: showing(app, ConfirmScreen))
        send_together(app, "y")
        await wait_until(pilot, lambda: answers == [True], what="the dialog's answer")
        assert app.query_one(PromptInput).text == ""


async def test_pageup_and_pagedown_at_the_prompt_scroll_the_chat():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(ChatLog)
        for n in range(30):
            await chat.add_notice(f"line {n}")
        chat.scroll_end(animate=False)
        await wait_until(pilot, lambda: chat.scroll_y == chat.max_scroll_y > 0, what="the chat at its end")
        bottom = chat.scroll_y
        await pilot.press("pageup")
        await wait_until(pilot, lambda: chat.scroll_y < bottom, what="the chat scrolled up")
        up = chat.scroll_y
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: chat.scroll_y > up, what="the chat scrolled down")
        assert app.focused is app.query_one(PromptInput)


def described(bindings) -> list[Binding]:
    return [b for binding in bindings for b in Binding.make_bindings([binding]) if b.tooltip]


async def test_help_lists_every_key_from_the_bindings_at_80_columns():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: any(n.startswith("Commands:") for n in notices(app)))
        [notice] = [n for n in app.query(Notice) if str(n.content).startswith("Commands:")]
        text = str(notice.content)
        keys = text[text.index("Keys at the prompt:") :].splitlines()
        for binding in described([*APP_BINDINGS, *PromptInput.BINDINGS, *ToolCard.BINDINGS]):
            assert any(
                line.split(maxsplit=1)[0] == key_name(binding.key) or key_name(binding.key) in line
                for line in keys
                if binding.tooltip in line
            ), (binding, text)
        for key in ("Tab", "Shift+Tab", "PageUp", "PageDown", "Esc", "Ctrl+S", "F2", "F3", "F4", "Ctrl+C", "Ctrl+Q"):
            assert any(line.strip().startswith(key + " ") for line in keys), (key, text)
        assert "twice: /rewind" in text  # Esc Esc
        assert "Enter" in text[text.index("Keys in the chat") :]  # the panels' keys too
        # (a row longer than the notice wraps under its own column: test_layout.py)


async def test_keys_that_arrive_together_in_a_dialogs_text_field_keep_their_order():
    from cmdop_tui.mcp.asks import ElicitationRequest
    from cmdop_tui.mcp.forms import form_fields
    from cmdop_tui.tui.screens.elicitation import ElicitationScreen

    form = {"type": "object", "properties": {"branch": {"type": "string"}}}
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ElicitationScreen(ElicitationRequest("srv", "Which branch?", form_fields(form), url="")))
        await wait_until(pilot, lambda: showing(app, ElicitationScreen) and app.screen.query(Input))
        field = app.screen.query_one(Input)
        app.screen.set_focus(field)
        send_together(app, *typed("maim"), "backspace", "n", "home", "delete", "M", "end", "x", "backspace")
        await wait_until(
            pilot, lambda: field.value == "Main" and field.cursor_position == 4, timeout=3, what=field.value
        )
        assert app.query_one(PromptInput).text == ""  # a dialog's typing stays in the dialog


async def test_esc_from_a_panel_only_brings_focus_back_and_starts_no_rewind(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIDE_SIZE) as pilot:
        await app.session_ready.wait()
        focus(app, "#chat")
        send_together(app, "escape", "escape")  # both given to the chat: focus back, no pair
        await wait_until(pilot, lambda: app.focused is app.query_one(PromptInput), what="focus back")
        await pilot.pause()
        assert not any("rewind" in n for n in notices(app))
        send_together(app, "escape", "escape")  # at the prompt: /rewind
        await wait_until(pilot, lambda: any("Nothing to rewind" in n for n in notices(app)), what="the rewind")
