"""edit_file: exact-string replacement on real temporary files, here and over real ssh.

The edit keeps what it does not replace byte for byte (encoding, line endings, mode, owner),
fails without touching the file when the old string is missing or ambiguous, and is held by
the sandbox, the floor and the rules exactly as write_file is.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.events import ToolEnd
from cmdop_tui.config.settings import SandboxPolicy
from cmdop_tui.machines import local_writes
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox import Sandbox, bubblewrap
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.permissions import Permissions, floor_violation
from cmdop_tui.tools.base import ToolContext, ToolResult
from cmdop_tui.tools.edit import EDIT_FILE
from cmdop_tui.tools.outcome import OutcomeKind, ToolOutcome
from cmdop_tui.tools.registry import builtin_tools, declared_tool, preview_tool, run_tool

needs_bwrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")


async def edit(directory: Path, **args: Any) -> ToolResult:
    """edit_file through run_tool (schema checked), in a session working in `directory`."""
    return await run_tool(EDIT_FILE, args, ToolContext(call_id="t", cwd=directory))


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


# --- the edit ----------------------------------------------------------------------------------


async def test_one_match_is_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    result = await edit(tmp_path, path="app.py", old_string="    return 2", new_string="    return 3")
    assert not result.is_error, result.content
    assert result.content == f"edited {tmp_path / 'app.py'}: replaced 1 occurrence (line 6)"
    assert (tmp_path / "app.py").read_text() == "def f():\n    return 1\n\n\ndef g():\n    return 3\n"


async def test_no_match_says_so_and_leaves_the_file(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("alpha\n    beta gamma delta\n")
    before = snapshot(target)
    result = await edit(tmp_path, path="a.txt", old_string="omega", new_string="x")
    assert result.is_error and f"old_string was not found in {target}; the file was not changed" in result.content
    hinted = await edit(tmp_path, path="a.txt", old_string="beta gamma delta\n  zeta", new_string="x")
    assert hinted.is_error and "first line appears at line 2" in hinted.content
    numbered = await edit(tmp_path, path="a.txt", old_string="     1\talpha", new_string="x")
    assert numbered.is_error and "line numbers" in numbered.content
    assert snapshot(target) == before


async def test_several_matches_say_how_many_and_where(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    before = snapshot(target)
    result = await edit(tmp_path, path="a.txt", old_string="x = 1", new_string="x = 2")
    assert result.is_error
    assert f"old_string matches 3 times in {target} (at lines 1, 3, 5)" in result.content
    assert "replace_all" in result.content
    assert snapshot(target) == before
    overlapping = await edit(tmp_path, path="a.txt", old_string="\n", new_string="\r")
    assert overlapping.is_error and "matches 5 times" in overlapping.content


async def test_replace_all_replaces_every_one(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x = 1\ny = 2\nx = 1\n")
    result = await edit(tmp_path, path="a.txt", old_string="x = 1", new_string="x = 9", replace_all=True)
    assert result.content == f"edited {target}: replaced 2 occurrences (lines 1, 3)"
    assert target.read_text() == "x = 9\ny = 2\nx = 9\n"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("", "x", "old_string is empty"),
        ("same", "same", "old_string and new_string are the same"),
    ],
)
async def test_an_edit_that_means_nothing_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    target = tmp_path / "a.txt"
    target.write_text("same\n")
    result = await edit(tmp_path, path="a.txt", old_string=old, new_string=new)
    assert result.is_error and message in result.content and target.read_text() == "same\n"


async def test_invalid_input_is_explained(tmp_path: Path) -> None:
    result = await edit(tmp_path, path="a.txt", old_string="x")
    assert result.is_error and "missing required field 'new_string'" in result.content
    result = await edit(tmp_path, path="a.txt", old_string="x", new_string="y", replace_all="yes")
    assert result.is_error and "'replace_all' must be a boolean" in result.content


async def test_crlf_files_stay_crlf(tmp_path: Path) -> None:
    target = tmp_path / "win.ini"
    target.write_bytes(b"[a]\r\nkey=1\r\nother=2\r\n")
    result = await edit(tmp_path, path="win.ini", old_string="[a]\nkey=1\n", new_string="[a]\nkey=2\nnew=3\n")
    assert not result.is_error, result.content
    assert target.read_bytes() == b"[a]\r\nkey=2\r\nnew=3\r\nother=2\r\n"
    mixed = tmp_path / "mixed.txt"  # mostly CRLF, one LF ending: matched as it came, kept as it was
    mixed.write_bytes(b"a\r\nb\r\nc\nd\r\ne\r\n")
    result = await edit(tmp_path, path="mixed.txt", old_string="c\nd", new_string="C\nD")
    assert not result.is_error, result.content
    assert mixed.read_bytes() == b"a\r\nb\r\nC\nD\r\ne\r\n"


async def test_bom_and_latin_1_round_trip_byte_exact(tmp_path: Path) -> None:
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9 = 1\nthe end\n")
    assert not (await edit(tmp_path, path="bom.txt", old_string="café = 1", new_string="café = 2")).is_error
    assert bom.read_bytes() == b"\xef\xbb\xbfcaf\xc3\xa9 = 2\nthe end\n"
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"na\xefve \xa9 1999\nr\xe9sum\xe9\n")
    assert not (await edit(tmp_path, path="latin.txt", old_string="résumé", new_string="curriculum")).is_error
    assert latin.read_bytes() == b"na\xefve \xa9 1999\ncurriculum\n"
    before = snapshot(latin)
    refused = await edit(tmp_path, path="latin.txt", old_string="curriculum", new_string="€uro")
    assert refused.is_error and "Latin-1" in refused.content and snapshot(latin) == before


async def test_mode_and_owner_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o754)
    if os.geteuid() == 0:  # only root can give a file away, and so only root keeps another's owner
        os.chown(target, 4321, 4322)
    assert not (await edit(tmp_path, path="run.sh", old_string="old", new_string="new")).is_error
    info = target.stat()
    assert stat.S_IMODE(info.st_mode) == 0o754 and target.read_text() == "echo new\n"
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (4321, 4322)


async def test_through_a_symlink_the_target_is_edited(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    (tmp_path / "link.txt").symlink_to(real)
    assert not (await edit(tmp_path, path="link.txt", old_string="old", new_string="new")).is_error
    assert (tmp_path / "link.txt").is_symlink() and real.read_text() == "new\n"


async def test_a_failed_write_leaves_the_file_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.txt"
    target.write_text("keep me\n")

    def broken_rename(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device", dst)

    monkeypatch.setattr(local_writes.os, "replace", broken_rename)
    result = await edit(tmp_path, path="a.txt", old_string="keep", new_string="lose")
    assert result.is_error and "No space left on device" in result.content
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no temp file left behind


async def test_a_file_changed_meanwhile_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.txt"
    target.write_text("one\n")
    real_apply = local_writes.apply_edit

    def racing(*args: Any, **kwargs: Any) -> Any:
        target.write_text("someone else's words\n")  # another writer, between the read and the rename
        return real_apply(*args, **kwargs)

    monkeypatch.setattr(local_writes, "apply_edit", racing)
    result = await edit(tmp_path, path="a.txt", old_string="one", new_string="two")
    assert result.is_error and "changed while it was being edited" in result.content
    assert target.read_text() == "someone else's words\n"


async def test_binary_missing_and_odd_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x7fELF\x00\x01old")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "fifo")
    cases = {
        "bin": "binary file (9 bytes); edit_file edits text files only",
        "missing.txt": "missing.txt; edit_file changes an existing file (write_file creates one)",
        "d": "is a directory",
        "fifo": "not a regular file",
    }
    for name, message in cases.items():
        result = await edit(tmp_path, path=name, old_string="old", new_string="new")
        assert result.is_error and message in result.content, (name, result.content)
    assert (tmp_path / "bin").read_bytes() == b"\x7fELF\x00\x01old"


async def test_messages_are_inert(tmp_path: Path) -> None:
    name = "evil\x1b]52;c;aGk=\x07.txt"
    (tmp_path / name).write_text("a\na\n")
    result = await edit(tmp_path, path=name, old_string="a", new_string="\x1b[31mb")
    assert result.is_error and "\x1b" not in result.content and "\x07" not in result.content


# --- the sandbox, the floor, the rules ------------------------------------------------------


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    (work / ".env").write_text("TOKEN=secret\n")
    (work / "notes.txt").write_text("draft\n")
    return home, work


def sandboxed(place: tuple[Path, Path], **policy: Any) -> LocalMachine:
    home, work = place
    return LocalMachine(work, sandbox=Sandbox(SandboxPolicy(**policy), bubblewrap(), home=home))


@needs_bwrap
async def test_the_sandbox_holds_edits_as_it_holds_writes(place: tuple[Path, Path]) -> None:
    home, work = place
    target = sandboxed(place, mode="strict")  # writable: the working directory only
    assert not (await target.edit_file("notes.txt", "draft", "final")).is_error
    assert (work / "notes.txt").read_text() == "final\n"
    hidden = await target.edit_file(".env", "secret", "x")
    assert hidden.is_error and "hidden by the sandbox" in hidden.text and hidden.sandbox_denied is None
    outside = home / "outside.txt"  # in the home, out of the workspace (not in /tmp: that is private)
    outside.write_text("draft\n")
    refused = await target.edit_file(str(outside), "draft", "final")
    assert refused.is_error and refused.sandbox_denied.needs == f"write {outside}"
    assert outside.read_text() == "draft\n"
    assert not (await target.edit_file(str(outside), "draft", "final", sandboxed=False)).is_error
    assert outside.read_text() == "final\n"


@needs_bwrap
@pytest.mark.parametrize("allowed", [True, False])
async def test_leaving_the_sandbox_takes_the_users_word(place: tuple[Path, Path], allowed: bool) -> None:
    home, work = place
    outside = home / "outside.txt"
    outside.write_text("draft\n")
    asked: list[str] = []

    async def escalate(needs: SandboxRefusal) -> ToolOutcome | None:
        asked.append(needs.needs)
        return None if allowed else ToolOutcome(OutcomeKind.DENIED, "not today")

    fleet = Fleet(Inventory.load((), None), sandbox=Sandbox(SandboxPolicy(mode="strict"), bubblewrap(), home=home))
    ctx = ToolContext(call_id="t", cwd=work, machines=fleet, escalate=escalate)
    result = await run_tool(EDIT_FILE, {"path": str(outside), "old_string": "draft", "new_string": "final"}, ctx)
    assert asked == [f"write {outside}"]
    assert result.is_error is not allowed
    assert outside.read_text() == ("final\n" if allowed else "draft\n")
    if not allowed:
        assert "did not allow it outside the sandbox: not today" in result.content
        assert result.settled.kind is OutcomeKind.REFUSED_BY_SANDBOX and "not today" in result.settled.reason


def edit_args(path: str) -> dict[str, str]:
    return {"path": path, "old_string": "a", "new_string": "b"}


WRITES_REFUSED = [
    "~/.ssh/authorized_keys",
    "~/.ssh/id_ed25519",
    "~/.bashrc",
    "$HOME/.profile",
    "/etc/shadow",
    "/etc/sudoers",
    "/etc/crontab",
    "/etc/profile.d/x.sh",
    "~/.config/systemd/user/x.service",
    "/srv/app/.env",
    "/dev/sda",
]


@pytest.mark.parametrize("path", WRITES_REFUSED)
def test_the_floor_refuses_edits_it_refuses_as_writes(path: str) -> None:
    written = floor_violation("write_file", {"path": path, "content": "b"})
    edited = floor_violation("edit_file", edit_args(path))
    assert written is not None and edited is not None
    assert edited == written.replace("write_file", "edit_file")


@pytest.mark.parametrize("path", ["notes.txt", "/srv/app/main.py", "~/.ssh/known_hosts", "/etc/nginx/nginx.conf"])
def test_the_floor_lets_ordinary_edits_through(path: str) -> None:
    assert floor_violation("write_file", {"path": path, "content": "b"}) is None
    assert floor_violation("edit_file", edit_args(path)) is None


def test_edit_file_is_declared_a_write(tmp_path: Path) -> None:
    assert [tool.name for tool in builtin_tools()][3:5] == ["write_file", "edit_file"]
    declared = declared_tool("edit_file")
    assert declared is EDIT_FILE and declared.mutating and declared.tags == declared_tool("write_file").tags
    perms = Permissions.load(tmp_path / "p.toml", "default", audit_path=tmp_path / "audit.jsonl")
    assert perms.decide("edit_file", edit_args("notes.txt")).verdict == "ask"
    perms.add_rule("edit_file(/etc/**)", "deny")
    perms.add_rule("edit_file(/srv/**)", "allow")
    assert perms.decide("edit_file", edit_args("/etc/nginx/nginx.conf")).verdict == "deny"
    assert perms.decide("edit_file", edit_args("/srv/app/main.py")).verdict == "allow"
    assert perms.decide("write_file", {"path": "/srv/app/main.py", "content": ""}).verdict == "ask"
    rule = perms.allow_always("edit_file", edit_args("/opt/app/conf.py"), "local", session=True)
    assert rule.text == "local:edit_file(/opt/app/**)"
    assert (
        Permissions.load(tmp_path / "q.toml", "strict", audit=False).decide("edit_file", edit_args("x")).verdict
        == "deny"
    )


# --- through the agent loop ---------------------------------------------------------------------


async def test_the_model_edits_a_file_through_the_loop(fake_api, tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(b"[server]\r\nport = 80\r\n")
    fake_api.enqueue(
        tool_reply("edit_file", {"path": str(target), "old_string": "port = 80", "new_string": "port = 8080"}),
        tool_reply("edit_file", {"path": str(target), "old_string": "port = 80\n", "new_string": "x"}),
        text_reply("Changed the port."),
    )
    runner, events = make_runner(fake_api, cwd=tmp_path), Recorder()
    result = await runner.run("use port 8080", events)
    assert result.status == "final"
    assert "edit_file" in [tool["name"] for tool in fake_api.requests[0].body["tools"]]
    ends = events.of(ToolEnd)
    assert [end.is_error for end in ends] == [False, True]
    assert "replaced 1 occurrence (line 2)" in ends[0].output
    assert "old_string was not found" in ends[1].output
    assert target.read_bytes() == b"[server]\r\nport = 8080\r\n"


# --- over ssh -----------------------------------------------------------------------------------


@pytest.fixture
async def remote(ssh_hosts):
    lab = ssh_hosts(1)
    fleet = Fleet(Inventory.load((), lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


@pytest.fixture
def remote_dir() -> Iterator[Path]:
    """A folder in the remote machine's workspace (the "remote" is this host, with our home:
    its sandbox lets a write land there, and its /tmp is the session's own)."""
    folder = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local/share/cmdop-tui-workspace" / f"remote dir {os.getpid()}"
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


