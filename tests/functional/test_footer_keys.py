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
