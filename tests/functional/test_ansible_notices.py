"""An Ansible inventory with hosts the app cannot read never takes a session down: headless runs
the prompt and says each one on stderr, the TUI shows them as notices, `machines list` prints
them before its table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import text_reply
from remote_side import make_home, remove_home
from tui_helpers import make_app, notices, wait_until

from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.machine import Machine, MachineResult
from cmdop_tui.machines.sandbox import bubblewrap

CLI = [sys.executable, "-m", "cmdop_tui"]
INVENTORY = """\
[lab]
here ansible_connection=local
templated ansible_host=192.0.2.1 ansible_port="{{ base_port }}"
"""
NOTICE = "Ansible host templated is left out: ansible_port uses the undefined variable 'base_port'"


def inventory_settings(folder: Path) -> tuple[Path, Path]:
    """An inventory with one host that cannot be read, and an empty ssh_config."""
    hosts, ssh_config = folder / "hosts", folder / "ssh_config"
    hosts.write_text(INVENTORY)
    ssh_config.write_text("")
    return hosts, ssh_config


async def command_in(machine: Machine, command: str) -> MachineResult:
    """`command` run by `machine` in its workspace, as the model's would be."""
    return await machine.run_command(command, cwd=None, timeout_ms=20_000, progress=lambda *_: None, output_limit=4_000)


def cli_env(folder: Path, extra: dict[str, str]) -> dict[str, str]:
    hosts, ssh_config = inventory_settings(folder)
    config = folder / "config.toml"
    config.write_text(f'ssh_config = "{ssh_config}"\n\n[inventory]\nansible = "{hosts}"\n')
    env = {**os.environ, **extra, "CMDOP_TUI_CONFIG": str(config)}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def test_headless_runs_the_prompt_and_says_the_host_it_left_out(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("Done."))
    env = cli_env(tmp_path, anthropic_env)
    done = subprocess.run([*CLI, "-p", "hi"], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "Done.\n"), done.stderr
    assert f"cmdop-tui: {NOTICE}\n" in done.stderr


