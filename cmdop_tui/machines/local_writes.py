"""The writes of the local machine's file tools (write_file, edit_file), as blocking functions.

A write never checks a name and then writes by it. The folder the file goes in is opened (the
missing ones made one at a time, each checked before it is made), the sandbox's rules judge
its real path and the file's name (machines/local_rules.py), and the new content goes to a
temporary file made in that folder (O_CREAT | O_EXCL, relative to its descriptor), renamed over
the old one in the same folder: readers see the old file or the new, never half, and a rename
replaces a name, so it never writes through a symlink or into a hard link's other names.

A final component that is a symlink is written through to its target, as editors do for
dotfiles: the link is read, and its target's folder opened and judged by the same rules.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.beneath import MAX_SYMLINKS, O_PATH
from cmdop_tui.machines.local_files import read_opened, show
from cmdop_tui.machines.local_rules import FileRules, Opened
from cmdop_tui.machines.machine import EDIT_MAX_BYTES, MachineResult
from cmdop_tui.support.diffs import apply_edit

__all__ = ["edit_file", "write_file"]

_FOLDER_FLAGS = (O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
TEMP_NAME_TRIES = 8


@dataclass(frozen=True)
class Target:
    """Where a write goes: a name in an opened folder, judged by the sandbox's rules."""

    folder: int  # O_PATH descriptor of the folder the file is (or will be) in
    name: str
    real: Path  # the folder's real path / name
    info: os.stat_result | None  # the entry now (not followed), None when there is none


def write_file(rules: FileRules, path: Path, content: str) -> MachineResult:
    """Replace the file's content atomically: readers see the old file or the new, never half."""
    data = content.encode("utf-8")
    with _target(rules, path, create=True) as target:
        info = target.info
        if info is not None and stat.S_ISDIR(info.st_mode):
            return MachineResult.error(f"{show(path)} is a directory")
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
        _atomic_write(target, data, mode)
    verb = "replaced" if info is not None else "created"
    return MachineResult(f"wrote {len(data):,} bytes to {show(path)} ({verb})")


def edit_file(rules: FileRules, path: Path, old: str, new: str, replace_all: bool) -> MachineResult:
    """Replace `old` with `new` (support/diffs.py says how), then write the file atomically with
    its mode and owner; a failed edit, or a file that changed meanwhile, leaves it as it was."""
    missing = MachineResult.error(
        f"no such file: {show(path)}; edit_file changes an existing file (write_file creates one)"
    )
    try:
        with _target(rules, path, create=False) as target:
            if target.info is None:
                return missing
            return _edit(rules, target, path, (old, new, replace_all))
    except FileNotFoundError:
        return missing


def _edit(rules: FileRules, target: Target, path: Path, change: tuple[str, str, bool]) -> MachineResult:
    """The edit of the file `target` names: read through one descriptor, replaced only if the
    name still names the file that was read."""
    with _opened_file(target) as opened:
        rules.readable(opened, path)  # a hard link to a hidden file is not read either
        stream, size = read_opened(opened, path)
    with stream:
        before = os.fstat(stream.fileno())
        if size > EDIT_MAX_BYTES:
            return MachineResult.error(f"{show(path)} is too large to edit ({size:,} bytes); use a command")
        data = stream.read()
    old, new, replace_all = change
    edit = apply_edit(data, old, new, replace_all=replace_all, name=show(path))
    if edit.error is not None:
        return MachineResult.error(edit.error)
    now = os.stat(target.name, dir_fd=target.folder, follow_symlinks=False)
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
        return MachineResult.error(f"{show(path)} changed while it was being edited; it was left as it is now")
    _atomic_write(target, edit.data, stat.S_IMODE(before.st_mode), (before.st_uid, before.st_gid))
    return MachineResult(edit.summary(show(path)))


