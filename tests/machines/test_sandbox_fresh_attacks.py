"""The check of the writable roots before each command (machines/secret_index.py), attacked by a
hostile model's own commands: a folder that holds a hidden secret moved where no check looks
(into a `.git`), or moved by a command running beside the next one after that one's check and
before its sandbox is laid out, or made unreadable so that the check cannot list it. No later
command may read the secret.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.path_index import list_tree
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy, bubblewrap

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")

SECRET = "TOKEN=prod-secret"


@pytest.fixture
def target(tmp_path: Path) -> LocalMachine:
    home = tmp_path / "home"
    work = home / "work"
    (work / "app" / "config").mkdir(parents=True)
    (work / "app" / "config" / ".env.production").write_text(SECRET)
    return LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))


async def run(target: LocalMachine, command: str) -> str:
    result = await target.run_command(
        command, cwd=None, timeout_ms=30_000, progress=lambda text, stream: None, output_limit=8_000
    )
    return result.text


async def test_a_secret_moved_into_a_git_folder_stays_hidden(target):
    assert SECRET not in await run(target, "cat app/config/.env.production; echo first")
    await run(target, "mkdir -p x/.git && mv app x/.git/; mv x/.git/app/config x/.git/; echo moved")
    shown = await run(target, "cat x/.git/app/config/.env.production x/.git/config/.env.production; echo read")
    assert "read" in shown and SECRET not in shown


async def test_a_move_beside_a_command_between_its_check_and_its_start_does_not_show_it_the_secret(target, monkeypatch):
    """A background command moves the secret's folder just after the next command's check (the
    hostile model loops `mv` until one lands there; here the test puts it there)."""
    assert SECRET not in await run(target, "cat app/config/.env.production; echo first")
    tmp = target.sandbox.state.private()[0][1]  # the session's /tmp, seen by every command
    for name in ("up", "go", "done"):
        os.mkfifo(tmp / name)
    mover = asyncio.create_task(
        run(target, "echo up > /tmp/up; read go < /tmp/go; mv app/config moved 2>&1; echo done > /tmp/done")
    )
    await asyncio.to_thread((tmp / "up").read_text)  # the mover runs, in its own sandbox
    checked = Sandbox.fresh

    def check_then_move(self: Sandbox, *args: object, **kwargs: object) -> object:
        found = checked(self, *args, **kwargs)
        (tmp / "go").write_text("x\n")
        (tmp / "done").read_text()  # the move has been tried
        return found

    monkeypatch.setattr(Sandbox, "fresh", check_then_move)
    shown = await run(target, "cat app/config/.env.production moved/.env.production; echo read")
    await mover
    assert "read" in shown and SECRET not in shown


def lists_any_folder(tmp_path: Path) -> bool:
    """Whether this process lists a folder whatever its mode says (root, CAP_DAC_READ_SEARCH)."""
    closed = tmp_path / "closed"
    closed.mkdir(mode=0)
    try:
        os.listdir(closed)
    except PermissionError:
        return False
    finally:
        closed.rmdir()
    return True


@pytest.mark.parametrize(
    ("folder", "mode"), [("app", "000"), ("app", "600"), ("app", "300"), ("app/config", "000"), (".", "000")]
)
async def test_a_folder_made_unreadable_is_not_dropped_from_what_is_hidden(target, tmp_path, folder, mode):
    """Run as a user (not root): `unshare -U --map-user=1000 --map-group=1000 pytest ...`."""
    if lists_any_folder(tmp_path):
        pytest.skip("this process lists any folder (root?): a check is never refused one")
    assert SECRET not in await run(target, "cat app/config/.env.production; echo first")
    await run(target, f"chmod {mode} {folder}")
    shown = await run(target, f"chmod 755 {folder}; cat app/config/.env.production; echo read")
    os.chmod(target.cwd / folder, 0o755)  # as a person would, to see the folder again
    assert "read" in shown and SECRET not in shown
    assert SECRET not in await run(target, "cat app/config/.env.production; echo again")


@pytest.mark.parametrize("pointed", ["/bin/bash", "/usr", "/", "HOME"])
async def test_a_symlink_named_like_a_secret_cannot_hide_what_commands_run_from(target, pointed):
    home = target.sandbox.home
    (home / "notes.txt").write_text("a note of the home")
    made = await run(target, f"ln -s {home if pointed == 'HOME' else pointed} .env && echo made")
    assert "made" in made
    shown = await run(target, f"echo alive; cat {home}/notes.txt")
    assert "alive" in shown and "a note of the home" in shown, shown


async def test_a_secret_the_person_links_in_from_the_home_stays_hidden(target):
    home = target.sandbox.home
    (home / "vault").mkdir()
    (home / "vault" / "prod.conf").write_text(SECRET)  # not named like a secret: only the link is
    (target.cwd / ".env").symlink_to(home / "vault" / "prod.conf")
    shown = await run(target, f"cat .env {home}/vault/prod.conf; echo read")
    assert "read" in shown and SECRET not in shown


async def test_a_repository_a_running_command_made_runs_nothing_when_the_app_lists_the_files(target):
    """A protected name a command creates (`.git`) goes to quarantine when the command ends; a
    background job that made one runs on meanwhile, and the app's `@` completion lists the work
    tree with git, outside the sandbox: the repository's own settings must run nothing there."""
    ran = target.sandbox.home / "ran-outside"
    tmp = target.sandbox.state.private()[0][1]
    os.mkfifo(tmp / "up")
    os.mkfifo(tmp / "go")
    planted = f"git init -q . && git config core.fsmonitor 'touch {ran}; true' && echo > /tmp/up; read _ < /tmp/go"
    job = asyncio.create_task(run(target, planted))
    await asyncio.to_thread((tmp / "up").read_text)
    try:
        assert (target.cwd / ".git" / "config").exists()
        list_tree(target.cwd)
        assert not ran.exists()
    finally:
        await asyncio.to_thread((tmp / "go").write_text, "x\n")
        assert "quarantine" in await job  # and then it is moved aside


