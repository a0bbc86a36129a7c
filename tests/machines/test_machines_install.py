"""`cmdop-tui machines install` against real OpenSSH servers (tests/sshd.py): the remote is this
machine, so its python3 has this interpreter's ABI and the wheel path runs end to end (a venv in
the remote data dir, this install's wheels copied over ssh, `--version` checked), then
ask_machine through the installed agent against the fake Messages API. Also: the probe and the
machines panel saying which machines have a matching agent; clear errors for an old or missing
python3 and an offline machine; `tag:T` on the command line.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import text_reply

from cmdop_tui.cli import main
from cmdop_tui.machines.agent import DEFAULT_CMDOP, agent_command, agent_label, agent_probe
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.install import Installer, Python, wheels_misfit
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import Health, MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.machines.wheels import Wheels, prepare_wheels
from cmdop_tui.support.version import VERSION
from cmdop_tui.tools.ask import ASK_MACHINE
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.registry import run_tool

FAST_FAIL_S = 5.0


@pytest.fixture(scope="session")
def agent_wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    """This install's wheels, made once a test session (pip reuses its own download cache)."""
    return prepare_wheels(tmp_path_factory.mktemp("wheel-cache"))


@pytest.fixture(scope="session")
def wheel_folder(agent_wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same wheels in one folder, as `--wheels DIR` takes them."""
    folder = tmp_path_factory.mktemp("wheels")
    for wheel in agent_wheels.all:
        os.link(wheel, folder / wheel.name)
    return folder


@pytest.fixture(scope="session")
def remote_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The remote user's XDG_DATA_HOME, shared by the tests that install (a second install
    into it reuses the venv and the wheels already there, as a real reinstall would)."""
    return tmp_path_factory.mktemp("remote-data")


def remote_env(remote_data: Path, anthropic_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "remote-config.toml"
    config.write_text("[agent]\nmax_turns = 3\n")
    return {**anthropic_env, "XDG_DATA_HOME": str(remote_data), "CMDOP_TUI_CONFIG": str(config)}


def context(fleet: Fleet, tmp_path: Path) -> ToolContext:
    return ToolContext(call_id="toolu_test", cwd=tmp_path, progress=lambda text, stream: None, machines=fleet)


class Said:
    """What an installer said, by machine."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __call__(self, name: str, text: str) -> None:
        self.lines.append((name, text))

    def of(self, name: str) -> str:
        return "\n".join(text for who, text in self.lines if who == name)


# --- without servers -------------------------------------------------------------------------


def test_the_wheels_fit_only_the_same_abi_platform_and_libc():
    here = Python((3, 11, 7), "cpython-311", "linux-x86_64", ("glibc", "2.36"), True)
    assert wheels_misfit(here, here) is None
    newer_libc = Python((3, 11, 2), "cpython-311", "linux-x86_64", ("glibc", "2.39"), True)
    assert wheels_misfit(newer_libc, here) is None
    assert "cpython-312" in (
        wheels_misfit(Python((3, 12, 1), "cpython-312", "linux-x86_64", ("glibc", "2.36")), here) or ""
    )
    assert "C library" in (
        wheels_misfit(Python((3, 11, 2), "cpython-311", "linux-x86_64", ("glibc", "2.31")), here) or ""
    )
    assert "C library" in (
        wheels_misfit(Python((3, 11, 2), "cpython-311", "linux-x86_64", ("musl", "1.2")), here) or ""
    )


def test_the_installed_agent_comes_first_then_the_path_and_a_configured_command_is_used_as_it_is(tmp_path):
    assert agent_command("/opt/cmdop/bin/cmdop-tui", "--version") == "/opt/cmdop/bin/cmdop-tui --version"
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "XDG_DATA_HOME": str(tmp_path),
        "HOME": str(tmp_path),
    }

    def run() -> subprocess.CompletedProcess[str]:
        command = agent_command(DEFAULT_CMDOP, "--version")
        return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=False)

    assert run().stdout == f"cmdop-tui {VERSION}\n"  # none installed: the one on the PATH
    installed = tmp_path / "cmdop-tui" / "agent" / "bin" / "cmdop-tui"
    installed.parent.mkdir(parents=True)
    installed.write_text('#!/bin/sh\necho "installed agent $1"\n')
    installed.chmod(0o755)
    assert run().stdout == "installed agent --version\n"
    env["PATH"] = "/usr/bin:/bin"
    installed.unlink()
    assert run().returncode == 127  # none at all: ask_machine says how to install one


def test_agent_labels():
    assert agent_label(VERSION) == f"agent ✓ {VERSION}"
    assert agent_label("0.0.1") == "agent 0.0.1 (differs)"
    assert agent_label("none") == "no agent"
    assert agent_label("") == ""


async def test_the_machines_panel_says_which_machines_have_a_matching_agent():
    from textual.app import App, ComposeResult

    from cmdop_tui.tui.widgets.machines_panel import MachineInfo, MachinesPanel

    class PanelApp(App[None]):
        def compose(self) -> ComposeResult:
            yield MachinesPanel(machine=MachineInfo("here", "Linux 6.1", "ops", load="0.10 0.20"))

    async with PanelApp().run_test(size=(80, 24)) as pilot:
        panel = pilot.app.query_one(MachinesPanel)
        panel.set_machines(["web1", "web2", "db", "gone"])
        panel.set_health("web1", Health(state="online", os_name="Linux 6.1.0-13-amd64", agent=VERSION, uptime="3d4h"))
        panel.set_health("web2", Health(state="online", os_name="Linux 6.1.0-13-amd64", agent="0.0.9"))
        panel.set_health("db", Health(state="online", os_name="Linux 6.1.0-13-amd64", agent="none"))
        panel.set_health("gone", Health(state="offline", error="cannot reach gone over ssh", agent="none"))
        await pilot.pause()
        text = {name: str(panel.options.get_option(name).prompt) for name in ("web1", "web2", "db", "gone")}
    assert f"agent ✓ {VERSION} · Linux 6.1.0-13-amd64 · up 3d4h" in text["web1"]
    assert "agent 0.0.9 (differs)" in text["web2"] and "no agent" in text["db"]
    assert "agent" not in text["gone"]  # an offline machine's last answer is not news


# --- against real servers --------------------------------------------------------------------


async def test_without_an_agent_the_probe_says_so_and_ask_machine_says_how_to_install_one(ssh_hosts, tmp_path):
    lab = ssh_hosts(1, env={"XDG_DATA_HOME": str(tmp_path / "empty")})  # no cmdop-tui on its PATH either
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    try:
        assert (await fleet.probe(fleet.inventory.resolve("alpha"))).agent == "none"
        missing = await run_tool(ASK_MACHINE, {"hostname": "alpha", "prompt": "hi"}, context(fleet, tmp_path))
    finally:
        await fleet.close()
    assert missing.is_error and "Run `cmdop-tui machines install alpha`" in missing.content


async def test_install_puts_a_matching_agent_there_and_ask_machine_uses_it(
    ssh_hosts, agent_wheels, remote_data, fake_api, anthropic_env, tmp_path
):
    lab = ssh_hosts(1, env=remote_env(remote_data, anthropic_env, tmp_path))  # no cmdop-tui on its PATH
    options = SshOptions(config_file=lab.config)
    fleet = Fleet(Inventory.load([], lab.config), options)
    alpha = fleet.inventory.resolve("alpha")
    try:
        said = Said()
        outcomes = await Installer(options, said, wheels=agent_wheels).install_all([alpha])
        assert [(o.name, o.ok, o.message) for o in outcomes] == [("alpha", True, VERSION)], said.of("alpha")
        assert "installing from this install's wheels" in said.of("alpha")
        assert (remote_data / "cmdop-tui" / "agent" / "bin" / "cmdop-tui").exists()
        assert (await fleet.probe(alpha)).agent == VERSION
        again = Said()  # a reinstall sends only this project's wheel, and reuses the venv
        assert (await Installer(options, again, wheels=agent_wheels).install_all([alpha]))[0].ok
        assert "sent 1 wheel(s)" in again.of("alpha")
        fake_api.enqueue(text_reply("installed agent here"))
        answer = await run_tool(ASK_MACHINE, {"hostname": "alpha", "prompt": "hi"}, context(fleet, tmp_path))
        assert not answer.is_error and answer.content == "installed agent here"
    finally:
        await fleet.close()


async def test_an_old_or_missing_python3_there_is_a_clear_error(ssh_hosts, tmp_path):
    old = tmp_path / "old-python"
    old.mkdir()
    (old / "python3").write_text("#!/bin/sh\necho '{\"version\": [3, 9, 2]}'\n")
    (old / "python3").chmod(0o755)
    bare = tmp_path / "no-python"  # a PATH with a shell and nothing else
    bare.mkdir()
    for tool in ("bash", "uname"):
        (bare / tool).symlink_to(shutil.which(tool) or tool)
    labs = [ssh_hosts(1, path=old), ssh_hosts(1, env={"PATH": str(bare)})]
    said = Said()
    outcomes = []
    for lab in labs:
        installer = Installer(SshOptions(config_file=lab.config), said)  # no wheels: they must not be needed
        outcomes += await installer.install_all([MachineSpec("alpha", "alpha")])
    assert not outcomes[0].ok and "python3 there is 3.9.2; cmdop-tui needs Python 3.11 or newer" in outcomes[0].message
    assert not outcomes[1].ok and "no python3 on the PATH" in outcomes[1].message


async def test_an_offline_machine_fails_fast_and_the_others_go_on(ssh_hosts):
    lab = ssh_hosts(0)
    said = Said()
    installer = Installer(SshOptions(config_file=lab.config), said)
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcomes = await installer.install_all(
        [MachineSpec("gone", lab.offline_alias), MachineSpec("local", "x", source="local")]
    )
    assert loop.time() - started < FAST_FAIL_S
    assert not outcomes[0].ok and "cannot reach gone over ssh" in outcomes[0].message
    assert not outcomes[1].ok and "local machine" in outcomes[1].message
    assert "failed: cannot reach gone" in said.of("gone")


def test_the_command_installs_by_tag_and_fails_when_one_machine_does(
    ssh_hosts, wheel_folder, remote_data, anthropic_env, tmp_path, monkeypatch, capsys
):
    lab = ssh_hosts(2, env=remote_env(remote_data, anthropic_env, tmp_path))
    settings = tmp_path / "settings.toml"
    settings.write_text(
        f'ssh_config = "{lab.config}"\n'
        '[machines.web-a]\nhost = "alpha"\ntags = ["web"]\n'
        f'[machines.web-b]\nhost = "{lab.offline_alias}"\ntags = ["web"]\n'
        '[machines.db]\nhost = "bravo"\ntags = ["db"]\n'
    )
    monkeypatch.setenv("CMDOP_TUI_CONFIG", str(settings))
    code = main(["machines", "install", "tag:web", "--wheels", str(wheel_folder)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"web-a: ok: cmdop-tui {VERSION}" in out and "web-b: failed: cannot reach web-b" in out
    assert "db:" not in out and "1 of 2 installed; failed: web-b" in out
    assert main(["machines", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert f"agent ✓ {VERSION}" in rows["web-a"] and "web" in rows["web-a"]
    assert "offline" in rows["web-b"]


def test_an_install_from_a_wheel_is_repacked_into_the_same_wheel(agent_wheels, tmp_path):
    """No source folder (installed from a wheel or an index): the installed files make the wheel."""
    import zipfile

    installed = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(installed)]
    subprocess.run([*pip, str(agent_wheels.project)], check=True, capture_output=True)
    out = tmp_path / "out"
    out.mkdir()
    script = "import sys, pathlib; from cmdop_tui.machines.wheels import repack_installed; print(repack_installed(pathlib.Path(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": str(installed)}  # its metadata is found before the editable install's
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    repacked, built = zipfile.ZipFile(done.stdout.strip()), zipfile.ZipFile(agent_wheels.project)
    assert set(repacked.namelist()) == set(built.namelist())
    assert all(repacked.read(name) == built.read(name) for name in built.namelist() if not name.endswith("/RECORD"))
    pip_check = subprocess.run(
        [*pip, "--target", str(tmp_path / "again"), done.stdout.strip()], capture_output=True, text=True
    )
    assert pip_check.returncode == 0, pip_check.stderr  # pip takes it (RECORD hashes and all)


# --- what an interrupted or shared install leaves behind --------------------------------------


def probe_here(env: dict[str, str]) -> str:
    command = agent_probe(DEFAULT_CMDOP)
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=True).stdout


def pip_wrapper(script: Path, python: str) -> None:
    """A console script as pip writes it when `python` cannot be a shebang (a space in it, or
    longer than 127 bytes): `#!/bin/sh`, then a line that execs the interpreter."""
    script.parent.mkdir(parents=True, exist_ok=True)
    shown = f'"{python}"' if " " in python else python
    script.write_text(f"#!/bin/sh\n'''exec' {shown} \"$0\" \"$@\"\n' '''\nimport sys\n")
    script.chmod(0o755)


def installed_at(prefix: Path, version: str) -> str:
    """A venv-like prefix holding this project's metadata folder at `version`; its python."""
    (prefix / "lib" / "python3.11" / "site-packages" / f"cmdop_tui-{version}.dist-info").mkdir(parents=True)
    (prefix / "bin").mkdir(exist_ok=True)
    return str(prefix / "bin" / "python")


def test_the_probe_reads_the_version_through_pips_sh_wrapper(tmp_path):
    """macOS's data dir has a space ("Application Support"): pip's scripts there start with
    `#!/bin/sh`, and the interpreter is on the second line."""
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "none")}
    spaced = installed_at(tmp_path / "Application Support" / "py env", "9.9.1")
    pip_wrapper(tmp_path / "bin" / "cmdop-tui", spaced)  # on the PATH, its venv elsewhere
    assert probe_here(env) == "agent:9.9.1\n"
    long = installed_at(tmp_path / ("x" * 130), "9.9.2")  # no space, too long for a shebang: unquoted
    pip_wrapper(tmp_path / "bin" / "cmdop-tui", long)
    assert probe_here(env) == "agent:9.9.2\n"
    data = tmp_path / "Application Support"  # the data dir's own venv, with a space in its path
    pip_wrapper(data / "cmdop-tui" / "agent" / "bin" / "cmdop-tui", installed_at(data / "cmdop-tui" / "agent", "9.9.3"))
    assert probe_here({**env, "XDG_DATA_HOME": str(data)}) == "agent:9.9.3\n"


