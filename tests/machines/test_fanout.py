"""run_on_machines: one command on many machines, over real sshd servers (tests/sshd.py) and
through the agent loop against the fake Messages API."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_helpers import Recorder, make_runner, running
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, remove_home, workspace

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools import fanout
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import (
    DEFAULT_CONCURRENCY_CAP,
    RUN_ON_MACHINES,
    Outcome,
    default_concurrency,
    grouped_report,
    host_ranges,
)
from cmdop_tui.tools.outcome import OutcomeKind, ToolOutcome
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

# --- the report (no servers needed) ------------------------------------------------------------


def test_neighbours_in_inventory_order_read_as_ranges():
    order = [f"web{i:02d}" for i in range(1, 13)]
    assert host_ranges(order, order) == "web01..web12"
    assert host_ranges(["web03", "web01", "web02", "web05"], order) == "web01..web03, web05"
    assert host_ranges(["web01", "web02", "web07"], order) == "web01, web02, web07"


def test_identical_outcomes_are_grouped_in_order():
    running_ = MachineResult("exit code: 0\n\nstdout:\nactive (running)", exit_code=0)
    outcomes = [Outcome.of(f"web{i:02d}", running_) for i in range(1, 13) if i != 7]
    outcomes.insert(6, Outcome.of("web07", MachineResult("exit code: 3\n\nstdout:\ninactive", exit_code=3)))
    outcomes.append(Outcome.of("db1", MachineResult.error("cannot reach db1 over ssh: Connection refused")))
    report = grouped_report(outcomes).splitlines()
    assert report[0] == "13 hosts: 11 exit 0, 2 other; 3 distinct outcomes"
    assert report[1] == "11 hosts (web01..web06, web08..web12): exit 0"
    assert "  active (running)" in report[2:5]
    assert "web07: exit 3" in report and "  inactive" in report
    assert "db1: error: cannot reach db1 over ssh: Connection refused" in report


def test_the_default_concurrency_is_the_fleet_bounded_by_descriptors(monkeypatch):
    assert default_concurrency(3) == 3  # every host at once
    assert default_concurrency(1_000) == DEFAULT_CONCURRENCY_CAP
    monkeypatch.setattr(fanout.resource, "getrlimit", lambda which: (256, 4096))  # a small ulimit -n
    assert default_concurrency(100) == (256 - fanout.FDS_KEPT) // fanout.FDS_PER_HOST
    monkeypatch.setattr(fanout.resource, "getrlimit", lambda which: (64, 64))
    assert default_concurrency(100) == 1  # never none


# --- a lab of real servers ---------------------------------------------------------------------


@pytest.fixture
def remote_home():
    """The servers' home (outside /tmp: the sandbox there makes /tmp private)."""
    home = make_home()
    yield home
    remove_home(home)


@pytest.fixture
def lab(ssh_hosts, remote_home):
    return ssh_hosts(2, env={"HOME": str(remote_home)})


def fleet_for(lab, *extra: MachineSpec, groups: dict[str, list[str]] | None = None) -> Fleet:
    return Fleet(Inventory.load(list(extra), lab.config, groups), SshOptions(config_file=lab.config))


@pytest.fixture
async def fleet(lab):
    fleet = fleet_for(lab)
    yield fleet
    await fleet.close()


def context(
    fleet: Fleet, tmp_path: Path, lines: list[str] | None = None, denied_on=None, nested: list | None = None
) -> ToolContext:
    seen = lines if lines is not None else []
    events = nested if nested is not None else []
    ctx = ToolContext(
        call_id="toolu_test",
        cwd=tmp_path,
        progress=lambda text, stream: seen.append(text),
        machines=fleet,
        nested=events.append,
    )
    if denied_on is not None:
        ctx.denied_on = denied_on
    return ctx


async def test_outputs_are_grouped_with_exit_codes_in_inventory_order(fleet, tmp_path):
    lines: list[str] = []
    args = {"command": "echo same", "machines": ["bravo", "alpha"]}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, lines))
    assert not result.is_error
    assert result.content.splitlines()[1:] == ["2 hosts (alpha, bravo): exit 0", "  stdout:", "  same"]
    assert sorted(line.split(":")[0] for line in lines if "exit 0" in line) == ["alpha", "bravo"]

    differ = {"command": 'echo "port ${SSH_CONNECTION##* }"; exit 3', "machines": ["alpha", "bravo"]}
    result = await run_tool(RUN_ON_MACHINES, differ, context(fleet, tmp_path))
    report = result.content
    assert result.is_error and "2 distinct outcomes" in report  # no host exited 0
    assert report.index("alpha: exit 3") < report.index("bravo: exit 3")
    assert result.settled == ToolOutcome(OutcomeKind.FAILED, "2 of 2 hosts did not succeed: 2 exit 3")


