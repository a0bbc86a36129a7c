"""The local file tools held to the sandbox by descriptors: what it costs a call (limit: 5 ms more
than before, median).

Run: .venv/bin/python bench/bench_file_tools.py [directory]

A small workspace (a few hundred files in a few dozen folders, a `.git` folder, `.env` files) in
a throwaway home holding every credential store of secret_kinds.py, so the view hides as many
paths as a real one. read_file, write_file, edit_file, grep and glob run through `LocalFiles` as
a session calls them (the worker thread included), each RUNS times, in three ways:

* before: the file tools as they were before they opened paths by descriptor (checked by name,
  then opened again; taken from git at BEFORE), with the same confining view;
* unconfined: today's code with a view that holds no rule (the sandbox off);
* confined: today's code with the confining view.

The figure is confined minus before, per tool (and, for what the rules cost at all, confined minus
unconfined). Writes fsync, so their times follow the disk.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from cmdop_tui.machines.local_fs import LocalFiles
from cmdop_tui.machines.sandbox_view import SandboxView
from cmdop_tui.support.secret_kinds import HOME_STORES, XDG_STORES

BEFORE = "993c15c"  # the last commit whose file tools checked a name, then opened it again
RUNS = 200
LIMIT_MS = 5.0
ROOT = Path(__file__).resolve().parent.parent


def make_world(directory: Path) -> tuple[Path, SandboxView]:
    """A home full of credential stores and a small workspace in it; the view that confines it."""
    home, work = directory / "home", directory / "home" / "work"
    stores = [home / relative for relative in HOME_STORES] + [home / ".config" / path for path in XDG_STORES]
    for store in stores:
        store.mkdir(parents=True, exist_ok=True)
    for folder in range(30):
        below = work / "src" / f"pkg{folder // 6}" / f"mod{folder}"
        below.mkdir(parents=True)
        for file in range(10):
            (below / f"file{file}.py").write_text(f"import os\n# TODO {folder} {file}\nVALUE = {file}\n" * 20)
    (work / ".git" / "objects").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    (work / "src" / ".env").write_text("TOKEN=secret\n")
    (work / "notes.txt").write_text("alpha\n" * 200)
    view = SandboxView(True, writable=(work, directory / "tmp"), hidden=tuple(stores))
    return work, view


def before_module(directory: Path) -> type[LocalFiles] | None:
    """`LocalFiles` as it was at BEFORE, loaded beside today's code (None without git)."""
    sources = {}
    for name in ("local_files", "local_fs"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BEFORE}:cmdop_tui/machines/{name}.py"],
            capture_output=True,
            text=True,
            check=False,
        )
        if shown.returncode != 0:
            return None
        sources[name] = shown.stdout
    sources["local_fs"] = sources["local_fs"].replace(
        "from cmdop_tui.machines import local_files", "import bench_before_local_files as local_files"
    )
    modules: dict[str, ModuleType] = {}
    for name, text in sources.items():
        path = directory / f"bench_before_{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"bench_before_{name}", path)
        assert spec is not None and spec.loader is not None
        modules[name] = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = modules[name]
        spec.loader.exec_module(modules[name])
    before: type[LocalFiles] = modules["local_fs"].LocalFiles
    return before


Call = Callable[[Any], Awaitable[Any]]
CALLS: dict[str, Call] = {
    "read_file": lambda files: files.read_file("src/pkg0/mod0/file0.py"),
    "write_file": lambda files: files.write_file("out/written.txt", "written\n" * 50),
    "edit_file": lambda files: files.edit_file("notes.txt", "alpha", "beta", replace_all=True),
    "grep": lambda files: files.grep("TODO 7 ", path="src"),
    "glob": lambda files: files.glob("**/*.py", cwd="src"),
}


async def median_ms(files: Any, name: str, work: Path) -> float:
    """The median time of RUNS calls of the tool `name` (before each edit, the file is put back)."""
    times = []
    for _ in range(RUNS):
        if name == "edit_file":
            (work / "notes.txt").write_text("alpha\n" * 200)
        started = time.perf_counter()
        result = await CALLS[name](files)
        times.append(time.perf_counter() - started)
        assert not result.is_error, result.text
    return statistics.median(times) * 1000


async def measure(directory: Path) -> dict[str, dict[str, float]]:
    work, view = make_world(directory)
    ways: dict[str, Any] = {"unconfined": LocalFiles(work, SandboxView()), "confined": LocalFiles(work, view)}
    before = before_module(directory)
    if before is not None:
        ways = {"before": before(work, view), **ways}
    return {way: {name: await median_ms(files, name, work) for name in CALLS} for way, files in ways.items()}


def main() -> None:
    parent = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory(prefix="cmdop-bench-files-", dir=parent) as directory:
        figures = asyncio.run(measure(Path(directory)))
    ways = list(figures)
    print(f"the local file tools, median of {RUNS} calls each, in ms (a 300-file workspace, a full home)")
    print(f"  {'tool':<11}" + "".join(f"{way:>12}" for way in ways) + f"{'vs before':>12}{'vs bare':>10}")
    against = "before" if "before" in figures else "unconfined"
    added = {name: figures["confined"][name] - figures[against][name] for name in CALLS}
    for name in CALLS:
        bare = figures["confined"][name] - figures["unconfined"][name]
        shown = "".join(f"{figures[way][name]:>12.3f}" for way in ways)
        print(f"  {name:<11}{shown}{added[name]:>+12.3f}{bare:>+10.3f}")
    worst = max(added.values())
    verdict = "within" if worst <= LIMIT_MS else "OVER"
    print(f"  most added per call, confined against {against}: {worst:+.3f} ms: {verdict} {LIMIT_MS:.0f} ms")


if __name__ == "__main__":
    main()
