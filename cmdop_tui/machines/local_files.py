"""The file operations of the local machine, as blocking functions (LocalMachine runs them in a
worker thread, so the event loop and the UI's Stop button stay responsive).

They give the model cheap, bounded, structured access to the file system without a shell round
trip. Paths come in absolute (LocalMachine resolves them). Everything returned passes through the
text-safety helpers, so file contents and file names can never put escape sequences on the
user's terminal.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, ParamSpec

from cmdop_tui.machines.machine import (
    EDIT_MAX_BYTES,
    GLOB_MAX_RESULTS,
    GREP_MAX_FILE_BYTES,
    GREP_MAX_MATCHES,
    LIST_MAX_ENTRIES,
    READ_MAX_CHARS,
    READ_MAX_LINES,
    FileBytes,
    MachineResult,
)
from cmdop_tui.support.diffs import apply_edit
from cmdop_tui.support.text import decode_output, inert_line

__all__ = ["edit_file", "glob", "grep", "guarded", "list_dir", "read_bytes", "read_file", "write_file"]

GREP_LINE_CHARS = 500
GLOB_MAX_SCANNED = 100_000
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_BYTES = 1024 * 1024  # longer lines are cut so one line cannot exhaust memory
COUNT_LINES_MAX_BYTES = 256 * 1024 * 1024  # beyond this, "more lines follow" without a total
_Params = ParamSpec("_Params")


def _show(path: Path | str) -> str:
    """A path as it may appear in tool output: on one line, with no control characters."""
    return inert_line(str(path))


def guarded(work: Callable[_Params, MachineResult], *args: _Params.args, **kwargs: _Params.kwargs) -> MachineResult:
    """Run `work`; an OSError it does not handle itself becomes an error result naming the path."""
    try:
        return work(*args, **kwargs)
    except FileNotFoundError as exc:
        return MachineResult.error(f"no such file or directory: {_show(exc.filename or '')}")
    except OSError as exc:
        return MachineResult.error(f"{_show(exc.filename or '')}: {exc.strerror or exc}")


def _is_binary(head: bytes) -> bool:
    """The `grep`/`git` heuristic: a NUL byte near the start means binary."""
    return b"\0" in head


def _iter_lines(stream: IO[bytes]) -> Iterator[str]:
    """Lines of a binary stream as inert text, without terminators.

    Lines are split on `\\n` only (like `wc -l`, `sed -n` and `grep -n`, so numbers agree with
    the shell); a line longer than MAX_LINE_BYTES is cut and the rest of it skipped.
    """
    while True:
        raw = stream.readline(MAX_LINE_BYTES)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
            _skip_rest_of_line(stream)
            raw += b" [line cut]"
        yield inert_line(decode_output(raw.removesuffix(b"\n").removesuffix(b"\r")))


def _skip_rest_of_line(stream: IO[bytes]) -> None:
    """Read past the end of an overlong line."""
    while True:
        chunk = stream.readline(MAX_LINE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


def _count_rest(stream: IO[bytes]) -> int:
    """How many lines are left in `stream` (a final line without `\\n` counts)."""
    count, last = 0, b"\n"
    while chunk := stream.read(1024 * 1024):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _open_regular(path: Path) -> tuple[IO[bytes], int]:
    """Open a regular file for reading, with its size; FIFOs and devices could block forever."""
    if path.is_dir():
        raise IsADirectoryError(21, "is a directory; use list_dir", str(path))
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise OSError(0, "not a regular file", str(path))
    stream = open(path, "rb")
    return stream, os.fstat(stream.fileno()).st_size


# --- read_file ---------------------------------------------------------------------------------


def read_file(path: Path, start: int, end: int | None) -> MachineResult:
    """Numbered lines `start`..`end` of a text file, capped, with a note on how to read on."""
    if end is not None and end < start:
        return MachineResult.error(f"end ({end}) is before start ({start})")
    stream, size = _open_regular(path)
    with stream:
        if _is_binary(stream.read(BINARY_SNIFF_BYTES)):
            return MachineResult.error(f"{_show(path)} is a binary file ({size:,} bytes); read_file shows text only")
        stream.seek(0)
        return _numbered(stream, start, end, size)


def _numbered(stream: IO[bytes], start: int, end: int | None, size: int) -> MachineResult:
    """The `cat -n` view of the requested range, stopping at the line and character caps."""
    shown: list[str] = []
    used = lineno = 0
    capped = False
    for lineno, line in enumerate(_iter_lines(stream), 1):
        if lineno < start:
            continue
        if (end is not None and lineno > end) or len(shown) == READ_MAX_LINES:
            capped = end is None or lineno <= end
            break
        entry = f"{lineno:>6}\t{line}"
        if used + len(entry) > READ_MAX_CHARS:
            if not shown:  # a single huge line: show its start rather than nothing
                shown.append(entry[:READ_MAX_CHARS] + " [line cut]")
            capped = True
            break
        shown.append(entry)
        used += len(entry) + 1
    else:
        lineno += 1  # ran off the end: no line `lineno` exists
    if not shown:
        return _nothing_shown(start, lineno - 1)
    if capped:
        shown.append(_read_on_note(start, start + len(shown) - 1, lineno - 1, stream, size))
    return MachineResult("\n".join(shown))


def _nothing_shown(start: int, total: int) -> MachineResult:
    """The answer when the range is empty: an empty file, or a start past the end."""
    if total == 0 and start == 1:
        return MachineResult("(empty file)")
    return MachineResult.error(f"start={start} is past the end of the file ({total:,} lines)")


def _read_on_note(first: int, last: int, consumed: int, stream: IO[bytes], size: int) -> str:
    """Tell the model which lines it got and how to ask for the next ones."""
    if size <= COUNT_LINES_MAX_BYTES:
        total = f"of {consumed + 1 + _count_rest(stream):,}"
    else:
        total = f"of a {size:,}-byte file"
    return f"[showing lines {first:,}-{last:,} {total}; call read_file with start={last + 1} to read more]"


# --- list_dir ----------------------------------------------------------------------------------


def list_dir(path: Path) -> MachineResult:
    """One line per entry, sorted by name, capped at LIST_MAX_ENTRIES."""
    if path.exists() and not path.is_dir():
        return MachineResult.error(f"{_show(path)} is not a directory; use read_file")
    with os.scandir(path) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    if not entries:
        return MachineResult(f"{_show(path)}: (empty directory)")
    lines = [f"{_show(path)}: {len(entries):,} entries"]
    lines.extend(_describe_entry(entry) for entry in entries[:LIST_MAX_ENTRIES])
    if len(entries) > LIST_MAX_ENTRIES:
        hidden = len(entries) - LIST_MAX_ENTRIES
        lines.append(f"[... {hidden:,} more entries not shown; use glob to filter]")
    return MachineResult("\n".join(lines))


def _describe_entry(entry: os.DirEntry[str]) -> str:
    """`name/` for a directory, `name  (N bytes)` for a file, `name -> target` for a symlink."""
    name = _show(entry.name)
    try:
        if entry.is_symlink():
            return f"{name} -> {_show(os.readlink(entry.path))}  ({_symlink_kind(entry)})"
        if entry.is_dir():
            return f"{name}/"
        info = entry.stat()
    except OSError as exc:
        return f"{name}  ({exc.strerror or 'unreadable'})"
    if stat.S_ISREG(info.st_mode):
        return f"{name}  ({info.st_size:,} bytes)"
    return f"{name}  ({_special_kind(info.st_mode)})"


def _symlink_kind(entry: os.DirEntry[str]) -> str:
    """Where a symlink leads: a directory, something else, or nowhere."""
    if not os.path.exists(entry.path):
        return "broken symlink"
    return "symlink to a directory" if entry.is_dir() else "symlink"


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _special_kind(mode: int) -> str:
    """What a non-regular, non-directory entry is."""
    return next((label for test, label in _SPECIAL_KINDS if test(mode)), "special file")


# --- write_file --------------------------------------------------------------------------------


def write_file(path: Path, content: str) -> MachineResult:
    """Replace the file's content atomically: readers see the old file or the new, never half."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.is_dir():
        return MachineResult.error(f"{_show(path)} is a directory")
    data = content.encode("utf-8")
    existed = target.exists()
    mode = stat.S_IMODE(target.stat().st_mode) if existed else 0o666 & ~_umask()
    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(target, data, mode)
    verb = "replaced" if existed else "created"
    return MachineResult(f"wrote {len(data):,} bytes to {_show(path)} ({verb})")


