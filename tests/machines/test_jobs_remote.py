"""Background jobs on other machines: run_on_machines with `background: true` over real sshd
servers (tests/support/sshd.py), a job per host, read, waited for and killed there."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_helpers import running
from remote_side import make_home, remove_home

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.job_tools import JOB_TOOLS
from cmdop_tui.tools.jobs import JobTable
from cmdop_tui.tools.registry import run_tool

JOB_OUTPUT, JOB_WAIT, JOB_KILL = JOB_TOOLS


@pytest.fixture
def remote_home():
    home = make_home()
    yield home
    remove_home(home)


@pytest.fixture
async def fleet(ssh_hosts, remote_home):
    lab = ssh_hosts(2, env={"HOME": str(remote_home)})
    fleet = Fleet(Inventory.load([], lab.config, None), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


async def until_running(count: int, *argv: str) -> list[int]:
    async with asyncio.timeout(15):
        while len(found := running(*argv)) < count:
            await asyncio.sleep(0.02)
    return found


async def test_a_fanout_in_the_background_gives_a_job_per_host(fleet, tmp_path: Path):
    jobs = JobTable(lambda: tmp_path / "jobs")
    ctx = ToolContext(call_id="toolu_fan", cwd=tmp_path, machines=fleet, jobs=jobs)
    args = {"command": "echo up on $(hostname); exec sleep 31.93", "machines": ["alpha", "bravo"], "background": True}
    try:
        result = await asyncio.wait_for(run_tool(RUN_ON_MACHINES, args, ctx), 10)  # at once, not in 31 s
        assert not result.is_error
        assert result.content.splitlines()[1:] == ["alpha: job job-1", "bravo: job job-2"]
        pids = await until_running(2, "sleep", "31.93")
        assert [info.machine for info in jobs.jobs()] == ["alpha", "bravo"]

        waited = await run_tool(JOB_WAIT, {"id": "job-2", "timeout_s": 0.1}, ctx)
        assert "job-2 on bravo: running" in waited.content
        async with asyncio.timeout(15):  # the remote side's first line reaches the job's file
            while "up on" not in (page := await run_tool(JOB_OUTPUT, {"id": "job-1"}, ctx)).content:
                await asyncio.sleep(0.02)
        assert "job-1 on alpha: running" in page.content

        killed = await run_tool(JOB_KILL, {"id": "job-1"}, ctx)
        assert "job-1 on alpha: killed" in killed.content
        async with asyncio.timeout(10):  # the remote group is killed there, not only the ssh client
            while len(running("sleep", "31.93")) != 1:
                await asyncio.sleep(0.02)
        assert jobs.info("job-2") is not None and jobs.info("job-2").running  # type: ignore[union-attr]
    finally:
        await jobs.close()
    async with asyncio.timeout(10):
        while any(pid in running("sleep", "31.93") for pid in pids):
            await asyncio.sleep(0.02)


async def test_a_remote_job_ends_with_its_exit_code(fleet, tmp_path: Path):
    jobs = JobTable(lambda: tmp_path / "jobs")
    ctx = ToolContext(call_id="toolu_fan", cwd=tmp_path, machines=fleet, jobs=jobs)
    args = {"command": "echo done there; exit 4", "machines": ["alpha"], "background": True}
    try:
        await run_tool(RUN_ON_MACHINES, args, ctx)
        waited = await run_tool(JOB_WAIT, {"id": "job-1", "timeout_s": 30}, ctx)
        assert "job-1 on alpha: exit 4" in waited.content
        page = await run_tool(JOB_OUTPUT, {"id": "job-1", "offset": 0}, ctx)
        assert "done there" in page.content and "that is all so far" in page.content
    finally:
        await jobs.close()


async def test_a_host_a_rule_denies_starts_no_job(fleet, tmp_path: Path):
    jobs = JobTable(lambda: tmp_path / "jobs")
    ctx = ToolContext(call_id="toolu_fan", cwd=tmp_path, machines=fleet, jobs=jobs)
    ctx.denied_on = lambda machine: "denied by rule bravo:run_on_machines(*)" if machine == "bravo" else None
    args = {"command": "echo hi", "machines": ["alpha", "bravo"], "background": True}
    try:
        result = await run_tool(RUN_ON_MACHINES, args, ctx)
        assert "bravo: denied by rule bravo:run_on_machines(*); not started" in result.content
        assert [info.machine for info in jobs.jobs()] == ["alpha"]
    finally:
        await jobs.close()


async def test_a_fanout_moved_to_the_background_goes_on_as_a_job_per_host(fleet, tmp_path: Path):
    jobs = JobTable(lambda: tmp_path / "jobs")
    events: list[dict] = []
    ctx = ToolContext(call_id="toolu_fan", cwd=tmp_path, machines=fleet, jobs=jobs, nested=events.append)
    command = "echo before; sleep 2; echo after; exit 3"  # past its 1 s timeout: a job has none
    args = {"command": command, "machines": ["alpha", "bravo"], "concurrency": 1, "timeout_ms": 1000}
    call = asyncio.ensure_future(run_tool(RUN_ON_MACHINES, args, ctx))
    try:
        async with asyncio.timeout(15):  # alpha runs (its first line came); bravo waits for the slot
            while not any("before" in event.get("text", "") for event in events):
                await asyncio.sleep(0.02)
        assert jobs.move("toolu_fan")  # as Ctrl+B does
        result = await asyncio.wait_for(call, 5)
        assert not result.is_error and "moved this command to the background" in result.content
        assert result.content.splitlines()[1:] == ["alpha: job job-1", "bravo: job job-2"]
        for job_id, machine in (("job-1", "alpha"), ("job-2", "bravo")):
            waited = await run_tool(JOB_WAIT, {"id": job_id, "timeout_s": 30}, ctx)
            assert f"{job_id} on {machine}: exit 3" in waited.content
            page = await run_tool(JOB_OUTPUT, {"id": job_id, "offset": 0}, ctx)
            assert "before" in page.content and "after" in page.content
    finally:
        call.cancel()
        await jobs.close()
