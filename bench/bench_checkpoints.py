"""Figures for checkpoints and /rewind (issue: every change can be undone).

Run: .venv/bin/python bench/bench_checkpoints.py   (needs git and openssh-server; .ci/run installs them)

1. Checkpoint cost per turn on a 10,000-file working tree, on this machine: the first checkpoint
   (the shadow repository made: every file hashed once) reported; then the median over 20 turns
   that each change a few files, of the checkpoint taken before the turn's first change and of
   the one after its end. Target: <= 50 ms median after the first.
2. The same on another machine over a warm connection (a real sshd here, its own home): target
   <= 150 ms.
3. Rewind correctness: a scripted session of 20 turns (the fake API plays the model) mixing
   edit_file, write_file and shell edits (sed -i, rm, mv, new files, a file made executable, one
   made not executable) on this machine and on 2 other machines (run_on_machines too), then a
   rewind to each turn from the last to the first, and the last rewind undone: after each, every
   file of the three trees compared with its state then, bytes and mode. Target: 100 %.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from remote_side import make_home, remove_home, workspace
from sshd import SshLab

from cmdop_tui.machines.shadow_git import ShadowRepo, run_here

TURNS = 20
FILES = 10_000
HOSTS = ("alpha", "bravo")


def isolate() -> Path:
    """A home of the bench's own: checkpoints and transcripts go there, not into the user's."""
    home = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    for name, sub in (("HOME", ""), ("XDG_DATA_HOME", ".local/share"), ("XDG_CONFIG_HOME", ".config")):
        os.environ[name] = str(home / sub)
    return home


def big_tree(root: Path) -> Path:
    for i in range(FILES):
        folder = root / f"pkg{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module{i}.py").write_text(f"VALUE = {i}\n")
    return root


async def checkpoint_costs(
    shadow_factory: Callable[[], ShadowRepo], tree_change: Callable[[int], Awaitable[None]]
) -> tuple[float, list[float], list[float]]:
    """(first, befores, afters) in ms, over TURNS turns that each change a few files."""
    shadow = shadow_factory()
    started = time.perf_counter()
    await shadow.snapshot("bench", "first")
    first = (time.perf_counter() - started) * 1000
    befores, afters = [], []
    for turn in range(TURNS):
        started = time.perf_counter()
        await shadow.snapshot("bench", f"turn {turn} before")
        befores.append((time.perf_counter() - started) * 1000)
        await tree_change(turn)
        started = time.perf_counter()
        await shadow.snapshot("bench", f"turn {turn} after")
        afters.append((time.perf_counter() - started) * 1000)
    return first, befores, afters


def report(where: str, costs: tuple[float, list[float], list[float]], target: int) -> None:
    first, befores, afters = costs
    before, after = statistics.median(befores), statistics.median(afters)
    print(
        f"checkpoint, {FILES} files, {where}: first {first:.0f} ms; then median {before:.1f} ms before a turn's "
        f"first change, {after:.1f} ms after its end  [target <= {target} ms; n={TURNS}]"
    )


async def local_costs(base: Path) -> None:
    tree = big_tree(base / "local-tree")

    async def change(turn: int) -> None:
        (tree / "pkg000" / "module0.py").write_text(f"VALUE = {turn}\n")
        (tree / "pkg001" / f"new{turn}.py").write_text("NEW = 1\n")

    def shadow() -> ShadowRepo:
        return ShadowRepo(run_here, shlex.quote(str(base / "local.git")), shlex.quote(str(tree)))

    report("this machine", await checkpoint_costs(shadow, change), 50)


async def remote_costs(lab: SshLab, home: Path) -> None:
    from cmdop_tui.config.settings import Settings
    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.shadows import shadow_of
    from cmdop_tui.session.inventory import inventory_of

    tree = big_tree(workspace(home))
    machines = inventory_of(Settings(ssh_config=lab.config))
    fleet = Fleet(machines.inventory, machines.options)
    try:
        await fleet.transport(fleet.inventory.resolve("alpha")).run("true")  # the connection warm

        async def change(turn: int) -> None:
            (tree / "pkg000" / "module0.py").write_text(f"VALUE = {turn}\n")  # the host is this machine

        report(
            "another machine, warm connection",
            await checkpoint_costs(lambda: shadow_of(fleet, "alpha", Path.cwd(), Path("/unused"), 10_000_000), change),
            150,
        )
    finally:
        await fleet.close()


if __name__ == "__main__":
    bench_home = isolate()
    from rewind_session import rewind_correctness  # after isolate(): the app's folders are the bench's

    homes = [make_home() for _ in range(2)]
    lab = SshLab(2, host_env=lambda alias: {"HOME": str(homes[HOSTS.index(alias)])})
    try:
        asyncio.run(local_costs(bench_home))
        asyncio.run(remote_costs(lab, homes[0]))
        for home in homes:  # a fresh workspace on each host for the session
            remove_home(home)
            home.mkdir(mode=0o700)
        right, total = asyncio.run(
            rewind_correctness(lab, {n: workspace(h) for n, h in zip(HOSTS, homes, strict=True)}, bench_home)
        )
        print(
            f"rewind correctness, {TURNS} turns on 3 machines: {right}/{total} states exact ({right / total:.0%})  [target 100 %]"
        )
    finally:
        lab.close()
        for home in homes:
            remove_home(home)
