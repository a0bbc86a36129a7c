"""The secrets a session's commands must not see that no fixed list names: found by a scan.

Credential stores live in known places (support/secret_kinds.py), but `.env` files (and SSH keys
kept outside ~/.ssh) can be anywhere: at any depth of the project, under node_modules or .venv,
in a sibling project, elsewhere in the home. So the sandbox scans, in a background thread: the
writable roots first, then the folder around the project, then the home. It also notes every
`.git` inside the writable roots (a repository's hooks and config run code later, outside).

Fail closed: commands wait for the first scan; a scan that runs out of its budget (entries or
time) names the folders it did not reach, and the sandbox hides those whole, as it does a folder
inside the writable roots that the scan may not list (a command can `chmod 000` its own folder
and set it back once the check has passed it by). Later scans run after commands, at most every
`RESCAN_S`, and take over when they finish.

The writable roots are where secrets come and go between two commands: the person saves a new
`.env` there; a command started before it was saved moves the folder that holds it (a command
cannot move the folders around a secret hidden from it: they are its mount points, see
machines/bubblewrap.py). So before each command, `fresh()` brings what the scan knows of them
up to date: every folder it listed there is asked its change time (one `lstat`: 3.5 ms for
1,450 folders, 130 ms for 50,000), and only the folders that changed are listed again (their new
subfolders scanned whole). The change time (ctime), not the modification time: adding, removing
or renaming an entry moves both, but a command can set a folder's mtime back with `touch`, and
no one can set its ctime. A folder whose time was too close to its listing to be trusted (file
times move in coarse ticks) is listed again each time, as git does with racy entries. Commands
that start together share one check. Outside the writable roots, where no command can write,
the periodic scans keep the list.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from cmdop_tui.support.secret_kinds import secret_name

__all__ = ["Found", "SecretIndex"]

MAX_ENTRIES = 2_000_000
MAX_SECONDS = 30.0
RESCAN_S = 15.0
RACY_NS = 2_000_000_000  # a folder changed this recently when listed is listed again next time
NEVER_SCANNED = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/run"))


@dataclass(frozen=True)
class Found:
    """What one scan found (real paths)."""

    secrets: tuple[Path, ...] = ()  # `.env` files, SSH keys by name
    repositories: tuple[Path, ...] = ()  # `.git` folders and files inside the writable roots
    unscanned: tuple[Path, ...] = ()  # folders past the budget: hidden whole
    entries: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class _Listed:
    """One folder inside the writable roots as it was listed: its change time then (None: too
    recent to trust) and what was in it."""

    mark: int | None
    secrets: tuple[str, ...]
    repositories: tuple[str, ...]
    folders: tuple[str, ...]


class _Scan:
    """One scan's state, depth first, bounded. Strings, not Paths: a home holds a million names."""

    def __init__(self, skip: tuple[Path, ...], writable: tuple[Path, ...], deadline: float) -> None:
        self.skip = frozenset(map(str, skip))  # folders are met top-down: an exact match is enough
        self.writable = tuple(str(root).rstrip("/") + "/" for root in writable)
        self.deadline = deadline
        self.secrets: list[str] = []
        self.repositories: list[str] = []
        self.listed: dict[str, _Listed] = {}  # the folders inside the writable roots
        self.unreadable: list[str] = []  # folders inside the writable roots it could not list
        self.entries = 0

    def run(self, roots: Iterable[Path]) -> Found:
        started = time.monotonic()
        pending = [str(root) for root in roots if root.is_dir()]
        pending.reverse()  # the first root is scanned first
        while pending:
            if self.entries >= MAX_ENTRIES or time.monotonic() > self.deadline:
                break
            self._folder(pending.pop(), pending)
        return Found(
            tuple(map(Path, self.secrets)),
            tuple(map(Path, self.repositories)),
            tuple(map(Path, (*pending, *self.unreadable))),
            self.entries,
            time.monotonic() - started,
        )

    def relist(self, folder: str) -> _Listed | None:
        """List one folder inside the writable roots again (None: gone, not a folder now, or
        unreadable: then it is in `unreadable`)."""
        self.listed.pop(folder, None)
        self._folder(folder, [])
        return self.listed.pop(folder, None)

    def _folder(self, folder: str, pending: list[str]) -> None:
        kept = (folder + "/").startswith(self.writable)
        try:
            info = os.lstat(folder) if kept else None  # taken before the listing: a later change shows
            if info is not None and not stat.S_ISDIR(info.st_mode):
                return  # a symlink put in the place of a folder since: its target is not listed here
            if kept and not os.access(folder, os.R_OK | os.X_OK):
                raise PermissionError(folder)
            with os.scandir(folder) as scan:
                entries = list(scan)
        except (FileNotFoundError, NotADirectoryError):
            return  # gone since
        except OSError:
            # Outside the writable roots a command cannot read it either. Inside them it can: it
            # may have made it unreadable itself (`chmod 000`) to hide what is in it from this
            # listing, and set it back later. So it is hidden whole.
            if kept:
                self.unreadable.append(folder)
            return
        self.entries += len(entries)
        secrets: list[str] = []
        repositories: list[str] = []
        below: list[str] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                if (entry.path + "/").startswith(self.writable):
                    repositories.append(entry.path)
                continue  # a repository's own files are not the project's secrets
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.path not in self.skip:
                    below.append(entry.path)
            elif secret_name(name):
                secrets.append(entry.path)
        self.secrets += secrets
        self.repositories += repositories
        if info is not None:
            self.listed[folder] = _Listed(_mark(info), tuple(secrets), tuple(repositories), tuple(below))
        below.reverse()
        pending.extend(below)