def _atomic_write(target: Path, data: bytes, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Write to a temp file beside `target`, then rename it over `target`, with `mode` and, where
    this process may give it, `owner` (uid, gid)."""
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
            made = os.fstat(temp.fileno())
            if owner is not None and owner != (made.st_uid, made.st_gid):
                with contextlib.suppress(PermissionError):  # only root may give a file away
                    os.fchown(temp.fileno(), *owner)
        os.chmod(temp_name, mode)  # after the owner: chown clears set-id bits
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


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


# --- edit_file ---------------------------------------------------------------------------------


def edit_file(path: Path, old: str, new: str, replace_all: bool) -> MachineResult:
    """Replace `old` with `new` (support/diffs.py says how), then write the file atomically with
    its mode and owner; a failed edit, or a file that changed meanwhile, leaves it as it was."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if not target.exists():
        return MachineResult.error(
            f"no such file: {_show(path)}; edit_file changes an existing file (write_file creates one)"
        )
    stream, size = _open_regular(target)
    with stream:
        before = os.fstat(stream.fileno())
        if size > EDIT_MAX_BYTES:
            return MachineResult.error(f"{_show(path)} is too large to edit ({size:,} bytes); use a command")
        data = stream.read()
    edit = apply_edit(data, old, new, replace_all=replace_all, name=_show(path))
    if edit.error is not None:
        return MachineResult.error(edit.error)
    now = target.stat()
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
        return MachineResult.error(f"{_show(path)} changed while it was being edited; it was left as it is now")
    _atomic_write(target, edit.data, stat.S_IMODE(before.st_mode), (before.st_uid, before.st_gid))
    return MachineResult(edit.summary(_show(path)))


def read_bytes(path: Path, max_bytes: int) -> FileBytes:
    """The file's bytes (through a symlink) for a diff, or why not; never raises an OSError."""
    try:
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        if not target.exists():
            return FileBytes.missing()
        stream, size = _open_regular(target)
        with stream:
            if size > max_bytes:
                return FileBytes.failed(f"{_show(path)} is too large to compare ({size:,} bytes)")
            return FileBytes(stream.read(max_bytes + 1))
    except OSError as exc:
        return FileBytes.failed(f"{_show(path)}: {exc.strerror or exc}")


# --- grep --------------------------------------------------------------------------------------


class _GrepStats:
    """Matches found and files passed over, for the summary notes."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.binary = self.large = self.unreadable = 0

    def skipped_note(self) -> str | None:
        """`[skipped 2 binary files, 1 file over 10 MB]`, or None when nothing was skipped."""
        over = f"over {GREP_MAX_FILE_BYTES // (1024 * 1024)} MB"
        parts = [
            _plural(self.binary, "binary file", "binary files"),
            _plural(self.large, f"file {over}", f"files {over}"),
            _plural(self.unreadable, "unreadable file", "unreadable files"),
        ]
        parts = [part for part in parts if part]
        return f"[skipped {', '.join(parts)}]" if parts else None


def _plural(count: int, singular: str, plural: str) -> str:
    """`1 binary file`, `3 binary files`, or empty for zero."""
    if not count:
        return ""
    return f"{count:,} {singular if count == 1 else plural}"


def grep(pattern: str, root: Path, file_glob: str | None, skip: Callable[[Path], bool] | None = None) -> MachineResult:
    """`path:line:text` for every line matching the pattern, capped at GREP_MAX_MATCHES; files
    `skip` names (what the sandbox hides) are not read."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        return MachineResult.error(f"invalid regex {pattern!r}: {exc}")
    if not root.exists():
        raise FileNotFoundError(2, "no such file or directory", str(root))
    stats = _GrepStats()
    for file, shown_as in _grep_targets(root, file_glob):
        if skip is not None and skip(file):
            continue
        _grep_file(regex, file, shown_as, stats)
        if len(stats.hits) >= GREP_MAX_MATCHES:
            break
    return MachineResult("\n".join(_grep_report(stats, pattern, root)))


def _grep_report(stats: _GrepStats, pattern: str, root: Path) -> list[str]:
    """The hits followed by the notes about caps and skipped files."""
    lines = stats.hits[:GREP_MAX_MATCHES]
    if not lines:
        lines = [f"no matches for {_show(repr(pattern))} in {_show(root)}"]
    elif len(lines) == GREP_MAX_MATCHES:
        lines.append(f"[stopped after {GREP_MAX_MATCHES} matches; narrow the pattern or path]")
    note = stats.skipped_note()
    return lines + [note] if note else lines


def _grep_targets(root: Path, name_pattern: str | None) -> Iterator[tuple[Path, str]]:
    """Files to search with their displayed names: `root` itself, or its tree minus `.git`."""
    if not root.is_dir():
        yield root, root.name
        return
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(name for name in subdirs if name != ".git")
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(directory, name), root)
            if name_pattern is None or _glob_matches(name_pattern, name, relative):
                yield Path(directory, name), relative


