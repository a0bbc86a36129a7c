"""Secrets that come and go between two commands, tried as an attacker would (a command moves the
folder around a hidden secret, puts a symlink in its place, sets a folder's time back) and as a
person does (saves a new `.env` while the session runs): the next command sees none of them. A
command cannot move the folders around a secret hidden from it (they are mount points there), so
the moves are made by a command started before the secret was saved.

The scan of secrets is not run again per command (a home takes a second); the writable roots are
checked for what changed since it (machines/secret_index.py), and each secret's place is asked
of the kernel again where a command could have changed it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from cmdop_tui.machines import secret_index
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy, bubblewrap

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")

SECRET = "TOKEN=prod-secret"
SAVED = "TOKEN=saved-while-a-command-ran"


@pytest.fixture
def trusted_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders made by the test are seconds old at most: their change time is trusted anyway,
    so what a check that trusts it does is what is tried (not a listing made every time)."""
    monkeypatch.setattr(secret_index, "RACY_NS", 0)


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    work = home / "work"
    (work / "app").mkdir(parents=True)
    (work / "keep").mkdir()
    (work / "app" / ".env.production").write_text(SECRET)
    (home / "other").mkdir()
    (home / "other" / ".env").write_text("TOKEN=elsewhere")
    return home, work


def machine(place: tuple[Path, Path]) -> LocalMachine:
    home, work = place
    return LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))


async def run(target: LocalMachine, command: str) -> str:
    result = await target.run_command(
        command, cwd=None, timeout_ms=20_000, progress=lambda text, stream: None, output_limit=8_000
    )
    return result.text


async def test_a_secret_saved_between_two_commands_is_hidden_from_the_next(place, trusted_times):
    _, work = place
    target = machine(place)
    assert "hello" in await run(target, "echo hello")
    (work / "deploy").mkdir()
    (work / "deploy" / ".env").write_text("TOKEN=saved-just-now")
    (work / "keep" / ".env.local").write_text("TOKEN=beside")
    shown = await run(target, "cat deploy/.env keep/.env.local; ls deploy")
    assert "saved-just-now" not in shown and "beside" not in shown
    assert ".env" in shown  # hidden, not gone: the name is there, its content is not


async def test_a_folder_around_a_hidden_secret_cannot_be_moved(place, trusted_times):
    target = machine(place)
    moved = await run(target, "mv app app2 && cat app2/.env.production; echo moved")
    assert "moved" in moved and "busy" in moved and SECRET not in moved  # pinned: the secret stays put
    assert SECRET not in await run(target, "cat app/.env.production app2/.env.production; echo read")


async def started_before(target: LocalMachine, script: str) -> Callable[[], Awaitable[str]]:
    """A command started now that runs `script` when released (its output then): started
    before a secret was saved, it has no mount over it and may move the folder around it."""
    tmp = target.sandbox.state.private()[0][1]  # the session's /tmp, seen by every command
    os.mkfifo(tmp / "up")
    os.mkfifo(tmp / "go")
    task = asyncio.create_task(run(target, f"echo > /tmp/up; read _ < /tmp/go; {script}"))
    await asyncio.to_thread((tmp / "up").read_text)

    async def release() -> str:
        await asyncio.to_thread((tmp / "go").write_text, "x\n")
        return await task

    return release


def saved(work: Path) -> None:
    (work / "saved").mkdir()
    (work / "saved" / ".env").write_text(SAVED)


@pytest.mark.parametrize("link", ["saved3", "ABSOLUTE"])
async def test_a_symlink_swapped_in_for_the_folder_does_not_show_the_secret(place, trusted_times, link):
    _, work = place
    target = machine(place)
    pointed = str(work / "saved3") if link == "ABSOLUTE" else link
    release = await started_before(target, f"mv saved saved3 && ln -s {pointed} saved && echo swapped")
    saved(work)
    assert "swapped" in await release() and (work / "saved").is_symlink()
    shown = await run(target, "cat saved/.env saved3/.env; echo read")
    assert "read" in shown and SAVED not in shown


async def test_a_folders_time_set_back_does_not_hide_what_was_moved_into_it(place, trusted_times):
    _, work = place
    target = machine(place)
    release = await started_before(
        target, "touch -r keep stamp && mv saved keep/ && touch -r stamp keep && echo forged"
    )
    saved(work)
    assert "forged" in await release()
    assert SAVED not in await run(target, "cat keep/saved/.env; echo read")


async def test_a_secret_the_person_removed_outside_the_writable_roots_does_not_stop_commands(place):
    home, _ = place
    target = machine(place)
    assert "elsewhere" not in await run(target, f"cat {home}/other/.env; echo first")
    (home / "other" / ".env").unlink()
    assert "second" in await run(target, "echo second")


def test_commands_that_start_together_share_one_check(place, trusted_times, monkeypatch):
    home, work = place
    sandbox = Sandbox(SandboxPolicy(), bubblewrap(), home=home)
    first = sandbox.fresh(work)
    assert first is not None and work / "app" / ".env.production" in first.secrets
    checks: list[int] = []
    index = sandbox._index(work)
    original = index._check
    monkeypatch.setattr(index, "_check", lambda listed: checks.append(1) or original(listed))
    index._checked = float("inf")  # as if a check had begun after these commands asked
    assert sandbox.fresh(work) is first and not checks
    asked = index._checked = 10.0  # a command that asked before the last check began is served by it
    assert sandbox.fresh(work, asked=asked - 1) is first and not checks
    assert sandbox.fresh(work, asked=asked + 1) is first and checks == [1]  # one that asked after is not
    checks.clear()
    index._checked = 0.0
    (work / "keep" / ".env").write_text("TOKEN=new")
    again = sandbox.fresh(work)
    assert checks == [1] and again is not None and work / "keep" / ".env" in again.secrets


def test_a_full_scan_that_lands_after_a_check_does_not_stand_for_the_commands_that_check_served(
    place, trusted_times, monkeypatch
):
    """A full scan lists a folder, a `.env` is saved there, a check finds it, then the scan
    lands with the folder as it listed it: a command that asked before that check began must not
    be handed the scan's older view."""
    home, work = place
    sandbox = Sandbox(SandboxPolicy(), bubblewrap(), home=home)
    index = sandbox._index(work)
    assert sandbox.fresh(work) is not None
    saved = work / "keep" / ".env"
    listed = secret_index._Scan.run
    asked: list[float] = []

    def list_then_save(scan: secret_index._Scan, roots: object) -> secret_index.Found:
        found = listed(scan, roots)
        if asked:  # the check's own scan of new folders
            return found
        saved.write_text("TOKEN=saved-during-the-scan")
        asked.append(time.monotonic())  # a command asks, then a check begins for another
        checked = sandbox.fresh(work)
        assert checked is not None and saved in checked.secrets
        return found

    monkeypatch.setattr(secret_index._Scan, "run", list_then_save)
    index._scan()  # the full scan lands now, after the check
    monkeypatch.setattr(secret_index._Scan, "run", listed)
    later = sandbox.fresh(work, asked=asked[0])
    assert later is not None and saved in later.secrets