def _mark(info: os.stat_result) -> int | None:
    """A folder's change time, unless it is too recent to tell a later change by."""
    return info.st_ctime_ns if info.st_ctime_ns < time.time_ns() - RACY_NS else None


class SecretIndex:
    """The latest complete scan of `roots` (real folders), skipping `skip` (hidden whole anyway)."""

    def __init__(self, roots: tuple[Path, ...], writable: tuple[Path, ...], skip: tuple[Path, ...]) -> None:
        self.roots = roots
        self.writable = writable
        self.skip = (*skip, *NEVER_SCANNED)
        self._lock = threading.Lock()
        self._checking = threading.Lock()  # one check of the writable roots at a time
        self._ready = threading.Event()
        self._found = Found()
        self._listed: dict[str, _Listed] = {}
        self._scanning = False
        self._last = 0.0
        self._checked = 0.0  # when the last check of the writable roots began
        self._links = _HardLinks()

    def start(self) -> None:
        """Scan in the background now (unless a scan is running)."""
        with self._lock:
            if self._scanning:
                return
            self._scanning = True
            self._last = time.monotonic()
        threading.Thread(target=self._scan, name="cmdop-secret-scan", daemon=True).start()

    def refresh(self) -> None:
        """Scan again in the background if the last scan is older than RESCAN_S."""
        if time.monotonic() - self._last >= RESCAN_S:
            self.start()

    def found(self, timeout_s: float | None = None) -> Found | None:
        """The latest complete scan, waiting for the first one (None: not done within the timeout)."""
        if not self._ready.is_set():
            self.start()
            if not self._ready.wait(timeout_s):
                return None
        with self._lock:
            return self._found

    def fresh(self, timeout_s: float | None = None, asked: float | None = None) -> Found | None:
        """The latest scan with the writable roots as they are now (see the module's doc): what
        a command about to start must hide; `asked`: when the command asked (time.monotonic(),
        default now): a check that began since stands for it. Blocking: call it off the event
        loop."""
        asked = time.monotonic() if asked is None else asked
        if self.found(timeout_s) is None:
            return None
        with self._checking:
            if self._checked < asked:  # else a check that began after we asked stands for us too
                self._checked = time.monotonic()
                with self._lock:
                    found, listed = self._found, dict(self._listed)
                unreached = self._check(listed)
                if unreached is not None:
                    with self._lock:  # no full scan ends meanwhile: it waits for the check
                        self._found, self._listed = _joined(found, listed, unreached, self.writable), listed
            with self._lock:
                found = self._found
            return self._links.joined(found, self.writable)

    def _check(self, listed: dict[str, _Listed]) -> list[Path] | None:
        """Bring `listed` up to date in place; the new folders its scan could not reach (within
        its budget), or None when nothing changed."""
        changed = _changed(listed)
        if not changed:
            return None
        scan = _Scan(self.skip, self.writable, time.monotonic() + MAX_SECONDS)
        unreached: list[Path] = []
        for folder in changed:
            if folder not in listed:  # under a folder that went, already dropped
                continue
            old, new = listed[folder], scan.relist(folder)
            if new is None:  # gone, no longer a folder of its own (a symlink now), or unreadable
                _drop(listed, folder)
                continue
            listed[folder] = new
            for gone in set(old.folders) - set(new.folders):
                _drop(listed, gone)
            added = [path for path in new.folders if path not in listed]
            unreached += scan.run(map(Path, added)).unscanned
            listed.update(scan.listed)
            scan.listed.clear()
        return [*unreached, *map(Path, scan.unreadable)]

    def _scan(self) -> None:
        scan = _Scan(self.skip, self.writable, time.monotonic() + MAX_SECONDS)
        try:
            found = scan.run(self.roots)
        except Exception:  # a scan that broke found nothing for sure: everything it had to read is hidden
            found, scan.listed = Found(unscanned=self.roots), {}
        with self._checking, self._lock:
            self._found, self._listed = found, scan.listed
            self._scanning = False
            # The scan listed the writable roots before the last check, maybe before a change
            # that check saw: it stands for no command until a check has brought it up to date.
            self._checked = 0.0
        self._ready.set()


