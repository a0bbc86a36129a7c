"""A background job is held as a foreground command is (issue 26): a hostile command started
with `background: true` meets the same sandbox and the same containment. Every command here
is harmless: it tries to read a fake secret, write outside the writable places, read its own
session's files and outlive its session; the point is that each try fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import running
from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator
from cmdop_tui.config.settings import SandboxPolicy
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap
from cmdop_tui.tools.jobs import JobTable

needs_bwrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")


@needs_bwrap
async def test_a_background_job_is_in_the_sandbox(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-BODY")
    work = home / "work"
    work.mkdir()
    machine = LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))
    jobs = JobTable(lambda: tmp_path / "jobs")
    escaped = home / "escaped"
    command = f"cat {home}/.ssh/id_ed25519; echo out > {escaped}; echo inside > made-here; echo end"
    try:
        jobs.start(machine, command, cwd=None, timeout_ms=20_000)
        info = await jobs.wait("job-1", 20)
    finally:
        await jobs.close()
    written = Path(info.output_file).read_text()
    assert "PRIVATE-KEY-BODY" not in written and "end" in written
    assert not escaped.exists()  # outside the writable places
    assert (work / "made-here").read_text() == "inside\n"  # the working tree is, as for any command


async def test_a_job_cannot_outlive_its_session_nor_read_its_files(fake_api, anthropic_env, tmp_path):
    marker = "1000.5151"
    detach = f"(setsid nohup sleep {marker} > /dev/null 2>&1 &); echo secret-of-job-1"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": detach, "background": True}),
        tool_reply("job_wait", {"id": "job-1", "timeout_s": 30}),
        text_reply("detached"),
    )
    async with Operator(cwd=tmp_path, approval="auto") as operator:
        [e async for e in operator.run("detach a sleep")]
        [first] = operator.jobs()
        assert first.state == "exited"  # the shell ended; what it detached is the sandbox's to end
        fake_api.enqueue(
            tool_reply("execute_command", {"command": f"cat {first.output_file}", "background": True}),
            tool_reply("job_wait", {"id": "job-2", "timeout_s": 30}),
            text_reply("read"),
        )
        [e async for e in operator.run("read the first job's file")]
        second = operator.jobs()[1]
        assert "secret-of-job-1" in Path(first.output_file).read_text()
        assert "secret-of-job-1" not in Path(second.output_file).read_text()  # the data dir is hidden
    assert running("sleep", marker) == []  # nothing outlives the session
