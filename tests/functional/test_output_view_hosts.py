"""A call over many machines: each host's own stream kept whole on disk (run_on_machines over a
real sshd), and the output view pages through a host's file."""

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
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.transcripts import KeptOutputs
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.vocabulary.tool_records import HOST_OUTPUT_CHARS, ToolRecord, stored_outcome
from cmdop_tui.tui.widgets.output_pager import OutputPager

WHOLE = "".join(f"{n}\n" for n in range(1, 100001))


@pytest.fixture
async def fleet(ssh_hosts):
    lab = ssh_hosts(2)
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


class OutputApp(App[None]):
    def __init__(self, record: ToolRecord, kept: KeptOutputs) -> None:
        super().__init__()
        self.record, self.kept = record, kept

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.push_screen(OutputScreen(self.record, self.kept))


async def test_each_host_s_whole_stream_is_kept_and_paged(fleet, tmp_path: Path):
    kept = KeptOutputs(tmp_path / "s.outputs")
    nested: list[dict] = []
    ctx = ToolContext(
        call_id="t1",
        cwd=tmp_path,
        machines=fleet,
        nested=nested.append,
        keep_host_output=lambda host, text: kept.write("t1", text, host),
    )
    result = await run_tool(RUN_ON_MACHINES, {"command": "seq 1 100000", "machines": ["alpha", "bravo"]}, ctx)
    assert not result.is_error and len(result.content) < 70_000  # the model's part stays bounded
    for host in ("alpha", "bravo"):
        assert kept.path("t1", host).read_text() == WHOLE
    record = ToolRecord("t1", "run_on_machines", {"machines": ["alpha", "bravo"]}, "2 machines")
    for event in nested:
        record.add_nested(event)
    record.finish(result.content, stored_outcome(result.is_error), 1.0)
    assert len(record.host_output("alpha")) <= HOST_OUTPUT_CHARS  # memory holds a tail only
    app = OutputApp(record, kept)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(OptionList)
        hosts.highlighted = 1
        await pilot.press("enter")
        pager = app.screen.query_one(OutputPager)
        await wait_until(pilot, lambda: pager.paged.line_count == 100000)
        assert pager.text == WHOLE
        pager.focus()
        await pilot.press("end")
        await pilot.pause()
        assert pager.paged.lines(int(pager.scroll_y), pager.size.height)[-1] == "100000"
