"""Each host's own stream in a call over many machines: run_on_machines sends what a host printed
with its `host` events, ask_machines its agent's events, and the output view lists the hosts,
Enter on one showing that host's output alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import OptionList
from tui_helpers import wait_until

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.outcome import OK
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.vocabulary.tool_records import HOST_OUTPUT_CHARS, ToolRecord
from cmdop_tui.tui.widgets.output_pager import OutputPager

SECRET = "sk-ant-api03-" + "x" * 90


@pytest.fixture
async def fleet(ssh_hosts):
    lab = ssh_hosts(2)
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


async def test_a_host_s_events_carry_what_it_printed(fleet, tmp_path: Path):
    nested: list[dict] = []
    ctx = ToolContext(call_id="t1", cwd=tmp_path, machines=fleet, nested=nested.append)
    command = 'for n in 1 2 3; do echo "$(hostname -s 2>/dev/null || echo h) line $n"; sleep 0.3; done; echo end >&2'
    result = await run_tool(RUN_ON_MACHINES, {"command": command, "machines": ["alpha", "bravo"]}, ctx)
    assert not result.is_error, result.content
    record = ToolRecord("t1", "run_on_machines", {"machines": ["alpha", "bravo"]}, "2 machines")
    for event in nested:
        record.add_nested(event)
    for host in ("alpha", "bravo"):
        stream = record.host_output(host)
        assert [line.split(" ", 1)[1] for line in stream.splitlines() if " line " in line] == [
            "line 1",
            "line 2",
            "line 3",
        ], stream
        assert stream.rstrip().endswith("end")
    assert sum(len(e.get("text", "")) for e in nested) < 200  # each chunk sent once


def test_a_host_stream_is_bounded_masked_and_fed_by_a_remote_agent_too():
    record = ToolRecord("t1", "ask_machines", {"hostnames": ["web1", "web2"]}, "2 machines")
    record.add_nested({"type": "host", "hostname": "web1", "state": "running", "text": "a" * HOST_OUTPUT_CHARS})
    record.add_nested({"type": "host", "hostname": "web1", "state": "running", "text": f"key {SECRET}\n"})
    record.add_nested({"type": "host", "hostname": "web2", "state": "running"})
    record.add_nested({"type": "token", "hostname": "web2", "text": "Disk is at 82 %."})
    record.add_nested({"type": "tool_start", "hostname": "web2", "name": "execute_command", "input": {"command": "df"}})
    web1 = record.host_output("web1")
    assert len(web1) <= HOST_OUTPUT_CHARS and SECRET not in web1 and web1.startswith("a")
    assert "Disk is at 82 %." in record.host_output("web2") and "execute_command" in record.host_output("web2")
    assert "Disk" not in record.host_output("web1")


class OutputApp(App[None]):
    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.push_screen(OutputScreen(self.record))


async def test_enter_on_a_host_shows_its_own_output():
    record = ToolRecord("t1", "run_on_machines", {"machines": ["web1", "web2"]}, "2 machines")
    record.add_nested({"type": "host", "hostname": "web1", "state": "done", "line": "ok", "text": "web1 says hi\nok\n"})
    record.add_nested({"type": "host", "hostname": "web2", "state": "failed", "line": "no", "text": "web2 broke\nno\n"})
    record.finish("2 hosts: 1 exit 0, 1 other", OK, 1.0)
    app = OutputApp(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(OptionList)
        area = app.screen.query_one(OutputPager)
        assert hosts.has_focus and "2 hosts" in area.text
        assert [str(hosts.get_option_at_index(i).prompt).split()[1] for i in (1, 2)] == ["web2", "web1"]  # failed first
        await pilot.press("down", "enter")
        assert area.text == "web2 broke\nno\n"
        await pilot.press("down", "enter")
        assert area.text == "web1 says hi\nok\n"
        await pilot.press("home", "enter")
        assert "2 hosts" in area.text


async def test_what_hosts_and_remote_agents_print_is_shown_never_obeyed():
    record = ToolRecord("t1", "ask_machines", {"hostnames": ["web1"]}, "web1")
    record.add_nested({"type": "host", "hostname": "web1", "state": "running", "line": "see [/etc/nginx] [b]x[/b]"})
    record.add_nested({"type": "token", "hostname": "web1", "text": "\x1b]52;c;aGk=\x07\x1b[2Jcleared?"})
    record.add_nested({"type": "tool_end", "hostname": "web1", "name": "\x1b[31mred", "duration_s": "soon"})
    stream = record.host_output("web1")
    assert "\x1b" not in stream and "\x07" not in stream and "cleared?" in stream and "red" in stream
    app = OutputApp(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(OptionList)
        assert "see [/etc/nginx] [b]x[/b]" in str(hosts.get_option_at_index(1).prompt)  # markup is text


async def test_the_view_follows_a_call_whose_hosts_come_later_and_keeps_a_reader_where_they_are():
    record = ToolRecord("t1", "run_on_machines", {"machines": ["web1"]}, "web1")  # no host heard of yet
    app = OutputApp(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        hosts, area = app.screen.query_one(OptionList), app.screen.query_one(OutputPager)
        assert not hosts.display
        lines = "".join(f"line {n}\n" for n in range(200))
        record.add_nested({"type": "host", "hostname": "web1", "state": "running", "text": lines})
        await wait_until(pilot, lambda: hosts.display and hosts.option_count == 2)
        hosts.focus()
        hosts.highlighted = 1  # web1
        await pilot.press("enter")
        assert area.text == lines
        area.scroll_to(y=20, animate=False, immediate=True)  # reading back
        record.add_nested({"type": "host", "hostname": "web1", "state": "running", "text": "more\n"})
        await wait_until(pilot, lambda: area.text.endswith("more\n"))
        assert area.scroll_y == 20
        area.scroll_end(animate=False, immediate=True)  # at the end: it follows
        record.add_nested({"type": "host", "hostname": "web1", "state": "done", "text": "last\n"})
        record.finish("1 host: exit 0", OK, 1.0)
        await wait_until(pilot, lambda: area.text.endswith("last\n"))
        assert area.scroll_y == area.max_scroll_y
