"""A symlink flipped between two steps of a file tool, and during its calls, changes nothing.

First at exact points (the link is flipped from inside the operation, after it opened the path
and before it reads or writes): what was opened is what is used. Then as an attacker would: a
process swaps a link between a harmless target and a secret (or ~/.profile) in a tight bounded
loop while the tools run a few hundred times; the secret is never read, the profile never
changed (the flipper is a process of its own: truly at the same time). Each runs with openat2
and with the walk older kernels get.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cmdop_tui.machines import local_files, local_rules, local_writes
from cmdop_tui.machines.local_fs import LocalFiles
from cmdop_tui.machines.sandbox_view import SandboxView

SECRET = "SECRET-MARKER-93c2"
SECRET_NAME = "secret-name-41b7"
PROFILE = "# the original profile\n"
CALLS = 300  # rounds of calls at least
FLIPS = 2_000  # the link flips this many times, then stops


@pytest.fixture
def place(tmp_path: Path, opener: str) -> tuple[Path, Path, LocalFiles]:
    """A home with a hidden folder holding a secret, a profile, and a workspace in it."""
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "key").write_text(f"{SECRET}\n")
    (home / ".ssh" / SECRET_NAME).write_text(f"{SECRET}\n")
    (home / ".profile").write_text(PROFILE)
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "key").write_text("harmless\n")
    (work / "harmless.txt").write_text("harmless\n")
    view = SandboxView(True, writable=(work,), hidden=(home / ".ssh",))
    return home, work, LocalFiles(work, view)


def flip(link: Path, target: str) -> None:
    """Point `link` at `target` in one step (a new link renamed over it)."""
    spare = link.with_name(f".{link.name}.flip")
    os.symlink(target, spare)
    os.replace(spare, link)


def flipping_at(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, link: Path, target: str) -> list[int]:
    """Make `module.name` flip `link` to `target` the first time it is called; returns a list
    that says how many times it flipped (so the test knows the point was reached)."""
    real = getattr(module, name)
    flipped: list[int] = []

    def flipping(*args: Any, **kwargs: Any) -> Any:
        if not flipped:
            flip(link, target)
            flipped.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, flipping)
    return flipped


# --- at exact points ------------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["real_path", "reopen"])
async def test_a_read_uses_what_it_opened(place, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    home, work, files = place
    (work / "link").symlink_to("harmless.txt")
    module = local_rules if point == "real_path" else local_files
    flipped = flipping_at(monkeypatch, module, point, work / "link", str(home / ".ssh" / "key"))
    result = await files.read_file("link")
    assert flipped and result.text == "     1\tharmless"  # opened while harmless: that file is read


async def test_a_read_is_judged_on_what_it_opened(place, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, files = place
    (work / "link").symlink_to(home / ".ssh" / "key")
    flipped = flipping_at(monkeypatch, local_rules, "real_path", work / "link", "harmless.txt")
    result = await files.read_file("link")
    assert flipped and result.is_error and "hidden by the sandbox" in result.text


async def test_grep_and_glob_list_what_they_opened(place, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, files = place
    (work / "dir").symlink_to("sub")
    flipped = flipping_at(monkeypatch, local_rules, "real_path", work / "dir", str(home / ".ssh"))
    searched = (await files.grep(".", path="dir")).text
    assert flipped and searched == "key:1:harmless"
    (work / "dir").unlink()
    (work / "dir").symlink_to("sub")
    monkeypatch.undo()
    flipped = flipping_at(monkeypatch, local_files, "reopen", work / "dir", str(home / ".ssh"))
    listed = (await files.list_dir("dir")).text
    assert flipped and "key  (9 bytes)" in listed and SECRET_NAME not in listed


async def test_a_write_goes_where_it_was_judged_to_go(place, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, files = place
    (work / "link").symlink_to("harmless.txt")
    flipped = flipping_at(monkeypatch, local_writes, "_temp_file", work / "link", str(home / ".profile"))
    assert not (await files.write_file("link", "written\n")).is_error and flipped
    assert (home / ".profile").read_text() == PROFILE and (work / "harmless.txt").read_text() == "written\n"


async def test_a_folder_swapped_after_it_was_judged_is_not_written(place, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, files = place
    (work / "dir").symlink_to("sub")
    flipped = flipping_at(monkeypatch, local_writes, "_temp_file", work / "dir", str(home))
    assert not (await files.write_file("dir/.profile", "written\n")).is_error and flipped
    assert (home / ".profile").read_text() == PROFILE and (work / "sub" / ".profile").read_text() == "written\n"


async def test_an_edit_replaces_only_the_file_it_read(place, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, files = place
    (work / "link").symlink_to("harmless.txt")
    flipped = flipping_at(monkeypatch, local_writes, "apply_edit", work / "link", str(home / ".profile"))
    assert not (await files.edit_file("link", "harmless", "edited")).is_error and flipped
    assert (home / ".profile").read_text() == PROFILE and (work / "harmless.txt").read_text() == "edited\n"


# --- during the calls ----------------------------------------------------------------------------


# The flipper runs in a process of its own, so it flips truly at the same time as the tools
# (a thread would wait for the interpreter's lock). It flips FLIPS times, then ends.
FLIPPER = r"""
import os, sys
link, targets, flips = sys.argv[1], sys.argv[2:4], int(sys.argv[4])
spares = [os.path.join(os.path.dirname(link), f".{os.path.basename(link)}.{n}") for n in (0, 1)]
for flip in range(flips):
    os.symlink(targets[flip % 2], spares[flip % 2])
    os.replace(spares[flip % 2], link)
    if flip == 0:
        print("started", flush=True)
