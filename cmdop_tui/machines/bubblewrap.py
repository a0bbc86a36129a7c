"""bubblewrap's command line for one sandboxed command: namespaces, mounts, the filter.

Every command gets, in every mode:

* its own user, PID and IPC namespaces, with no capability at all (as root too:
  `--cap-drop ALL`, so it cannot unmount what hides a secret or remount the home), a fresh /proc
  that shows its own processes only (not the app's environment, not another process's root),
  `--die-with-parent` and `--new-session`; its background jobs end with it;
* the machine read-only (`--ro-bind / /`), a minimal /dev (no disks), an empty /dev/shm and
  /run (no runtime sockets: the user's bus, agents, the app's own), the session's private /tmp
  and /var/tmp (folders of the app's, kept across the session's commands), the writable roots
  bound read-write, protected paths inside them read-only, secrets hidden (an empty folder or
  /dev/null in their place; past FILE_MOUNTS secret files outside the writable roots, the folders
  that hold them emptied whole, for bubblewrap's sake);
* the system-call filter of machines/seccomp.py on fd 3 (no Unix socket, path or abstract);
* the host's network (outbound connections, the host's localhost ports) unless the policy turns
  it off (`--unshare-net`: loopback only).

`arguments(layout, chdir)` is the line; `program()` finds a bubblewrap that can do all of it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.sandbox_view import within

__all__ = ["FILE_MOUNTS", "FILTER_FD", "Layout", "arguments", "program"]

FILTER_FD = 3  # where the command's spawner opens the system-call filter
# A file is hidden by binding /dev/null on it, and each bind costs bubblewrap a pass over its
# whole mount table: 300 take 0.16 s, 1,000 1.3 s, and past 3,000 it refuses the command line
# (9,000 arguments at most); an empty folder (a tmpfs) costs it almost nothing (1,500: 40 ms).
# Past this many files outside the writable roots, their folders are hidden whole instead.
FILE_MOUNTS = 200
# Places the sandbox makes anew: what the host has there is never seen, so nothing is bound there.
FRESH = (Path("/proc"), Path("/dev"), Path("/run"))
_NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-ipc")


@dataclass(frozen=True)
class Layout:
    """What one command may see and touch (absolute real paths; hidden and protected ones exist)."""

    writable: tuple[Path, ...] = ()  # bound read-write where they are
    private: tuple[tuple[Path, Path], ...] = ()  # (where the command sees it, the folder bound there)
    hidden: tuple[Path, ...] = ()  # a folder becomes an empty one, a file /dev/null
    protected: tuple[Path, ...] = ()  # inside the writable roots, bound read-only
    network: bool = True
    filtered: bool = True  # the system-call filter is open as FILTER_FD
    run_kept: tuple[Path, ...] = ()  # under /run, bound back read-only (where /etc/resolv.conf points)
    shared: tuple[Path, ...] = ()  # under a private folder's place, the host's own, read-only (a home in /tmp)
    homes: tuple[Path, ...] = ()  # never hidden whole (see FILE_MOUNTS)


def arguments(layout: Layout, chdir: Path) -> list[str]:
    """bubblewrap's options for `layout`, starting in `chdir` (the command follows them)."""
    args = [*_NAMESPACES, "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    if not layout.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm", "--tmpfs", "/run"]
    for kept in layout.run_kept:
        args += ["--ro-bind-try", str(kept), str(kept)]
    for seen, real in layout.private:  # first: a writable root under /tmp is bound into it after
        args += ["--bind", str(real), str(seen)]
    for path in layout.shared:
        args += ["--ro-bind", str(path), str(path)]
    inside, outside = _split(layout, layout.hidden)
    args += _hiding(_PLANS.plan(layout, outside))
    for root in layout.writable:
        args += ["--bind", str(root), str(root)]
    protected = _split(layout, layout.protected)[0]
    # The folders around a hidden secret are pinned as those around a protected path are: a
    # command moving one would take the secret where no check looks (into a `.git`), or out of
    # the path a command starting beside it is about to hide.
    for folder in _folders_above(layout, [*protected, *inside]):
        args += ["--bind", str(folder), str(folder)]
    for path in protected:
        args += ["--ro-bind", str(path), str(path)]
    args += _hiding((str(path), os.path.isdir(_on_host(layout, path))) for path in inside)
    if layout.filtered:
        args += ["--seccomp", str(FILTER_FD)]
    return [*args, "--chdir", str(chdir)]


