"""Diffs of what write_file and edit_file would change: computed, previewed through the machine,
shown in the approval dialog (80x24), the tool card, the tool panel and on a plain terminal.

Whatever a file holds, a diff on screen is inert text: no escape sequence reaches the terminal.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.widgets import Button, Static
from tui_helpers import showing, wait_until

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import ToolEnd, ToolStart
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.support.diffs import DIFF_MAX_LINES, diff_counts, unified_diff
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.describe import approval_question, describe_arguments, plain_preview
from cmdop_tui.tools.edit import EDIT_FILE
from cmdop_tui.tools.files import READ_FILE, WRITE_FILE
from cmdop_tui.tools.outcome import OK
from cmdop_tui.tools.registry import preview_tool
from cmdop_tui.tui.screens.approval import ApprovalChoice, ApprovalScreen
from cmdop_tui.tui.vocabulary.messages import Agent
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, diff_content
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

HOSTILE = "\x1b]52;c;aGVsbG8=\x07\x1b[31mred\x1b[0m\x1b[2J"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOOKED = all("preview" in {f.name for f in dataclasses.fields(kind)} for kind in (ToolCall, ToolStart))
needs_hooks = pytest.mark.skipif(not HOOKED, reason="ToolCall.preview / ToolStart.preview not added yet")


def apply_patch(before: str, diff: str) -> str:
    """Apply a diff made by unified_diff to `before` (LF text without control characters)."""
    old = before.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith("@@ ")) if "@@ " in diff else len(lines)
    while index < len(lines):
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$", lines[index])
        assert header, lines[index]
        start, length = int(header[1]), int(header[2] or 1)
        start = start - 1 if length else start
        out.extend(old[at:start])
        at = start
        index += 1
        while index < len(lines) and not lines[index].startswith("@@ "):
            line = lines[index]
            ending = "" if index + 1 < len(lines) and lines[index + 1].startswith("\\") else "\n"
            if line.startswith((" ", "-")):
                assert old[at] == line[1:] + ending, (old[at], line)
                at += 1
            if line.startswith((" ", "+")):
                out.append(line[1:] + ending)
            index += 1
    out.extend(old[at:])
    return "".join(out)


# --- unified_diff -------------------------------------------------------------------------------


def test_a_diff_reads_like_diff_u() -> None:
    before = "".join(f"line {n}\n" for n in range(1, 21))
    after = before.replace("line 2\n", "line two\n").replace("line 18\n", "").replace("line 10\n", "line 10\nnew\n")
    ours = unified_diff(before, after, "notes.txt").split("\n")
    theirs = difflib.unified_diff(before.splitlines(), after.splitlines(), "notes.txt", "notes.txt", lineterm="")
    assert ours == list(theirs)
    assert ours[2:4] == ["@@ -1,5 +1,5 @@", " line 1"] and len([x for x in ours if x.startswith("@@")]) == 3
    assert diff_counts(unified_diff(before, after, "notes.txt")) == (2, 2)
    assert unified_diff(before, before, "notes.txt") == ""


def test_new_files_missing_newlines_and_line_endings() -> None:
    assert unified_diff("", "a\nb\n", "new.txt", created=True).split("\n") == [
        "--- /dev/null",
        "+++ new.txt",
        "@@ -0,0 +1,2 @@",
        "+a",
        "+b",
    ]
    assert unified_diff("a\nb", "a\nc", "f").split("\n")[3:] == [
        " a",
        "-b",
        "\\ No newline at end of file",
        "+c",
        "\\ No newline at end of file",
    ]
    crlf = unified_diff("a\r\nb\r\n", "a\nb\n", "f")
    assert crlf.startswith("[line endings change: CRLF -> LF]") and "\r" not in crlf


def test_a_diff_is_inert_and_bounded() -> None:
    diff = unified_diff(f"ok\n{HOSTILE}\n", "ok\nfine\n\x07bell\n", "evil\x1b[2J.txt")
    assert not CONTROL.search(diff)
    assert "-red" in diff and "+^Gbell" in diff
    long = unified_diff("", "".join(f"{n}\n" for n in range(5_000)), "big", created=True)
    lines = long.split("\n")
    assert len(lines) == DIFF_MAX_LINES + 1 and lines[-1] == "[... 3,003 more lines of the diff not shown]"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "dd", ""]), max_size=25),
    st.lists(st.sampled_from(["a", "b", "c", "dd", "e", ""]), max_size=25),
    st.booleans(),
    st.booleans(),
)
def test_applying_the_diff_gives_the_new_text(old: list[str], new: list[str], end_old: bool, end_new: bool) -> None:
    before = "\n".join(old) + ("\n" if end_old and old else "")
    after = "\n".join(new) + ("\n" if end_new and new else "")
    diff = unified_diff(before, after, "f")
    assert apply_patch(before, diff) == after


def test_one_edit_in_a_10_mb_file_is_one_small_hunk() -> None:
    # How long it takes is bench/bench_edit.py's figure (a preview of a 10 MB file), not a test's.
    before = "".join(f"line {n} of a large file, long enough to make ten megabytes\n" for n in range(170_000))
    after = before.replace("line 85000 of", "line 85,000 of", 1)
    diff = unified_diff(before, after, "big.log")
    assert "@@ -85998,7 +85998,7 @@" not in diff and "-line 85000 of" in diff and len(diff.split("\n")) == 11


# --- previews through the machine ---------------------------------------------------------------


async def preview(tmp_path: Path, tool, **args) -> str | None:
    return await preview_tool(tool, args, ToolContext(call_id="t", cwd=tmp_path))


async def test_write_file_previews(tmp_path: Path) -> None:
    created = await preview(tmp_path, WRITE_FILE, path="new.txt", content="hello\n")
    assert created == "--- /dev/null\n+++ new.txt\n@@ -0,0 +1 @@\n+hello"
    (tmp_path / "old.txt").write_text("one\ntwo\n")
    changed = await preview(tmp_path, WRITE_FILE, path="old.txt", content="one\n2\n")
    assert changed is not None and changed.endswith("@@ -1,2 +1,2 @@\n one\n-two\n+2")
    same = await preview(tmp_path, WRITE_FILE, path="old.txt", content="one\ntwo\n")
    assert same == "[no change: the file already holds exactly this]"
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    binary = await preview(tmp_path, WRITE_FILE, path="blob", content="text")
    assert binary == "[blob is a binary file (3 bytes): write_file would replace it with text]"
    assert (tmp_path / "old.txt").read_text() == "one\ntwo\n" and not (tmp_path / "new.txt").exists()


async def test_edit_file_previews_the_edit_it_would_make(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\r\ny = 1\r\n")
    diff = await preview(tmp_path, EDIT_FILE, path="a.py", old_string="x = 1", new_string="x = 2")
    assert diff is not None and diff.endswith("@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 1")
    failing = await preview(tmp_path, EDIT_FILE, path="a.py", old_string="= 1", new_string="= 3")
    assert failing is not None and failing.startswith("[edit_file would fail: old_string matches 2 times")
    missing = await preview(tmp_path, EDIT_FILE, path="gone.py", old_string="a", new_string="b")
    assert missing == "[edit_file would fail: there is no file gone.py]"
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\r\ny = 1\r\n"


async def test_what_has_no_preview_gets_none_and_failures_a_note(tmp_path: Path) -> None:
    assert await preview(tmp_path, READ_FILE, path="a.txt") is None
    assert await preview(tmp_path, EDIT_FILE, path="a.txt") is None  # invalid input: the call will say so
    elsewhere = await preview(tmp_path, WRITE_FILE, path="a.txt", content="x", machine="nowhere")
    assert elsewhere is not None and elsewhere.startswith("[no diff: unknown machine 'nowhere'")


async def test_credentials_are_masked_in_previews(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-previewed-key-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    (tmp_path / "conf").write_text(f"key = {key}\nmode = 1\n")
    diff = await preview(tmp_path, EDIT_FILE, path="conf", old_string="mode = 1", new_string="mode = 2")
    assert diff is not None and key not in diff and "+mode = 2" in diff


# --- the approval dialog -----------------------------------------------------------------------

EDIT_ARGS = {"path": "deploy/nginx.conf", "old_string": "listen 80;", "new_string": "listen 8080;"}
NGINX = "".join(f"    location /app{n} {{ proxy_pass http://127.0.0.1:{8000 + n}; }}\n" for n in range(30))
NGINX_BEFORE = "server {\n    listen 80;\n" + NGINX + "}\n"
NGINX_AFTER = ("server {\n    listen 8080;\n" + NGINX + "}\n").replace("/app7 ", f"/app7-{HOSTILE} ")


class DialogApp(App[None]):
    def __init__(self, screen: ApprovalScreen) -> None:
        super().__init__()
        self.dialog = screen
        self.choices: list[ApprovalChoice | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.choices.append)


def dialog_with_diff() -> DialogApp:
    diff = unified_diff(NGINX_BEFORE, NGINX_AFTER, "deploy/nginx.conf")
    return DialogApp(ApprovalScreen("edit_file", "web-1", EDIT_ARGS, preview=diff))


def shown_text(screen: ApprovalScreen) -> str:
    return "\n".join(str(widget.render()) for widget in screen.query(Static))


async def test_the_dialog_shows_the_diff_inert_scrollable_and_fits_80x24() -> None:
    app = dialog_with_diff()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.dialog
        text = shown_text(screen)
        assert "path: deploy/nginx.conf" in text and "old_string" not in text  # the diff says it better
        assert "-    listen 80;" in text and "+    listen 8080;" in text
        assert "\x1b" not in text and "\x07" not in text
        for button in screen.query(Button):  # every button on screen, whole
            assert button.region.bottom <= 24 and button.region.height == 3
        diff = screen.query_one("#approval-diff")
        assert diff.region.height >= 6 and diff.max_scroll_y > 0
        diff.focus()
        await pilot.press("end")
        await wait_until(pilot, lambda: diff.scroll_y == diff.max_scroll_y, what="the end of the diff")
        await pilot.press("y")
        await pilot.pause()
        assert app.choices == [ApprovalChoice.ONCE]


async def test_a_preview_that_is_a_note_keeps_the_arguments() -> None:
    screen = ApprovalScreen("write_file", "local", {"path": "a", "content": "x"}, preview="[no diff: too large]")
    app = DialogApp(screen)
    async with app.run_test(size=(80, 24)):
        text = shown_text(screen)
        assert '"content": "x"' in text and "[no diff: too large]" in text


def test_the_dialog_with_a_diff_at_80x24(snap_compare) -> None:
    async def run_before(pilot) -> None:
        screen = pilot.app.dialog
        screen.countdown.pause()
        screen.remaining = 60  # pinned: the countdown
        screen._tick()
        await pilot.pause()

    assert snap_compare(dialog_with_diff(), terminal_size=(80, 24), run_before=run_before)


# --- the tool card and the tool panel -----------------------------------------------------------


class CardApp(App[None]):
    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        yield ToolCard(self.record)


async def test_the_card_shows_the_diff_then_the_result() -> None:
    diff = unified_diff("a\nb\n", f"a\nB{HOSTILE}\n", "x.txt")
    record = ToolRecord("t1", "edit_file", {"path": "x.txt"}, diff=diff)
    app = CardApp(record)
    async with app.run_test(size=(80, 12)) as pilot:
        card = app.query_one(ToolCard)
        text = str(card.render())
        assert "+1 -1" in text and "-b" in text and "+Bred" in text and "--- x.txt" not in text
        assert not CONTROL.search(text)
        record.finish("edited x.txt: replaced 1 occurrence (line 2)", OK, 0.1)
        card.refresh()
        await pilot.pause()
        assert str(card.render()).endswith("edited x.txt: replaced 1 occurrence (line 2)")
    assert record.shown_output.startswith("--- x.txt") and record.shown_output.endswith("(line 2)")


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ToolPanel()


async def test_the_panel_shows_the_diff_of_the_highlighted_call() -> None:
    diff = unified_diff("".join(f"{n}\n" for n in range(10)), "".join(f"{n}\n" for n in range(1, 11)), "n.txt")
    record = ToolRecord("t1", "write_file", {"path": "n.txt"}, diff=diff)
    app = PanelApp()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(ToolPanel)
        panel.on_agent_tool_started(Agent.ToolStarted(ToolStart("t1", "write_file", {"path": "n.txt"}), record))
        await pilot.pause()
        shown = str(panel.query_one("#tool-preview", Static).render()).split("\n")
        assert shown == ["@@ -1,4 +1,3 @@", "-0", " 1", " 2", " 3", "… 5 more lines (Enter shows all)"]
        record.finish("wrote 21 bytes to n.txt (replaced)", OK, 0.1)
        panel.on_agent_tool_ended(Agent.ToolEnded(ToolEnd("t1", "write_file", record.output, False, 0.1), record))
        await pilot.pause()
        shown = str(panel.query_one("#tool-preview", Static).render()).split("\n")
        assert len(shown) == 6 and shown[-1] == "wrote 21 bytes to n.txt (replaced)"


def test_long_diffs_are_cut_in_the_card_and_panel() -> None:
    diff = unified_diff("", "".join(f"{n}\n" for n in range(40)), "n.txt", created=True)
    shown = str(diff_content(diff, lines=5, width=20, headers=False)).split("\n")
    assert shown == ["@@ -0,0 +1,40 @@", "+0", "+1", "+2", "… 37 more lines (Enter shows all)"]
    assert ToolRecord("t", "write_file", {}, diff=diff).diff_summary == "+40 -0"
    assert ToolRecord("t", "read_file", {}).diff_summary == ""


# --- a plain terminal (headless) ------------------------------------------------------------------


def test_the_terminal_question_shows_the_diff_plain_and_cut() -> None:
    diff = unified_diff(NGINX_BEFORE, NGINX_AFTER, "deploy/nginx.conf")
    question = approval_question("edit_file", "web-1", EDIT_ARGS, preview=diff)
    assert question.startswith("Allow edit_file on web-1:\npath: deploy/nginx.conf\n--- deploy/nginx.conf\n")
    assert "-    listen 80;\n+    listen 8080;" in question and question.endswith("\n[y/N] ")
    assert "old_string" not in question and not CONTROL.search(question)
    huge = unified_diff("", "".join(f"line {n} {'x' * 500}\n" for n in range(500)), "big", created=True)
    cut = plain_preview(huge)
    assert len(cut) < 10_000 and cut.endswith("more lines of the diff not shown]")
    assert all(len(line) <= 300 for line in cut.split("\n"))


def test_the_terminal_question_without_a_diff_is_unchanged() -> None:
    assert approval_question("execute_command", "local", {"command": "ls -la"}) == (
        "Allow execute_command on local:\nls -la\n[y/N] "
    )
    refusal = SandboxRefusal("write", ("/etc/x",))
    outside = approval_question("write_file", "local", {"path": "/etc/x", "content": "y"}, escalation=refusal)
    assert "OUTSIDE the sandbox" in outside and "refused to write: /etc/x" in outside and '"content": "y"' in outside
    assert describe_arguments({"path": "p", "content": "c"}, "[no diff: gone]") == (
        '{\n  "path": "p",\n  "content": "c"\n}'
    )


# --- through the loop (once the runner reads previews: see the report) ------------------------


@needs_hooks
async def test_the_loop_asks_with_the_diff_and_shows_it(fake_api, tmp_path: Path) -> None:
    target = tmp_path / "app.cfg"
    target.write_text("debug = false\n")
    fake_api.enqueue(
        tool_reply("edit_file", {"path": str(target), "old_string": "false", "new_string": "true"}),
        text_reply("Debugging is on."),
    )
    asked: list[ToolCall] = []

    async def approve(call: ToolCall) -> Approval:
        asked.append(call)
        assert target.read_text() == "debug = false\n"  # asked before anything was written
        return Approval(True)

    runner, events = make_runner(fake_api, cwd=tmp_path, approve=approve), Recorder()
    await runner.run("turn debugging on", events)
    expected = f"--- {target}\n+++ {target}\n@@ -1 +1 @@\n-debug = false\n+debug = true"
    assert [getattr(call, "preview", None) for call in asked] == [expected]
    (start,) = events.of(ToolStart)
    assert getattr(start, "preview", None) == expected
    assert "preview" not in start.to_json()  # for display: never streamed nor stored
    assert target.read_text() == "debug = true\n"


@needs_hooks
async def test_the_app_asks_with_the_diff_and_the_card_keeps_it(
    fake_api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the workspace: the host's /tmp is not the session's
    from tui_helpers import finish_turn, make_app, submit, wait_until

    target = tmp_path / "motd"
    target.write_text("hello\n")
    fake_api.enqueue(tool_reply("write_file", {"path": str(target), "content": "goodbye\n"}), text_reply("Done."))
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "change the motd")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the question")
        assert isinstance(app.screen, ApprovalScreen)
        question = shown_text(app.screen)
        assert "-hello" in question and "+goodbye" in question and f"path: {target}" in question
        assert target.read_text() == "hello\n"
        await pilot.press("y")
        await finish_turn(pilot)
        assert "-hello" in str(app.query_one(ToolCard).render())
    assert target.read_text() == "goodbye\n"