def _changed(listed: dict[str, _Listed]) -> list[str]:
    """The folders to list again: changed since, too recent to tell, or no longer a folder
    (gone, or a symlink in its place). One `lstat` each, in a loop kept tight: a tree of 50,000
    folders is asked this before every command."""
    lstat, is_dir = os.lstat, stat.S_ISDIR
    changed = []
    for folder, entry in listed.items():
        try:
            info = lstat(folder)
        except OSError:
            changed.append(folder)
            continue
        if info.st_ctime_ns != entry.mark or not is_dir(info.st_mode):  # a mark of None never matches
            changed.append(folder)
    return changed


def _drop(listed: dict[str, _Listed], folder: str) -> None:
    """Forget `folder` and everything listed under it."""
    below = folder + "/"
    for path in [path for path in listed if path == folder or path.startswith(below)]:
        del listed[path]


def _joined(found: Found, listed: dict[str, _Listed], unreached: list[Path], writable: tuple[Path, ...]) -> Found:
    """`found` with the writable roots' secrets and repositories as `listed` has them now."""
    inside = tuple(str(root).rstrip("/") + "/" for root in writable)
    outside = [path for path in found.secrets if not (str(path) + "/").startswith(inside)]
    secrets = [Path(path) for entry in listed.values() for path in entry.secrets]
    repositories = [Path(path) for entry in listed.values() for path in entry.repositories]
    return replace(
        found,
        secrets=(*outside, *secrets),
        repositories=tuple(repositories),
        unscanned=tuple(dict.fromkeys((*found.unscanned, *unreached))),
    )


class _HardLinks:
    """The other names of the secrets inside the writable roots that have more than one. A
    command may link a file it can read: `.env` made from `.env.example`, linked as `notes.txt`,
    and then the person writes the real values into `.env` in place (as `>` and vim do with a
    linked file): no folder changes then. So each secret there is asked its link count before
    every command (one `lstat`), and where one has others, the writable roots are walked
    (`.git` folders too) for them; again only when such a secret's inode changes (a link made,
    removed or renamed moves its ctime)."""

    def __init__(self) -> None:
        self._inside: tuple[object, tuple[str, ...]] = (None, ())  # a scan's secrets inside the roots
        self._key: tuple[tuple[int, int, int], ...] = ()
        self._names: tuple[Path, ...] = ()
        self._joined: tuple[object, tuple[Path, ...], Found] = (None, (), Found())

    def joined(self, found: Found, writable: tuple[Path, ...]) -> Found:
        """`found` with the other names of its linked secrets inside `writable` as secrets too."""
        linked = []
        for path in self._inside_secrets(found, writable):
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
                linked.append((info.st_dev, info.st_ino, info.st_ctime_ns))
        if not linked:
            return found
        if tuple(linked) != self._key:
            self._key = tuple(linked)
            self._names = tuple(map(Path, _names_of(writable, {(dev, ino) for dev, ino, _ in linked})))
        last_found, last_names, last = self._joined
        if last_found is not found or last_names != self._names:  # the same object while unchanged
            last = replace(found, secrets=(*found.secrets, *self._names))
            self._joined = (found, self._names, last)
        return last

    def _inside_secrets(self, found: Found, writable: tuple[Path, ...]) -> tuple[str, ...]:
        if self._inside[0] is not found:
            inside = tuple(str(root).rstrip("/") + "/" for root in writable)
            self._inside = (found, tuple(str(path) for path in found.secrets if str(path).startswith(inside)))
        return self._inside[1]


def _names_of(roots: tuple[Path, ...], inodes: set[tuple[int, int]]) -> list[str]:
    """Every path under `roots` (symlinks not followed) that is one of `inodes` (device, inode)."""
    numbers = {ino for _, ino in inodes}
    names: list[str] = []
    pending = [str(root) for root in roots]
    while pending:
        try:
            with os.scandir(pending.pop()) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.inode() in numbers:  # from the listing: no stat unless it may be one
                    info = entry.stat(follow_symlinks=False)
                    if (info.st_dev, info.st_ino) in inodes:
                        names.append(entry.path)
            except OSError:
                continue
    return names
