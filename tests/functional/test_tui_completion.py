"""Completion in the prompt, driven by keys: `/` lists the commands, `@` the working tree's files."""

from __future__ import annotations

import subprocess

from fake_anthropic import text_reply
from tui_helpers import finish_turn, make_app, notices, wait_until

from cmdop_tui.tui.widgets.completion_menu import CompletionMenu
from cmdop_tui.tui.widgets.prompt_input import PromptInput

SIZE = (80, 24)


def menu_of(app) -> CompletionMenu:
    return app.query_one(PromptInput).completion.menu  # mounted at its first list


def labels(app) -> list[str]:
    return [choice.label for choice in menu_of(app).choices]


def make_repo(root) -> None:
    for relative, text in {"src/app.py": "print('the app')\n", "README.md": "readme\n", "out/x.log": ""}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / ".gitignore").write_text("out/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


async def test_slash_lists_the_commands_and_filters_as_you_type(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        menu = menu_of(app)
        await pilot.press("/")
        await wait_until(pilot, lambda: menu.is_open, what="the command list")
        assert "/help" in labels(app) and len(labels(app)) == len(app.commands.usages())
        bar = app.query_one(PromptInput).parent
        assert menu.region.bottom <= bar.region.y and menu.region.height >= 3  # over the chat, above the prompt
        assert menu.choices[labels(app).index("/help")].note  # each with its one-line help
        await pilot.press("h", "e")
        await wait_until(pilot, lambda: labels(app) == ["/help"], what="the list filtered to /help")
        await pilot.press("enter")  # a command with no argument: Enter runs it
        await wait_until(pilot, lambda: any("Commands:" in n for n in notices(app)), what="/help's output")
        assert not menu.display and app.query_one("#prompt").text == ""


async def test_esc_closes_the_list_and_keeps_the_text(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        menu = menu_of(app)
        await pilot.press("/", "m")
        await wait_until(pilot, lambda: menu.is_open, what="the command list")
        await pilot.press("down", "escape")
        assert not menu.display and app.query_one("#prompt").text == "/m"


async def test_at_lists_the_tree_and_accepting_attaches_the_file(fake_api, tmp_path, monkeypatch):
    make_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(text_reply("It prints."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        menu = menu_of(app)
        prompt = app.query_one("#prompt")
        await pilot.press("w", "h", "a", "t", "space", "@")
        await wait_until(pilot, lambda: menu.is_open, what="the file list")
        assert set(labels(app)) == {".gitignore", "README.md", "src/app.py"}  # out/ is ignored
        await pilot.press("a", "p", "p")
        await wait_until(pilot, lambda: labels(app)[:1] == ["src/app.py"], what="src/app.py first")
        await pilot.press("tab")
        assert prompt.text == "what @src/app.py " and not menu.display
        await pilot.press("d", "o", "e", "s")
        await pilot.press("enter")
        await finish_turn(pilot)
        sent = fake_api.requests[0].body["messages"][0]["content"][0]["text"]
        assert sent.startswith("what @src/app.py does") and "print('the app')" in sent


async def test_esc_stops_a_turn_when_no_list_was_ever_shown(fake_api):
    fake_api.enqueue(text_reply("x" * 4000, chunk_size=1, delay_s=0.01))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.load_text("go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.running, what="the turn")
        assert not prompt.completion.handles("escape")  # the list was never mounted: Esc is the app's
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.running, what="the turn stopped")
