"""The first frame is the app as it stays: the screen's breakpoint classes are set before any
widget is styled (tui/first_frame.py), not on the first Resize, which comes after that frame."""

from __future__ import annotations

import os

import pyte
import pytest
from textual import events
from textual._time import get_time  # the clock of a message's `time`
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from cmdop_tui.config.settings import Settings
from cmdop_tui.tui.app import CmdopApp
from cmdop_tui.tui.first_frame import FirstScreen, breakpoint_classes
from cmdop_tui.tui.widgets.machines_panel import MachineList
from cmdop_tui.tui.widgets.tool_table import ToolTable

SYNC_END = b"\x1b[?2026l"  # the end of a frame (synchronized output)


@pytest.mark.parametrize("width", [20, 80, 99, 100, 101, 240])
def test_the_classes_are_those_textual_sets_on_a_resize(width):
    breakpoints = CmdopApp.HORIZONTAL_BREAKPOINTS
    classes = breakpoint_classes(breakpoints, width)
    assert set(classes) == {name for _, name in breakpoints}
    assert {name for name, on in classes.items() if on} == Screen()._get_breakpoint_classes(width, breakpoints)


def test_the_first_frame_is_the_whole_screen_with_the_prompt_focused(anthropic_env, tmp_path):
    """One frame draws the app whole: the chat's welcome (the chat, anchored to its end, scrolls
    as it is laid out; a first frame drawn before showed it blank and a second drew it), the
    panels, the footer's keys, and the prompt's cursor (the focus is the prompt's from the start)."""
    from pty_app import PROMPT_DRAWN, PtyApp

    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    app = PtyApp(env, size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN)
        app.wait_for(SYNC_END)  # the end of the first frame
        first_frame = bytes(app.output).split(SYNC_END)[0]
        assert PROMPT_DRAWN in first_frame  # the prompt came in the first frame
        first = pyte.Screen(100, 30)
        pyte.ByteStream(first).feed(first_frame + SYNC_END)
        shown = "\n".join(first.display)
        assert "Ask for something and press Enter" in shown, shown
        assert "─ Tools" in shown and "─ Machines" in shown and "f2 Tools" in shown, shown
        row = next(y for y, line in enumerate(first.display) if "Ask the operator" in line)
        x = first.display[row].index("Ask the operator")
        cells = first.buffer[row]
        assert cells[x].bg != cells[x + 1].bg  # the prompt's cursor on its first letter: focused
    finally:
        app.close()


def test_a_narrow_terminal_never_shows_the_side_column(anthropic_env, tmp_path):
    from pty_app import PtyApp

    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    app = PtyApp(env, size=(80, 24))
    try:
        app.wait_for_screen("Ask the operator")  # the screen as the read that drew the prompt left it
        first_frame = "\n".join(app.screen.display)
        assert "─ Tools" not in first_frame and "─ Machines" not in first_frame, first_frame  # the panels' titles
        assert "f2 Tools" in first_frame  # and the footer's keys are in it
    finally:
        app.close()


def test_the_first_screen_skips_only_its_first_restyle():
    screen = FirstScreen()
    first, later = events.ScreenResume(), events.ScreenResume()
    screen.on_screen_resume(first)  # its widgets were styled as they were mounted, just before
    screen.on_screen_resume(later)  # back from a dialog: styled again, as Textual does
    assert (first.refresh_styles, later.refresh_styles) == (False, True)


async def test_the_app_starts_on_the_first_screen_with_every_style_applied():
    app = CmdopApp(Settings(), offer_local_model=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, FirstScreen) and app.screen.id == "_default"
        for widget in app.screen.walk_children(with_self=True):  # styled as a full restyle styles it
            before = widget.styles.base.css
            app.stylesheet.apply(widget, animate=False)
            assert widget.styles.base.css == before, widget


