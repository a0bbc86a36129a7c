"""What a session's sandbox keeps between its commands: its private /tmp, the system-call filter,
the scans of secrets, and where refused creations go.

The private folders live in the app's runtime dir (0700, the user's own): `/tmp` and `/var/tmp`
inside every command are these, so a download in one command is there for the next and the
user's own /tmp (with its sockets: tmux, ssh-agent, X) is never seen. They go at the end of the
session; a session that died leaves them, and the next one clears those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from cmdop_tui.machines import seccomp
from cmdop_tui.machines.secret_index import SecretIndex
from cmdop_tui.support.processes import process_alive
from cmdop_tui.support.warm import private_dir, runtime_dir

__all__ = ["PRIVATE", "SandboxState"]

MEMO_S = 2.0
T = TypeVar("T")
PRIVATE = {Path("/tmp"): "tmp", Path("/var/tmp"): "var-tmp"}  # each command's own, kept for the session


class SandboxState:
    """Created with the sandbox, shared by its copies; `close()` at the end of the session."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # the filter's file goes in the session folder, made under it too
        self._folder: Path | None = None
        self._filter: Path | None = None
        self._filter_made = False
        self._indexes: dict[tuple[Path, ...], SecretIndex] = {}
        self._memo: dict[object, tuple[float, object]] = {}
        self._per_scan_of: object = None  # the scan result (by identity) `_per_scan` was worked out from
        self._per_scan: dict[object, object] = {}
        # One command's sandbox is laid out at a time: the layouts are Python work, and worker
        # threads that all want the GIL at once leave the event loop (the keys) less of it.
        self.laying_out = threading.Lock()

    def private(self) -> tuple[tuple[Path, Path], ...]:
        """(where a command sees it, the folder of ours it is) for /tmp and /var/tmp."""
        folder = self._session_folder()
        return tuple((seen, folder / name) for seen, name in PRIVATE.items())

    def filter_file(self) -> Path | None:
        """The system-call filter as a file the spawner opens for each command (None: no filter
        for this architecture, or it could not be written)."""
        with self._lock:
            if not self._filter_made:
                self._filter_made = True
                program = seccomp.program()
                if program is not None:
                    self._filter = self._write_filter(program)
            return self._filter

    def index(self, roots: tuple[Path, ...], writable: tuple[Path, ...], skip: tuple[Path, ...]) -> SecretIndex:
        """The scan of `roots` (started on first use, kept for the session)."""
        with self._lock:
            index = self._indexes.get(roots)
            if index is None:
                index = self._indexes[roots] = SecretIndex(roots, writable, skip)
            return index

    def cached(self, key: object, compute: Callable[[], T], ttl_s: float = MEMO_S) -> T:
        """`compute()`, remembered for `ttl_s` under `key`: what the filesystem says of a fixed
        list of places (which credential stores exist) need not be asked for every command."""
        now = time.monotonic()
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None and now - hit[0] < ttl_s:
                return cast(T, hit[1])
        value = compute()
        with self._lock:
            self._memo[key] = (now, value)
        return value

    def per_scan(self, scan: object, key: object, compute: Callable[[], T]) -> T:
        """`compute()`, remembered under `key` for as long as `scan` (a scan's result, by
        identity) is the latest one asked with: what follows from a scan alone is worked out
        once, not for every command."""
        with self._lock:
            if self._per_scan_of is not scan:
                self._per_scan_of, self._per_scan = scan, {}
            elif key in self._per_scan:
                return cast(T, self._per_scan[key])
        value = compute()
        with self._lock:
            if self._per_scan_of is scan:
                self._per_scan[key] = value
        return value

    def close(self) -> None:
        """Remove the private folders (what the session's commands left in /tmp goes with them)."""
        with self._lock:
            folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _session_folder(self) -> Path:
        with self._lock:
            if self._folder is None:
                self._folder = _make_session_folder()
            return self._folder

    def _write_filter(self, program: bytes) -> Path | None:
        folder = self._session_folder()
        path = folder / "seccomp.bpf"
        try:
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as file:
                file.write(program)
        except OSError:
            return None
        return path


def _make_session_folder() -> Path:
    """A new 0700 folder of ours for one session, with its private /tmp and /var/tmp; clears the
    folders of sessions whose process is gone."""
    base = runtime_dir(os.environ)
    parent = base / "sandbox"
    if not (private_dir(base, create=True) and private_dir(parent, create=True)):
        parent = Path(tempfile.mkdtemp(prefix="cmdop-sandbox-"))  # 0700, ours
    _clear_stale(parent)
    folder = parent / f"{os.getpid()}-{secrets.token_hex(4)}"
    folder.mkdir(mode=0o700)
    for name in PRIVATE.values():
        (folder / name).mkdir(mode=0o700)
    return folder


def _clear_stale(parent: Path) -> None:
    for entry in os.scandir(parent):
        pid = entry.name.split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            with contextlib.suppress(OSError):
                shutil.rmtree(entry.path)