def _split(layout: Layout, paths: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """(inside a writable root or a private folder, elsewhere) of `paths`, leaving out what a
    command never sees anyway: the host's own /proc, /dev, /run, /tmp and /var/tmp are replaced.
    What is in a private folder is named where the command sees it (a `.env` a command linked
    to its /tmp's place on the host, which its mount table shows, is hidden at /tmp)."""
    replaced = [*FRESH, *(seen for seen, _ in layout.private)]
    inside: list[Path] = []
    outside: list[Path] = []
    for path in paths:
        private = next((seen / path.relative_to(real) for seen, real in layout.private if within(path, real)), None)
        if private is not None:
            inside.append(private)
        elif any(within(path, root) for root in layout.writable):
            inside.append(path)
        elif any(within(path, root) for root in layout.shared) or not any(within(path, root) for root in replaced):
            outside.append(path)
    return inside, outside


def _on_host(layout: Layout, path: Path) -> Path:
    """Where `path`, a hidden path of `_split`'s inside ones, is on the host: a writable root is
    where the command sees it, a private folder is not."""
    if any(within(path, root) for root in layout.writable):
        return path
    return next((real / path.relative_to(seen) for seen, real in layout.private if within(path, seen)), path)


def _folders_above(layout: Layout, protected: list[Path]) -> list[Path]:
    """The folders between a writable root and a protected or hidden path deeper in it,
    shallowest first. Bound onto themselves they are mount points, which cannot be renamed or
    removed: a command cannot move the folder around a protected file aside and make a new one
    in its place, nor carry a hidden secret elsewhere."""
    folders: set[Path] = set()
    for path in protected:
        for root in layout.writable:  # not the private folders: what is bound here is the host's
            if within(path, root):
                folders.update(parent for parent in path.parents if within(parent, root) and parent != root)
    return sorted(folders, key=lambda folder: len(folder.parts))


def _fewer_mounts(layout: Layout, paths: list[Path]) -> list[tuple[str, bool]]:
    """`paths` (outside the writable roots) to hide, each with whether it is a folder; past
    FILE_MOUNTS files, each file's folder hidden whole in its place: a folder that holds nothing
    a command works from (not `/`, a home, nor one holding a writable root, a private or shared
    place). What lies under another hidden folder is left out. Fail closed: more is hidden,
    never less. Strings, not Paths: a home may hold thousands of secrets, asked per command."""
    kinds = _kinds(paths)
    files = [path for path, is_folder in kinds if not is_folder]
    if len(files) <= FILE_MOUNTS:
        return kinds
    kept = {"/", *map(str, layout.homes)}
    for place in (*layout.writable, *layout.shared, *(p for pair in layout.private for p in pair)):
        kept.update((str(place), *map(str, place.parents)))
    folders = {path for path, is_folder in kinds if is_folder}
    folders.update(parent for path in files if (parent := os.path.dirname(path)) not in kept)
    top: set[str] = set()
    for folder in sorted(folders, key=lambda folder: folder.count("/")):
        if not _below(folder, top):
            top.add(folder)
    return [*((folder, True) for folder in sorted(top)), *((path, False) for path in files if not _below(path, top))]


class _LastPlan:
    """The last hiding plan made, kept: the commands of a session hide the same secrets, found
    by the same scan, until the next one (the same Path objects: the key compares at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[object, ...] = ()
        self._plan: list[tuple[str, bool]] = []

    def plan(self, layout: Layout, outside: list[Path]) -> list[tuple[str, bool]]:
        key = (layout.writable, layout.shared, layout.private, layout.homes, tuple(outside))
        with self._lock:
            if key == self._key:
                return self._plan
        plan = _fewer_mounts(layout, outside)
        with self._lock:
            self._key, self._plan = key, plan
        return plan


_PLANS = _LastPlan()


def _below(path: str, folders: set[str]) -> bool:
    """Whether a folder of `folders` holds `path` (absolute, real)."""
    while (path := os.path.dirname(path)) != "/":
        if path in folders:
            return True
    return False


def _kinds(paths: Iterable[Path]) -> list[tuple[str, bool]]:
    """Each path, and whether it is a folder."""
    return [(str(path), os.path.isdir(path)) for path in paths]


def _hiding(paths: Iterable[tuple[str, bool]]) -> list[str]:
    """An empty folder over each folder, /dev/null over each file."""
    args: list[str] = []
    for path, is_folder in paths:
        args += ["--tmpfs", path] if is_folder else ["--ro-bind", "/dev/null", path]
    return args


@functools.cache
def program() -> str | None:
    """The bwrap program, if it is installed and can make every namespace the sandbox uses here
    (checked once)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = [found, *_NAMESPACES, "--cap-drop", "ALL", "--die-with-parent", "--ro-bind", "/", "/"]
    probe += ["--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False, env=dict(os.environ))
    except (OSError, subprocess.SubprocessError):
        return None
    return found if done.returncode == 0 else None
