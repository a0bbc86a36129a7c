"""Checkpoints on other machines, over their own connections (real sshd): a turn that changes
files on two hosts with a fan-out and with the file tools rewinds as one, byte for byte and
mode for mode, a line per host; a host whose checkpoint cannot be taken (no git there) is said
and noted, and the turn goes on."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, remove_home, workspace

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.session.session import Session

HOSTS = ("alpha", "bravo")
CHANGE = "sed -i s/80/8080/ app.conf && rm old.txt && chmod +x deploy.sh && mkdir -p new && echo n > new/file"


@pytest.fixture
def homes():
    made = {name: make_home() for name in HOSTS}
    yield made
    for home in made.values():
        remove_home(home)


@pytest.fixture
def hosts(ssh_hosts, homes):
    """Two real servers, each with a home (and so a workspace) of its own."""
    return ssh_hosts(2, host_env=lambda alias: {"HOME": str(homes[alias])})


def seed(tree: Path) -> None:
    (tree / "app.conf").write_text("port 80\n")
    (tree / "old.txt").write_text("old\n")
    (tree / "deploy.sh").write_text("#!/bin/sh\n")


def state(tree: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(tree)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(tree.rglob("*"))
        if p.is_file()
    }


async def test_a_fan_out_rewinds_as_one_on_every_host(fake_api, anthropic_env, hosts, homes, tmp_path):
    trees = {name: workspace(home) for name, home in homes.items()}
    for tree in trees.values():
        seed(tree)
    before = {name: state(tree) for name, tree in trees.items()}
    fake_api.enqueue(
        tool_reply("run_on_machines", {"command": CHANGE, "machines": list(HOSTS)}),
        tool_reply("write_file", {"path": "notes.md", "content": "# on bravo\n", "machine": "bravo"}),
        text_reply("changed both"),
    )
    settings = Settings(ssh_config=hosts.config, run=RunOptions(auto_approve=True))
    async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
        assert (await session.run("change the hosts", Recorder())).status == "final"
        assert all(state(tree) != before[name] for name, tree in trees.items())
        [turn] = await session.turns()
        lines = {m.machine: {f.path: f.status for f in m.files} for m in turn.machines}
        assert lines["alpha"] == {
            "app.conf": "modified",
            "old.txt": "deleted",
            "deploy.sh": "modified",
            "new/file": "added",
        }
        assert lines["bravo"] == {**lines["alpha"], "notes.md": "added"}
        plan = await session.rewind_plan(1)
        assert sorted(m.machine for m in plan.machines) == list(HOSTS)
        done = await session.rewind(plan)
        assert done.files is not None and done.files.failed == ()
        assert {name: state(tree) for name, tree in trees.items()} == before


async def test_a_host_without_git_is_said_and_the_turn_goes_on(fake_api, anthropic_env, ssh_hosts, tmp_path):
    home = make_home()
    try:
        bare = home / "bin"  # the system's programs but git (outside /tmp: a sandbox there hides it)
        bare.mkdir()
        for program in Path("/usr/bin").iterdir():
            if not program.name.startswith("git"):
                (bare / program.name).symlink_to(program)
        lab = ssh_hosts(1, host_env=lambda alias: {"HOME": str(home), "PATH": str(bare)})
        (workspace(home) / "app.conf").write_text("port 80\n")
        fake_api.enqueue(
            tool_reply("execute_command", {"command": "echo x > x.txt", "machine": "alpha"}),
            tool_reply("write_file", {"path": "app.conf", "content": "port 8080\n", "machine": "alpha"}),
            text_reply("ok"),
        )
        settings = Settings(ssh_config=lab.config, run=RunOptions(auto_approve=True))
        said: list[str] = []
        async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
            session.recorder.listeners.append(lambda notice: said.append(notice.text))
            assert (await session.run("go", Recorder())).text == "ok"
            [turn] = await session.turns()
            assert (workspace(home) / "app.conf").read_text() == "port 8080\n"
            done = await session.rewind(await session.rewind_plan(1))  # what the file tool wrote is kept
            assert done.files is not None and done.files.failed == ()
        assert (workspace(home) / "app.conf").read_text() == "port 80\n"
        assert (workspace(home) / "x.txt").read_text() == "x\n"  # what the command did: not kept, as said
        assert any("checkpoint on alpha failed: git is not installed there" in text for text in said), said
        assert [m.note for m in turn.machines] == ["no checkpoint on alpha: git is not installed there"]
    finally:
        remove_home(home)
