"""/rewind in the app: the list of turns with what each changed, the choice of what goes back,
the diff before anything is written, the files back byte for byte, the conversation back with
its prompt in the input, a file someone else changed overwritten only when asked; Esc Esc at an
empty prompt between turns opens it. Driven through the real app, the real SDK (to the fake
API) and real checkpoints (git) of a temporary project folder."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, remove_home, workspace
from sshd import SshLab, sshd_unavailable_reason
from textual.widgets import OptionList, Static
from tui_helpers import finish_turn, make_app, notices, press_in_one_read, showing, submit, wait_until

from cmdop_tui.config.settings import Settings
from cmdop_tui.session.checkpoint_records import checkpoints_dir
from cmdop_tui.session.rewind import RewindError
from cmdop_tui.tui.screens.rewind import RewindScreen
from cmdop_tui.tui.screens.rewind_diff import RewindDiffScreen
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage

SIZE = (80, 24)
SETTINGS = Settings().with_run(auto_approve=True)
SHELL_EDIT = "sed -i s/one/two/ a.txt && printf 'made\\n' > made.txt"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, the app's working directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("one\nline two\n")
    (folder / "bytes.bin").write_bytes(bytes(range(256)))
    monkeypatch.chdir(folder)
    return folder


def files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def editing_turn(fake_api, answer: str = "changed") -> None:
    """The next turn writes a file with write_file and edits and makes two with a command."""
    fake_api.enqueue(
        tool_reply("write_file", {"path": "notes.md", "content": "# notes\n"}),
        tool_reply("execute_command", {"command": SHELL_EDIT}),
        text_reply(answer),
    )


def shown(app, selector: str) -> str:
    """The text of a Static or of an OptionList's options on the current screen."""
    widget = app.screen.query_one(selector)
    if isinstance(widget, OptionList):
        return "\n".join(str(widget.get_option_at_index(i).prompt) for i in range(widget.option_count))
    assert isinstance(widget, Static)
    return str(widget.content)


def shadow_commits() -> int:
    """The commits in every shadow repository of this machine: a read of a machine's present (a
    plan) that differs from its last checkpoint adds one."""
    repositories = checkpoints_dir() / "repositories"
    return sum(
        int(subprocess.check_output(["git", "--git-dir", str(git), "rev-list", "--all", "--count"], text=True))
        for git in repositories.iterdir()
    )


def prompt_text(app) -> str:
    return app.query_one(PromptInput).text


async def on_screen(pilot, kind: type, part: str) -> None:
    """Until a screen of `kind` is on top with its `part` composed."""
    app = pilot.app
    await wait_until(pilot, lambda: showing(app, kind) and app.screen.query(part), what=kind.__name__)


async def open_rewind(pilot) -> None:
    await submit(pilot, "/rewind")
    await on_screen(pilot, RewindScreen, "#rewind-turns")


async def rewound(pilot) -> None:
    await wait_until(pilot, lambda: any("Rewound to before" in n for n in notices(pilot.app)), what="the notice")


async def test_the_files_of_a_turn_go_back_after_the_diff_is_shown(fake_api, tree):
    before = files(tree)
    editing_turn(fake_api)
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change the files")
        await finish_turn(pilot)
        changed = files(tree)
        assert changed["a.txt"] == b"two\nline two\n" and "notes.md" in changed and "made.txt" in changed

        await open_rewind(pilot)
        listed = shown(app, "#rewind-turns")
        assert "#1  change the files" in listed and "local: 3 files +3 −1" in listed
        await pilot.press("enter")  # the turn: the newest, chosen
        assert "Files only" in shown(app, "#rewind-what")
        await pilot.press("down", "enter")  # files only
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        diff = shown(app, "#rewind-diff-text")
        assert "── local: 3 files" in diff and "-two" in diff and "+one" in diff and "-# notes" in diff
        assert files(tree) == changed  # nothing written before the answer

        await pilot.press("y")
        await rewound(pilot)
        assert files(tree) == before  # byte for byte
        [notice] = [n for n in notices(app) if "Rewound to before turn #1" in n]
        assert "restored local: 3 files" in notice and "/rewind and choose #2" in notice
        assert len(app.query(UserMessage)) == 1 and prompt_text(app) == ""  # the conversation stays

        await open_rewind(pilot)  # the rewind is a turn of its own, that can be undone
        assert "#2  ↺ a rewind to turn #1" in shown(app, "#rewind-turns")
        await pilot.press("enter")
        assert "Conversation" not in shown(app, "#rewind-what")
        await pilot.press("enter")  # files only: what a rewind's own turn has
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        await pilot.press("y")
        await wait_until(pilot, lambda: any("turn #2" in n for n in notices(app)), what="the undo")
        assert files(tree) == changed