def data_env(data: Path) -> dict[str, str]:
    return {"XDG_DATA_HOME": str(data)}


async def install_on(lab_config: Path, wheels: Wheels, **options: int) -> tuple[bool, str, str]:
    """Install on `alpha`: whether it worked, its message, what the installer said."""
    said = Said()
    installer = Installer(SshOptions(config_file=lab_config), said, wheels=wheels, **options)
    outcome = (await installer.install_all([MachineSpec("alpha", "alpha")]))[0]
    return outcome.ok, outcome.message, said.of("alpha")


async def test_a_truncated_wheel_there_is_sent_again(ssh_hosts, agent_wheels, remote_data):
    lab = ssh_hosts(1, env=data_env(remote_data))
    assert (await install_on(lab.config, agent_wheels))[0]
    dependency = agent_wheels.dependencies[0]
    there = remote_data / "cmdop-tui" / "agent-wheels" / dependency.name
    there.write_bytes(dependency.read_bytes()[:1000])  # what a dropped connection left
    ok, message, said = await install_on(lab.config, agent_wheels)
    assert ok, message
    assert "sent 2 wheel(s)" in said  # this project's, and the truncated one again
    assert there.read_bytes() == dependency.read_bytes()
    assert not list(there.parent.glob(".incoming.*"))  # the temporary folder went
    assert not (remote_data / "cmdop-tui" / "agent.lock").exists()  # the lock was given back


