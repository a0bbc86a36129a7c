"""The sandbox's rules (machines/sandbox_view.py) held on what the file tools opened.

`FileRules(view)` judges one operation. `open(path)` opens what a path names, as commands see
it (the session's private /tmp is a folder of ours, and a path there never leaves it), through
machines/beneath.py, and gives the descriptor with the object's real path and status; every
decision is made on those, never on the name again:

* `readable(opened, shown)`: refuses what the sandbox hides: a secret by path, kind or name, a
  process's /proc entries (commands see a /proc of their own), and a hard link to a hidden file
  (a second name for the same inode, found by its device and inode);
* `hides_entry(real, is_dir)`: the same for a name met in a listing, so it is left out;
* `check_write(real, shown)`: refuses a write outside the writable roots or to a protected path
  (`Refused`, which a person may allow outside the sandbox) or to a hidden one (`HiddenPath`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from cmdop_tui.machines.beneath import open_path, real_path
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox_view import PROTECTED_NAMES, SandboxView, within
from cmdop_tui.support.text import inert_line

__all__ = ["HIDDEN", "FileRules", "HiddenPath", "Opened", "Refused"]

HIDDEN = "hidden by the sandbox (it holds secrets)"
HIDDEN_SCAN_MAX = 20_000  # entries of the hidden folders looked at for hard links, at most
PROTECTED_TEXT = ", ".join(PROTECTED_NAMES) + " and what an MCP server runs from"


class HiddenPath(PermissionError):
    """A path the sandbox hides: `PATH: hidden by the sandbox (it holds secrets)`."""

    def __init__(self, shown: Path | str) -> None:
        super().__init__(errno.EACCES, HIDDEN, str(shown))


class Refused(PermissionError):
    """A write the sandbox refuses: `refusal` says what, for the person who may allow it outside."""

    def __init__(self, message: str, refusal: SandboxRefusal) -> None:
        super().__init__(errno.EACCES, message)
        self.message = message
        self.refusal = refusal


@dataclass(frozen=True)
class Opened:
    """What a path named when it was opened: an O_PATH descriptor, where it is, what it is."""

    fd: int
    real: Path
    info: os.stat_result


class FileRules:
    """The view's rules for one file operation (it remembers the hidden inodes it looked up)."""

    def __init__(self, view: SandboxView) -> None:
        self.view = view
        self._hidden_inodes: frozenset[tuple[int, int]] | None = None
        self._narrowed: dict[Path, SandboxView] = {}

    @contextlib.contextmanager
    def open(self, path: Path, *, follow: bool = True, directory: bool = False) -> Iterator[Opened]:
        """What `path` (absolute, as a command would write it) names, opened; closed after."""
        placed = self.view.place(path)
        root = next((real for _, real in self.view.private if within(placed, real)), None)
        try:
            fd = self._open_placed(placed, root, follow=follow, directory=directory)
        except OSError as exc:
            exc.filename = str(path)  # the path as the model wrote it, not as it is here
            raise
        try:
            yield Opened(fd, real_path(fd), os.fstat(fd))
        finally:
            os.close(fd)

    @staticmethod
    def _open_placed(placed: Path, root: Path | None, *, follow: bool, directory: bool) -> int:
        """`placed` opened from /, or beneath `root` when it is in a private folder."""
        if root is None:
            return open_path(placed, follow=follow, directory=directory)
        root_fd = open_path(root, directory=True)
        try:
            return open_path(placed.relative_to(root), dir_fd=root_fd, beneath=True, follow=follow, directory=directory)
        finally:
            os.close(root_fd)

    def readable(self, opened: Opened, shown: Path | str) -> None:
        """Raise HiddenPath when the sandbox hides the opened object."""
        if self.hides(opened.real, opened.info):
            raise HiddenPath(shown)

    def hides(self, real: Path, info: os.stat_result) -> bool:
        """Whether the sandbox hides the object at `real` with status `info`."""
        if not self.view.confines:
            return False
        if self.hides_entry(real, stat.S_ISDIR(info.st_mode)):
            return True
        linked = stat.S_ISREG(info.st_mode) and info.st_nlink > 1
        return linked and (info.st_dev, info.st_ino) in self._hidden_files()

    def hides_entry(self, real: Path, is_dir: bool) -> bool:
        """Whether the sandbox hides the name `real` (a directory when `is_dir`) from a listing."""
        if not self.view.confines:
            return False
        return self._view_for(real.parent).hides(real, is_file=not is_dir) or _process_entry(real)

    def _view_for(self, folder: Path) -> SandboxView:
        """The view with only the hidden and exempt paths that can bear on `folder` or what is
        in it (over it, or in its tree), the others dropped: the same answers for these paths,
        without comparing every entry of a listing with every secret of the home. A prefix of
        the text is enough to keep a path (more are kept than need be, never fewer), and what
        bears on a folder bears on its parent: a folder's view is narrowed from its parent's."""
        narrowed = self._narrowed.get(folder)
        if narrowed is None:
            text = str(folder)

            def bears(path: Path) -> bool:
                other = str(path)
                return text.startswith(other) or other.startswith(text)

            view = self._narrowed.get(folder.parent, self.view)
            hidden, exempt = tuple(filter(bears, view.hidden)), tuple(filter(bears, view.exempt))
            narrowed = self._narrowed[folder] = replace(view, hidden=hidden, exempt=exempt)
        return narrowed

    def _hidden_files(self) -> frozenset[tuple[int, int]]:
        """(device, inode) of the hidden files that have other names (looked up once)."""
        if self._hidden_inodes is None:
            self._hidden_inodes = frozenset(_linked_files(self.view.hidden, self._view_for))
        return self._hidden_inodes

    def check_write(self, real: Path, shown: Path | str) -> None:
        """Raise unless a command could write `real` here (`shown`: the path as the model wrote it)."""
        view = self._view_for(real.parent)
        if view.may_write(real):
            return
        if view.hides(real):
            raise HiddenPath(shown)
        text, where = inert_line(str(shown)), inert_line(str(real))
        if Path(os.path.normpath(shown)) != real:  # through a symlink, or `..`: say where it really is
            text = f"{text} (which is {where})"
        if view.protects(real):
            held = f"{PROTECTED_TEXT} are read-only inside the writable places"
            message = f"{text}: protected by the sandbox ({held}); writing it needs the user's approval"
        else:
            held = f"only {view.writable_text()} are writable here"
            message = (
                f"{text}: outside the sandbox's writable places ({view.writable_text()}); writing it needs the "
                "user's approval"
            )
        raise Refused(message, SandboxRefusal("write", (where,), held))


def _process_entry(real: Path) -> bool:
    """/proc/<pid>/... (and self, thread-self): another process's memory, environment, files."""
    parts = real.parts
    return len(parts) > 2 and parts[1] == "proc" and (parts[2].isdigit() or parts[2] in ("self", "thread-self"))


def _linked_files(hidden: tuple[Path, ...], view_for: Callable[[Path], SandboxView]) -> Iterator[tuple[int, int]]:
    """(device, inode) of each hidden regular file with more than one name, the `hidden` folders
    looked through (not their exempt parts: `view_for(folder)` says) up to HIDDEN_SCAN_MAX entries."""
    budget = HIDDEN_SCAN_MAX
    pending = list(hidden)
    while pending and budget > 0:
        path = pending.pop()
        budget -= 1
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            yield info.st_dev, info.st_ino
        elif stat.S_ISDIR(info.st_mode) and view_for(path.parent).hides(path, is_file=False):
            with contextlib.suppress(OSError):
                pending.extend(path / name for name in os.listdir(path))
