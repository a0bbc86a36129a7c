"""Machines over real OpenSSH: transport, tools, probes, ask_machine(s), stop, scoped sessions.

Every remote machine here is a real `sshd` on 127.0.0.1 started by the `ssh_hosts` fixture
(tests/sshd.py); the remote side of ask_machine runs this project's own headless mode against the
fake Messages API.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import os
import pwd
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import Recorder, make_runner, running
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, processes_named, remove_home, wait_gone, workspace
from sshd import process_table

from cmdop_tui.agent.events import ToolNested, ToolProgress
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory, ssh_config_hosts
from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SshOptions, SshTransport
from cmdop_tui.session.recorder import SessionRecorder
from cmdop_tui.tools.ask import ANSWER_LIMIT, ASK_MACHINE, ASK_MACHINES
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.files import GLOB, GREP, LIST_DIR, READ_FILE, WRITE_FILE
from cmdop_tui.tools.recall import PAGE_CHARS, RECALL
from cmdop_tui.tools.registry import run_tool
from cmdop_tui.tools.shell import EXECUTE_COMMAND

VENV_BIN = str(Path(sys.executable).parent)


# --- inventory (no servers needed) -------------------------------------------------------------


def test_ssh_config_hosts_skips_patterns(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host web1 web2 # comment\n  HostName 10.0.0.1\nHost *.internal !bad db?\nhost DB\nMatch all\n")
    assert ssh_config_hosts(config) == ["web1", "web2", "DB"]
    assert ssh_config_hosts(tmp_path / "missing") == []


def inventory() -> Inventory:
    return Inventory(
        [
            MachineSpec("local", "here", source="local"),
            MachineSpec("web-1", "10.0.0.1"),
            MachineSpec("web-2", "10.0.0.2"),
            MachineSpec("db", "db.example.com"),
        ]
    )


def test_names_resolve_exactly_then_by_hostname_then_by_unique_prefix():
    machines = inventory()
    assert machines.resolve("web-1").host == "10.0.0.1"
    assert machines.resolve("db.example.com").name == "db"
    assert machines.resolve("d").name == "db"
    with pytest.raises(MachineError, match="ambiguous: it could be web-1, web-2"):
        machines.resolve("web")
    with pytest.raises(MachineError, match="unknown machine 'nope'; known machines: local, web-1, web-2, db"):
        machines.resolve("nope")


# --- a lab of real servers ---------------------------------------------------------------------


@pytest.fixture
def remote_home():
    """The remote side's home (its own, outside /tmp: the sandbox there makes /tmp private)."""
    home = make_home()
    yield home
    remove_home(home)


@pytest.fixture
def lab(ssh_hosts, anthropic_env, tmp_path, remote_home):
    """Two real servers (alpha, bravo) whose remote side reaches the fake API and this venv."""
    remote_config = tmp_path / "remote-config.toml"
    remote_config.write_text("[agent]\nmax_turns = 5\n")
    env = {**anthropic_env, "CMDOP_TUI_CONFIG": str(remote_config), "HOME": str(remote_home)}
    return ssh_hosts(2, env=env, path=VENV_BIN)


def fleet_for(lab, *extra: MachineSpec, target: str | None = None) -> Fleet:
    inventory = Inventory.load(list(extra), lab.config)
    return Fleet(inventory, SshOptions(config_file=lab.config), target=target)


@pytest.fixture
async def fleet(lab):
    fleet = fleet_for(lab)
    yield fleet
    await fleet.close()


def context(fleet: Fleet, tmp_path: Path, events: list | None = None) -> ToolContext:
    progress_events = events if events is not None else []
    return ToolContext(
        call_id="toolu_test",
        cwd=tmp_path,
        progress=lambda text, stream: progress_events.append((stream, text)),
        machines=fleet,
        nested=lambda event: progress_events.append(("nested", event)),
    )


async def test_inventory_reads_the_ssh_config_hosts(lab, fleet):
    assert fleet.inventory.names()[:3] == ["local", "alpha", "bravo"]
    assert lab.offline_alias in fleet.inventory.names()


