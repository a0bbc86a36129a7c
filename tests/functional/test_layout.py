"""The layout at every size from 80x24 to 200x60, on the real app: no word cut, a unit on every
figure, the columns given to what is shown."""

from __future__ import annotations

import re
import threading

import pytest
from fake_anthropic import text_reply, tool_reply
from textual.widgets._footer import FooterKey
from tui_helpers import finish_turn, make_app, submit, wait_until

from cmdop_tui.agent import events as ev
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.mcp.servers import ServerState
from cmdop_tui.tui.app import WELCOME
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.mcp_panel import McpPanel
from cmdop_tui.tui.widgets.notice import TableNotice
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

WIDTHS = range(80, 201)
HEIGHTS = range(24, 61)


def screen_rows(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def widget_rows(app, widget) -> list[str]:
    """What the screen shows of `widget`, row by row (the rows scrolled out of sight left out)."""
    region = widget.region
    rows = screen_rows(app)[max(region.y, 0) : region.bottom]
    return [row[region.x : region.right] for row in rows]


def words(text: str) -> set[str]:
    return set(re.split(r"[\s│╭╮╰╯─▏]+", text)) - {""}


def assert_whole(expected: str, shown: str) -> None:
    """Every word of `expected` is on the screen whole (not cut, not broken across rows)."""
    missing = words(expected) - words(shown)
    assert not missing, f"cut or missing: {sorted(missing)}\n{shown}"


def footer_keys(app) -> list[str]:
    return [f"{key.key_display} {key.description}".strip() for key in app.query(FooterKey) if key.display]


async def test_every_size_from_80x24_to_200x60_shows_the_frame_whole():
    """The welcome, the status line's facts and the footer's keys: whole at every width (at 24 and
    60 rows) and every height (at 80 and 200 columns)."""
    app = make_app()
    sizes = [(w, h) for h in (24, 60) for w in WIDTHS] + [(w, h) for w in (80, 200) for h in HEIGHTS]
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        welcome = WELCOME.format(host="testhost")
        for width, height in sizes:
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            rows = screen_rows(app)
            shown = "\n".join(rows)
            assert_whole(welcome, shown)
            status = str(app.query_one(StatusLine).render())
            assert_whole(status, rows[app.query_one(StatusLine).region.y])
            for key in footer_keys(app):
                assert key in rows[-1], (width, height, rows[-1])
            assert len(footer_keys(app)) >= 6, (width, rows[-1])  # all of them, down to 80 columns


async def test_the_footer_leaves_out_whole_keys_when_a_panel_adds_its_own():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f2")  # the tool panel, focused: its `f4 Copy output` takes F4's place
        await wait_until(pilot, lambda: "f4 Copy output" in screen_rows(app)[-1], what="the panel's key")
        for width in WIDTHS:
            await pilot.resize_terminal(width, 24)
            await pilot.pause()
            last = screen_rows(app)[-1]
            for key in footer_keys(app):
                assert key in last, (width, last)
            assert "^p palette" in last
            assert not re.search(r"\S▏", last), last  # no key runs into the palette's: none is cut
            assert "f4 Copy output" in last or width < 82


async def test_f2_at_100_columns_gives_the_chat_the_whole_width():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.query_one(ChatLog).region.width < 60  # both panels beside the chat
        await pilot.press("f2")
        await pilot.pause()
        chat = app.query_one(ChatLog).region
        machines = app.query_one("#machines").region
        assert not app.query_one(ToolPanel).display
        assert chat.width == 100 and machines.width == 100  # the machines above it, across it
        assert machines.bottom <= chat.y and machines.height == 4
        await pilot.press("f2")  # and back beside it
        await pilot.pause()
        assert app.query_one(ChatLog).region.width < 60


async def test_at_80x24_the_status_line_keeps_the_cost_while_a_turn_runs(fake_api):
    gate = threading.Event()
    fake_api.enqueue(
        tool_reply("list_dir", {"path": "."}, text="Looking."),
        text_reply("The files are listed above and there is more", chunk_size=10, stall_after=5, gate=gate),
    )
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "list the files")
        status = app.query_one(StatusLine)
        await wait_until(pilot, lambda: status.facts.cost_usd is not None and status.facts.turn == 2, what="usage")
        await pilot.pause()
        line = screen_rows(app)[status.region.y]
        assert app.running and "● working" in line and "default" not in line
        assert re.search(r"\$\d+\.\d+", line), line  # the cost, while the turn runs
        assert "sandbox workspace" in line and "ctx " in line
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.running, what="the stop")
        gate.set()


