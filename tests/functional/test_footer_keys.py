"""The footer's keys follow the focus, and are made again only when they change: Textual
recomposes the footer at every change of the screen's bindings, a dozen times as the app starts."""

from __future__ import annotations

from textual.widgets._footer import FooterKey
from tui_helpers import make_app, wait_until

from cmdop_tui.tui.widgets.fitting_footer import FittingFooter
from cmdop_tui.tui.widgets.machines_panel import MachinesPanel


async def test_the_footer_makes_its_keys_again_only_when_they_change():
    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        footer = app.query_one(FittingFooter)

        def descriptions() -> list[str]:
            return [key.description for key in footer.query(FooterKey)]

        app.query_one(MachinesPanel).options.focus()  # the machine list binds enter: "Work on it"
        await wait_until(pilot, lambda: "Work on it" in descriptions(), what="the machine list's key")
        keys = list(footer.query(FooterKey))
        app.screen.bindings_updated_signal.publish(app.screen)  # the same bindings
        await pilot.pause()
        await pilot.pause()
        assert list(footer.query(FooterKey)) == keys  # the same widgets: not made again

        app.query_one("#prompt").focus()
        await wait_until(pilot, lambda: "Work on it" not in descriptions(), what="the machine list's key gone")


async def test_fitting_the_footer_touches_no_key_that_fits():
    """A key's display set, even to what it is, lays the whole screen out again: at start-up the
    six keys did so after the first frame, in the way of the first key typed."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        footer = app.query_one(FittingFooter)
        keys = list(footer.query(FooterKey))
        assert keys and all(key.display and not key.styles.inline.has_rule("display") for key in keys)
        await pilot.resize_terminal(60, 30)  # too narrow for every key: the last are left out
        await wait_until(pilot, lambda: not all(key.display for key in footer.query(FooterKey)), what="keys left out")