@contextlib.contextmanager
def _opened_file(target: Target) -> Iterator[Opened]:
    """The file `target` names, opened (O_PATH, the name itself: not a symlink swapped in)."""
    fd = os.open(
        target.name, (O_PATH or os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=target.folder
    )
    try:
        yield Opened(fd, target.real, os.fstat(fd))
    finally:
        os.close(fd)


# --- where the write goes -----------------------------------------------------------------------


@contextlib.contextmanager
def _target(rules: FileRules, path: Path, *, create: bool) -> Iterator[Target]:
    """The folder and name a write of `path` goes to, judged (raises HiddenPath or Refused):
    through a final symlink to its target; missing folders made when `create`."""
    folder_path, name = path.parent, path.name
    for _ in range(MAX_SYMLINKS):
        if name in ("", ".", ".."):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        folder, real = _open_folder(rules, folder_path, create=create, shown=path)
        try:
            info = _entry(folder, name)
            if info is not None and stat.S_ISLNK(info.st_mode):
                text = os.readlink(name, dir_fd=folder)
                link = Path(text) if text.startswith("/") else real / text
                folder_path, name = link.parent, link.name
                continue
            rules.check_write(real / name, path)
            yield Target(folder, name, real / name, info)
            return
        finally:
            os.close(folder)
    raise OSError(errno.ELOOP, "too many symlinks", str(path))


def _entry(folder: int, name: str) -> os.stat_result | None:
    """The entry `name` of the folder, not followed; None when there is none."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_folder(rules: FileRules, path: Path, *, create: bool, shown: Path) -> tuple[int, Path]:
    """The folder `path` names, opened (O_PATH), with its real path; when `create`, the missing
    folders are made one at a time, each judged by the rules before it is made."""
    missing: list[str] = []
    ancestor = path
    while True:
        try:
            with rules.open(ancestor, directory=True) as opened:
                folder, real = os.dup(opened.fd), opened.real
            break
        except FileNotFoundError:
            if not create or ancestor == ancestor.parent:
                raise
            missing.append(ancestor.name)
            ancestor = ancestor.parent
    for name in reversed(missing):  # each step closes the folder before it, whatever happens
        folder, real = _made_folder(rules, folder, real, name, shown)
    return folder, real


def _made_folder(rules: FileRules, folder: int, real: Path, name: str, shown: Path) -> tuple[int, Path]:
    """The folder `name` in `folder` (closed here), made if it is missing, opened without
    following a symlink (one put there meanwhile is refused, not followed)."""
    try:
        if name == "..":  # below a folder just made: its parent, which is `folder`'s
            return os.open("..", _FOLDER_FLAGS, dir_fd=folder), real.parent
        rules.check_write(real / name, shown)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=folder)
        return os.open(name, _FOLDER_FLAGS, dir_fd=folder), real / name  # an entry of `real`, not followed
    finally:
        os.close(folder)


# --- the write ----------------------------------------------------------------------------------


def _atomic_write(target: Target, data: bytes, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Write a temp file in the target's folder, then rename it over the target's name, with
    `mode` and, where this process may give it, `owner` (uid, gid)."""
    fd, temp_name = _temp_file(target)
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
            made = os.fstat(temp.fileno())
            if owner is not None and owner != (made.st_uid, made.st_gid):
                with contextlib.suppress(PermissionError):  # only root may give a file away
                    os.fchown(temp.fileno(), *owner)
            os.fchmod(temp.fileno(), mode)  # after the owner: chown clears set-id bits
        os.replace(temp_name, target.name, src_dir_fd=target.folder, dst_dir_fd=target.folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name, dir_fd=target.folder)
        raise


def _temp_file(target: Target) -> tuple[int, str]:
    """A new file beside the target (`.NAME.RANDOM.tmp`), made by us: O_EXCL, not a symlink."""
    for _ in range(TEMP_NAME_TRIES):
        name = f".{target.name[:200]}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(name, _TEMP_FLAGS, 0o600, dir_fd=target.folder), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", target.name)


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