print(flips, flush=True)
"""


class Flipper:
    """A process that points a link at one target, then the other, FLIPS times, as fast as it can."""

    def __init__(self, link: Path, targets: tuple[str, str]) -> None:
        self.argv = [sys.executable, "-c", FLIPPER, str(link), *targets, str(FLIPS)]

    def __enter__(self) -> Flipper:
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline() == "started\n"
        return self

    @property
    def flipping(self) -> bool:
        return self.process.poll() is None

    def __exit__(self, *exc: object) -> None:
        try:
            out, _ = self.process.communicate(timeout=60)
            assert self.process.returncode == 0 and out.strip() == str(FLIPS)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


Call = Callable[[], Any]


async def run_flipping(link: Path, targets: tuple[str, str], calls: list[Call]) -> list[str]:
    """Every call, at least CALLS times and for as long as `link` flips between `targets`;
    what they answered."""
    answers: list[str] = []
    with Flipper(link, targets) as flipper:
        rounds = 0
        while rounds < CALLS or flipper.flipping:
            for call in calls:
                answers.append(str(await call()))
            rounds += 1
    return answers


async def test_reads_never_see_the_secret_while_a_link_flips(place) -> None:
    home, work, files = place
    link = work / "link"
    answers = await run_flipping(
        link,
        ("harmless.txt", str(home / ".ssh" / "key")),
        [
            lambda: files.read_file("link"),
            lambda: files.read_bytes("link", max_bytes=1024),
            lambda: files.grep(".", path="link"),
        ],
    )
    assert not [answer for answer in answers if SECRET in answer]
    assert all("harmless" in answer or "hidden by the sandbox" in answer for answer in answers)


async def test_listings_never_name_the_hidden_while_a_folder_flips(place) -> None:
    home, work, files = place
    answers = await run_flipping(
        work / "dir",
        ("sub", str(home / ".ssh")),
        [
            lambda: files.list_dir("dir"),
            lambda: files.glob("*", cwd="dir"),
            lambda: files.glob("dir/*", cwd="."),
            lambda: files.grep(".", path="dir"),
            lambda: files.grep(".", path="."),
        ],
    )
    assert not [answer for answer in answers if SECRET in answer or SECRET_NAME in answer]


async def test_writes_never_reach_the_profile_while_a_link_flips(place) -> None:
    home, work, files = place
    (work / "harmless.txt").write_text("x\n")
    answers = await run_flipping(
        work / "link",
        ("harmless.txt", str(home / ".profile")),
        [
            lambda: files.write_file("link", "x\n"),
            lambda: files.edit_file("link", "x", "y"),
            lambda: files.edit_file("link", "y", "x"),
        ],
    )
    assert (home / ".profile").read_text() == PROFILE
    expected = ("wrote 2 bytes", "edited", "outside the sandbox's writable places", "was not found", "changed while")
    assert all(any(kind in answer for kind in expected) for answer in answers), set(answers)


async def test_writes_never_reach_the_home_while_a_folder_flips(place) -> None:
    home, work, files = place
    await run_flipping(
        work / "dir",
        ("sub", str(home)),
        [lambda: files.write_file("dir/.profile", "pwned\n"), lambda: files.write_file("dir/new/x", "pwned\n")],
    )
    assert (home / ".profile").read_text() == PROFILE and not (home / "new").exists()
    assert sorted(os.listdir(home)) == [".profile", ".ssh", "work"]
