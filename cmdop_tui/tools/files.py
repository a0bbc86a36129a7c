"""File tools: read_file, list_dir, write_file, grep, glob.

They give the model cheap, bounded, structured access to the local file system without a shell
round trip. Blocking I/O runs in a worker thread so the event loop (and the UI's Stop button)
stays responsive. Everything returned passes through the text-safety helpers, so file contents
and file names can never put escape sequences on the user's terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from cmdop_tui.support.text import decode_output, inert_line

from .base import Subject, Tool, ToolContext, ToolFn, ToolResult
from .schema import MACHINE_PROPERTY, object_schema, prop

__all__ = [
    "FILE_TOOLS",
    "GLOB",
    "GREP",
    "LIST_DIR",
    "READ_FILE",
    "WRITE_FILE",
    "resolve_path",
]

READ_MAX_LINES = 2_000
READ_MAX_CHARS = 100_000
LIST_MAX_ENTRIES = 1_000
GREP_MAX_MATCHES = 500
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024
GREP_LINE_CHARS = 500
GLOB_MAX_RESULTS = 1_000
GLOB_MAX_SCANNED = 100_000
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINE_BYTES = 1024 * 1024  # longer lines are cut so one line cannot exhaust memory
COUNT_LINES_MAX_BYTES = 256 * 1024 * 1024  # beyond this, "more lines follow" without a total
_TAGS = frozenset({"files", "local"})
_FILE_PATH = "File path; relative paths start at the working directory."
_DEFAULT_CWD = "default the working directory"
_Work = Callable[[dict[str, Any], Path], ToolResult]


def resolve_path(raw: str, base: Path) -> Path:
    """`raw` with `~` expanded, made absolute against `base` (the session's working directory)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


def _show(path: Path | str) -> str:
    """A path as it may appear in tool output: on one line, with no control characters."""
    return inert_line(str(path))


def _threaded(work: _Work) -> ToolFn:
    """Turn a blocking `work(args, cwd)` into a tool function that runs it in a thread.

    OS errors the tool does not handle itself become error results naming the path. A call for
    another machine goes to that machine's implementation of the same tool (named like `work`).
    """
    remote_name = work.__name__.lstrip("_")

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        remote = ctx.remote(args)
        if remote is not None:
            return await getattr(remote, remote_name)(args)
        return await asyncio.to_thread(_guarded, work, args, ctx.cwd)

    return run


def _guarded(work: _Work, args: dict[str, Any], cwd: Path) -> ToolResult:
    """Run `work`, reporting an OSError as an error result for the model."""
    try:
        return work(args, cwd)
    except FileNotFoundError as exc:
        return ToolResult.error(f"no such file or directory: {_show(exc.filename or '')}")
    except OSError as exc:
        return ToolResult.error(f"{_show(exc.filename or '')}: {exc.strerror or exc}")


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


def _read_file(args: dict[str, Any], cwd: Path) -> ToolResult:
    """Numbered lines `start`..`end` of a text file, capped, with a note on how to read on."""
    path = resolve_path(args["path"], cwd)
    start, end = args.get("start", 1), args.get("end")
    if end is not None and end < start:
        return ToolResult.error(f"end ({end}) is before start ({start})")
    stream, size = _open_regular(path)
    with stream:
        if _is_binary(stream.read(BINARY_SNIFF_BYTES)):
            return ToolResult.error(f"{_show(path)} is a binary file ({size:,} bytes); read_file shows text only")
        stream.seek(0)
        return _numbered(stream, start, end, size)


def _numbered(stream: IO[bytes], start: int, end: int | None, size: int) -> ToolResult:
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
    return ToolResult("\n".join(shown))


def _nothing_shown(start: int, total: int) -> ToolResult:
    """The answer when the range is empty: an empty file, or a start past the end."""
    if total == 0 and start == 1:
        return ToolResult("(empty file)")
    return ToolResult.error(f"start={start} is past the end of the file ({total:,} lines)")


def _read_on_note(first: int, last: int, consumed: int, stream: IO[bytes], size: int) -> str:
    """Tell the model which lines it got and how to ask for the next ones."""
    if size <= COUNT_LINES_MAX_BYTES:
        total = f"of {consumed + 1 + _count_rest(stream):,}"
    else:
        total = f"of a {size:,}-byte file"
    return f"[showing lines {first:,}-{last:,} {total}; call read_file with start={last + 1} to read more]"


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file on a machine (this one unless `machine` says otherwise). Lines come numbered like `cat -n`. Use start and "
        "end (1-based, inclusive) to read part of a large file; at most "
        f"{READ_MAX_LINES:,} lines or about {READ_MAX_CHARS:,} characters come back per call."
    ),
    input_schema=object_schema(
        {
            "path": prop("string", _FILE_PATH),
            "start": prop("integer", "First line (default 1).", minimum=1),
            "end": prop("integer", "Last line (default: the end of the file).", minimum=1),
            "machine": MACHINE_PROPERTY,
        },
        required=["path"],
    ),
    run=_threaded(_read_file),
    tags=_TAGS,
    core=True,
    subject=Subject("path", "path"),
)


