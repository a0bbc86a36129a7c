"""SVG snapshots of the main states at 80x24, 100x30 and 160x45 (pytest-textual-snapshot).

Everything that differs between machines is pinned: host facts, load, tool durations. Update the
pictures with `pytest tests/test_snapshots.py --snapshot-update` after checking them by eye.
"""

from __future__ import annotations

import threading

import pytest
from fake_anthropic import text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.support.figures import duration
from cmdop_tui.tui.screens.approval import ApprovalScreen
from cmdop_tui.tui.widgets.tool_card import ToolCard

SIZES = [pytest.param(size, id=f"{size[0]}x{size[1]}") for size in ((80, 24), (100, 30), (160, 45))]

REPLY = """Disk usage on **testhost**:

- `/` is 41% full
- `/srv` is 73% full

```sh
df -h /srv
```
"""


@pytest.mark.parametrize("size", SIZES)
def test_idle(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_reply_after_a_tool_call(snap_compare, fake_api, size):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo '/srv 73%'"}, text="Checking."), text_reply(REPLY))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))

    async def run_before(pilot):
        await submit(pilot, "how full are the disks?")
        await finish_turn(pilot)
        for card in app.query(ToolCard):
            card.record.duration_s = 0.1  # pinned: real durations differ run to run
            card.refresh()
        for table in app.query("#tool-table"):
            table.update_cell_at((0, 3), duration(0.1), update_width=True)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_approval_modal(snap_compare, fake_api, size):
    fake_api.enqueue(tool_reply("execute_command", {"command": "systemctl restart nginx"}), text_reply("Restarted."))
    app = make_app(fake_api)

    async def run_before(pilot):
        await submit(pilot, "restart nginx")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen) and hasattr(app.screen, "countdown"))
        app.screen.countdown.pause()  # the picture at 60 s, however long taking it lasts
        app.screen.remaining = 60
        app.screen._tick()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_stopped_mid_stream(snap_compare, fake_api, size):
    gate = threading.Event()
    # message_start, ping, content_block_start and 4 deltas of 10 characters, then the stall
    fake_api.enqueue(
        text_reply("Looking at the logs now, the first thing I see is", chunk_size=10, stall_after=7, gate=gate)
    )
    app = make_app(fake_api)

    async def run_before(pilot):
        await submit(pilot, "what is wrong with the web server?")
        await wait_until(pilot, lambda: replies(app) == ["Looking at the logs now, the first thing"])
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped"))
        gate.set()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare, fake_api, size):
    app = make_app(fake_api)
    # pinned: where custom commands are looked for differs from run to run (the test's home)
    app.commands.help_notes[:] = [
        "Custom commands: markdown files in /srv/.cmdop/commands and ~/.config/cmdop-tui/commands "
        "(a built-in command of the same name wins)."
    ]

    async def run_before(pilot):
        await app.session_ready.wait()
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: any(n.startswith("Commands:") for n in notices(app)), what="/help")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_tools_hidden_at_100x30(snap_compare):
    """F2 at 100 columns: the machines above the chat, which keeps the whole width."""
    assert snap_compare(make_app(), terminal_size=(100, 30), press=["f2"])
