"""A home with thousands of secrets: bubblewrap hides a file by a bind of /dev/null, each of which
costs it a pass over its mount table (1,000 took 1.3 s a command; past 3,000 it refused the
command line, so no command ran at all). Past FILE_MOUNTS secret files outside the writable roots,
the folders that hold them are hidden whole (cheap empty folders), never one a command works
from; every secret stays hidden."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cmdop_tui.machines import bubblewrap as bwrap
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy, bubblewrap

MANY = 3_100


def projects(home: Path, count: int) -> list[Path]:
    """`count` projects in the home, each with its `.env` beside its code."""
    made = []
    for n in range(count):
        project = home / "projects" / f"p{n // 100:03d}" / f"app{n % 100:02d}"
        project.mkdir(parents=True)
        (project / ".env").write_text(f"TOKEN=project-{n}")
        (project / "main.py").write_text("print('hi')")
        made.append(project)
    return made


def test_past_the_limit_the_folders_of_secrets_outside_are_hidden_whole_but_none_a_command_works_from(tmp_path):
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    work.mkdir(parents=True)
    made = projects(home, bwrap.FILE_MOUNTS + 1)
    beside_home, beside_work = home / ".env", tmp_path / ".env.local"
    beside_home.write_text("TOKEN=home")
    beside_work.write_text("TOKEN=around")
    hidden = (*(project / ".env" for project in made), beside_home, beside_work)
    layout = bwrap.Layout(writable=(work,), hidden=hidden, homes=(home,), filtered=False)
    args = bwrap.arguments(layout, work)
    emptied = {args[i + 1] for i, arg in enumerate(args) if arg == "--tmpfs"}
    bound = {args[i + 2] for i, arg in enumerate(args) if arg == "--ro-bind" and args[i + 1] == "/dev/null"}
    assert {str(project) for project in made} <= emptied
    assert bound == {str(beside_home), str(beside_work)}  # the home and the folder around the work: never whole
    assert not emptied & {str(home), str(tmp_path), str(work), "/"}


def test_under_the_limit_each_secret_is_hidden_by_itself(tmp_path):
    home = tmp_path / "home"
    made = projects(home, 3)
    layout = bwrap.Layout(writable=(tmp_path / "work",), hidden=tuple(p / ".env" for p in made), homes=(home,))
    args = bwrap.arguments(layout, tmp_path)
    assert args.count("/dev/null") == 3 and not any(str(p) == a for p in made for a in args)


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_with_thousands_of_secrets_commands_run_and_read_none_of_them(tmp_path):
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    work.mkdir(parents=True)
    made = projects(home, MANY)
    target = LocalMachine(work, sandbox=Sandbox(SandboxPolicy(), bubblewrap(), home=home))
    some = " ".join(str(made[n] / ".env") for n in (0, 1_234, MANY - 1))
    result = await target.run_command(
        f"cat {some}; echo made > here.txt && cat here.txt",
        cwd=None,
        timeout_ms=60_000,
        progress=lambda text, stream: None,
        output_limit=8_000,
    )
    assert "exit code" in result.text and "made" in result.text, result.text  # it ran (bubblewrap refused it before)
    assert "TOKEN=project" not in result.text
    assert (work / "here.txt").read_text() == "made\n"
    shutil.rmtree(made[5])  # a folder the plan emptied, gone before the next command: it still runs
    again = await target.run_command(
        f"cat {made[6] / '.env'}; echo again",
        cwd=None,
        timeout_ms=60_000,
        progress=lambda t, s: None,
        output_limit=8_000,
    )
    assert "again" in again.text and "TOKEN=project" not in again.text, again.text
