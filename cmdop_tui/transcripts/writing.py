"""Writing a transcript's lines so that a failure never leaves half a record behind.

`write_line` writes one complete line or nothing: a write the disk cut short (ENOSPC on the last
pages, a quota, an I/O error) is cut back off the file before the error is raised, so the file
always ends on a whole record. `recreate` puts a transcript back where it belongs after it was
removed or replaced while the app ran, with everything written so far: the descriptor still
reads the old file (unlinked or not), so the copy is exact, byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from cmdop_tui.transcripts.paths import ensure_private_dir

_COPY_CHUNK = 1 << 20


def write_line(fd: int, data: bytes) -> None:
    """Append `data` (one record's line) to `fd` (``O_APPEND``) whole, or leave the file as it was.

    Raises the OSError of the write that failed, after cutting off what it left. When even that
    cut fails, raises `TornTailError` (an OSError): the file then ends on a fragment, which the
    next line must start after a newline of its own (see `Transcript`).
    """
    start = os.fstat(fd).st_size
    written = 0
    try:
        while written < len(data):  # a regular file writes short only when it runs out of room
            written += os.write(fd, data[written:])
    except OSError as exc:
        if written:
            try:
                os.ftruncate(fd, start)
            except OSError:
                raise TornTailError(exc.errno, exc.strerror) from exc
        raise


class TornTailError(OSError):
    """A write failed part way and its fragment could not be cut off the file."""


def same_file(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open on `fd` (not removed, not replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def recreate(path: Path, fd: int) -> tuple[int, str]:
    """Write a new file at `path` holding everything `fd` holds; (its descriptor, what happened).

    A file found at `path` (one that replaced ours) is kept beside it as ``<name>.replaced``. The
    new descriptor is opened like the writer's (read-write, append, close-on-exec, 0600); the
    caller locks it and closes `fd`. On failure (the disk is full, too) nothing is left behind.
    """
    directory = path.parent
    ensure_private_dir(directory)  # the whole directory may have gone
    # A fresh name, made here and never followed: a name planted in the folder (a symlink to a
    # file that runs later) is neither written through nor truncated.
    spare = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.new"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC
    new_fd = os.open(spare, flags, 0o600)
    try:
        _copy(fd, new_fd)
        os.fchmod(new_fd, 0o600)
        getattr(os, "fdatasync", os.fsync)(new_fd)
        replaced = path.exists()
        if replaced:
            os.replace(path, path.with_name(path.name + ".replaced"))
        os.replace(spare, path)
        sync_directory(directory)  # the new name survives a power loss too
    except BaseException:
        os.close(new_fd)
        with contextlib.suppress(OSError):
            spare.unlink()
        raise
    if replaced:
        return new_fd, f"was replaced while the app ran (the other file is kept as {path.name}.replaced)"
    return new_fd, "was removed while the app ran"


def sync_directory(directory: Path) -> None:
    """Make the names in `directory` (a file created or renamed there) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy(source: int, target: int) -> None:
    offset = 0
    while piece := os.pread(source, _COPY_CHUNK, offset):
        write_line(target, piece)
        offset += len(piece)