async def test_after_pip_fails_there_the_next_install_sends_every_wheel_again(ssh_hosts, agent_wheels, tmp_path):
    """A wheel damaged without changing size: pip fails once, and the wheels there go."""
    data = tmp_path / "data"
    folder = data / "cmdop-tui" / "agent-wheels"
    folder.mkdir(parents=True)
    damaged = folder / agent_wheels.dependencies[0].name
    damaged.write_bytes(b"\0" * agent_wheels.dependencies[0].stat().st_size)
    lab = ssh_hosts(1, env=data_env(data))
    ok, message, said = await install_on(lab.config, agent_wheels)
    assert not ok and "the next install sends them all again" in message, said
    assert not list(folder.glob("*.whl"))
    ok, message, said = await install_on(lab.config, agent_wheels)
    assert ok, message
    assert f"sent {len(agent_wheels.all)} wheel(s)" in said


async def test_a_venv_without_pip_or_made_for_another_platform_is_made_again(ssh_hosts, agent_wheels, remote_data):
    lab = ssh_hosts(1, env=data_env(remote_data))
    assert (await install_on(lab.config, agent_wheels))[0]
    venv = remote_data / "cmdop-tui" / "agent"
    built_for = venv / "cmdop-tui-built-for"
    here = Python.here()
    assert built_for.read_text().strip() == f"{here.tag} {here.platform}"
    mark = venv / "made-before"  # gone when the venv is made again (`venv --clear`)
    mark.write_text("")
    built_for.write_text(f"{here.tag} macosx-14.0-arm64\n")  # a home shared with a Mac (NFS)
    ok, message, _ = await install_on(lab.config, agent_wheels)
    assert ok and not mark.exists(), message
    mark.write_text("")
    assert (await install_on(lab.config, agent_wheels))[0] and mark.exists()  # a good venv is kept
    pips = list(venv.glob("lib/python*/site-packages/pip"))
    assert pips
    for pip in pips:  # what an interrupted ensurepip leaves: the right Python, no pip
        shutil.rmtree(pip)
    ok, message, _ = await install_on(lab.config, agent_wheels)
    assert ok and not mark.exists(), message


async def test_an_install_into_a_locked_data_dir_waits_then_says_who_holds_it(ssh_hosts, agent_wheels, tmp_path):
    data = tmp_path / "data"
    lock = data / "cmdop-tui" / "agent.lock"
    lock.mkdir(parents=True)
    (lock / "owner").write_text("nfs-neighbour pid 4242\n")
    lab = ssh_hosts(1, env=data_env(data))
    ok, message, said = await install_on(lab.config, agent_wheels, lock_wait_s=1)
    assert not ok, said
    assert "held its lock" in message and "nfs-neighbour pid 4242" in message and "remove that folder" in message
    assert not (data / "cmdop-tui" / "agent").exists()  # nothing was built under another's lock
    assert lock.is_dir()  # and the other's lock is left alone


def test_an_install_says_when_the_settings_name_another_agent_command():
    from cmdop_tui.machines.install import configured_agent_note

    assert configured_agent_note(MachineSpec("web1", "alpha")) is None
    note = configured_agent_note(MachineSpec("web1", "alpha", cmdop="/opt/agent/bin/cmdop-tui"))
    assert note is not None and "`/opt/agent/bin/cmdop-tui`" in note and "remove that setting" in note