async def test_the_conversation_goes_back_and_its_prompt_waits_in_the_input(fake_api, tree):
    editing_turn(fake_api, "first done")
    fake_api.enqueue(text_reply("second done"))
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change the files")
        await finish_turn(pilot)
        await submit(pilot, "now just talk")
        await finish_turn(pilot)
        changed = files(tree)
        assert len(app.query(UserMessage)) == 2

        await open_rewind(pilot)
        await pilot.press("enter")  # turn 2, the newest
        await pilot.press("down", "down", "enter")  # conversation only: no diff, nothing written
        await rewound(pilot)
        assert prompt_text(app) == "now just talk"
        assert [str(m.content) for m in app.query(UserMessage)] == ["change the files"]
        assert len(app.query(ToolCard)) == 2  # turn 1's calls, drawn again from the conversation
        assert len(app.session.runner.conversation.messages) == 6
        assert files(tree) == changed

        fake_api.enqueue(text_reply("said again"))
        await pilot.press("enter")  # the prompt, sent again
        await finish_turn(pilot)
        sent = fake_api.requests[-1].body["messages"]
        assert len(sent) == 7 and sent[-1]["content"][0]["text"] == "now just talk"

        (tree / "later.txt").write_text("the user's, after the turns\n")  # a read of the present keeps it
        commits, changed = shadow_commits(), files(tree)
        await open_rewind(pilot)
        await pilot.press("up", "up", "enter")  # turn 1 (turn 3 is the prompt sent again)
        await pilot.press("down", "down", "enter")  # conversation only
        await wait_until(pilot, lambda: prompt_text(app) == "change the files", what="turn 1's prompt")
        assert len(app.query(UserMessage)) == 0 and app.session.runner.conversation.messages == []
        assert files(tree) == changed and shadow_commits() == commits  # no machine was even read
        with pytest.raises(RewindError):
            app.session.conversation_plan(9)


async def test_a_file_changed_by_someone_else_is_overwritten_only_when_asked(fake_api, tree):
    before = files(tree)
    editing_turn(fake_api)
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change the files")
        await finish_turn(pilot)
        (tree / "a.txt").write_text("the user's own edit\n")  # after the session left it

        await open_rewind(pilot)
        await pilot.press("enter", "enter")  # the turn; files and conversation
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        assert "local:a.txt. Overwrite them?" in shown(app, "#rewind-conflicts")
        assert "Overwrite them and rewind (y)" in str(app.screen.query_one("#yes").label)
        await pilot.press("n")
        await wait_until(pilot, lambda: "Rewind cancelled: nothing was written." in notices(app))
        assert (tree / "a.txt").read_text() == "the user's own edit\n"
        assert prompt_text(app) == "" and len(app.session.runner.conversation.messages) == 6

        await open_rewind(pilot)
        await pilot.press("enter", "enter")
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        await pilot.press("y")
        await rewound(pilot)
        assert files(tree) == before
        assert prompt_text(app) == "change the files" and len(app.query(UserMessage)) == 0


async def test_a_compacted_conversation_stays_and_says_why_while_the_files_go_back(fake_api, tree):
    before = files(tree)
    editing_turn(fake_api)
    fake_api.enqueue(text_reply("talked"), text_reply("## Summary\n- the files were changed"))
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change the files")
        await finish_turn(pilot)
        await submit(pilot, "now just talk")
        await finish_turn(pilot)
        await submit(pilot, "/compact")
        await finish_turn(pilot)
        kept = list(app.session.runner.conversation.messages)

        await open_rewind(pilot)
        await pilot.press("up", "enter", "enter")  # turn 1; files and conversation
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        await pilot.press("y")
        await rewound(pilot)
        assert files(tree) == before
        [warning] = notices(app, "warning")
        assert warning == "The conversation did not go back: the conversation was compacted since that turn."
        assert app.session.runner.conversation.messages == kept and prompt_text(app) == ""


async def test_escape_twice_at_an_empty_prompt_opens_it_and_once_does_not(fake_api, tree):
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await app.session_ready.wait()
        await press_in_one_read(pilot, "escape", "escape")
        await wait_until(pilot, lambda: "Nothing to rewind: this session has no turns yet." in notices(app))

        editing_turn(fake_api)
        await submit(pilot, "change the files")
        await finish_turn(pilot)
        app.query_one(PromptInput).load_text("a draft")
        await press_in_one_read(pilot, "escape", "escape")  # not empty: Esc Esc is no rewind
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RewindScreen) and prompt_text(app) == "a draft"

        app.query_one(PromptInput).clear()
        await press_in_one_read(pilot, "escape", "escape")
        await on_screen(pilot, RewindScreen, "#rewind-turns")
        await pilot.press("enter")  # what goes back is asked, the list hidden
        assert app.screen.query_one("#rewind-what").display and not app.screen.query_one("#rewind-turns").display
        await pilot.press("escape")  # back to the list
        assert app.screen.query_one("#rewind-turns").has_focus and not app.screen.query_one("#rewind-what").display
        await pilot.press("enter", "down", "down", "down", "enter")  # Cancel
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="cancelled")
        await press_in_one_read(pilot, "escape", "escape")
        await on_screen(pilot, RewindScreen, "#rewind-turns")
        await pilot.press("escape")  # the list closes, nothing done
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="closed")
        assert not any("Rewound" in n for n in notices(app)) and (tree / "made.txt").exists()