async def test_a_host_past_the_timeout_reads_timed_out(fleet, tmp_path):
    nested: list = []
    args = {"command": "echo begun; sleep 30.6121", "machines": ["alpha"], "timeout_ms": 1500}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, nested=nested))
    assert result.settled == ToolOutcome(OutcomeKind.FAILED, "1 of 1 hosts did not succeed: 1 timed out")
    assert [e["state"] for e in nested if e["type"] == "host"][-1] == "timed out"
    quick = {"command": "true", "machines": ["alpha", "bravo"]}
    assert (await run_tool(RUN_ON_MACHINES, quick, context(fleet, tmp_path))).settled.ok


async def test_by_default_every_host_runs_at_once(fleet, remote_home, tmp_path):
    """Each host waits until every host has started: with fewer slots than hosts it never ends."""
    meeting = workspace(remote_home) / "meeting"
    meeting.mkdir()
    command = f"touch {meeting}/$RANDOM$$; until [ $(ls {meeting} | wc -l) -ge 2 ]; do sleep 0.05; done; echo met"
    args = {"command": command, "machines": ["alpha", "bravo"], "timeout_ms": 60_000}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path))
    assert not result.is_error and "2 hosts (alpha, bravo): exit 0" in result.content, result.content


async def test_unknown_names_run_nothing(fleet, tmp_path):
    result = await run_tool(
        RUN_ON_MACHINES, {"command": "true", "machines": ["alpha", "zulu"]}, context(fleet, tmp_path)
    )
    assert result.is_error and "unknown machine 'zulu'" in result.content and "nothing was run" in result.content


async def test_an_offline_host_fails_fast_and_does_not_hold_the_others(lab, fleet, tmp_path):
    await fleet.probe(fleet.inventory.resolve(lab.offline_alias))
    lines: list[str] = []
    args = {"command": "sleep 1; echo up", "machines": ["alpha", lab.offline_alias, "bravo"], "concurrency": 1}
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, lines))
    assert loop.time() - started < 8
    assert not result.is_error and "2 hosts (alpha, bravo): exit 0" in result.content
    assert f"{lab.offline_alias}: error: {lab.offline_alias} is offline" in result.content
    ended = [line.split(":")[0] for line in lines]
    assert ended[0] == lab.offline_alias and sorted(ended[1:]) == ["alpha", "bravo"]  # it never waited for a slot

    fresh = fleet_for(lab)  # never probed: ssh itself fails, quickly
    try:
        args = {"command": "echo up", "machines": ["alpha", lab.offline_alias]}
        result = await run_tool(RUN_ON_MACHINES, args, context(fresh, tmp_path))
        assert f"{lab.offline_alias}: error: cannot reach {lab.offline_alias}" in result.content
        assert result.content.startswith("2 hosts: 1 exit 0, 1 other") and "alpha: exit 0" in result.content
    finally:
        await fresh.close()


async def test_stop_kills_every_remote_command(fleet, tmp_path):
    args = {"command": "sleep 31.7; echo never", "machines": ["alpha", "bravo"]}
    task = asyncio.create_task(run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path)))
    async with asyncio.timeout(10):
        while len(running("sleep", "31.7")) < 2:  # the "remote" hosts are this one
            await asyncio.sleep(0.02)
    pids = running("sleep", "31.7")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(5):
        while any(_alive(pid) for pid in pids):
            await asyncio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_host_a_rule_denies_is_reported_and_not_run(fleet, tmp_path, remote_home):
    marker = workspace(remote_home) / "ran"  # where the sandbox there lets a command write
    args = {"command": f"echo x >> {marker}", "machines": ["alpha", "bravo"]}
    denied_on = lambda machine: "denied by rule bravo:run_on_machines(*)" if machine == "bravo" else None  # noqa: E731
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, denied_on=denied_on))
    assert "alpha: exit 0" in result.content and "bravo: denied by rule bravo:run_on_machines(*)" in result.content
    assert marker.read_text() == "x\n"  # once: alpha only


