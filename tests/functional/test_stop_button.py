"""The Stop button carries only its own variant's rules (widgets/stop_button.py) and looks, in
every theme and state, as Textual's compact error Button does."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Button, Static

from cmdop_tui.tui.themes import load_themes
from cmdop_tui.tui.widgets.stop_button import StopButton

THEMES = [theme.name for theme in load_themes()[0]] + ["textual-dark", "textual-light"]


class TwoStops(App[None]):
    CSS = "#textual, #ours { width: 8; min-width: 8; margin: 0 1; }"

    def compose(self) -> ComposeResult:
        yield Button("Stop", id="textual", variant="error", disabled=True, compact=True)
        yield StopButton(id="ours", action="app.bell")
        yield Static(id="nothing")


def drawn(app: App[None], which: str) -> list[object]:
    button = app.query_one(f"#{which}", Button)
    return [list(strip) for strip in button.render_lines(button.region.reset_offset)]


async def test_stop_does_not_bring_the_css_of_every_button():
    async with TwoStops().run_test() as pilot:
        await pilot.pause()
        sources = " ".join(str(location) for location in pilot.app.stylesheet.source)
        assert "StopButton" in sources and isinstance(pilot.app.query_one("#ours"), Button)
        assert StopButton._css_type_names == {"StopButton"}  # no rule for Button reaches it


async def states_drawn(pilot, which: str) -> dict[str, list[object]]:
    """The button drawn in each state, reached in turn (one widget at a time has focus or hover)."""
    button = pilot.app.query_one(f"#{which}", Button)
    seen = {}
    for state in ("disabled", "enabled", "focused", "hovered", "pressed"):
        if state == "enabled":
            button.disabled = False
        elif state == "focused":
            button.focus()
        elif state == "hovered":
            button.blur()
            await pilot.hover(f"#{which}")
        elif state == "pressed":
            button.add_class("-active")
        await pilot.pause()
        assert state != "hovered" or button.mouse_hover
        seen[state] = drawn(pilot.app, which)
    await pilot.hover("#nothing")
    return seen


@pytest.mark.parametrize("theme", THEMES)
async def test_stop_looks_as_the_compact_error_button_in_every_state(theme):
    app = TwoStops()
    async with app.run_test(size=(40, 3)) as pilot:
        for loaded in load_themes()[0]:
            app.register_theme(loaded)
        app.theme = theme
        textual = await states_drawn(pilot, "textual")
        assert await states_drawn(pilot, "ours") == textual