async def test_commands_run_there_and_reuse_one_connection(lab, fleet, tmp_path):
    ctx = context(fleet, tmp_path)
    first = await run_tool(EXECUTE_COMMAND, {"command": "echo $SSH_CONNECTION", "machine": "alpha"}, ctx)
    assert not first.is_error and "exit code: 0" in first.content
    assert str(lab.server("alpha").port) in first.content
    transport = fleet.transport(fleet.inventory.resolve("alpha"))
    check = await asyncio.create_subprocess_exec(
        *transport._options_argv(), "-O", "check", "alpha",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await check.communicate()
    assert check.returncode == 0 and b"Master running" in stderr


async def test_exit_codes_stderr_and_cwd_come_back(fleet, tmp_path):
    ctx = context(fleet, tmp_path)
    result = await run_tool(
        EXECUTE_COMMAND, {"command": "pwd; echo oops >&2; exit 3", "cwd": "/tmp", "machine": "bravo"}, ctx
    )
    assert "exit code: 3" in result.content and "/tmp" in result.content and "oops" in result.content


async def test_file_tools_work_on_a_remote_machine(fleet, tmp_path, remote_home):
    ctx = context(fleet, tmp_path)
    # The "remote" is this host: check the effect here. Relative paths start at its workspace.
    target = workspace(remote_home) / "remote dir" / "notes.txt"
    on = {"machine": "alpha"}
    written = await run_tool(WRITE_FILE, {"path": "remote dir/notes.txt", "content": "one\nbeta\ngamma\n", **on}, ctx)
    assert not written.is_error and target.read_text() == "one\nbeta\ngamma\n"
    read = await run_tool(READ_FILE, {"path": str(target), "start": 2, "end": 3, **on}, ctx)
    assert "     2\tbeta" in read.content and "     3\tgamma" in read.content and "one" not in read.content
    listing = await run_tool(LIST_DIR, {"path": "remote dir", **on}, ctx)
    assert "notes.txt" in listing.content
    found = await run_tool(GREP, {"pattern": "gam+a", "path": str(target.parent), "glob": "*.txt", **on}, ctx)
    assert "notes.txt:3:gamma" in found.content
    matched = await run_tool(GLOB, {"pattern": "**/*.txt", "cwd": ".", **on}, ctx)
    assert "remote dir/notes.txt" in matched.content
    missing = await run_tool(READ_FILE, {"path": str(target.parent / "absent"), **on}, ctx)
    assert missing.is_error and "no such file" in missing.content


async def test_remote_glob_never_runs_what_the_pattern_says(fleet, tmp_path, remote_home):
    marker = workspace(remote_home) / "pwned"  # a place the sandbox there lets it write
    ctx = context(fleet, tmp_path)
    await run_tool(GLOB, {"pattern": f"$(touch {marker})*", "machine": "alpha"}, ctx)
    await run_tool(GLOB, {"pattern": f"x; touch {marker}", "machine": "alpha"}, ctx)
    assert not marker.exists()


async def test_probes_mark_online_and_offline(lab, fleet):
    health = await fleet.probe_all()
    reachable = ("online", "degraded")  # degraded: this loaded test machine itself is the remote
    assert health["alpha"].state in reachable and health["alpha"].latency_ms is not None
    assert health["alpha"].os_name.startswith("Linux") and health["alpha"].load
    assert health[lab.offline_alias].state == "offline" and "cannot reach" in health[lab.offline_alias].error
    assert health["local"].state in ("online", "degraded")


async def test_an_offline_machine_fails_fast(lab, fleet, tmp_path):
    await fleet.probe(fleet.inventory.resolve(lab.offline_alias))
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await run_tool(
        EXECUTE_COMMAND, {"command": "true", "machine": lab.offline_alias}, context(fleet, tmp_path)
    )
    assert result.is_error and "is offline" in result.content and loop.time() - started < 0.5


async def test_unknown_and_ambiguous_machines_are_clear_errors(fleet, tmp_path):
    ctx = context(fleet, tmp_path)
    unknown = await run_tool(EXECUTE_COMMAND, {"command": "true", "machine": "zulu"}, ctx)
    assert unknown.is_error and unknown.content.startswith("unknown machine 'zulu'; known machines: local, alpha")


@pytest.mark.parametrize("login_bash", [True, False], ids=["login-shell-bash", "login-shell-other"])
async def test_stop_kills_the_remote_process_group(fleet, tmp_path, login_bash):
    """Whether the login shell there runs our script itself (bash) or starts a bash for it."""
    spec = fleet.inventory.resolve("alpha")
    await fleet.remote_sandbox(spec)  # the probe: what the machine has
    # the hosts are this machine, as this user: sshd runs the shell of the user's passwd entry
    assert fleet._facts["alpha"].login_bash == (Path(pwd.getpwuid(os.getuid()).pw_shell).name == "bash")
    fleet._facts["alpha"] = dataclasses.replace(fleet._facts["alpha"], login_bash=login_bash)
    events: list = []
    ctx = context(fleet, tmp_path, events)
    marker = f"cmdop-stop-{os.getpid()}-{id(events)}"  # its processes' names, seen from here
    command = f"bash -c 'exec -a {marker}-child sleep 30' & echo started; exec -a {marker}-shell sleep 30"
    task = asyncio.create_task(run_tool(EXECUTE_COMMAND, {"command": command, "machine": "alpha"}, ctx))
    while "started" not in "".join(t for s, t in events if s == "stdout"):
        await asyncio.sleep(0.01)  # waiting for the remote command to start
    async with asyncio.timeout(10):  # the "remote" host is this one: its processes are seen here
        while len(processes_named(marker)) < 2:
            await asyncio.sleep(0.01)  # the background one may start a moment after the shell
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(marker) == []


# --- a link that breaks or freezes ---------------------------------------------------------------

SLEEPER = "echo started; sleep 60"


async def started_there(task: asyncio.Task, events: list) -> None:
    """Wait until the remote command has printed that it started (or its call ended)."""
    while "started" not in "".join(t for s, t in events if s == "stdout") and not task.done():
        await asyncio.sleep(0.01)


def connections_of(lab, name: str) -> list[int]:
    """The sshd processes serving connections to `name` (its server's children, not the server)."""
    server = lab.server(name).pid
    return [pid for pid, parent in process_table().items() if parent == server]


@contextlib.contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    """These processes stopped (a host that answers nothing) for the duration, then gone."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)


@pytest.mark.fault
async def test_a_link_lost_mid_command_says_it_may_still_run(lab, fleet, tmp_path):
    events: list = []
    task = asyncio.create_task(
        run_tool(EXECUTE_COMMAND, {"command": SLEEPER, "machine": "alpha"}, context(fleet, tmp_path, events))
    )
    await started_there(task, events)
    for pid in connections_of(lab, "alpha"):
        os.kill(pid, signal.SIGKILL)
    async with asyncio.timeout(20):
        result = await task
    assert result.is_error
    assert "lost while the command ran" in result.content and "may still be running" in result.content
    assert "cannot reach" not in result.content


@pytest.mark.fault
async def test_a_host_frozen_behind_a_live_connection_ends_the_command(lab, tmp_path):
    """The host stops answering (its sshd connection SIGSTOPped) while a command runs through a
    live ControlMaster: the command ends within the keep-alive's bound, said as a lost link."""
    options = SshOptions(config_file=lab.config, alive_interval_s=1, alive_count_max=2)
    fleet = Fleet(Inventory.load([], lab.config), options)
    events: list = []
    task = asyncio.create_task(
        run_tool(EXECUTE_COMMAND, {"command": SLEEPER, "machine": "alpha"}, context(fleet, tmp_path, events))
    )
    try:
        await started_there(task, events)
        with frozen(connections_of(lab, "alpha")):
            started = time.monotonic()
            async with asyncio.timeout(15):
                result = await task
            assert time.monotonic() - started < 8  # 2 unanswered keep-alives 1 s apart, and slack
            assert result.is_error and "lost while the command ran" in result.content
    finally:
        task.cancel()
        await fleet.close()


@pytest.mark.fault
@pytest.mark.parametrize("ending", ["timeout", "stop"])
async def test_a_frozen_host_does_not_hold_a_timeout_or_a_stop(lab, fleet, tmp_path, ending):
    """A host frozen behind the live connection (its sshd SIGSTOPped): the time-out ends the call
    on time and Stop at once, though the kill sent there cannot arrive."""
    events: list = []
    args = {"command": SLEEPER, "machine": "alpha", "timeout_ms": 3000 if ending == "timeout" else 60_000}
    started = time.monotonic()
    task = asyncio.create_task(run_tool(EXECUTE_COMMAND, args, context(fleet, tmp_path, events)))
    await started_there(task, events)
    with frozen(connections_of(lab, "alpha")):
        if ending == "timeout":
            result = await asyncio.wait_for(task, 30)
            assert "timed out after 3000 ms" in result.content
            assert time.monotonic() - started < 3 + 2  # the time-out, then the kill's 0.5 s wait and slack
        else:
            stopped = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - stopped < 1.5


@pytest.mark.fault
@pytest.mark.parametrize("ending", ["timeout", "stop"])
async def test_a_fan_out_with_a_frozen_host_keeps_the_hosts_that_finished(fake_api, lab, tmp_path, ending):
    """run_on_machines on two hosts, one frozen (its sshd SIGSTOPped) while its command runs: the
    time-out or Stop ends the call on time, the finished host's result kept, the frozen one marked."""
    alpha = lab.server("alpha").port
    command = f'case "$SSH_CONNECTION" in *" {alpha}") echo quick;; *) sleep 60.4173;; esac'
    args = {"command": command, "machines": ["alpha", "bravo"], "timeout_ms": 3000 if ending == "timeout" else 60_000}
    fake_api.enqueue(tool_reply("run_on_machines", args), text_reply("Reported."))
    fleet = fleet_for(lab)
    runner = make_runner(fake_api, cwd=tmp_path)
    runner.machines = fleet
    runner.tools = type(runner.tools)([*runner.tools, RUN_ON_MACHINES])
    events = Recorder()
    task = asyncio.create_task(runner.run("run it on both", events))
    try:
        await events.wait_for(lambda e: isinstance(e, ToolProgress) and "alpha: exit 0" in e.text, timeout=20)
        async with asyncio.timeout(10):
            while not running("sleep", "60.4173"):
                await asyncio.sleep(0.02)  # bravo's command has started there
        with frozen(connections_of(lab, "bravo")):
            ended = time.monotonic()
            if ending == "stop":
                runner.ui_cancel.fire()
            async with asyncio.timeout(30):
                result = await task
            took = time.monotonic() - ended
    finally:
        task.cancel()
        await fleet.close()
    (block,) = [b for m in runner.conversation.messages for b in m["content"] if b["type"] == "tool_result"]
    assert "alpha: exit 0" in block["content"] and "quick" in block["content"]
    if ending == "timeout":
        assert result.status == "final" and took < 3 + 2  # the time-out, then the kill's 0.5 s wait and slack
        assert "bravo: error: " in block["content"] and "timed out after 3000 ms" in block["content"]
    else:
        assert result.status == "cancelled" and took < 1.5
        assert "bravo: error: stopped before it ended" in block["content"]


# --- ask_machine --------------------------------------------------------------------------------


async def test_ask_machine_runs_the_agent_there_and_streams_it_back(fake_api, fleet, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo from-remote"}), text_reply("Remote says hi."))
    events: list = []
    result = await run_tool(ASK_MACHINE, {"hostname": "alpha", "prompt": "say hi"}, context(fleet, tmp_path, events))
    assert not result.is_error and result.content == "Remote says hi."
    nested = [e for kind, e in events if kind == "nested"]
    kinds = [e["type"] for e in nested]
    assert "tool_start" in kinds and "token" in kinds and kinds[-1] == "final"
    assert all(e["hostname"] == "alpha" for e in nested)
    remote_tool_end = next(e for e in nested if e["type"] == "tool_end")
    assert "from-remote" in remote_tool_end["output"]  # the remote agent ran it (with --yes)


async def test_ask_machine_without_cmdop_there_says_so(lab, tmp_path):
    fleet = fleet_for(lab, MachineSpec("bare", "alpha", cmdop="no-such-cmdop-tui"))
    try:
        result = await run_tool(ASK_MACHINE, {"hostname": "bare", "prompt": "hi"}, context(fleet, tmp_path))
    finally:
        await fleet.close()
    assert result.is_error and "cmdop-tui is not installed on bare" in result.content


@pytest.mark.fault
async def test_a_broken_agent_there_says_what_it_printed(lab, tmp_path):
    """The agent there fails before it answers (a module missing there): its own last words come
    back, not a bare 'ended without an answer'."""
    broken = MachineSpec("broken", "alpha", cmdop="python3 -c 'import no_module_named_so' && cmdop-tui")
    fleet = fleet_for(lab, broken)
    try:
        result = await run_tool(ASK_MACHINE, {"hostname": "broken", "prompt": "hi"}, context(fleet, tmp_path))
    finally:
        await fleet.close()
    assert result.is_error and result.content.startswith("the agent on broken ended without an answer:")
    assert "ModuleNotFoundError: No module named 'no_module_named_so'" in result.content


async def test_ask_machines_fans_out_keeps_order_and_times_out_one_host(fake_api, lab, tmp_path):
    """Deterministic on a loaded machine: the hosts wait on events, not on time. The slow host's
    agent blocks on a FIFO the test writes only once alpha's real agent has answered, however
    long that took; then a host that never answers (the FIFO never written) times out, and the
    call ends at its time-out instead of waiting for it."""
    released, never = tmp_path / "released.fifo", tmp_path / "never.fifo"
    for fifo in (released, never):
        os.mkfifo(fifo)
    slow = MachineSpec("slow", "bravo", cmdop=f"read -r _ < {released}; echo slow gave up >&2; false")
    stuck = MachineSpec("stuck", "bravo", cmdop=f"read -r _ < {never}; false")
    fleet = fleet_for(lab, slow, stuck)
    fake_api.enqueue(text_reply("alpha is fine"))
    events: list = []
    no_time_out = {"timeout_ms": 110_000, "total_timeout_ms": 110_000}  # the test's own timeout comes first
    args = {"hostnames": ["slow", "alpha", "slow"], "prompt": "status?", **no_time_out}
    try:
        fan_out = asyncio.ensure_future(run_tool(ASK_MACHINES, args, context(fleet, tmp_path, events)))
        while not any(
            kind == "nested" and event.get("hostname") == "alpha" and event.get("state") == "done"
            for kind, event in events
        ):
            assert not fan_out.done(), fan_out.result().content  # alpha's answer comes before the call ends
            await asyncio.sleep(0.01)
        await asyncio.to_thread(released.write_text, "go\n")  # only now may the slow host end
        answers = json.loads((await fan_out).content)
        assert list(answers) == ["slow", "alpha"]  # duplicates removed, order kept
        assert answers["alpha"] == {"ok": True, "answer": "alpha is fine"}
        assert answers["slow"]["ok"] is False
        stuck_args = {"hostnames": ["stuck"], "prompt": "status?", "timeout_ms": 1000}
        timed_out = json.loads((await run_tool(ASK_MACHINES, stuck_args, context(fleet, tmp_path))).content)
    finally:
        await fleet.close()
    assert timed_out["stuck"]["ok"] is False and "timed out" in timed_out["stuck"]["error"]
    while _has_reader(never):  # and its agent there was stopped, not left waiting
        await asyncio.sleep(0.01)


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nobody has it open for reading
            return False
        raise
    return True


async def test_ask_machine_through_the_loop_emits_nested_events(fake_api, lab, tmp_path):
    fleet = fleet_for(lab)
    fake_api.enqueue(
        tool_reply("ask_machine", {"hostname": "alpha", "prompt": "uptime?"}),  # the local agent's call
        text_reply("up 3 days"),  # the remote agent's answer
        text_reply("alpha has been up 3 days."),  # the local agent's final answer
    )
    runner = make_runner(fake_api, cwd=tmp_path)
    runner.machines = fleet
    runner.tools = type(runner.tools)([*runner.tools, ASK_MACHINE])
    events = Recorder()
    try:
        result = await runner.run("how long has alpha been up?", events)
    finally:
        await fleet.close()
    assert result.text == "alpha has been up 3 days."
    nested = events.of(ToolNested)
    assert nested and nested[0].machine == "alpha" and nested[-1].event["type"] == "final"


@pytest.mark.fault
async def test_a_huge_answer_is_capped_in_the_history_and_recalled_whole_from_the_transcript(fake_api, lab, tmp_path):
    fleet = fleet_for(lab)
    huge = "START " + "".join(f"{i:07d}," for i in range(20_000)) + " END"  # 160 kB: 9 recall pages
    page = PAGE_CHARS
    fake_api.enqueue(
        tool_reply("ask_machine", {"hostname": "alpha", "prompt": "dump it"}, id="toolu_ask"),
        text_reply(huge),  # the remote agent's answer
        tool_reply("recall", {"id": "toolu_ask", "page": 4}),  # a page from the middle the cap cut out
        text_reply("seen it"),
    )
    runner = make_runner(fake_api, cwd=tmp_path)
    runner.machines = fleet
    runner.tools = type(runner.tools)([*runner.tools, ASK_MACHINE, RECALL])
    recorder = SessionRecorder(runner, secrets=[])
    assert recorder.new() == []
    try:
        result = await runner.run("dump alpha", Recorder())
    finally:
        recorder.close()
        await fleet.close()
    assert result.text == "seen it"
    answered = tool_results(fake_api.requests[-1].body)
    capped, recalled = answered["toolu_ask"], next(text for id_, text in answered.items() if id_ != "toolu_ask")
    assert len(capped) < ANSWER_LIMIT + 300 and capped.startswith("START ") and " END" in capped
    assert "recall id 'toolu_ask'" in capped and f"{len(huge):,} characters" in capped
    assert huge[3 * page : 4 * page] in recalled and "page 4 of 9" in recalled  # the cut part, whole


def tool_results(body: dict) -> dict[str, str]:
    """Each tool result of a request's messages, by call id, as its text."""
    return {
        block["tool_use_id"]: "".join(part["text"] for part in block["content"])
        if isinstance(block["content"], list)
        else block["content"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


# --- scoped sessions ----------------------------------------------------------------------------


async def test_a_scoped_session_works_there_and_hides_the_local_machine(lab, tmp_path):
    fleet = fleet_for(lab, target="alpha")
    try:
        ctx = context(fleet, tmp_path)
        there = await run_tool(EXECUTE_COMMAND, {"command": "echo $SSH_CONNECTION"}, ctx)
        assert str(lab.server("alpha").port) in there.content
        local = await run_tool(LIST_DIR, {"path": ".", "machine": "local"}, ctx)
        assert local.is_error and "scoped to alpha" in local.content
    finally:
        await fleet.close()


async def test_scoped_session_reminders(fake_api, lab, tmp_path):
    from dataclasses import replace

    import anthropic
    from agent_helpers import FACTS

    from cmdop_tui.config.settings import RunOptions, Settings
    from cmdop_tui.session.assembly import build_runner

    settings = replace(
        Settings(ssh_config=lab.config, run=RunOptions(target_machine="alpha")),
        agent=replace(Settings().agent, model="m"),
    )
    client = anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)
    runner = build_runner(settings, client=client, platform="tui", facts=FACTS)
    fake_api.enqueue(text_reply("ok"))
    try:
        await runner.run("hello", Recorder())
    finally:
        await runner.machines.close()
        await client.close()
    system = fake_api.requests[0].body["system"][1]["text"]
    assert "Target machine: the user is working on alpha" in system
    assert "Environment:" not in system
    assert {"ask_machine", "ask_machines"} <= {t["name"] for t in fake_api.requests[0].body["tools"]}


def test_cli_machine_flag_rejects_an_unknown_machine(anthropic_env, tmp_path):
    import subprocess

    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "-p", "hi", "--machine", "nowhere"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1 and "unknown machine 'nowhere'" in done.stderr


def test_transport_argv_uses_batch_mode_and_a_control_master(tmp_path):
    transport = SshTransport(MachineSpec("web", "web.example", user="ops", port=2222), SshOptions(control_dir=tmp_path))
    argv = transport.argv("uptime")
    assert argv[0] == "ssh" and argv[-3:] == ["web.example", "--", "uptime"]
    control = next(arg for arg in argv if arg.startswith("ControlPath="))
    assert "BatchMode=yes" in argv and "ControlMaster=auto" in argv
    assert "ServerAliveInterval=5" in argv and "ServerAliveCountMax=3" in argv  # a frozen link ends
    assert re.fullmatch(r"ControlPath=/.+/[0-9a-f]{8}-%C", control)  # named per alias too (a long dir falls back)
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "ops"


# --- the machines panel ------------------------------------------------------------------------


async def test_machines_panel_shows_health_and_picks_the_target(fake_api, lab):
    from tui_helpers import make_app, notices, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.widgets.machines_panel import MachinesPanel
    from cmdop_tui.tui.widgets.status_line import StatusLine

    app = make_app(fake_api, settings=Settings(ssh_config=lab.config))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(MachinesPanel)
        fleet = await _fleet_of(app, pilot)
        await wait_until(pilot, lambda: {"alpha", "bravo", lab.offline_alias} <= set(panel.health), what="probes")
        alpha = panel.health["alpha"].state
        assert alpha in ("online", "degraded") and panel.health[lab.offline_alias].state == "offline"
        option_text = str(panel.options.get_option("alpha").prompt)
        assert alpha in option_text and "ms" in option_text
        panel.options.focus()
        await pilot.press("down", "enter")  # local is first; alpha next
        await wait_until(pilot, lambda: fleet.target_name == "alpha", what="alpha as the target")
        assert "alpha" in str(app.query_one(StatusLine).render())
        assert app.session.runner.facts.target_machine == "alpha"
        assert any("Working on alpha now" in n for n in notices(app))
        await pilot.press("up", "enter")
        await wait_until(pilot, lambda: fleet.target_name is None, what="back to the local machine")


async def test_the_local_machine_has_one_name_and_an_offline_pick_is_said_and_not_taken(fake_api, lab):
    from tui_helpers import MACHINE, make_app, notices, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.widgets.machines_panel import MachinesPanel
    from cmdop_tui.tui.widgets.status_line import StatusLine

    app = make_app(fake_api, settings=Settings(ssh_config=lab.config))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(MachinesPanel)
        fleet = await _fleet_of(app, pilot)
        local = str(panel.options.get_option("local").prompt)
        assert local.split()[:3] == ["▶", "●", "local"]  # the name the tools and --machine take
        assert MACHINE.name in local  # the hostname, as a fact of it
        assert "local" in str(app.query_one(StatusLine).render())
        offline = lab.offline_alias
        await wait_until(pilot, lambda: panel.health.get(offline, None) is not None, what="the probes")
        await wait_until(pilot, lambda: panel.health[offline].state == "offline", what="offline")
        panel.options.focus()
        panel.options.highlighted = [o.id for o in panel.options.options].index(offline)
        await pilot.press("enter")
        await wait_until(pilot, lambda: notices(app, "warning"), what="the notice")
        (said,) = notices(app, "warning")
        assert said.startswith(f"{offline} is offline (checked ") and "Still working on local" in said
        assert fleet.target_name is None and not any(f"Working on {offline}" in n for n in notices(app))
        await pilot.press("home", "enter")  # the local machine, by the same name
        await wait_until(pilot, lambda: any("Working on local (this machine) now" in n for n in notices(app)))


async def _fleet_of(app, pilot):
    from tui_helpers import wait_until

    await wait_until(pilot, lambda: app.session is not None, what="the engine")
    return app.session.runner.machines


async def test_remote_write_keeps_modes_and_writes_through_symlinks(fleet, tmp_path, remote_home):
    import stat as st

    ctx = context(fleet, tmp_path)
    there = workspace(remote_home)  # where the sandbox there lets it write
    script = there / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    link = there / "link.txt"
    real = there / "real.txt"
    real.write_text("old")
    link.symlink_to(real)
    for path in (script, link, there / "new.txt"):
        result = await run_tool(WRITE_FILE, {"path": str(path), "content": "new", "machine": "alpha"}, ctx)
        assert not result.is_error, result.content
    assert st.S_IMODE(script.stat().st_mode) == 0o755 and script.read_text() == "new"
    assert link.is_symlink() and real.read_text() == "new"
    assert st.S_IMODE((there / "new.txt").stat().st_mode) & 0o044  # readable by others, like a plain new file


async def test_machine_rules_apply_however_the_model_names_the_machine(fake_api, lab, tmp_path, remote_home):
    from cmdop_tui.permissions import Permissions
    from cmdop_tui.session.gate import permission_gate

    fleet = fleet_for(lab)
    permissions = Permissions.load(mode="auto", audit_path=tmp_path / "audit.jsonl")
    permissions.add_session_rule("alpha:execute_command(*)", "deny")
    marker = workspace(remote_home) / "ran"  # where a command there could write
    calls = [
        tool_reply("execute_command", {"command": f"touch {marker}", "machine": name})
        for name in ("alp", " alpha", "alpha")
    ]
    fake_api.enqueue(*calls, text_reply("done"))
    runner = make_runner(fake_api, approve=permission_gate(permissions, ask=None))
    runner.machines = fleet
    try:
        await runner.run("try", Recorder())
    finally:
        await fleet.close()
    assert not marker.exists()
    results = [r.body["messages"][-1]["content"][0] for r in fake_api.requests[1:]]
    assert all(r["is_error"] for r in results)


async def test_a_remote_with_bubblewrap_runs_commands_in_its_sandbox(lab, fleet, tmp_path):
    health = await fleet.probe(fleet.inventory.resolve("alpha"))
    assert health.sandbox == "bubblewrap"  # the probe found it (these servers are this machine)
    outside = Path("/usr/local/cmdop-remote-sandbox-probe")
    result = await run_tool(
        EXECUTE_COMMAND, {"command": f"touch {outside}", "machine": "alpha"}, context(fleet, tmp_path)
    )
    assert result.is_error and "sandbox on alpha" in result.content and not outside.exists()
    assert "did not allow it outside the sandbox" in result.content


async def test_remote_file_tools_expand_the_tilde_there(lab, fleet, tmp_path):
    ctx = context(fleet, tmp_path)
    home = await run_tool(EXECUTE_COMMAND, {"command": "echo $HOME", "machine": "alpha"}, ctx)
    remote_home = home.content.split("stdout:")[-1].strip()
    listed = await run_tool(LIST_DIR, {"path": "~", "machine": "alpha"}, ctx)
    absolute = await run_tool(LIST_DIR, {"path": remote_home, "machine": "alpha"}, ctx)
    assert not listed.is_error and listed.content == absolute.content
    missing = await run_tool(READ_FILE, {"path": "~/no-such-file-here", "machine": "alpha"}, ctx)
    assert missing.is_error and f"{remote_home}/no-such-file-here" in missing.content


# --- the transport: a master shared between processes, its sockets, Stop's order ---------------


def _masters(transport: SshTransport) -> list[int]:
    """This route's backgrounded control masters (ssh retitles one `ssh: <socket path> [mux]`)."""
    prefix = f"ssh: {transport._control_dir}/{transport._route}-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(prefix):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def _wait_for(path: Path) -> None:
    async with asyncio.timeout(10):
        while not path.exists():
            await asyncio.sleep(0.02)


async def test_closing_in_one_process_leaves_the_others_commands_running(ssh_hosts, tmp_path):
    """Every cmdop-tui process of a user shares one master per machine: one that closes (a
    `machines list` in another terminal) must not cut the commands an open session runs."""
    lab = ssh_hosts(1)
    spec = Inventory.load([], lab.config).resolve("alpha")
    session, listing = (
        SshTransport(spec, SshOptions(config_file=lab.config)),
        SshTransport(spec, SshOptions(config_file=lab.config)),
    )
    started, go = tmp_path / "started", tmp_path / "go"
    task = asyncio.create_task(session.run(f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; echo finished"))
    try:
        await _wait_for(started)  # the "remote" host is this one
        assert _masters(session), "the command runs through a backgrounded master"
        await listing.close()
        go.touch()
        result = await task
        assert (result.status, result.stdout, result.stderr) == (0, b"finished\n", b"")
        async with asyncio.timeout(5):  # told to stop, the master ends with its last session
            while _masters(session):
                await asyncio.sleep(0.02)
    finally:
        go.touch()
        await session.close()


def test_a_master_being_set_up_keeps_its_temporary_socket():
    """ssh binds a new master's socket as NAME.<16 random characters>, listens, then renames it:
    between bind and listen it refuses connections like a dead master's, and must stay."""
    import shutil
    import socket
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="cm-", dir="/tmp"))  # short: socket paths are limited
    try:
        transport = SshTransport(MachineSpec("web", "10.0.0.1"), SshOptions(control_dir=directory))
        final = directory / f"{transport._route}-{'ab' * 20}"
        temporary = directory / f"{final.name}.AbCdEfGhIjKlMnOp"
        for path in (final, temporary):
            unbound = socket.socket(socket.AF_UNIX)
            unbound.bind(str(path))  # bound, not listening
            unbound.close()
        transport.argv("true")  # the connection that may become the master clears dead sockets
        assert temporary.exists() and not final.exists()
    finally:
        shutil.rmtree(directory)


async def test_a_command_that_starts_while_stop_looks_for_it_is_stopped(ssh_hosts, tmp_path):
    """The group forks between Stop's look (nothing there yet) and its next step: the marker must
    already be there for the group to see. A pgrep on the host starts the command during the look,
    and lets the look return empty once the command is past its check."""
    import shutil

    started, hook = tmp_path / "started", tmp_path / "hook.sh"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pgrep = bin_dir / "pgrep"
    pgrep.write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = -f ] && mv {hook} {hook}.used 2>/dev/null; then\n'
        f"  bash {hook}.used </dev/null >/dev/null 2>&1 & p=$!\n"
        f'  while [ ! -e {started} ] && kill -0 "$p" 2>/dev/null; do sleep 0.01; done\n'
        "  exit 1\n"
        "fi\n"
        f'exec {shutil.which("pgrep")} "$@"\n'
    )
    pgrep.chmod(0o755)
    lab = ssh_hosts(1, path=bin_dir)
    transport = SshTransport(Inventory.load([], lab.config).resolve("alpha"), SshOptions(config_file=lab.config))
    go = tmp_path / "go"
    remote, run_id = transport.stoppable(f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done", None)
    hook.write_text(remote + "\n")
    try:
        await transport.kill(run_id)
        assert not (tmp_path / "hook.sh").exists(), "the look ran the command"
        assert not started.exists(), "the command ran although Stop came first"
        assert not list(Path("/tmp").glob(f"cmdop-{run_id}.*"))
    finally:
        go.touch()
        await transport.close()