# --- list_dir ----------------------------------------------------------------------------------


def _list_dir(args: dict[str, Any], cwd: Path) -> ToolResult:
    """One line per entry, sorted by name, capped at LIST_MAX_ENTRIES."""
    path = resolve_path(args.get("path", "."), cwd)
    if path.exists() and not path.is_dir():
        return ToolResult.error(f"{_show(path)} is not a directory; use read_file")
    with os.scandir(path) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    if not entries:
        return ToolResult(f"{_show(path)}: (empty directory)")
    lines = [f"{_show(path)}: {len(entries):,} entries"]
    lines.extend(_describe_entry(entry) for entry in entries[:LIST_MAX_ENTRIES])
    if len(entries) > LIST_MAX_ENTRIES:
        hidden = len(entries) - LIST_MAX_ENTRIES
        lines.append(f"[... {hidden:,} more entries not shown; use glob to filter]")
    return ToolResult("\n".join(lines))


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


LIST_DIR = Tool(
    name="list_dir",
    description=(
        "List a directory on a machine (this one unless `machine` says otherwise), sorted by name: directories end with `/`, files "
        f"show their size, symlinks their target. At most {LIST_MAX_ENTRIES:,} entries."
    ),
    input_schema=object_schema({"path": prop("string", f"Directory; {_DEFAULT_CWD}."), "machine": MACHINE_PROPERTY}),
    run=_threaded(_list_dir),
    tags=_TAGS,
    core=True,
    subject=Subject("path", "path", default="."),
)


# --- write_file --------------------------------------------------------------------------------


def _write_file(args: dict[str, Any], cwd: Path) -> ToolResult:
    """Replace the file's content atomically: readers see the old file or the new, never half."""
    path = resolve_path(args["path"], cwd)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.is_dir():
        return ToolResult.error(f"{_show(path)} is a directory")
    data = args["content"].encode("utf-8")
    existed = target.exists()
    mode = stat.S_IMODE(target.stat().st_mode) if existed else 0o666 & ~_umask()
    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(target, data, mode)
    verb = "replaced" if existed else "created"
    return ToolResult(f"wrote {len(data):,} bytes to {_show(path)} ({verb})")


def _atomic_write(target: Path, data: bytes, mode: int) -> None:
    """Write to a temp file beside `target`, then rename it over `target`."""
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp_name, mode)
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


WRITE_FILE = Tool(
    name="write_file",
    description=(
        "Write a text file on a machine (this one unless `machine` says otherwise) (UTF-8), replacing it if it exists and creating "
        "missing parent directories. The write is atomic and keeps the file's permissions."
    ),
    input_schema=object_schema(
        {
            "path": prop("string", _FILE_PATH),
            "content": prop("string", "The complete new content."),
            "machine": MACHINE_PROPERTY,
        },
        required=["path", "content"],
    ),
    run=_threaded(_write_file),
    tags=_TAGS,
    mutating=True,
    subject=Subject("path", "path"),
)


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


def _grep(args: dict[str, Any], cwd: Path) -> ToolResult:
    """`path:line:text` for every line matching the pattern, capped at GREP_MAX_MATCHES."""
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        return ToolResult.error(f"invalid regex {args['pattern']!r}: {exc}")
    root = resolve_path(args.get("path", "."), cwd)
    if not root.exists():
        raise FileNotFoundError(2, "no such file or directory", str(root))
    stats = _GrepStats()
    for file, shown_as in _grep_targets(root, args.get("glob")):
        _grep_file(regex, file, shown_as, stats)
        if len(stats.hits) >= GREP_MAX_MATCHES:
            break
    return ToolResult("\n".join(_grep_report(stats, args["pattern"], root)))