def test_machines_list_prints_what_it_left_out(tmp_path):
    env = cli_env(tmp_path, {})
    done = subprocess.run([*CLI, "machines", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"cmdop-tui: {NOTICE}\n"
    assert done.stdout.startswith("no machines")  # the one readable host is this machine


async def test_the_tui_opens_the_session_and_shows_the_host_it_left_out(fake_api, tmp_path):
    hosts, ssh_config = inventory_settings(tmp_path)
    app = make_app(fake_api, settings=Settings(ansible_inventory=hosts, ssh_config=ssh_config))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "open", what="the session")
        await wait_until(pilot, lambda: NOTICE in notices(app), what="the notice")
        assert app.session is not None and app.session.fleet is not None
        assert app.session.fleet.inventory.resolve("here").is_local


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_the_sessions_commands_cannot_change_what_the_next_session_runs(fake_api, anthropic_env, tmp_path):
    # An inventory script or a ProxyCommand runs here, unsandboxed, when a session reads the
    # inventory: a command of this session must not be able to plant one.
    from cmdop_tui.session.session import Session

    project = tmp_path / "project"
    project.mkdir()
    hosts, ssh_config = inventory_settings(project)
    (project / "group_vars").mkdir()
    settings = Settings(ansible_inventory=hosts, ssh_config=ssh_config)
    async with Session(settings, platform="headless", cwd=project, record=False) as session:
        assert session.fleet is not None and session.fleet.sandbox.confines
        here = session.fleet.machine(None, cwd=project)
        plant = "echo 'evil ansible_ssh_common_args=\"-o ProxyCommand=touch /tmp/x\"' >> hosts"
        for command in (plant, "echo 'ansible_user: x' > group_vars/all.yml", "echo ok > notes.txt"):
            await here.run_command(command, cwd=None, timeout_ms=20_000, progress=lambda *_: None, output_limit=4_000)
        # host_vars/ is not there yet: made by a command, it is moved aside and the command refused
        made = await here.run_command(
            "mkdir host_vars && echo 'ansible_ssh_common_args: -o ProxyCommand=touch /tmp/x' > host_vars/lab.yml",
            cwd=None,
            timeout_ms=20_000,
            progress=lambda *_: None,
            output_limit=4_000,
        )
        written = await here.write_file(str(project / "host_vars" / "here.yml"), "ansible_user: x\n")
    assert hosts.read_text() == INVENTORY
    assert list((project / "group_vars").iterdir()) == []
    assert not (project / "host_vars").exists() and made.is_error and "host_vars" in made.text
    assert written.is_error and not (project / "host_vars").exists()
    assert (project / "notes.txt").read_text() == "ok\n"  # the rest of the project stays writable


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_the_inventorys_folder_cannot_be_moved_aside_and_made_again(fake_api, anthropic_env, tmp_path):
    # The inventory file is held read-only where it is; the folder around it is the project's:
    # moving that folder aside and making another of the same name in its place must not
    # leave a new inventory for the next session.
    from cmdop_tui.session.session import Session

    project = tmp_path / "project"
    (project / "infra").mkdir(parents=True)
    hosts, ssh_config = inventory_settings(project / "infra")
    settings = Settings(ansible_inventory=hosts, ssh_config=ssh_config)
    async with Session(settings, platform="headless", cwd=project, record=False) as session:
        assert session.fleet is not None and session.fleet.sandbox.confines
        here = session.fleet.machine(None, cwd=project)
        await here.run_command(
            "mv infra old && mkdir infra && cp old/* infra/ && echo 'evil ansible_host=192.0.2.9' >> infra/hosts",
            cwd=None,
            timeout_ms=20_000,
            progress=lambda *_: None,
            output_limit=4_000,
        )
    assert hosts.read_text() == INVENTORY


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("where", [".", "roles/web"], ids=["the-folder", "a-folder-inside"])
async def test_a_script_planted_in_an_inventory_folder_that_holds_the_workspace_is_refused(
    fake_api, anthropic_env, tmp_path, where
):
    # Every executable file of an inventory folder is run, unsandboxed, when the next session
    # reads the inventory (and every other file read as inventory): a command must not be able
    # to add one, even when the session works in that folder.

    place = make_home()  # outside /tmp, which commands see as their own private one
    try:
        await _try_to_plant(place / "project", where)
    finally:
        remove_home(place)


async def _try_to_plant(project: Path, where: str) -> None:
    from cmdop_tui.session.session import Session

    cwd = project / where
    cwd.mkdir(parents=True)
    hosts, ssh_config = inventory_settings(project)
    settings = Settings(ansible_inventory=project, ssh_config=ssh_config)
    plant = "printf '#!/bin/sh\\necho {}\\n' > {} && chmod +x {}"
    attempts = [plant.format(p, p, p) for p in (f"{project}/planted.sh", f"{cwd}/planted.sh")]
    async with Session(settings, platform="headless", cwd=cwd, record=False) as session:
        assert session.fleet is not None and session.fleet.sandbox.confines
        assert any(f"{cwd} is not made writable" in note and f"it is in {project}" in note for note in session.notes)
        here = session.fleet.machine(None, cwd=cwd)
        for command in (*attempts, f"cd {cwd} && echo x > inventory.yml"):
            assert "exit code: 0" not in (await command_in(here, command)).text, command
        written = await here.write_file(str(project / "more.ini"), "[x]\nevil\n")
        assert written.is_error
        scratch = here.sandbox.workspace_for(cwd)
        ran = await command_in(here, plant.format("p.sh", "p.sh", "p.sh"))
        assert "exit code: 0" in ran.text and (scratch / "p.sh").is_file()  # the work goes on there
    assert sorted(p.name for p in project.rglob("*") if p.is_file()) == ["hosts", "ssh_config"]
