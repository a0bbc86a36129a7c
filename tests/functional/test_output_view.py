"""The whole-output view on the real app: `seq 1 200000` run through the real tool (the fake API
scripts the call), kept whole on disk beside the transcript, paged, searched and copied; the model
still gets its bounded part."""

from __future__ import annotations

import threading
from pathlib import Path

from fake_anthropic import text_reply, tool_reply
from textual.app import App
from textual.geometry import Offset
from textual.selection import Selection
from tui_helpers import finish_turn, make_app, showing, submit, wait_until

from cmdop_tui.config.paths import data_dir
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT
from cmdop_tui.tools.outcome import OK
from cmdop_tui.transcripts import KeptOutputs
from cmdop_tui.tui import session_life
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
from cmdop_tui.tui.widgets.output_pager import OutputPager
from cmdop_tui.tui.widgets.tool_card import ToolCard

SIZE = (100, 30)
SEQ = "seq 1 200000"
APPROVED = Settings(run=RunOptions(auto_approve=True))


def visible(pager: OutputPager) -> list[str]:
    """The lines the pager draws now."""
    return ["".join(segment.text for segment in pager.render_line(y)).rstrip() for y in range(pager.size.height)]


def status(app) -> str:
    return str(app.screen.query_one("#output-status").render())


async def open_view(pilot) -> OutputPager:
    pilot.app.query_one(ToolCard).focus()
    await pilot.press("enter")
    await wait_until(pilot, lambda: showing(pilot.app, OutputScreen))
    await pilot.pause()
    return pilot.app.screen.query_one(OutputPager)


async def search(pilot, needle: str) -> None:
    await pilot.press("slash")
    await pilot.press(*needle, "enter")
    await pilot.pause()


async def session_that_counted(fake_api) -> str:
    """A recorded session whose one call ran `seq 1 200000`: its id."""
    fake_api.enqueue(tool_reply("execute_command", {"command": SEQ}), text_reply("counted"))
    first = make_app(fake_api, settings=APPROVED)
    async with first.run_test(size=SIZE) as pilot:
        await submit(pilot, "count")
        await finish_turn(pilot)
        return first.session.recorder.session_id


async def test_seq_200000_is_kept_whole_paged_searched_and_copied(fake_api):
    fake_api.enqueue(tool_reply("execute_command", {"command": SEQ}), text_reply("counted"))
    app = make_app(fake_api, settings=APPROVED)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "count")
        await finish_turn(pilot)
        record = app.query_one(ToolCard).record
        sent = fake_api.requests[1].body["messages"][-1]["content"][0]
        assert sent["content"] == record.output and len(sent["content"]) <= DEFAULT_OUTPUT_LIMIT + 500  # bounded
        assert "200000" in record.output and "123456\n" not in record.output  # cut in the middle
        pager = await open_view(pilot)
        assert pager.paged.line_count == 200000 and visible(pager)[0] == "1"
        await pilot.press("end")
        await wait_until(pilot, lambda: "200000" in visible(pager) and "199999" in visible(pager), what="end")
        await pilot.press("home")
        await wait_until(pilot, lambda: visible(pager)[0] == "1", what="home")
        await pilot.press("pagedown")
        await wait_until(
            pilot, lambda: visible(pager)[0] == str(pager.scrollable_content_region.height + 1), what="pagedown"
        )
        await pilot.press("pageup")
        await wait_until(pilot, lambda: visible(pager)[0] == "1", what="pageup")
        await pilot.press("ctrl+end")
        await wait_until(pilot, lambda: visible(pager)[-1] == "200000" or "200000" in visible(pager), what="ctrl+end")
        await pilot.press("g")
        await wait_until(pilot, lambda: visible(pager)[0] == "1", what="g")

        await search(pilot, "199999")
        assert status(app).startswith("1/1 '199999' on line 199,999") and "199999" in visible(pager)
        current = pager.get_component_rich_style("output-pager--current")
        row = visible(pager).index("199999")
        (marked,) = [segment for segment in pager.render_line(row) if segment.text == "199999"]
        assert marked.style is not None and marked.style.bgcolor == current.bgcolor  # highlighted
        await pilot.press("g")  # a search starts at the top line shown
        await search(pilot, "1999")  # 1999, 11999..91999, 19990..19999, 101999..191999, 119990..119999, 199900..
        assert status(app).startswith("1/140 '1999' on line 1,999")
        await pilot.press("n")
        assert status(app).startswith("2/140 '1999' on line 11,999") and "11999" in visible(pager)
        await pilot.press("N", "N")
        assert status(app).startswith("140/140 '1999' on line 199,999") and "went round to the bottom" in status(app)
        await pilot.press("n")
        assert status(app).startswith("1/140") and "went round to the top" in status(app)

        await pilot.press("y")
        assert app.clipboard == "1999"
        await pilot.press("c")  # 1.3 MB: too big for OSC 52, the kept file's path instead
        kept = Path(app.clipboard)
        assert kept.is_file() and kept.parent.parent == data_dir() / "sessions" and "path copied" in status(app)
        assert kept.read_text() == "".join(f"{n}\n" for n in range(1, 200001))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, OutputScreen))


async def test_a_resumed_session_shows_its_outputs_whole(fake_api):
    session_id = await session_that_counted(fake_api)
    resumed = make_app(fake_api, settings=Settings(run=RunOptions(resume=session_id)))
    async with resumed.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(resumed.query(ToolCard)))
        pager = await open_view(pilot)
        await pilot.press("end")
        await wait_until(pilot, lambda: "200000" in visible(pager), what="the last line in view")
        assert pager.paged.line_count == 200000


