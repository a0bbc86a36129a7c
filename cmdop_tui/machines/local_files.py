"""The reads of the local machine's file tools, as blocking functions (LocalFiles runs them in
a worker thread, so the event loop and the UI's Stop button stay responsive); the writes are in
local_writes.py, glob in local_glob.py.

They give the model cheap, bounded, structured access to the file system without a shell round
trip. Paths come in absolute (LocalFiles resolves them), and each is opened once: the sandbox's
rules judge the object opened (machines/local_rules.py), and it is read through that descriptor,
never opened by name again, so a symlink flipped meanwhile changes nothing. What the sandbox
hides is never read, and its names are left out of listings. Everything returned passes through
the text-safety helpers, so file contents and file names can never put escape sequences on the
user's terminal.
"""

from __future__ import annotations

import errno
import fnmatch
import io
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, ParamSpec

from cmdop_tui.machines.beneath import O_PATH, open_path, real_path, reopen
from cmdop_tui.machines.local_rules import FileRules, Opened, Refused
from cmdop_tui.machines.machine import (
    GREP_MAX_FILE_BYTES,
    GREP_MAX_MATCHES,
    LIST_MAX_ENTRIES,
    READ_MAX_CHARS,
    READ_MAX_LINES,
    FileBytes,
    MachineResult,
)
from cmdop_tui.support.text import decode_output, inert_line

__all__ = [
    "grep",
    "guarded",
    "hidden_note",
    "list_dir",
    "open_folder",
    "read_bytes",
    "read_file",
    "read_opened",
    "show",
]

GREP_LINE_CHARS = 500
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_BYTES = 1024 * 1024  # longer lines are cut so one line cannot exhaust memory
COUNT_LINES_MAX_BYTES = 256 * 1024 * 1024  # beyond this, "more lines follow" without a total
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_Params = ParamSpec("_Params")


def show(path: Path | str) -> str:
    """A path as it may appear in tool output: on one line, with no control characters."""
    return inert_line(str(path))


def guarded(work: Callable[_Params, MachineResult], *args: _Params.args, **kwargs: _Params.kwargs) -> MachineResult:
    """Run `work`; an OSError it does not handle itself becomes an error result naming the path,
    a write the sandbox refused a result that may be escalated."""
    try:
        return work(*args, **kwargs)
    except Refused as refused:
        return MachineResult.denied(refused.message, refused.refusal)
    except FileNotFoundError as exc:
        return MachineResult.error(f"no such file or directory: {show(exc.filename or '')}")
    except OSError as exc:
        return MachineResult.error(f"{show(exc.filename or '')}: {exc.strerror or exc}")


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


def read_opened(opened: Opened, shown: Path | str) -> tuple[IO[bytes], int]:
    """The regular file `opened` names, for reading, with its size; FIFOs and devices could block
    forever (or do something when opened: the O_PATH descriptor opened nothing yet)."""
    mode = opened.info.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a directory; use list_dir", str(shown))
    if not stat.S_ISREG(mode):
        raise OSError(0, "not a regular file", str(shown))
    return os.fdopen(reopen(opened.fd, os.O_RDONLY), "rb"), opened.info.st_size


def _open_readable(rules: FileRules, path: Path) -> tuple[IO[bytes], int]:
    """The regular file `path` names, if the sandbox does not hide it, for reading."""
    with rules.open(path) as opened:
        rules.readable(opened, path)
        return read_opened(opened, path)


# --- read_file ---------------------------------------------------------------------------------


def read_file(rules: FileRules, path: Path, start: int, end: int | None) -> MachineResult:
    """Numbered lines `start`..`end` of a text file, capped, with a note on how to read on."""
    if end is not None and end < start:
        return MachineResult.error(f"end ({end}) is before start ({start})")
    stream, size = _open_readable(rules, path)
    with stream:
        if _is_binary(stream.read(BINARY_SNIFF_BYTES)):
            return MachineResult.error(f"{show(path)} is a binary file ({size:,} bytes); read_file shows text only")
        stream.seek(0)
        return _numbered(stream, start, end, size)


def numbered_text(text: str, start: int = 1, end: int | None = None) -> MachineResult:
    """read_file's view of a text held elsewhere (an editor's buffer): the same numbering, caps
    and notes as a file read here."""
    if end is not None and end < start:
        return MachineResult.error(f"end ({end}) is before start ({start})")
    data = text.encode("utf-8", "surrogatepass")
    return _numbered(io.BytesIO(data), start, end, len(data))


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


def open_folder(rules: FileRules, path: Path) -> tuple[int, Path]:
    """The folder `path` names, if the sandbox does not hide it, opened for listing (the caller
    closes it), with its real path."""
    with rules.open(path) as opened:
        rules.readable(opened, path)
        if not stat.S_ISDIR(opened.info.st_mode):
            raise NotADirectoryError(20, "is not a directory; use read_file", str(path))
        return reopen(opened.fd, os.O_RDONLY | os.O_DIRECTORY), opened.real


