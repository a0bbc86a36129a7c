"""The files of a working tree, listed for `@` completion in the prompt: what git would show.

In a git repository the list is git's own: `git ls-files -co --exclude-standard` (tracked files
and untracked ones that no `.gitignore`, `.git/info/exclude` or global exclude hides), which reads
the index and is fast on 100,000 files. Elsewhere a walk lists the tree, skipping the usual heavy
folders (`SKIPPED`) and honouring each folder's `.gitignore` as git reads one for the common
cases: names and globs (`*.log`), `dir/` for folders only, a leading or inner `/` anchoring the
pattern to that folder, `**`, and `!` to take a pattern back. Not covered there: a negation
reviving a file inside an ignored folder (git cannot either), global excludes, and escapes.

Files whose name makes them a secret (`.env`, SSH keys: support/secret_kinds.py) are left out:
nothing would attach them. At most `MAX_FILES` are listed.

`PathIndex` builds the list in a worker thread the first time it is asked (git's tracked files
first, shown at once; then its untracked ones, which take a walk of the tree); `refresh()` lists
again in the background (the old list answers meanwhile).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.support.fuzzy import FuzzyPaths, shallowest
from cmdop_tui.support.secret_kinds import secret_name

__all__ = ["MAX_FILES", "SKIPPED", "PathIndex", "RemoteIndex", "list_tree"]

MAX_FILES = 200_000
SECRET_STARTS = (".env", "id_")  # every name `secret_name` holds a secret starts so
FIRST_SHOWN = 50  # the list of an empty query, shown before the index is made
GIT_TIMEOUT_S = 10.0
REFRESH_AFTER_S = 5.0  # a refresh asked sooner than this after the last listing is skipped
SKIPPED = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".cache", ".gradle", ".idea", "target"}
)  # fmt: skip


def list_tree(root: Path) -> list[str]:
    """The files under `root`, relative to it, as git would list them (see the module's doc)."""
    return [path for part in _listings(root) for path in part][:MAX_FILES]


def _listings(root: Path) -> Iterator[list[str]]:
    """The tree's files in parts, the quick first: git's tracked files, then its untracked ones
    (which take a walk of the tree); or the whole walk where there is no git."""
    tracked = _git_files(root, "--cached")
    if tracked is None:
        yield _kept(_walk(root))
        return
    yield _kept(tracked)
    yield _kept(_git_files(root, "--others", "--exclude-standard") or [])


def _kept(paths: list[str]) -> list[str]:
    """Without secrets by name, nor a name with a newline (a path is a line to the matcher).
    Found by searching all the paths as one string: a call per path costs 100,000 calls."""
    joined = "\0".join(paths)
    dropped = set(_secret_paths(joined))
    if "\n" in joined:
        dropped.update(path for path in paths if "\n" in path)
    return [path for path in paths if path not in dropped] if dropped else paths


def _secret_paths(joined: str) -> Iterator[str]:
    """The paths in `joined` (separated by NULs) whose file name is a secret (support/secret_kinds.py)."""
    for needle in SECRET_STARTS:
        at = joined.find(needle)
        while at >= 0:
            start, end = joined.rfind("\0", 0, at) + 1, joined.find("\0", at)
            end = len(joined) if end < 0 else end
            path = joined[start:end]
            if secret_name(path.rpartition("/")[2]):
                yield path
            at = joined.find(needle, end)


def _git_files(root: Path, *which: str) -> list[str] | None:
    """git's list, or None when `root` is not in a work tree (or git is missing or fails). Run
    outside the sandbox, in a tree commands write: a `.git` a running command just made (it goes
    to quarantine when the command ends) could name a program for git to run as it reads the
    index (`core.fsmonitor`), so that setting is overridden."""
    argv = ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", *which]
    try:
        done = subprocess.run(argv, cwd=root, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").rstrip("\0").split("\0") if done.stdout else []


@dataclass(frozen=True)
class _Rule:
    """One line of a `.gitignore`, as a regular expression over paths relative to its folder."""

    pattern: re.Pattern[str]
    negated: bool
    folders_only: bool

    @classmethod
    def parse(cls, line: str) -> _Rule | None:
        line = line.rstrip("\n").rstrip()
        if not line or line.startswith("#"):
            return None
        negated = line.startswith("!")
        line = line.removeprefix("!")
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            return None
        body = _glob_regex(line)
        return cls(re.compile(body if anchored else f"(?:.*/)?{body}"), negated, folders_only)

    def matches(self, relative: str, is_folder: bool) -> bool:
        return (is_folder or not self.folders_only) and self.pattern.fullmatch(relative) is not None


def _glob_regex(glob: str) -> str:
    """A gitignore glob as a regular expression: `*` and `?` stay within a folder, `**` spans them."""
    parts = []
    for piece in re.split(r"(\*\*/?)", glob):
        if piece.startswith("**"):
            parts.append("(?:.*/)?" if piece.endswith("/") else ".*")
        elif piece:
            parts.append(fnmatch.translate(piece).removeprefix("(?s:").removesuffix(")\\Z").replace(".*", "[^/]*"))
    return "".join(parts)


def _ignored(rules: list[tuple[str, _Rule]], relative: str, is_folder: bool) -> bool:
    """The last rule that matches decides (each rule relative to the folder of its file)."""
    verdict = False
    for base, rule in rules:
        if base and not relative.startswith(base):
            continue
        if rule.matches(relative[len(base) :], is_folder):
            verdict = not rule.negated
    return verdict


def _read_rules(folder: Path, base: str) -> list[tuple[str, _Rule]]:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [(base, rule) for rule in map(_Rule.parse, text.splitlines()) if rule is not None]


def _walk(root: Path) -> list[str]:
    """The files under `root`, skipping heavy folders and what `.gitignore` files ignore."""
    found: list[str] = []
    pending: list[tuple[Path, str, list[tuple[str, _Rule]]]] = [(root, "", [])]
    while pending and len(found) < MAX_FILES:
        folder, base, inherited = pending.pop()
        rules = inherited + _read_rules(folder, base)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            relative = base + entry.name
            is_folder = entry.is_dir(follow_symlinks=False)
            if (is_folder and entry.name in SKIPPED) or _ignored(rules, relative, is_folder):
                continue
            if is_folder:
                pending.append((Path(entry.path), relative + "/", rules))
            else:
                found.append(relative)
    return found


class PathIndex:
    """The files of the tree at `root`, listed in the background, searched per keystroke.

    The first part listed (git's tracked files) answers an empty query at once (`listed`) and
    any query once indexed (`ready`); the rest (untracked files) joins when it is listed.
    """

    def __init__(self, root: Path, *, refresh_after_s: float = REFRESH_AFTER_S) -> None:
        self.root = root
        self.refresh_after_s = refresh_after_s
        self.listed = threading.Event()  # set once an empty query has its answer
        self.ready = threading.Event()  # set once any query has
        self._first: list[str] = []
        self._found: list[str] = []  # what the last listing found, whole
        self._paths = FuzzyPaths(())
        self._listing: threading.Thread | None = None
        self._listed_at = 0.0

    def start(self) -> None:
        """List the tree in a worker thread, unless that is under way or was just done."""
        if self._listing is not None and self._listing.is_alive():
            return
        if self.ready.is_set() and time.monotonic() - self._listed_at < self.refresh_after_s:
            return
        self._listing = threading.Thread(target=self._list, name="path-index", daemon=True)
        self._listing.start()

    refresh = start

    def _list(self) -> None:
        first_time = not self.ready.is_set()
        found: list[str] = []
        for part in _listings(self.root):
            found = (found + part)[:MAX_FILES]
            if not self.listed.is_set():
                self._first = shallowest(found, FIRST_SHOWN)
                self.listed.set()
            if first_time and part:  # the first listing answers part by part; a refresh, once whole
                self._paths = FuzzyPaths(found)
                self.ready.set()
        if not first_time and found != self._found:  # the same files: the index is kept
            self._paths = FuzzyPaths(found)
        self.ready.set()
        self._found = found
        self._paths.warm()
        self._listed_at = time.monotonic()

    def wait(self) -> None:
        """Until the listing under way, if any, has ended (its untracked files and warm-up too)."""
        if self._listing is not None:
            self._listing.join()

    def answers(self, query: str) -> bool:
        """Whether `query` has its answer yet (an empty one comes first)."""
        return self.ready.is_set() or (not query and self.listed.is_set())

    def search(self, query: str, *, limit: int = 50) -> list[str]:
        """The best paths for `query` (none before the first listing is done)."""
        if not self.ready.is_set():
            return self._first[:limit] if not query else []
        return self._paths.search(query, limit=limit)

    def __len__(self) -> int:
        return len(self._paths)


class RemoteIndex:
    """A remote machine's workspace files, as `@NAME:` completes them: listed once (a session
    keeps one per machine) over the machine's connection, in the sandbox there
    (`RemoteMachine.workspace_files`); `error` says why there is no list."""

    def __init__(self, machine: RemoteMachine) -> None:
        self.machine = machine
        self.ready = threading.Event()
        self.error: str | None = None
        self._paths = FuzzyPaths(())

    async def fetch(self) -> None:
        """List the files there (the caller runs it as a task it can cancel)."""
        found = await self.machine.workspace_files(MAX_FILES)
        if isinstance(found, MachineResult):
            self.error = found.text
        else:
            self._paths = await asyncio.to_thread(FuzzyPaths, _kept(found))
        self.ready.set()

    def answers(self, query: str) -> bool:
        return self.ready.is_set()

    def search(self, query: str, *, limit: int = 50) -> list[str]:
        return self._paths.search(query, limit=limit)
