"""Opening a path so that what was checked is what is used.

A path is a name, and a name can change between two system calls: a symlink flipped after a
check leads the next open somewhere else. So the file tools never check a name and then use it
again: they open it (an `O_PATH` descriptor: nothing read yet, no device opened), ask the kernel
where the opened object really is (`real_path`), decide on that, and then read through the
descriptor or write relative to it.

    open_path(path, dir_fd=, beneath=, follow=)   an O_PATH descriptor of what `path` names
    reopen(fd, flags)                              that object opened for reading
    real_path(fd)                                  where it is, as the kernel knows it

`open_path` is `openat2(2)` with `RESOLVE_NO_MAGICLINKS` (a `/proc/<pid>/fd/N` or
`/proc/<pid>/root` link jumps to its object whatever its text says, even into another mount
namespace) and, with `beneath`, `RESOLVE_BENEATH` (never above `dir_fd`: not through `..`, an
absolute path or an absolute symlink). Where the kernel has no openat2 (before 5.6, or a system
call filter refuses it), the same rules hold by a walk: one component at a time with
`O_NOFOLLOW`, each symlink read and resolved here, `..` taken from the descriptors walked.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
from collections import deque
from collections.abc import Callable
from pathlib import Path

__all__ = ["O_PATH", "open_path", "real_path", "reopen"]

SYS_OPENAT2 = 437  # the same number on every architecture (added after their tables were unified)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
AT_FDCWD = -100
MAX_SYMLINKS = 40  # as the kernel: more links than this in one lookup is a loop
RACE_RETRIES = 8  # openat2 says EAGAIN when a rename raced a `..`: try again
DELETED = " (deleted)"  # what /proc/self/fd says after the name of an unlinked file

# Without O_PATH (not Linux: no sandbox there to hold), a plain non-blocking open stands in.
O_PATH: int = getattr(os, "O_PATH", 0)
_PATH_FLAGS = (O_PATH or (os.O_RDONLY | os.O_NONBLOCK)) | os.O_CLOEXEC  # openat2 takes no more with O_PATH


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _syscall() -> Callable[..., int] | None:
    """libc's syscall(2), if openat2 works through it here (probed once)."""
    if not O_PATH:
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    how = _OpenHow(O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
    fd = call(ctypes.c_long(SYS_OPENAT2), ctypes.c_long(AT_FDCWD), b"/", ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:  # ENOSYS (an older kernel) or EPERM (a filter that does not know it)
        return None
    os.close(fd)
    return call


def openat2_available() -> bool:
    """Whether this kernel resolves paths for us (else the walk does)."""
    return _syscall() is not None


def open_path(
    path: str | Path, *, dir_fd: int | None = None, beneath: bool = False, follow: bool = True, directory: bool = False
) -> int:
    """An O_PATH descriptor of what `path` names, relative to `dir_fd` (the working directory
    when None), never through a magic link; with `beneath`, never above `dir_fd`; with `follow`
    False, a final symlink itself; with `directory`, only a directory. Raises OSError."""
    text = os.fspath(path)
    flags = _PATH_FLAGS | (0 if follow else os.O_NOFOLLOW) | (os.O_DIRECTORY if directory else 0)
    if not O_PATH:
        return os.open(text, flags, dir_fd=dir_fd)
    call = _syscall()
    if call is None:
        return _walk(text, dir_fd, beneath=beneath, follow=follow, directory=directory)
    how = _OpenHow(flags, 0, RESOLVE_NO_MAGICLINKS | (RESOLVE_BENEATH if beneath else 0))
    encoded = os.fsencode(text)
    base = AT_FDCWD if dir_fd is None else dir_fd
    for _ in range(RACE_RETRIES):
        fd = call(ctypes.c_long(SYS_OPENAT2), ctypes.c_long(base), encoded, ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code not in (errno.EAGAIN, errno.EINTR):
            break
    raise _error(code, text)


def _error(code: int, path: str) -> OSError:
    """The OSError for `code`, saying plainly what the two refusals of this module mean."""
    reasons = {errno.EXDEV: "leads outside the folder it must stay in", errno.ELOOP: "too many or magic symlinks"}
    return OSError(code, reasons.get(code, os.strerror(code)), path)


def reopen(fd: int, flags: int) -> int:
    """The object `fd` (an O_PATH descriptor) opened again with `flags`: the object itself,
    whatever its name leads to now (/proc/self/fd names the descriptor, not the path)."""
    if not O_PATH:
        return os.dup(fd)
    return os.open(f"/proc/self/fd/{fd}", flags | os.O_CLOEXEC | os.O_NOCTTY)


def real_path(fd: int) -> Path:
    """Where the object `fd` is, symlinks resolved, as the kernel knows it. Raises OSError."""
    if O_PATH:
        text = os.readlink(f"/proc/self/fd/{fd}")
    else:  # macOS and its kind
        import fcntl

        text = os.fsdecode(fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))).rstrip("\0")
    if text.endswith(DELETED) and os.fstat(fd).st_nlink == 0:
        text = text.removesuffix(DELETED)
    if not text.startswith("/"):
        raise OSError(errno.ENOENT, "not a path of this machine's file system", text)
    return Path(text)


# --- where there is no openat2 ---------------------------------------------------------------


@functools.cache
def _proc_device() -> int | None:
    """The device of /proc, whose symlinks are magic: the walk refuses them, as openat2 does."""
    try:
        return os.stat("/proc/self").st_dev
    except OSError:
        return None


def _walk(path: str, dir_fd: int | None, *, beneath: bool, follow: bool, directory: bool) -> int:
    """`open_path` by hand: each component opened with O_NOFOLLOW relative to the one before."""
    if beneath and path.startswith("/"):
        raise _error(errno.EXDEV, path)
    start = "/" if path.startswith("/") else "."
    walked = [os.open(start, _PATH_FLAGS | os.O_DIRECTORY, dir_fd=None if start == "/" else dir_fd)]
    pending = deque(path.split("/"))
    links = 0
    try:
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                _climb(walked, beneath, path)
                continue
            more = bool(pending)  # more components, or a trailing `/`: this must be a folder
            walked.append(os.open(name, _PATH_FLAGS | os.O_NOFOLLOW, dir_fd=walked[-1]))
            info = os.fstat(walked[-1])
            if stat.S_ISLNK(info.st_mode) and (follow or more):
                links += 1
                target = _link_text(walked.pop(), info, links, path)
                if target.startswith("/"):
                    if beneath:
                        raise _error(errno.EXDEV, path)
                    _restart_at_root(walked)
                pending.extendleft(reversed(target.split("/")))
                continue
            if (more or directory) and not stat.S_ISDIR(info.st_mode):
                raise _error(errno.ENOTDIR, path)
        return walked.pop()
    finally:
        for fd in walked:
            os.close(fd)


def _climb(walked: list[int], beneath: bool, path: str) -> None:
    """`..`: back to the folder walked before, or (not beneath) the parent of the first."""
    if len(walked) > 1:
        os.close(walked.pop())
    elif beneath:
        raise _error(errno.EXDEV, path)
    else:
        parent = os.open("..", _PATH_FLAGS | os.O_DIRECTORY, dir_fd=walked[0])
        os.close(walked[0])
        walked[0] = parent


def _link_text(fd: int, info: os.stat_result, links: int, path: str) -> str:
    """The text of the symlink `fd` (closed here), or ELOOP for a loop or a magic link: one of
    /proc's that names an object, not a path (`/proc/self` and `/proc/mounts` are plain ones,
    with a relative text; `fd/N`, `cwd`, `root`, `exe`, `ns/*` say `/...` or `type:[inode]`)."""
    try:
        text = os.readlink("", dir_fd=fd)
        magic = info.st_dev == _proc_device() and (text.startswith("/") or ":[" in text)
        if links > MAX_SYMLINKS or magic:
            raise _error(errno.ELOOP, path)
        return text
    finally:
        os.close(fd)


def _restart_at_root(walked: list[int]) -> None:
    """An absolute symlink: the walk goes on from /."""
    for fd in walked:
        os.close(fd)
    walked[:] = [os.open("/", _PATH_FLAGS | os.O_DIRECTORY)]