def hidden_note(count: int) -> str:
    """`[2 entries hidden by the sandbox are left out]`."""
    return f"[{_plural(count, 'entry', 'entries')} hidden by the sandbox {'is' if count == 1 else 'are'} left out]"


def list_dir(rules: FileRules, path: Path) -> MachineResult:
    """One line per entry, sorted by name, capped at LIST_MAX_ENTRIES; what the sandbox hides
    is left out, and a note says how many."""
    folder, real = open_folder(rules, path)
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        described = [_describe_entry(rules, folder, real, entry) for entry in entries]
    finally:
        os.close(folder)
    shown = [line for line in described if line is not None]
    hidden = len(described) - len(shown)
    if not shown and not hidden:
        return MachineResult(f"{show(path)}: (empty directory)")
    lines = [f"{show(path)}: {len(shown):,} entries", *shown[:LIST_MAX_ENTRIES]]
    if len(shown) > LIST_MAX_ENTRIES:
        lines.append(f"[... {len(shown) - LIST_MAX_ENTRIES:,} more entries not shown; use glob to filter]")
    if hidden:
        lines.append(hidden_note(hidden))
    return MachineResult("\n".join(lines))


def _describe_entry(rules: FileRules, folder: int, real: Path, entry: os.DirEntry[str]) -> str | None:
    """`name/` for a directory, `name  (N bytes)` for a file, `name -> target` for a symlink;
    None for what the sandbox hides (a symlink too, when what it leads to is hidden)."""
    name = show(entry.name)
    try:
        if entry.is_symlink():
            return _describe_link(rules, folder, entry.name)
        if rules.hides_entry(real / entry.name, entry.is_dir(follow_symlinks=False)):
            return None
        if entry.is_dir(follow_symlinks=False):
            return f"{name}/"
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return f"{name}  ({exc.strerror or 'unreadable'})"
    if stat.S_ISREG(info.st_mode):
        return f"{name}  ({info.st_size:,} bytes)"
    return f"{name}  ({_special_kind(info.st_mode)})"


def _describe_link(rules: FileRules, folder: int, name: str) -> str | None:
    """`name -> target  (kind)`, judged on what the link leads to, opened (no magic links)."""
    text = f"{show(name)} -> {show(os.readlink(name, dir_fd=folder))}"
    try:
        fd = open_path(name, dir_fd=folder)
    except FileNotFoundError:
        return f"{text}  (broken symlink)"
    except OSError as exc:
        return f"{text}  ({exc.strerror})"
    try:
        info = os.fstat(fd)
        if rules.hides(real_path(fd), info):
            return None
    finally:
        os.close(fd)
    return f"{text}  ({'symlink to a directory' if stat.S_ISDIR(info.st_mode) else 'symlink'})"


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _special_kind(mode: int) -> str:
    """What a non-regular, non-directory entry is."""
    return next((label for test, label in _SPECIAL_KINDS if test(mode)), "special file")


def read_bytes(rules: FileRules, path: Path, max_bytes: int) -> FileBytes:
    """The file's bytes (through a symlink) for a diff, or why not; never raises an OSError."""
    try:
        stream, size = _open_readable(rules, path)
        with stream:
            if size > max_bytes:
                return FileBytes.failed(f"{show(path)} is too large to compare ({size:,} bytes)")
            return FileBytes(stream.read(max_bytes + 1))
    except FileNotFoundError:
        return FileBytes.missing()
    except OSError as exc:
        return FileBytes.failed(f"{show(path)}: {exc.strerror or exc}")


# --- grep --------------------------------------------------------------------------------------


class _GrepStats:
    """Matches found and files passed over, for the summary notes."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.binary = self.large = self.unreadable = self.hidden = self.outside = 0

    def skipped_note(self) -> str | None:
        """`[skipped 2 binary files, 1 file over 10 MB]`, or None when nothing was skipped."""
        over = f"over {GREP_MAX_FILE_BYTES // (1024 * 1024)} MB"
        parts = [
            _plural(self.binary, "binary file", "binary files"),
            _plural(self.large, f"file {over}", f"files {over}"),
            _plural(self.unreadable, "unreadable file", "unreadable files"),
            _plural(self.hidden, "file hidden by the sandbox", "files hidden by the sandbox"),
            _plural(self.outside, "symlink leading out of the folder", "symlinks leading out of the folder"),
        ]
        parts = [part for part in parts if part]
        return f"[skipped {', '.join(parts)}]" if parts else None


def _plural(count: int, singular: str, plural: str) -> str:
    """`1 binary file`, `3 binary files`, or empty for zero."""
    if not count:
        return ""
    return f"{count:,} {singular if count == 1 else plural}"


def grep(rules: FileRules, pattern: str, root: Path, file_glob: str | None) -> MachineResult:
    """`path:line:text` for every line matching the pattern, capped at GREP_MAX_MATCHES; files
    the sandbox hides are not read, nor is what a symlink leads to outside the searched folder."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        return MachineResult.error(f"invalid regex {pattern!r}: {exc}")
    stats = _GrepStats()
    with rules.open(root) as opened:
        rules.readable(opened, root)
        if stat.S_ISDIR(opened.info.st_mode):
            _grep_tree(rules, regex, opened, file_glob, stats)
        else:
            _grep_opened(regex, opened, root.name, stats)
    return MachineResult("\n".join(_grep_report(stats, pattern, root)))