async def test_tags_and_groups_select_hosts(lab, tmp_path):
    fleet = fleet_for(
        lab,
        MachineSpec("web1", "alpha", tags=("web",)),
        MachineSpec("web2", "bravo", tags=("web", "eu")),
        groups={"frontend": ["tag:web"], "all": ["frontend", "alpha"]},
    )
    try:
        ctx = context(fleet, tmp_path)
        result = await run_tool(RUN_ON_MACHINES, {"command": "echo hi", "machines": ["tag:web"]}, ctx)
        assert "2 hosts (web1, web2): exit 0" in result.content
        result = await run_tool(RUN_ON_MACHINES, {"command": "echo hi", "machines": ["all"]}, ctx)
        assert "3 hosts (web1..alpha): exit 0" in result.content
        result = await run_tool(RUN_ON_MACHINES, {"command": "echo hi", "machines": ["tag:nope"]}, ctx)
        assert result.is_error and "no machine is tagged 'nope'; tags: eu, web" in result.content
    finally:
        await fleet.close()


# --- through the agent loop, with the session's permissions ------------------------------------


async def test_through_the_loop_with_a_host_scoped_deny_rule(fake_api, lab, tmp_path, remote_home):
    from cmdop_tui.permissions import Permissions
    from cmdop_tui.session.gate import host_rules, permission_gate

    fleet = fleet_for(lab)
    permissions = Permissions.load(mode="auto", audit_path=tmp_path / "audit.jsonl")
    permissions.add_session_rule("bravo:execute_command(touch *)", "deny")
    marker = workspace(remote_home) / "ran"  # where the sandbox there lets a command write
    fake_api.enqueue(
        tool_reply("run_on_machines", {"command": f"touch {marker}; echo done", "machines": ["alpha", "bravo"]}),
        text_reply("alpha done, bravo refused"),
    )
    runner = make_runner(fake_api, cwd=tmp_path, approve=permission_gate(permissions, ask=None))
    runner.machines = fleet
    runner.host_rules = host_rules(permissions)
    runner.tools = type(runner.tools)([*runner.tools, RUN_ON_MACHINES])
    events = Recorder()
    try:
        result = await runner.run("touch it everywhere", events)
    finally:
        await fleet.close()
    assert result.text == "alpha done, bravo refused"
    block = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert "alpha: exit 0" in block["content"]
    assert "bravo: denied by rule bravo:execute_command(touch *)" in block["content"]
    assert marker.exists()  # alpha ran it (the servers are this host)
    assert (tmp_path / "audit.jsonl").read_text().count('"denied"') == 1


async def test_the_session_offers_it_when_there_are_remote_machines(fake_api, lab):
    from dataclasses import replace

    import anthropic
    from agent_helpers import FACTS

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.session.assembly import build_runner

    settings = replace(Settings(ssh_config=lab.config), agent=replace(Settings().agent, model="m"))
    client = anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)
    runner = build_runner(settings, client=client, platform="tui", facts=FACTS)
    try:
        assert "run_on_machines" in runner.tools
    finally:
        await runner.machines.close()
        await client.close()


# --- the fleet view -----------------------------------------------------------------------------


async def test_host_events_feed_the_fleet_view(lab, fleet, tmp_path):
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from cmdop_tui.agent.events import ToolEnd, ToolNested, ToolStart
    from cmdop_tui.tui.vocabulary.messages import Agent
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord
    from cmdop_tui.tui.widgets.tool_panel import ToolPanel

    await fleet.probe(fleet.inventory.resolve(lab.offline_alias))
    nested: list[dict] = []
    args = {"command": "echo one; echo last", "machines": ["alpha", "bravo", lab.offline_alias], "concurrency": 1}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, nested=nested))
    states = [(e["hostname"], e["state"]) for e in nested if e["type"] == "host"]
    assert states[:3] == [("alpha", "queued"), ("bravo", "queued"), (lab.offline_alias, "queued")]
    assert (lab.offline_alias, "offline") in states and ("alpha", "running") in states
    assert [s for s in states if s[1] == "done"] == [("alpha", "done"), ("bravo", "done")]
    done = next(e for e in nested if e["state"] == "done")
    assert done["line"] == "last" and done["elapsed_s"] > 0

    class PanelApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ToolPanel()

    record = ToolRecord("t1", "run_on_machines", args, "3 machines")
    app = PanelApp()
    async with app.run_test(size=(70, 20)) as pilot:
        panel = app.query_one(ToolPanel)
        panel.on_agent_tool_started(Agent.ToolStarted(ToolStart("t1", "run_on_machines", args), record))
        for event in nested[:4]:  # three queued, alpha running
            record.add_nested(event)
            panel.on_agent_tool_nested(Agent.ToolNested(ToolNested("t1", event["hostname"], event), record))
        await pilot.pause()
        shown = str(panel.query_one("#tool-preview", Static).render()).split("\n")
        assert shown[0] == "1 running · 2 queued" and shown[1].startswith("… alpha")
        for event in nested[4:]:
            record.add_nested(event)
        record.finish(result.content, result.settled, 1.0)
        panel.on_agent_tool_ended(Agent.ToolEnded(ToolEnd("t1", "run_on_machines", result.content, False, 1.0), record))
        await pilot.pause()
        shown = str(panel.query_one("#tool-preview", Static).render()).split("\n")
    assert shown[0] == "1 offline · 2 done"
    assert shown[1].startswith(f"⊘ {lab.offline_alias} offline") and "is offline (checked" in shown[1]
    assert shown[2].split()[:3] == ["✓", "alpha", "done"] and shown[2].endswith("  last")


