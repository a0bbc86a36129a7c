"""The secrets a session's commands must not see that no fixed list names: found by a scan.

Credential stores live in known places (support/secret_kinds.py), but `.env` files (and SSH keys
kept outside ~/.ssh) can be anywhere: at any depth of the project, under node_modules or .venv,
in a sibling project, elsewhere in the home. So the sandbox scans, in a background thread: the
writable roots first, then the folder around the project, then the home. It also notes every
`.git` inside the writable roots (a repository's hooks and config run code later, outside).

Fail closed: commands wait for the first scan; a scan that runs out of its budget (entries or
time) names the folders it did not reach, and the sandbox hides those whole. Later scans run
after commands, at most every `RESCAN_S`, and take over when they finish.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.support.secret_kinds import secret_name

__all__ = ["Found", "SecretIndex"]

MAX_ENTRIES = 2_000_000
MAX_SECONDS = 30.0
RESCAN_S = 15.0
NEVER_SCANNED = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/run"))


@dataclass(frozen=True)
class Found:
    """What one scan found (real paths)."""

    secrets: tuple[Path, ...] = ()  # `.env` files, SSH keys by name
    repositories: tuple[Path, ...] = ()  # `.git` folders and files inside the writable roots
    unscanned: tuple[Path, ...] = ()  # folders past the budget: hidden whole
    entries: int = 0
    seconds: float = 0.0


class _Scan:
    """One scan's state, depth first, bounded. Strings, not Paths: a home holds a million names."""

    def __init__(self, skip: tuple[Path, ...], writable: tuple[Path, ...], deadline: float) -> None:
        self.skip = frozenset(map(str, skip))  # folders are met top-down: an exact match is enough
        self.writable = tuple(str(root).rstrip("/") + "/" for root in writable)
        self.deadline = deadline
        self.secrets: list[str] = []
        self.repositories: list[str] = []
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
            tuple(map(Path, pending)),
            self.entries,
            time.monotonic() - started,
        )

    def _folder(self, folder: str, pending: list[str]) -> None:
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:  # unreadable: a command cannot read it either
            return
        self.entries += len(entries)
        below: list[str] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                if (entry.path + "/").startswith(self.writable):
                    self.repositories.append(entry.path)
                continue  # a repository's own files are not the project's secrets
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.path not in self.skip:
                    below.append(entry.path)
            elif secret_name(name):
                self.secrets.append(entry.path)
        below.reverse()
        pending.extend(below)


class SecretIndex:
    """The latest complete scan of `roots` (real folders), skipping `skip` (hidden whole anyway)."""

    def __init__(self, roots: tuple[Path, ...], writable: tuple[Path, ...], skip: tuple[Path, ...]) -> None:
        self.roots = roots
        self.writable = writable
        self.skip = (*skip, *NEVER_SCANNED)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._found = Found()
        self._scanning = False
        self._last = 0.0

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

    def _scan(self) -> None:
        try:
            found = _Scan(self.skip, self.writable, time.monotonic() + MAX_SECONDS).run(self.roots)
        except Exception:  # a scan that broke found nothing for sure: everything it had to read is hidden
            found = Found(unscanned=self.roots)
        with self._lock:
            self._found = found
            self._scanning = False
        self._ready.set()