async def test_a_resize_to_the_screens_own_size_is_not_laid_out_again(monkeypatch):
    app = CmdopApp(Settings(), offer_local_model=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        laid_out: list[object] = []
        refresh_layout = screen._refresh_layout
        monkeypatch.setattr(screen, "_refresh_layout", lambda *a, **k: (laid_out.append(a), refresh_layout(*a, **k)))
        screen.post_message(events.Resize(screen.outer_size, screen.outer_size))  # as Textual repeats it
        await pilot.pause()
        assert laid_out == []
        await pilot.resize_terminal(80, 24)  # a real one: laid out, and the side column folds
        await pilot.pause()
        assert laid_out and screen.outer_size.width == 80 and screen.has_class("-narrow")


async def test_what_textual_settles_after_the_first_frame_is_settled_before_it(monkeypatch):
    from textual.widgets._toast import ToastRack

    hidden_before_shown: list[object] = []
    show = ToastRack.show

    def recording_show(rack: ToastRack, notifications) -> None:  # Textual's, when the app is ready
        hidden_before_shown.append(rack.styles.inline.get_rule("display"))
        show(rack, notifications)

    monkeypatch.setattr(ToastRack, "show", recording_show)
    app = CmdopApp(Settings(), offer_local_model=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await pilot.pause()
        assert "No tool calls yet." in str(app.query_one("#tool-empty", Static).render())
        assert not app.query("#tool-table")  # the table comes with the first call
    assert hidden_before_shown[0] == "none"  # so hiding it then changes nothing and lays nothing out


async def test_the_tool_table_is_measured_when_mounted_not_at_its_first_idle(monkeypatch):
    unmeasured_at_idle: list[bool] = []
    on_idle = ToolTable._on_idle

    async def recording_idle(table: ToolTable, event) -> None:  # DataTable measures itself here
        unmeasured_at_idle.append(table._require_update_dimensions)
        await on_idle(table, event)

    monkeypatch.setattr(ToolTable, "_on_idle", recording_idle)

    class OneTable(App[None]):
        def compose(self) -> ComposeResult:
            yield ToolTable()

    async with OneTable().run_test() as pilot:
        await pilot.pause()
        table = pilot.app.query_one(ToolTable)
        assert unmeasured_at_idle[0] is False  # measured when mounted: no layout after its first frame
        assert table.virtual_size.height == table.header_height  # the header, no call yet


async def test_the_first_layout_leaves_no_request_for_a_second(monkeypatch):
    """Every widget mounted for the first frame asks for a layout, and the first layout asks again
    for each widget it sizes: a second whole layout after the first frame, in the way of the first
    key, that would lay out nothing new. Both are taken back (only a widget whose scrollbars came
    or went would need one)."""
    left_asking: list[list[Widget]] = []
    measured: list[tuple[int, int]] = []
    whole_layouts: list[float] = []
    refresh_layout = FirstScreen._refresh_layout

    def recording_refresh_layout(screen: FirstScreen, size=None, scroll: bool = False) -> None:
        if not scroll:
            whole_layouts.append(get_time())
        refresh_layout(screen, size, scroll)
        if len(whole_layouts) == 1 and not scroll:
            left_asking.append([w for w in screen.walk_children(Widget) if w._layout_required])
            machines = screen.query_one(MachineList)  # its lines measured now, not as it is painted
            measured.append((machines.virtual_size.height, machines.option_count))

    handled_late: list[object] = []
    on_layout = Screen._on_layout

    async def recording_on_layout(screen: Screen, message) -> None:  # Textual's: it lays out again
        if isinstance(screen, FirstScreen) and whole_layouts and message.time < whole_layouts[0]:
            handled_late.append(message.widget)
        await on_layout(screen, message)

    monkeypatch.setattr(FirstScreen, "_refresh_layout", recording_refresh_layout)
    monkeypatch.setattr(Screen, "_on_layout", recording_on_layout)
    app = CmdopApp(Settings(), offer_local_model=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert whole_layouts and left_asking == [[]]
        assert measured == [(2, 1)]  # this machine: two lines
        assert handled_late == []  # the requests made before the first layout were dropped
