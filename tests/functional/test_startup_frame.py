"""The first frame is the app as it stays: the screen's breakpoint classes are set before any
widget is styled (tui/first_frame.py), not on the first Resize, which comes after that frame."""

from __future__ import annotations

import os

import pytest
from textual.screen import Screen

from cmdop_tui.tui.app import CmdopApp
from cmdop_tui.tui.first_frame import breakpoint_classes


@pytest.mark.parametrize("width", [20, 80, 99, 100, 101, 240])
def test_the_classes_are_those_textual_sets_on_a_resize(width):
    breakpoints = CmdopApp.HORIZONTAL_BREAKPOINTS
    classes = breakpoint_classes(breakpoints, width)
    assert set(classes) == {name for _, name in breakpoints}
    assert {name for name, on in classes.items() if on} == Screen()._get_breakpoint_classes(width, breakpoints)


def test_a_narrow_terminal_never_shows_the_side_column(anthropic_env, tmp_path):
    from pty_app import PtyApp

    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}
    app = PtyApp(env, size=(80, 24))
    try:
        app.wait_for_screen("Ask the operator")  # the screen as the read that drew the prompt left it
        first_frame = "\n".join(app.screen.display)
        assert "Tools" not in first_frame and "Machines" not in first_frame, first_frame
    finally:
        app.close()
