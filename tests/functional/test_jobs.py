"""Background jobs (issue 26): `background: true` on execute_command, job_output / job_wait /
job_kill, through the library and headless mode against the fake Messages API, with real
commands. No process is left: each test looks for its command's processes by their command
line (a sleep no one else runs), seen from outside the sandbox."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from agent_helpers import running
from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator
from cmdop_tui.config.settings import load_settings
from cmdop_tui.session.session import Session

FIRST_LINE = "first line"


async def until(condition, what: str, limit_s: float = 15.0) -> None:
    """Wait until `condition()` holds (checked as the event loop turns), failing after a while."""
    async with asyncio.timeout(limit_s):
        while not condition():
            await asyncio.sleep(0.02)
    assert condition(), what


def session_of(operator: Operator) -> Session:
    assert operator._session is not None
    return operator._session


def last_user_content(request) -> str:
    return json.dumps(request.body["messages"][-1]["content"])


async def test_a_job_outlives_its_turn_and_is_read_by_offset(fake_api, anthropic_env, tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    command = f"echo '{FIRST_LINE}'; cat gate > /dev/null; echo second line; exit 3"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": command, "background": True}),
        text_reply("started it"),
    )
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        answers = [e async for e in operator.run("start it") if e["type"] in ("final", "job_start")]
        assert [e["type"] for e in answers] == ["job_start", "final"]
        started = fake_api.requests[1].body["messages"][-1]["content"][0]
        assert "started background job job-1" in started["content"] and not started.get("is_error")
        jobs = session_of(operator).jobs
        assert jobs is not None
        [job] = operator.jobs()
        assert job.running  # the turn ended, the job did not
        await until(lambda: FIRST_LINE in Path(job.output_file).read_text(), "the job's first line")

        fake_api.enqueue(tool_reply("job_output", {"id": "job-1", "offset": 0}), text_reply("read it"))
        [e async for e in operator.run("what did it print?")]
        page = fake_api.requests[3].body["messages"][-1]["content"][0]["content"]
        assert FIRST_LINE in page and "running" in page and "second line" not in page
        offset = len(f"{FIRST_LINE}\n".encode())
        assert f"next_offset {offset}" in page

        with open(gate, "w") as opened:  # lets the job go on to its end
            opened.write("go\n")
        info = await jobs.wait("job-1", 15)
        assert info.state == "exited" and info.exit_code == 3

        fake_api.enqueue(tool_reply("job_output", {"id": "job-1", "offset": offset}), text_reply("done"))
        [e async for e in operator.run("and now?")]
        noted = last_user_content(fake_api.requests[4])
        assert "Background job job-1 on local ended: exit 3" in noted  # it ended while the model was idle
        rest = fake_api.requests[5].body["messages"][-1]["content"][0]["content"]
        assert "second line" in rest and FIRST_LINE not in rest and "exit 3" in rest

        fake_api.enqueue(text_reply("nothing new"))
        [e async for e in operator.run("anything else?")]
        assert "Background job" not in last_user_content(fake_api.requests[6])  # said once


async def test_wait_then_kill_leaves_no_process(fake_api, anthropic_env, tmp_path):
    marker = "1000.4242"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"echo up; exec sleep {marker}", "background": True}),
        tool_reply("job_wait", {"id": "job-1", "timeout_s": 0.2}),
        text_reply("it runs"),
    )
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        [e async for e in operator.run("start and wait")]
        waited = fake_api.requests[2].body["messages"][-1]["content"][0]["content"]
        assert "job-1 on local: running" in waited and "still running" in waited
        await until(lambda: running("sleep", marker), "the job's sleep")

        fake_api.enqueue(tool_reply("job_kill", {"id": "job-1"}), text_reply("killed"))
        [e async for e in operator.run("kill it")]
        killed = fake_api.requests[4].body["messages"][-1]["content"][0]["content"]
        assert "job-1 on local: killed" in killed
        assert running("sleep", marker) == []  # gone when job_kill answered
        assert operator.jobs()[0].state == "killed"


async def test_closing_the_session_kills_its_jobs(fake_api, anthropic_env, tmp_path):
    marker = "1000.4343"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"exec sleep {marker}", "background": True}),
        tool_reply("execute_command", {"command": f"exec sleep {marker}1", "background": True}),
        text_reply("two running"),
    )
    async with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        [e async for e in operator.run("start two")]
        both = lambda: running("sleep", marker) + running("sleep", f"{marker}1")  # noqa: E731
        await until(lambda: len(both()) == 2, "both sleeps")
        assert [job.id for job in operator.jobs()] == ["job-1", "job-2"]
    # Killed with the sandbox's PID namespace: the kernel ends what ran in it just after its init
    await until(lambda: both() == [], "both sleeps killed")


async def test_an_unknown_job_is_said_and_nothing_breaks(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("job_output", {"id": "job-9"}), text_reply("no such job"))
    async with Operator(cwd=tmp_path, record=False) as operator:
        [e async for e in operator.run("read job-9")]
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "no job 'job-9' in this session (jobs: none)" in result["content"]


async def test_a_recorded_session_keeps_job_output_beside_its_transcript(fake_api, anthropic_env, tmp_path):
    payload = "x" * 100_000
    fake_api.enqueue(
        tool_reply("execute_command", {"command": f"printf '{payload}'", "background": True}),
        tool_reply("job_wait", {"id": "job-1", "timeout_s": 30}),
        tool_reply("job_output", {"id": "job-1", "offset": 0}),
        text_reply("read a page"),
    )
    async with Operator(cwd=tmp_path, approval="auto") as operator:
        [e async for e in operator.run("print a lot")]
        transcript = session_of(operator).recorder.transcript_path
        [job] = operator.jobs()
    assert transcript is not None and Path(job.output_file).parent == transcript.with_suffix(".jobs")
    assert Path(job.output_file).read_text() == payload  # the whole output, on disk
    page = fake_api.requests[3].body["messages"][-1]["content"][0]["content"]
    assert "more is there" in page and "next_offset 16000" in page
    assert len(page) < 16_500  # one bounded page, not the whole


def test_headless_stream_json_has_the_job_events(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo from-the-job", "background": True}),
        tool_reply("job_wait", {"id": "job-1", "timeout_s": 30}),
        text_reply("it ended"),
    )
    run = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "-p", "go", "--output-format", "stream-json", "--yes"],
        cwd=tmp_path,
        env={**os.environ, **anthropic_env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    kinds = [event["type"] for event in events]
    assert "job_start" in kinds and "job_end" in kinds
    ended = next(event for event in events if event["type"] == "job_end")
    assert ended["job_id"] == "job-1" and ended["state"] == "exited" and ended["exit_code"] == 0
    printed = "".join(event["text"] for event in events if event["type"] == "job_output")
    assert printed in ("", "from-the-job\n")  # bounded and throttled: at most what it printed


async def test_a_resumed_session_keeps_its_earlier_jobs_output(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo first run", "background": True}),
        tool_reply("job_wait", {"id": "job-1", "timeout_s": 30}),
        text_reply("done"),
    )
    async with Operator(cwd=tmp_path, approval="auto") as operator:
        [e async for e in operator.run("one")]
        session_id = session_of(operator).recorder.session_id
        [earlier] = operator.jobs()
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo second run", "background": True}),
        tool_reply("job_wait", {"id": "job-2", "timeout_s": 30}),
        text_reply("done again"),
    )
    resumed = load_settings().with_run(resume=session_id)
    async with Operator(cwd=tmp_path, approval="auto", settings=resumed) as operator:
        [e async for e in operator.run("two")]
        [later] = operator.jobs()
    assert later.id == "job-2" and Path(later.output_file).parent == Path(earlier.output_file).parent
    assert Path(earlier.output_file).read_text() == "first run\n"  # not written over
    assert Path(later.output_file).read_text() == "second run\n"


async def test_a_job_closed_before_it_began_never_starts_its_command_and_leaves_nothing_unawaited(tmp_path):
    from cmdop_tui.machines.local import LocalMachine
    from cmdop_tui.tools.jobs import JobTable

    commands = []

    class Watched(LocalMachine):
        def run_command(self, *args, **kwargs):
            commands.append(super().run_command(*args, **kwargs))
            return commands[-1]

    marker = tmp_path / "ran"
    jobs = JobTable(lambda: tmp_path / "jobs")
    jobs.start(Watched(tmp_path), f"touch {marker}", cwd=None, timeout_ms=None)
    await jobs.close()  # the session ends in the same moment: the job's task never ran
    assert [info.state for info in jobs.jobs()] == ["killed"] and not marker.exists()
    (command,) = commands
    assert inspect.getcoroutinestate(command) == inspect.CORO_CLOSED  # closed, not left to be warned about