def _grep_report(stats: _GrepStats, pattern: str, root: Path) -> list[str]:
    """The hits followed by the notes about caps and skipped files."""
    lines = stats.hits[:GREP_MAX_MATCHES]
    if not lines:
        lines = [f"no matches for {_show(repr(pattern))} in {_show(root)}"]
    elif len(lines) == GREP_MAX_MATCHES:
        lines.append(f"[stopped after {GREP_MAX_MATCHES} matches; narrow the pattern or path]")
    note = stats.skipped_note()
    return lines + [note] if note else lines


def _grep_targets(root: Path, pattern: str | None) -> Iterator[tuple[Path, str]]:
    """Files to search with their displayed names: `root` itself, or its tree minus `.git`."""
    if not root.is_dir():
        yield root, root.name
        return
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(name for name in subdirs if name != ".git")
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(directory, name), root)
            if pattern is None or _glob_matches(pattern, name, relative):
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


GREP = Tool(
    name="grep",
    description=(
        "Search file contents on a machine (this one unless `machine` says otherwise) with a Python regular expression. `path` is "
        "a file or a directory searched recursively (skipping .git, binary files and files over "
        f"{GREP_MAX_FILE_BYTES // (1024 * 1024)} MB); `glob` filters file names, e.g. `*.py`. "
        f"Prints `path:line:text`, at most {GREP_MAX_MATCHES} matches."
    ),
    input_schema=object_schema(
        {
            "pattern": prop("string", "Python `re` pattern (extended grep -E syntax on remote machines)."),
            "path": prop("string", f"File or directory; {_DEFAULT_CWD}."),
            "glob": prop("string", "Only files whose name matches, e.g. `*.py`."),
            "machine": MACHINE_PROPERTY,
        },
        required=["pattern"],
    ),
    run=_threaded(_grep),
    tags=_TAGS,
    subject=Subject("path", "path", default="."),
)


# --- glob --------------------------------------------------------------------------------------


def _glob(args: dict[str, Any], cwd: Path) -> ToolResult:
    """Paths matching the pattern (with `**`), sorted, relative to the base directory."""
    pattern = args["pattern"]
    base = resolve_path(args.get("cwd", "."), cwd)
    if Path(pattern).is_absolute():
        return ToolResult.error("pattern must be relative; pass the directory to search as cwd")
    if not base.is_dir():
        return ToolResult.error(f"{_show(base)} is not a directory")
    try:
        found = _scan_glob(base, pattern)
    except (ValueError, NotImplementedError) as exc:
        return ToolResult.error(f"invalid pattern {_show(repr(pattern))}: {exc}")
    if not found:
        return ToolResult(f"no paths match {_show(repr(pattern))} in {_show(base)}")
    lines = [_show(path) for path in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        more = f"{len(found) - GLOB_MAX_RESULTS:,}"
        more = f"at least {more}" if len(found) >= GLOB_MAX_SCANNED else more
        lines.append(f"[... {more} more matches not shown; narrow the pattern]")
    return ToolResult("\n".join(lines))


def _scan_glob(base: Path, pattern: str) -> list[str]:
    """Sorted relative matches (directories end with `/`), scanning at most GLOB_MAX_SCANNED."""
    found: list[str] = []
    for path in base.glob(pattern):
        relative = os.path.relpath(path, base)
        found.append(relative + "/" if path.is_dir() and relative != "." else relative)
        if len(found) >= GLOB_MAX_SCANNED:
            break
    return sorted(found)


GLOB = Tool(
    name="glob",
    description=(
        "Find paths on a machine (this one unless `machine` says otherwise) matching a glob pattern such as `**/*.py` (`**` spans "
        "directories). Results are sorted and relative to `cwd`; directories end with `/`. "
        f"At most {GLOB_MAX_RESULTS:,} results."
    ),
    input_schema=object_schema(
        {
            "pattern": prop("string", "Glob pattern relative to cwd."),
            "cwd": prop("string", f"Directory to search; {_DEFAULT_CWD}."),
            "machine": MACHINE_PROPERTY,
        },
        required=["pattern"],
    ),
    run=_threaded(_glob),
    tags=_TAGS,
    subject=Subject("path", "pattern", relative_to="cwd"),
)

FILE_TOOLS: tuple[Tool, ...] = (READ_FILE, LIST_DIR, WRITE_FILE, GREP, GLOB)