# Chunks that end mid-line, stderr between stdout lines, and no newline at the very end: the last
# line printed is "final" (the output's sections would say stderr's "two" last).
CHUNKED = "echo one; sleep 0.2; echo two >&2; sleep 0.2; printf 'three\\nfin'; sleep 0.3; printf 'al'"


async def test_the_ended_event_carries_the_last_line_printed(fleet, tmp_path):
    nested: list[dict] = []
    args = {"command": CHUNKED, "machines": ["alpha", "bravo"]}
    result = await run_tool(RUN_ON_MACHINES, args, context(fleet, tmp_path, nested=nested))
    assert not result.is_error, result.content
    ended = {e["hostname"]: e["line"] for e in nested if e["state"] == "done"}
    assert ended == {"alpha": "final", "bravo": "final"}
    running_lines = [e["line"] for e in nested if e["state"] == "running" and e["line"]]
    assert all(line in ("one", "two", "three", "fin", "final") for line in running_lines)


async def test_the_app_shows_each_hosts_last_line_when_it_ends(fake_api, lab):
    from textual.widgets import Static
    from tui_helpers import finish_turn, make_app, submit, wait_until

    from cmdop_tui.config.settings import RunOptions, Settings
    from cmdop_tui.tui.widgets.tool_card import ToolCard

    command = f'if [ "${{SSH_CONNECTION##* }}" = {lab.server("alpha").port} ]; then {CHUNKED}; else echo hello; fi'
    fake_api.enqueue(
        tool_reply("run_on_machines", {"command": command, "machines": ["alpha", "bravo"]}),
        text_reply("done everywhere"),
    )
    app = make_app(fake_api, settings=Settings(ssh_config=lab.config, run=RunOptions(auto_approve=True)))
    async with app.run_test(size=(140, 40)) as pilot:
        await submit(pilot, "run it everywhere")
        await finish_turn(pilot)

        def shown_lines() -> list[str]:
            return str(app.query_one("#tool-preview", Static).render()).split("\n")

        await wait_until(pilot, lambda: shown_lines()[0] == "2 done", what="the fleet view")
        shown = shown_lines()
        assert [line.split()[1:3] for line in shown[1:]] == [["alpha", "done"], ["bravo", "done"]]
        assert shown[1].endswith("  final") and shown[2].endswith("  hello"), shown
        card = str(app.query_one(ToolCard).render()).split("\n")
        assert card[1] == "2 done" and card[2].endswith("  final") and card[3].endswith("  hello"), card


async def test_first_connections_at_once_share_one_master_quietly(fleet):
    """A probe and commands that reach a host at the same moment: one of them sets up the master,
    the others do not race it (the loser of such a race would print `ControlSocket ... already
    exists, disabling multiplexing` into its command's output)."""
    transport = fleet.transport(fleet.inventory.resolve("alpha"))
    results = await asyncio.gather(*(transport.run("sleep 0.2; echo ok") for _ in range(4)))
    assert [(r.status, r.stdout, r.stderr) for r in results] == [(0, b"ok\n", b"")] * 4
    later = await transport.run("echo again")
    assert (later.stdout, later.stderr) == (b"again\n", b"")