async def test_escape_twice_while_a_turn_runs_only_stops_it(fake_api, tree):
    gate = threading.Event()
    fake_api.enqueue(text_reply("Partial words that go on " * 20, stall_after=8, gate=gate))
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "long answer please")
        await wait_until(pilot, lambda: app.running and app.session_ready.is_set(), what="the turn")
        await press_in_one_read(pilot, "escape", "escape")
        await wait_until(pilot, lambda: notices(app, "stopped"), what="the stopped notice")
        gate.set()
        await finish_turn(pilot)
        assert not isinstance(app.screen, RewindScreen)
        assert not any("rewind" in n.lower() for n in notices(app))


async def test_rewind_is_listed_in_help(fake_api, tree):
    app = make_app(fake_api, settings=SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/help")
        await pilot.pause()
        [help_text] = [n for n in notices(app) if n.startswith("Commands:")]
        assert "/rewind" in help_text and "Esc Esc" in help_text
        titles = [c.title for c in app.commands.palette_commands(app)]
        assert "Rewind to before a turn" in titles


@pytest.fixture
def two_hosts():
    """Two real sshd servers (alpha, bravo), each with a home of its own (outside /tmp: the
    sandbox there makes /tmp private), and the workspace in each."""
    reason = sshd_unavailable_reason()
    if reason is not None:
        pytest.skip(f"real SSH servers unavailable: {reason}")
    homes = {alias: make_home() for alias in ("alpha", "bravo")}
    try:
        with SshLab(2, host_env=lambda alias: {"HOME": str(homes[alias])}) as lab:
            yield lab, {alias: workspace(home) for alias, home in homes.items()}
    finally:
        for home in homes.values():
            remove_home(home)


async def test_a_fan_out_rewinds_as_one_with_a_line_per_host(fake_api, tree, two_hosts):
    lab, workspaces = two_hosts
    for folder in workspaces.values():
        (folder / "site.conf").write_text("port 80\n")
    command = "sed -i s/80/8080/ site.conf && printf 'made\\n' > made.txt"
    fake_api.enqueue(
        tool_reply("run_on_machines", {"command": command, "machines": ["alpha", "bravo"]}), text_reply("both done")
    )
    app = make_app(fake_api, settings=Settings(ssh_config=lab.config).with_run(auto_approve=True))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "change both hosts")
        await finish_turn(pilot)
        for folder in workspaces.values():
            assert (folder / "site.conf").read_text() == "port 8080\n" and (folder / "made.txt").exists()

        await open_rewind(pilot)
        listed = shown(app, "#rewind-turns")
        assert "alpha: 2 files +2 −1" in listed and "bravo: 2 files +2 −1" in listed
        await pilot.press("enter", "down", "enter")  # the turn; files only
        await on_screen(pilot, RewindDiffScreen, "#rewind-diff-text")
        diff = shown(app, "#rewind-diff-text")
        assert "── alpha: 2 files" in diff and "── bravo: 2 files" in diff and "+port 80" in diff
        await pilot.press("y")
        await rewound(pilot)
        for folder in workspaces.values():
            assert (folder / "site.conf").read_text() == "port 80\n" and not (folder / "made.txt").exists()
        [notice] = [n for n in notices(app) if "Rewound" in n]
        assert "restored alpha: 2 files" in notice and "restored bravo: 2 files" in notice


def test_the_list_of_turns_at_80x24(snap_compare, fake_api, tree):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "printf 'port 8080\\n' > site.conf"}),
        text_reply("Set."),
        tool_reply("execute_command", {"command": "echo 'systemctl restart web' && sed -i s/one/1/ a.txt"}),
        text_reply("Restarted."),
    )
    app = make_app(fake_api, settings=SETTINGS)

    async def run_before(pilot):
        await submit(pilot, "set the port to 8080")
        await finish_turn(pilot)
        await submit(pilot, "restart the web service, then tidy a.txt " + "and more words " * 6)
        await finish_turn(pilot)
        for card in app.query(ToolCard):
            card.record.duration_s = 0.1  # pinned: real durations differ run to run
            card.refresh()
        await open_rewind(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