async def test_a_tool_time_is_whole_with_its_unit_in_the_panel_and_the_card(fake_api):
    fake_api.enqueue(tool_reply("list_dir", {"path": "."}), text_reply("Listed."))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(120, 30)) as pilot:
        await submit(pilot, "list")
        await finish_turn(pilot)
        (record,) = app.tool_records.values()
        for took, shown in ((11.7, "11.7 s"), (71.2, "1:11 min")):  # as if the call had taken so long
            app.event_router.deliver(ev.ToolEnd(record.call_id, record.name, record.output, False, took))
            await pilot.pause()
            panel = "\n".join(widget_rows(app, app.query_one(ToolPanel)))
            card = "\n".join(widget_rows(app, app.query_one("ToolCard")))
            assert shown in panel and shown in card, panel + "\n" + card


async def test_the_mcp_panel_folds_a_path_between_its_names():
    long_path = "/opt/servers/node/node_modules/.bin/mcp-server-filesystem"
    state = ServerState("files", "settings", "stdio", f"{long_path} /srv/data/projects", "connected", ("read",))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        # the session's own servers (none: it has no key) are shown first, then this one
        await wait_until(pilot, lambda: app.session_state.phase != "loading", what="the session's state")
        panel = app.query_one(McpPanel)
        panel.set_state(state)
        await pilot.pause()
        for width in (100, 120, 160, 200):
            await pilot.resize_terminal(width, 40)
            await pilot.pause()
            shown = "\n".join(widget_rows(app, panel))
            names = set(re.split(r"[\s/│]+", shown))
            assert {"opt", "node_modules", ".bin", "mcp-server-filesystem", "srv", "projects"} <= names, shown
            assert "● files 1 tool" in shown


@pytest.mark.parametrize("width", [80, 100, 160])
async def test_help_wraps_each_row_under_its_own_column(width):
    app = make_app()
    async with app.run_test(size=(width, 160)) as pilot:  # the whole notice in sight
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: app.query(TableNotice), what="/help")
        await pilot.pause()
        notice = app.query_one(TableNotice)
        rows = [row.rstrip() for row in widget_rows(app, notice)]

        def table_after(heading: str) -> list[str]:
            """The rows under `heading` up to the next line that is not a row (a heading, a note)."""
            start = next(i for i, row in enumerate(rows) if row.strip() == heading) + 1
            table = []
            for row in rows[start:]:
                if row.strip() and not row.startswith("  "):
                    break
                table.append(row)
            return [row for row in table if row.strip()]

        commands, keys = table_after("Commands:"), table_after("Keys at the prompt:")
        continued = []
        for table in (commands, keys):
            column = re.search(r"\S {2,}(?=\S)", table[0]).end()  # where the first row's description starts
            continued += [(column, row) for row in table if not row[:column].strip()]
        if width < 100:
            assert continued, rows  # some descriptions did not fit: they continue...
        for column, row in continued:
            assert len(row) - len(row.lstrip()) == column, rows  # ...under their column, not at the edge
        keys_at = next(i for i, row in enumerate(rows) if row.strip() == "Keys at the prompt:")
        assert_whole(str(notice.content).split("Keys at the prompt:")[1], "\n".join(rows[keys_at:]))


async def test_the_tool_panel_cuts_arguments_after_a_whole_word(fake_api):
    command = "echo checking the nginx service and then its journal for errors"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("Checked."))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "check nginx")
        await finish_turn(pilot)
        seen = set()
        for width in (100, 120, 130, 160, 200):
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            await pilot.pause()
            (row,) = [row for row in widget_rows(app, app.query_one(ToolPanel)) if "execute_command" in row]
            shown = row.split("local", 1)[1].strip(" │")
            shown = shown.split("  ", 1)[1] if "  " in shown else shown  # after the time
            if shown != command:
                assert shown == "…" or (shown.endswith(" …") and command.startswith(shown[:-2])), row
                assert shown[:-2].split() == command.split()[: len(shown[:-2].split())], row  # whole words
            seen.add(shown)
        assert len(seen) >= 3 and len(shown.split()) >= 4, seen  # more words as the panel widens, all whole