async def test_a_resumed_session_shows_its_outputs_whole_before_it_has_opened(fake_api, monkeypatch):
    session_id = await session_that_counted(fake_api)
    opening = threading.Event()  # the session opens once the view was seen: its tail is drawn from the transcript

    def load_when_let(real=session_life.load_session_class):
        opening.wait(timeout=60)
        return real()

    monkeypatch.setattr(session_life, "load_session_class", load_when_let)
    resumed = make_app(fake_api, settings=Settings(run=RunOptions(resume=session_id)))
    async with resumed.run_test(size=SIZE) as pilot:
        try:
            await wait_until(pilot, lambda: bool(resumed.query(ToolCard)))
            assert resumed.session is None
            pager = await open_view(pilot)
            assert pager.paged.line_count == 200000
        finally:
            opening.set()
        await wait_until(pilot, lambda: resumed.session is not None)


async def test_without_a_transcript_what_is_held_is_shown_and_the_rest_said_not_kept(fake_api):
    data_dir().parent.mkdir(parents=True, exist_ok=True)
    data_dir().write_text("a file where the data directory should be")
    fake_api.enqueue(tool_reply("execute_command", {"command": SEQ}), text_reply("counted"))
    app = make_app(fake_api, settings=APPROVED)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "count")
        await finish_turn(pilot)
        record = app.query_one(ToolCard).record
        pager = await open_view(pilot)
        assert pager.text == record.output
        note = str(app.screen.query_one("#output-note").render())
        assert app.screen.query_one("#output-note").display and "the rest is not kept" in note


async def test_escape_laden_and_binary_output_is_shown_inert(fake_api):
    command = r"printf 'a\033]52;c;aGk=\a\033[2J\033[31mred\033[0m\n\377\376\001bin\tx'"  # no last break
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    app = make_app(fake_api, settings=APPROVED)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "print")
        await finish_turn(pilot)
        pager = await open_view(pilot)
        shown = visible(pager)
        assert shown[0] == "ared" and shown[1] == "\ufffd\ufffd^Abin x", (
            pager.paged.read()
        )  # the last line, kept at the end
        assert isinstance(pager.paged.source, Path)  # from the kept file
        assert all("\x1b" not in line and "\x07" not in line for line in shown)


class ViewApp(App[None]):
    def __init__(self, record: ToolRecord, kept: KeptOutputs) -> None:
        super().__init__()
        self.record, self.kept = record, kept

    def on_mount(self) -> None:
        self.push_screen(OutputScreen(self.record, self.kept))


def test_the_view_searching_at_80x24(snap_compare, tmp_path: Path) -> None:
    kept = KeptOutputs(tmp_path / "s.outputs")
    kept.write("toolu_1", "".join(f"{n}\tline {n}\n" for n in range(1, 2001)))
    record = ToolRecord("toolu_1", "execute_command", {"command": "seq 1 2000 | sed ..."}, "local")
    record.finish("exit code: 0", OK, 1.5)

    async def run_before(pilot) -> None:
        await pilot.press("slash", *"line 19", "enter", "n")
        await pilot.pause()

    assert snap_compare(ViewApp(record, kept), terminal_size=(80, 24), run_before=run_before)


async def test_a_mouse_selection_gives_the_lines_as_shown(tmp_path: Path) -> None:
    kept = KeptOutputs(tmp_path / "s.outputs")
    kept.write("toolu_1", "".join(f"{n}\tline {n}\n" for n in range(1, 2001)) + "\x1b[31mred\n")
    record = ToolRecord("toolu_1", "execute_command", {"command": "seq"}, "local")
    record.finish("exit code: 0", OK, 1.5)
    app = ViewApp(record, kept)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pager = app.screen.query_one(OutputPager)
        app.screen.selections = {pager: Selection(Offset(8, 1999), Offset(3, 2000))}
        await pilot.pause()
        assert app.screen.get_selected_text() == "line 2000\nred"


async def test_a_running_call_is_followed_from_memory_then_from_its_file(tmp_path: Path) -> None:
    kept = KeptOutputs(tmp_path / "s.outputs")
    record = ToolRecord("toolu_1", "execute_command", {"command": "seq"}, "local")
    app = ViewApp(record, kept)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pager = app.screen.query_one(OutputPager)
        assert pager.paged.line_count == 0  # nothing yet, from memory
        kept.write("toolu_1", "".join(f"{n}\n" for n in range(1, 501)))
        record.add_progress("1\n")
        await wait_until(pilot, lambda: pager.paged.line_count == 500)  # the file, once there is one
        assert isinstance(pager.paged.source, Path)
        paged = pager.paged  # followed from here on: only what the file gains is read
        await pilot.press("end")
        kept.write("toolu_1", "".join(f"{n}\n" for n in range(501, 1001)))
        await wait_until(pilot, lambda: pager.paged.line_count == 1000)
        await pilot.pause()
        assert visible(pager)[-1] == "1000"  # a reader at the end stays there
        await pilot.press("home")
        kept.write("toolu_1", "1001\n")
        await wait_until(pilot, lambda: pager.paged.line_count == 1001)
        assert visible(pager)[0] == "1"  # one who went back stays there
        assert pager.paged is paged
        record.finish("exit code: 0", OK, 1.0)
