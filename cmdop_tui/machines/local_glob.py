"""glob for the local file tools: pathlib's patterns, matched folder by folder through descriptors.

A pattern is split into components; `**` is any depth of real folders (symlinks to folders are
not entered, as pathlib does), a component with `*`, `?` or `[` is matched against the names of
the folder reached, any other is looked up as it is. Every folder is entered relative to the one
before (O_NOFOLLOW, or, for a symlink a component names, opened without magic links and judged
on where it leads), so the names listed are the names of what was opened. What the sandbox hides
is left out, and a note says how many entries that was. The count is exact at any size and the
paths shown are the first GLOB_MAX_RESULTS in sorted order, kept in bounded memory as they come.
"""

from __future__ import annotations

import heapq
import os
import re
import stat
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from cmdop_tui.machines.beneath import open_path, real_path, reopen
from cmdop_tui.machines.local_files import hidden_note, open_folder, show
from cmdop_tui.machines.local_rules import FileRules
from cmdop_tui.machines.machine import GLOB_MAX_RESULTS, MachineResult

__all__ = ["glob"]

_MAGIC = re.compile(r"[*?\[]")
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def glob(rules: FileRules, pattern: str, base: Path) -> MachineResult:
    """Paths matching the pattern (with `**`), sorted, relative to the base directory."""
    if pattern.startswith("/"):
        return MachineResult.error("pattern must be relative; pass the directory to search as cwd")
    try:
        parts = _components(pattern)
    except ValueError as exc:
        return MachineResult.error(f"invalid pattern {show(repr(pattern))}: {exc}")
    folder, real = open_folder(rules, base)
    scan = _Scan(rules, _Found(repeats=parts.count("**") > 1))
    try:
        scan.select(folder, real, "", parts)
    finally:
        os.close(folder)
    lines = [show(path) for path in scan.found.first()]
    if not lines:
        lines = [f"no paths match {show(repr(pattern))} in {show(base)}"]
    elif scan.found.count > GLOB_MAX_RESULTS:
        lines.append(f"[... {scan.found.count - GLOB_MAX_RESULTS:,} more matches not shown; narrow the pattern]")
    if scan.hidden:
        lines.append(hidden_note(len(scan.hidden)))
    return MachineResult("\n".join(lines))


def _components(pattern: str) -> tuple[str, ...]:
    """The pattern's components as pathlib reads them (`.` and empty ones dropped; a trailing
    `/` kept as a last empty component: folders only)."""
    parts: tuple[str, ...] = ()
    for part in pattern.split("/"):
        if part not in ("", ".") and not (part == "**" and parts[-1:] == ("**",)):  # `**/**` is `**`
            parts += (part,)
    if not parts:
        raise ValueError(f"Unacceptable pattern: {pattern!r}")
    if any("**" in part and part != "**" for part in parts):
        raise ValueError("Invalid pattern: '**' can only be an entire path component")
    return (*parts, "") if pattern.endswith("/") else parts


@dataclass(frozen=True)
class _Last:
    """A path in a heap whose top is the last in sorted order (heapq's top is its least)."""

    path: str

    def __lt__(self, other: _Last) -> bool:
        return self.path > other.path


class _Found:
    """The matches of one glob: how many, and the first GLOB_MAX_RESULTS in sorted order.

    Only a pattern with more than one `**` can reach a path twice (`**/a/**`: `a/a/f`); only
    then are the paths remembered, to count each once."""

    def __init__(self, *, repeats: bool) -> None:
        self.count = 0
        self._first: list[_Last] = []
        self._seen: set[str] | None = set() if repeats else None

    def add(self, path: str) -> None:
        if self._seen is not None:
            if path in self._seen:
                return
            self._seen.add(path)
        self.count += 1
        if len(self._first) < GLOB_MAX_RESULTS:
            heapq.heappush(self._first, _Last(path))
        elif path < self._first[0].path:
            heapq.heapreplace(self._first, _Last(path))

    def first(self) -> list[str]:
        return sorted(item.path for item in self._first)


class _Scan:
    """One glob: what matched (relative paths, folders ending in `/`) and what the sandbox hid."""

    def __init__(self, rules: FileRules, found: _Found) -> None:
        self.rules = rules
        self.found = found
        self.hidden: set[Path] = set()

    def select(self, folder: int, real: Path, below: str, parts: tuple[str, ...]) -> None:
        """Add what `parts` match in the folder `folder` (at `real`, `below` the base)."""
        part, rest = parts[0], parts[1:]
        if part == "":  # the pattern ended in `/`: this folder itself
            self.found.add(below + "/" if below else ".")
        elif part == "**":
            self._any_depth(folder, real, below, rest)
        elif _MAGIC.search(part):
            for entry in _entries(folder):
                if fnmatchcase(entry.name, part):
                    self._matched(folder, real, below, entry.name, rest)
        else:
            self._matched(folder, real, below, part, rest)

    def _any_depth(self, folder: int, real: Path, below: str, rest: tuple[str, ...]) -> None:
        """`**`: the rest of the pattern here and in every real folder below."""
        if rest:
            self.select(folder, real, below, rest)
        else:
            self.found.add(below + "/" if below else ".")
        for entry in _entries(folder):
            inner_real = real / entry.name
            if not _is_folder(entry):
                continue
            if self.rules.hides_entry(inner_real, True):
                self.hidden.add(inner_real)
                continue
            try:
                inner = os.open(entry.name, _FOLDER_FLAGS, dir_fd=folder)
            except OSError:
                continue
            try:
                self._any_depth(inner, inner_real, os.path.join(below, entry.name), rest)
            finally:
                os.close(inner)

    def _matched(self, folder: int, real: Path, below: str, name: str, rest: tuple[str, ...]) -> None:
        """`name` in the folder matched a component: a result, or the folder the rest goes on in."""
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            return
        relative = os.path.join(below, name)
        inner_real = real.parent if name == ".." else real / name  # real paths have no `..`
        is_dir = stat.S_ISDIR(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            self._through_link(folder, name, relative, rest)
        elif self.rules.hides_entry(inner_real, is_dir):
            self.hidden.add(inner_real)
        elif not rest:
            self.found.add(relative + "/" if is_dir else relative)
        elif is_dir:
            try:
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
            except OSError:
                return
            self._enter(inner, inner_real, relative, rest)

    def _through_link(self, folder: int, name: str, relative: str, rest: tuple[str, ...]) -> None:
        """A symlink matched: judged on what it leads to (opened, no magic links)."""
        try:
            target = open_path(name, dir_fd=folder)
        except OSError:  # broken, a loop or a magic link: the name alone, as a file
            if not rest:
                self.found.add(relative)
            return
        try:
            where, info = real_path(target), os.fstat(target)
            if self.rules.hides(where, info):
                self.hidden.add(where)
            elif not rest:
                self.found.add(relative + "/" if stat.S_ISDIR(info.st_mode) else relative)
            elif stat.S_ISDIR(info.st_mode):
                self._enter(reopen(target, os.O_RDONLY | os.O_DIRECTORY), where, relative, rest)
        finally:
            os.close(target)

    def _enter(self, inner: int, real: Path, below: str, rest: tuple[str, ...]) -> None:
        """Go on with `rest` in the folder `inner` (opened for it, closed here)."""
        try:
            self.select(inner, real, below, rest)
        finally:
            os.close(inner)


def _entries(folder: int) -> list[os.DirEntry[str]]:
    """The entries of the folder `folder`, sorted by name (an unreadable folder has none)."""
    try:
        with os.scandir(folder) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return []


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """A real folder (not a symlink to one)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
