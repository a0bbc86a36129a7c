"""ask_machines and the fleet view: a host cancelled at the total deadline, or by Stop, still
gets its last `host` event (state failed, and why), so the view does not show it running for
ever. Over a real sshd (tests/sshd.py); the host's agent command only sleeps."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.ask import ASK_MACHINES
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.registry import run_tool


@pytest.fixture
async def slow_fleet(ssh_hosts):
    lab = ssh_hosts(1)
    slow = MachineSpec("slow", "alpha", cmdop="sleep 30; cmdop-tui")  # never answers in time
    fleet = Fleet(Inventory.load([slow], lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


def last_host_event(nested: list[dict], host: str) -> dict:
    return [e for e in nested if e.get("type") == "host" and e.get("hostname") == host][-1]


async def test_a_host_past_the_total_deadline_is_reported_failed(slow_fleet, tmp_path: Path):
    nested: list[dict] = []
    ctx = ToolContext(call_id="t1", cwd=tmp_path, machines=slow_fleet, nested=nested.append)
    args = {"hostnames": ["slow"], "prompt": "status?", "timeout_ms": 60_000, "total_timeout_ms": 1000}
    result = await run_tool(ASK_MACHINES, args, ctx)
    assert "total deadline" in json.loads(result.content)["slow"]["error"]
    last = last_host_event(nested, "slow")
    assert last["state"] == "failed" and last["line"] == "no answer within the total deadline", last


async def test_a_host_stopped_by_the_user_is_reported_stopped(slow_fleet, tmp_path: Path):
    nested: list[dict] = []
    running = asyncio.Event()

    def sink(event: dict) -> None:
        nested.append(event)
        if event.get("type") == "host" and event.get("state") == "running":
            running.set()

    ctx = ToolContext(call_id="t1", cwd=tmp_path, machines=slow_fleet, nested=sink)
    args = {"hostnames": ["slow"], "prompt": "status?", "timeout_ms": 60_000}
    call = asyncio.create_task(run_tool(ASK_MACHINES, args, ctx))
    await asyncio.wait_for(running.wait(), 30)
    call.cancel()  # what Stop does to the running tool
    with pytest.raises(asyncio.CancelledError):
        await call
    last = last_host_event(nested, "slow")
    assert last["state"] == "failed" and last["line"] == "stopped", last