def _glob_matches(pattern: str, name: str, relative: str) -> bool:
    """`*.py` filters by file name; a pattern with `/` filters by path below the searched dir."""
    return fnmatch.fnmatchcase(relative if "/" in pattern else name, pattern)


def _grep_file(regex: re.Pattern[str], file: Path, shown_as: str, stats: _GrepStats) -> None:
    """Add the file's matching lines to `stats`, or count why it was skipped."""
    try:
        stream, size = _open_regular(file)
    except OSError:
        stats.unreadable += 1
        return
    with stream:
        if size > GREP_MAX_FILE_BYTES:
            stats.large += 1
        elif _is_binary(stream.read(BINARY_SNIFF_BYTES)):
            stats.binary += 1
        else:
            stream.seek(0)
            _collect_hits(regex, stream, _show(shown_as), stats)


def _collect_hits(regex: re.Pattern[str], stream: IO[bytes], name: str, stats: _GrepStats) -> None:
    """Append `name:line:text` for each matching line until the match cap."""
    for lineno, line in enumerate(_iter_lines(stream), 1):
        if regex.search(line):
            text = line if len(line) <= GREP_LINE_CHARS else line[:GREP_LINE_CHARS] + "…"
            stats.hits.append(f"{name}:{lineno}:{text}")
            if len(stats.hits) >= GREP_MAX_MATCHES:
                return