async def test_a_remote_edit_keeps_bytes_mode_and_refuses_like_a_local_one(
    remote: Fleet, tmp_path: Path, remote_dir: Path
) -> None:
    ctx = ToolContext(call_id="t", cwd=tmp_path, machines=remote)
    target = remote_dir / "site.conf"  # check the effect here
    target.write_bytes(b"\xef\xbb\xbflisten 80;\r\nroot /srv;\r\nlisten 80;\r\n")
    target.chmod(0o640)
    on = {"path": f"{remote_dir.name}/site.conf", "machine": "alpha"}
    several = await run_tool(EDIT_FILE, {**on, "old_string": "listen 80;", "new_string": "listen 81;"}, ctx)
    assert several.is_error and "matches 2 times" in several.content
    edited = await run_tool(
        EDIT_FILE, {**on, "old_string": "listen 80;\nroot", "new_string": "listen 8080;\nroot"}, ctx
    )
    assert not edited.is_error and edited.content.endswith("(line 1) on alpha"), edited.content
    assert target.read_bytes() == b"\xef\xbb\xbflisten 8080;\r\nroot /srv;\r\nlisten 80;\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["site.conf"]
    preview = await preview_tool(EDIT_FILE, {**on, "old_string": "root /srv", "new_string": "root /var/www"}, ctx)
    assert preview is not None and "-root /srv;\n+root /var/www;" in preview
    missing = await run_tool(EDIT_FILE, {**on, "path": "~/no-such-file", "old_string": "a", "new_string": "b"}, ctx)
    assert missing.is_error and "no such file on alpha: ~/no-such-file" in missing.content