@pytest.mark.parametrize("where", ["notes.txt", "sub/.git/notes"])
async def test_a_hard_link_to_a_secret_made_before_the_person_wrote_it_shows_nothing(target, where):
    """The model makes `.env` from a template and links it under another name; the person then
    writes the real values into `.env` in place (as `>` and vim do with a linked file)."""
    work = target.cwd
    made = await run(
        target, f"echo TOKEN=fill-me > .env && mkdir -p $(dirname {where}) && ln .env {where} && echo made"
    )
    assert "made" in made and (work / ".env").stat().st_nlink == 2
    with open(work / ".env", "r+") as dotenv:  # the person's edit, in place
        dotenv.truncate()
        dotenv.write(SECRET)
    shown = await run(target, f"cat {where}; echo read")
    assert "read" in shown and SECRET not in shown


async def test_a_dotenv_linked_into_the_sessions_tmp_shows_nothing_the_person_wrote_into_it(target):
    """The model makes `.env` a symlink into its /tmp (the session's own folder); the person then
    writes the real values into `.env`, through the link."""
    work = target.cwd
    real = "$(awk '$5 == \"/tmp\" {print $4}' /proc/self/mountinfo)"  # where /tmp is on the host
    assert "made" in await run(target, f"touch /tmp/filled && ln -s {real}/filled .env && echo made")
    assert (work / ".env").resolve() == target.sandbox.state.private()[0][1] / "filled"
    (work / ".env").write_text(SECRET)  # through the link, into the session's /tmp
    shown = await run(target, "cat /tmp/filled; echo read")
    assert "read" in shown and SECRET not in shown


async def test_a_dotenv_linked_to_a_folder_in_the_sessions_tmp_stops_nothing(target):
    real = "$(awk '$5 == \"/tmp\" {print $4}' /proc/self/mountinfo)"
    assert "made" in await run(target, f"mkdir -p /tmp/box && ln -s {real}/box .env && echo made")
    assert "alive" in await run(target, "echo alive")


@pytest.mark.parametrize("pointed", ["/bin/bash", "/usr", "/"])
async def test_a_symlink_named_like_a_secret_in_another_project_cannot_hide_what_commands_run_from(
    tmp_path: Path, pointed: str
):
    """Another session's commands, working in a project beside this one, named a symlink `.env`:
    this session's scan finds it outside its own writable roots, where its commands cannot write,
    but the other session's could."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (home / "other").mkdir()
    (home / "other" / ".env").symlink_to(pointed)
    (home / "vault").mkdir()
    (home / "vault" / "prod.conf").write_text(SECRET)
    (home / "other" / ".env.production").symlink_to(home / "vault" / "prod.conf")  # the person's own
    target = LocalMachine(home / "work", sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))
    shown = await run(target, f"echo alive; cat {home}/vault/prod.conf {home}/other/.env.production; echo read")
    assert "alive" in shown and "read" in shown, shown
    assert SECRET not in shown  # a secret of the home linked from beside stays hidden