def _grep_report(stats: _GrepStats, pattern: str, root: Path) -> list[str]:
    """The hits followed by the notes about caps and skipped files."""
    lines = stats.hits[:GREP_MAX_MATCHES]
    if not lines:
        lines = [f"no matches for {show(repr(pattern))} in {show(root)}"]
    elif len(lines) == GREP_MAX_MATCHES:
        lines.append(f"[stopped after {GREP_MAX_MATCHES} matches; narrow the pattern or path]")
    note = stats.skipped_note()
    return lines + [note] if note else lines


def _grep_tree(
    rules: FileRules, regex: re.Pattern[str], opened: Opened, name_pattern: str | None, stats: _GrepStats
) -> None:
    """Search the folder's tree minus `.git` and what the sandbox hides."""
    top = reopen(opened.fd, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder, below, real, names in walk_folders(top, opened.real, lambda path: _searched(rules, path)):
            for name in names:
                relative = os.path.join(below, name) if below else name
                if name_pattern is None or _glob_matches(name_pattern, name, relative):
                    _grep_entry(rules, regex, (top, folder, name), relative, real / name, stats)
                if len(stats.hits) >= GREP_MAX_MATCHES:
                    return
    finally:
        os.close(top)


def walk_folders(
    folder: int, real: Path, enter: Callable[[Path], bool], below: str = ""
) -> Iterator[tuple[int, str, Path, list[str]]]:
    """(descriptor, path below the top, real path, sorted names that are not folders) for the
    folder `folder` and every folder under it that `enter` allows, by descriptors: each opened
    with O_DIRECTORY | O_NOFOLLOW relative to its parent, so a symlink swapped in is not
    followed and no device is ever opened."""
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    yield folder, below, real, [entry.name for entry in entries if not entry.is_dir(follow_symlinks=False)]
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and enter(real / entry.name):
            try:
                inner = os.open(entry.name, _FOLDER_FLAGS, dir_fd=folder)
            except OSError:
                continue
            try:
                yield from walk_folders(inner, real / entry.name, enter, os.path.join(below, entry.name))
            finally:
                os.close(inner)


def _searched(rules: FileRules, real: Path) -> bool:
    """Whether grep goes into the folder `real`: not `.git`, not hidden."""
    return real.name != ".git" and not rules.hides_entry(real, True)


def _glob_matches(pattern: str, name: str, relative: str) -> bool:
    """`*.py` filters by file name; a pattern with `/` filters by path below the searched dir."""
    return fnmatch.fnmatchcase(relative if "/" in pattern else name, pattern)


def _grep_entry(
    rules: FileRules,
    regex: re.Pattern[str],
    where: tuple[int, int, str],
    relative: str,
    real: Path,
    stats: _GrepStats,
) -> None:
    """Search one file of the tree: `where` is (the searched folder, the folder walked, the
    name). A symlink is opened beneath the searched folder, so it cannot lead out of it."""
    top, folder, name = where
    try:
        linked = stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
        if linked:
            fd = open_path(relative, dir_fd=top, beneath=True)
        else:
            fd = os.open(name, (O_PATH or os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError as exc:
        stats.outside += exc.errno == errno.EXDEV
        stats.unreadable += exc.errno != errno.EXDEV
        return
    try:
        opened = Opened(fd, real_path(fd) if linked else real, os.fstat(fd))
        _grep_checked(rules, regex, opened, relative, stats)
    except OSError:
        stats.unreadable += 1
    finally:
        os.close(fd)


def _grep_checked(rules: FileRules, regex: re.Pattern[str], opened: Opened, shown_as: str, stats: _GrepStats) -> None:
    """Search `opened` unless the sandbox hides it (a symlink to a folder is passed over)."""
    if rules.hides(opened.real, opened.info):
        stats.hidden += 1
    elif not stat.S_ISDIR(opened.info.st_mode):
        _grep_opened(regex, opened, shown_as, stats)


def _grep_opened(regex: re.Pattern[str], opened: Opened, shown_as: str, stats: _GrepStats) -> None:
    """Add the file's matching lines to `stats`, or count why it was skipped."""
    try:
        stream, size = read_opened(opened, shown_as)
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
            _collect_hits(regex, stream, show(shown_as), stats)


def _collect_hits(regex: re.Pattern[str], stream: IO[bytes], name: str, stats: _GrepStats) -> None:
    """Append `name:line:text` for each matching line until the match cap."""
    for lineno, line in enumerate(_iter_lines(stream), 1):
        if regex.search(line):
            text = line if len(line) <= GREP_LINE_CHARS else line[:GREP_LINE_CHARS] + "…"
            stats.hits.append(f"{name}:{lineno}:{text}")
            if len(stats.hits) >= GREP_MAX_MATCHES:
                return