# --- glob --------------------------------------------------------------------------------------


def glob(pattern: str, base: Path) -> MachineResult:
    """Paths matching the pattern (with `**`), sorted, relative to the base directory."""
    if Path(pattern).is_absolute():
        return MachineResult.error("pattern must be relative; pass the directory to search as cwd")
    if not base.is_dir():
        return MachineResult.error(f"{_show(base)} is not a directory")
    try:
        found = _scan_glob(base, pattern)
    except (ValueError, NotImplementedError) as exc:
        return MachineResult.error(f"invalid pattern {_show(repr(pattern))}: {exc}")
    if not found:
        return MachineResult(f"no paths match {_show(repr(pattern))} in {_show(base)}")
    lines = [_show(path) for path in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        more = f"{len(found) - GLOB_MAX_RESULTS:,}"
        more = f"at least {more}" if len(found) >= GLOB_MAX_SCANNED else more
        lines.append(f"[... {more} more matches not shown; narrow the pattern]")
    return MachineResult("\n".join(lines))


def _scan_glob(base: Path, pattern: str) -> list[str]:
    """Sorted relative matches (directories end with `/`), scanning at most GLOB_MAX_SCANNED."""
    found: list[str] = []
    for path in base.glob(pattern):
        relative = os.path.relpath(path, base)
        found.append(relative + "/" if path.is_dir() and relative != "." else relative)
        if len(found) >= GLOB_MAX_SCANNED:
            break
    return sorted(found)
