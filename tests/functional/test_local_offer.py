"""With no API key: the offer of the local model reads whole at every size, "Not now" leaves a way
back (`/local`), and the no-key errors of the TUI and of headless mode name `--local`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from textual.geometry import Region
from textual.widgets import Label
from tui_helpers import make_app, notices, showing, submit, wait_until

from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.session_life import LOCAL_OFFER, NOT_NOW

pytest.importorskip("xllamacpp")  # the offer is made only where the local model can run


def shown_text(widget) -> list[str]:
    """The lines `widget` draws, as text."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return [strip.text.rstrip() for strip in strips]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 45)])
async def test_the_local_model_offer_wraps_whole_at_every_size(size):
    app = make_app(offer_local=True)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: showing(app, ConfirmScreen), what="the local-model offer")
        await pilot.pause()
        label = app.screen.query_one("#confirm-dialog > Label", Label)
        dialog = app.screen.query_one("#confirm-dialog")
        lines = shown_text(label)
        assert label.region.right <= dialog.content_region.right
        assert " ".join(line.strip() for line in lines if line.strip()) == LOCAL_OFFER
        assert len(lines) > 1  # wrapped, not cut


async def test_not_now_says_how_to_come_back_and_the_error_names_local():
    app = make_app(offer_local=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: showing(app, ConfirmScreen), what="the local-model offer")
        await pilot.press("n")
        await wait_until(pilot, lambda: NOT_NOW in notices(app), what="the way back said")
        (error,) = notices(app, "error")
        assert "/local" in error and "cmdop-tui --local" in error
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: any("/local" in n and "/help" in n for n in notices(app)), what="/help")


def test_headless_without_a_key_names_local(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}}
    env["CMDOP_TUI_CONFIG"] = str(tmp_path / "config.toml")
    command = [sys.executable, "-m", "cmdop_tui", "-p", "hi"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "--local" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr


def local_servers() -> list[str]:
    found = subprocess.run(["pgrep", "-f", "cmdop_tui.session.local_model"], capture_output=True, text=True)
    return found.stdout.split()


async def test_local_starts_the_local_model_after_not_now():
    from dataclasses import replace

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.session.local_model import LOCAL_IDLE_TIMEOUT_S

    settings = replace(Settings(), agent=replace(Settings().agent, max_tokens=256))
    before = set(local_servers())
    app = make_app(settings=settings, offer_local=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: showing(app, ConfirmScreen), what="the local-model offer")
        await pilot.press("n")
        await wait_until(pilot, lambda: NOT_NOW in notices(app), what="the way back said")
        await submit(pilot, "/local")
        await wait_until(pilot, lambda: app.session is not None, timeout=60, what="the local model")
        model = app.session.runner.config.model
        assert model.startswith("local:") and any("ready in" in n for n in notices(app))
        assert app.session.runner.model.stream.idle_timeout_for(model) == LOCAL_IDLE_TIMEOUT_S
        await submit(pilot, "/local")
        await wait_until(pilot, lambda: any("in use already" in n for n in notices(app)), what="/local again")
    assert set(local_servers()) <= before, "the app left its local model running"