async def test_a_dead_masters_socket_is_cleared_quietly(fleet):
    """A master killed (kill -9 of an app: its socket file stays) leaves a stale socket: the next
    connections neither print `Control socket connect(...): Connection refused` nor fail."""
    import socket
    import subprocess

    transport = fleet.transport(fleet.inventory.resolve("alpha"))
    settings = subprocess.run(
        [*transport._options_argv(), "-G", "alpha"], capture_output=True, text=True, check=True
    ).stdout
    path = next(line.split(" ", 1)[1] for line in settings.splitlines() if line.startswith("controlpath "))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)  # a socket file nobody listens on: what a killed master leaves
    stale.close()
    transport.argv("true")  # a first connection is setting up the master (slow to start: not run here)
    results = await asyncio.gather(*(transport.run("sleep 0.2; echo ok") for _ in range(4)))
    assert [(r.status, r.stdout, r.stderr) for r in results] == [(0, b"ok\n", b"")] * 4


# --- Stop on the far side: the group found by its run, or noted where there is no pgrep ----------


async def test_a_stop_before_the_command_starts_is_not_missed(fleet):
    transport = fleet.transport(fleet.inventory.resolve("alpha"))
    remote, run_id = transport.stoppable("echo ran", None)
    await transport.kill(run_id)  # nothing runs yet: the stop marker is left
    process = await asyncio.create_subprocess_exec(
        *transport.argv(remote), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdout, stderr = await process.communicate()
    assert (process.returncode, stdout, stderr) == (130, b"", b"")
    assert not list(Path("/tmp").glob(f"cmdop-{run_id}.*"))  # the "remote" host is this one


async def test_stop_where_there_is_no_pgrep(ssh_hosts, tmp_path):
    """A host without procps: the group's id is noted in a file, and Stop finds it there."""
    import shutil

    bin_dir = tmp_path / "bin"  # a PATH with what a slim container has, and no pgrep
    bin_dir.mkdir()
    for tool in ("bash", "sh", "sleep", "cat", "rm", "touch", "seq"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    lab = ssh_hosts(1, env={"PATH": str(bin_dir)})
    fleet = fleet_for(lab)
    ctx = context(fleet, tmp_path)
    try:
        probe = await run_tool(EXECUTE_COMMAND, {"command": "command -v pgrep || echo none", "machine": "alpha"}, ctx)
        assert "none" in probe.content, probe.content
        args = {"command": "sleep 30.6123 & sleep 30.6123; echo never", "machine": "alpha"}
        task = asyncio.create_task(run_tool(EXECUTE_COMMAND, args, ctx))
        async with asyncio.timeout(10):
            while len(running(str(bin_dir / "sleep"), "30.6123")) + len(running("sleep", "30.6123")) < 2:
                await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with asyncio.timeout(5):
            while running(str(bin_dir / "sleep"), "30.6123") or running("sleep", "30.6123"):
                await asyncio.sleep(0.02)
    finally:
        await fleet.close()


@pytest.mark.fault
async def test_a_stop_keeps_the_hosts_that_finished(fake_api, lab, tmp_path):
    """Stopped while one host still runs: the history keeps the finished host's result and says
    the other was stopped, instead of losing both to "cancelled"."""
    from cmdop_tui.agent.events import ToolProgress

    fleet = fleet_for(lab)
    alpha = lab.server("alpha").port
    command = f'case "$SSH_CONNECTION" in *" {alpha}") echo quick;; *) sleep 30.9;; esac'
    fake_api.enqueue(tool_reply("run_on_machines", {"command": command, "machines": ["alpha", "bravo"]}))
    runner = make_runner(fake_api, cwd=tmp_path)
    runner.machines = fleet
    runner.tools = type(runner.tools)([*runner.tools, RUN_ON_MACHINES])
    events = Recorder()
    try:
        task = asyncio.create_task(runner.run("run it everywhere", events))
        await events.wait_for(lambda e: isinstance(e, ToolProgress) and "alpha: exit 0" in e.text, timeout=20)
        async with asyncio.timeout(10):
            while not running("sleep", "30.9"):
                await asyncio.sleep(0.02)
        runner.ui_cancel.fire()
        result = await task
    finally:
        await fleet.close()
    assert result.status == "cancelled"
    (block,) = [b for m in runner.conversation.messages for b in m["content"] if b["type"] == "tool_result"]
    assert block["is_error"] and "alpha: exit 0" in block["content"] and "quick" in block["content"]
    assert "bravo: error: stopped before it ended" in block["content"]
