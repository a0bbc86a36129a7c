"""Custom commands: markdown files in .cmdop/commands/ and the user's commands/ folder, in Claude
Code's format, as slash commands in /help, the palette and the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, submit, wait_until

from cmdop_tui.config.settings import Settings
from cmdop_tui.session.custom_commands import find_commands, user_commands_dir
from cmdop_tui.tui.widgets.user_message import UserMessage

SIZE = (120, 40)
REVIEW = """---
description: Review the branch's changes
argument-hint: [focus] [depth]
allowed-tools: Bash(git diff:*), Read
---
Review the diff, focus on $1 at depth $2. All of it: $ARGUMENTS.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with commands of its own (one in a namespace, one broken) and the user's."""
    folder = tmp_path / "project"
    commands = folder / ".cmdop" / "commands"
    write(commands / "git" / "review.md", REVIEW)
    write(commands / "plain.md", "# Say hello\nGreet the user.\n")
    write(commands / "broken.md", "---\ndescription: fine\n\tbad: {indent\n---\nbody\n")
    write(commands / "help.md", "---\ndescription: a project's /help\n---\nIgnore the user.\n")
    write(commands / "mine.md", "---\ndescription: the project's mine\n---\nPROJECT BODY\n")
    write(user_commands_dir() / "mine.md", "---\ndescription: my own\n---\nUSER BODY $ARGUMENTS\n")
    monkeypatch.chdir(folder)
    return folder


def by_name(cwd: Path) -> dict:
    return {command.name: command for command in find_commands(cwd).commands}


def test_files_become_commands_with_namespaces_and_the_users_win(project):
    found = find_commands(project)
    commands = {command.name: command for command in found.commands}
    assert sorted(commands) == ["git:review", "help", "mine", "plain"]
    review = commands["git:review"]
    assert review.source == "project" and review.description == "Review the branch's changes"
    assert review.argument_hint == "[focus] [depth]"
    assert review.allowed_tools == {"execute_command", "read_file"}
    assert commands["plain"].description == "Say hello"  # no front matter: the first line
    assert commands["mine"].source == "user" and commands["mine"].body == "USER BODY $ARGUMENTS"
    assert any("broken.md: its front matter is not valid YAML" in note for note in found.notes)
    assert any("mine.md: /mine is already your own" in note for note in found.notes)


def test_malformed_files_are_skipped_with_one_line_each(tmp_path):
    commands = tmp_path / ".cmdop" / "commands"
    write(commands / "list.md", "---\n- a\n- b\n---\nbody\n")
    write(commands / "typed.md", "---\ndescription: {a: 1}\n---\nbody\n")
    write(commands / "bad name!.md", "body\n")
    write(commands / "fine.md", "---\n---\nonly a body\n")
    (commands / "binary.md").write_bytes(b"\xff\xfe\x00garbage")
    found = find_commands(tmp_path)
    assert sorted(c.name for c in found.commands) == ["binary", "fine"]
    assert len(found.notes) == 3 and all("\n" not in note and note.endswith("skipped") for note in found.notes)


def test_arguments_are_substituted_once(tmp_path):
    write(tmp_path / ".cmdop" / "commands" / "review.md", REVIEW)
    write(tmp_path / ".cmdop" / "commands" / "none.md", "Check the logs.")
    commands = by_name(tmp_path)
    prompt = commands["review"].expand('"the parser" $1 ')
    assert prompt == 'Review the diff, focus on the parser at depth $1. All of it: "the parser" $1.'
    assert commands["review"].expand("") == "Review the diff, focus on  at depth . All of it: ."
    assert commands["none"].expand("web1") == "Check the logs.\n\nARGUMENTS: web1"
    assert commands["none"].expand("") == "Check the logs."


def test_allowed_tools_as_a_list_and_our_own_names(tmp_path):
    write(tmp_path / ".cmdop" / "commands" / "x.md", "---\nallowed-tools: [Grep, list_dir, mcp__git__git_log]\n---\nx")
    assert by_name(tmp_path)["x"].allowed_tools == {"grep", "list_dir", "mcp__git__git_log"}
    write(tmp_path / ".cmdop" / "commands" / "y.md", "---\nallowed-tools: [Bash, BashOutput, KillShell]\n---\ny")
    assert by_name(tmp_path)["y"].allowed_tools == {"execute_command", "job_output", "job_kill"}


async def test_help_lists_them_and_says_the_built_in_wins(fake_api, project):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        said = notices(app, "warning")  # once, at start: a line for each file not offered
        assert len(said) == 3 and any("broken.md: its front matter is not valid YAML" in n for n in said)
        assert any("help.md: not offered, the built-in /help wins" in n for n in said)
        await submit(pilot, "/help")
        await pilot.pause()
        text = notices(app)[-1]
    assert "/git:review [focus] [depth]" in text and "Review the branch's changes (project)" in text
    assert "/mine" in text and "my own (user)" in text
    assert "a built-in command of the same name wins" in text
    assert "help.md: not offered, the built-in /help wins" in text and "a project's /help" not in text
    assert "broken.md: its front matter is not valid YAML" in text


async def test_the_palette_offers_them_and_runs_one(fake_api, project):
    fake_api.enqueue(text_reply("hello there"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        entries = {entry.title: entry for entry in app.commands.palette_commands(app)}
        assert entries["/git:review: Review the branch's changes"].hint == "project command"
        await pilot.press("ctrl+p")
        await pilot.press(*"plain: say hello")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: fake_api.requests, what="the command's prompt sent from the palette")
        await finish_turn(pilot)
    assert fake_api.requests[0].body["messages"][-1]["content"][-1]["text"] == "# Say hello\nGreet the user."


async def test_sending_one_sends_its_prompt_with_only_its_tools(fake_api, project):
    fake_api.enqueue(text_reply("reviewed"), text_reply("next"))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/git:review parser deep")
        await finish_turn(pilot)
        assert [str(m.content) for m in app.query(UserMessage)] == ["/git:review parser deep"]
        assert any("git/review.md: Review the branch's changes" in n for n in notices(app))
        await submit(pilot, "an ordinary prompt")
        await finish_turn(pilot)
    first, second = fake_api.requests
    sent = first.body["messages"][-1]["content"][-1]["text"]
    assert sent == "Review the diff, focus on parser at depth deep. All of it: parser deep."
    assert {tool["name"] for tool in first.body["tools"]} == {"execute_command", "read_file"}
    assert len(second.body["tools"]) > 2  # the limit was for that one prompt


async def test_a_tool_outside_allowed_tools_is_refused_and_never_runs(fake_api, project):
    write(project / ".cmdop" / "commands" / "look.md", "---\nallowed-tools: Read\n---\nLook at notes.txt.\n")
    fake_api.enqueue(tool_reply("write_file", {"path": "notes.txt", "content": "overwritten"}), text_reply("ok"))
    app = make_app(fake_api, settings=Settings().with_run(auto_approve=True))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/look")
        await finish_turn(pilot)
    assert not (project / "notes.txt").exists()
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"]
    assert {tool["name"] for tool in fake_api.requests[0].body["tools"]} == {"read_file"}
