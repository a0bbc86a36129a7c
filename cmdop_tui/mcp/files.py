"""What a stdio MCP server runs from inside the project, and a fingerprint of it.

A project's server is a program started outside the sandbox: trusting `.mcp.json` means little if
a command in the sandbox can rewrite the script the server runs. :func:`server_files` names what
the server runs from inside the project (or another place commands may write); the trust covers
their :func:`fingerprint` (mcp/trust.py), and the sandbox keeps them read-only to commands.

What counts, from the server's working directory (its `cwd`, relative to the project; else the
project): the command itself when it is a path or found on the PATH inside the project (and the
virtual environment it sits in); every argument, or `--option=value` value, that names an
existing file or folder (`node server.js`, `deno run x.ts`, `bun x.ts`, `npx ./local`,
`uv run --directory D`); `-m pkg` (the package folder or module file); what `npx NAME` runs
from the project's `node_modules`; the server's `cwd` when it is a folder of the project; and
the project's modules a Python, JavaScript or TypeScript script among those imports (mcp/imports.py).
A folder that holds the project itself (the project, HOME, `/`) is its workspace, not its code,
and is left out.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .imports import imported, is_script
from .server_tables import McpServerSpec
from .specs import expand

MAX_FILES = 10_000  # past this many files (or MAX_BYTES), a fingerprint fails: never trusted
MAX_BYTES = 128 * 1024 * 1024
_CHUNK = 1024 * 1024
# Written by Python itself as it imports the server's modules: hashed, the trust would break on
# the server's first run. Left out of the fingerprint; read-only to commands with their folder.
_WRITTEN_BY_THE_INTERPRETER = frozenset({"__pycache__"})
_NPX = frozenset({"npx", "bunx", "pnpx"})
_UV_DIRECTORY_OPTIONS = frozenset({"--directory", "--project"})


class FingerprintLimit(OSError):
    """What a server runs is too big to fingerprint (MAX_FILES files or MAX_BYTES bytes)."""


def server_files(spec: McpServerSpec, base: Path, *, writable: Sequence[Path] = ()) -> list[Path]:
    """The files and folders `spec` runs from inside `base` (the project) or any of `writable`
    (other places commands may write): absolute, normalized (symlinks not resolved: a link is
    listed as itself, and its target too when that is inside), none inside another, in the
    order found. Empty for a server that is not stdio. `${VAR}` in the spec is expanded from
    this environment first, as when the server starts. Reads the file system, never runs anything.
    """
    if spec.transport != "stdio" or spec.problem is not None:
        return []
    try:
        spec = expand(spec)
    except ValueError:
        pass  # it will not start as it is; what it names literally is what it names
    base = Path(os.path.abspath(base))
    roots = [base, *(Path(os.path.abspath(place)) for place in writable)]
    cwd = Path(os.path.abspath(base / spec.cwd)) if spec.cwd else base
    found: list[Path] = []
    for candidate in _candidates(spec, cwd):
        for loaded in (candidate, *(imported(candidate) if is_script(candidate) else ())):
            for path in _inside(loaded, roots):
                if not _holds_a_root(path, roots) and path not in found:
                    found.append(path)
    return _outermost(found)


def _candidates(spec: McpServerSpec, cwd: Path) -> Iterator[Path]:
    """Every existing path the server's command line names (not yet checked to be inside)."""
    if spec.cwd:
        yield cwd
    command = _command_path(spec, cwd)
    if command is not None:
        yield command
        yield from _venv_of(command)
    places = [cwd, *_uv_directories(spec.args, cwd)]
    args = list(spec.args)
    for index, arg in enumerate(args):
        for value in (arg, arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else ""):
            if value:
                yield from (place / value for place in places if os.path.lexists(place / value))
        if arg == "-m" and index + 1 < len(args):
            yield from _module(args[index + 1], places)
        elif arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            yield from _module(arg[2:], places)
    if Path(spec.command).name in _NPX:
        yield from _npx_package(args, cwd)


def _command_path(spec: McpServerSpec, cwd: Path) -> Path | None:
    """The program started: a path relative to the server's cwd, or what the PATH finds."""
    if os.sep in spec.command:
        return cwd / spec.command
    entries = spec.env.get("PATH", os.environ.get("PATH", os.defpath)).split(os.pathsep)
    found = shutil.which(spec.command, path=os.pathsep.join(str(cwd / entry) for entry in entries if entry))
    return Path(found) if found else None


def _venv_of(command: Path) -> Iterator[Path]:
    """The virtual environment a program sits in (`.venv/bin/python`): its packages run too."""
    environment = Path(os.path.abspath(command)).parent.parent
    if command.parent.name in ("bin", "Scripts") and (environment / "pyvenv.cfg").is_file():
        yield environment


def _uv_directories(args: Sequence[str], cwd: Path) -> Iterator[Path]:
    """`uv run --directory D` / `--project D` (and `--directory=D`): where uv runs it from."""
    for index, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name in _UV_DIRECTORY_OPTIONS:
            value = value or (args[index + 1] if index + 1 < len(args) else "")
            if value:
                yield cwd / value


def _module(name: str, places: Sequence[Path]) -> Iterator[Path]:
    """`python -m a.b`: the top package `a` (its `__init__` runs too), or the module `a.py`."""
    top = name.split(".", 1)[0]
    for place in places:
        for path in (place / top, place / f"{top}.py"):
            if top and os.path.lexists(path):
                yield path


def _npx_package(args: Sequence[str], cwd: Path) -> Iterator[Path]:
    """`npx NAME` runs the project's own `node_modules/NAME` (and its `.bin` link) when there is
    one, from the server's cwd or a folder above it."""
    name = next((arg for arg in args if not arg.startswith("-")), "")
    package = name[: name.index("@", 1)] if "@" in name[1:] else name  # "pkg@1.2", "@scope/pkg@1"
    if not package or package.startswith((".", "/")):
        return
    for folder in (cwd, *cwd.parents):
        modules = folder / "node_modules"
        for path in (modules / package, modules / ".bin" / package.rsplit("/", 1)[-1]):
            if os.path.lexists(path):
                yield path


def _inside(candidate: Path, roots: Sequence[Path]) -> Iterator[Path]:
    """`candidate` as named and as resolved, each when it is inside one of `roots`."""
    named = Path(os.path.abspath(candidate))
    if not os.path.lexists(named):
        return
    for path in dict.fromkeys((named, _real(named))):
        if any(path == root or root in path.parents for root in roots):
            yield path


def _real(path: Path) -> Path:
    """`path` with every link resolved (never raises: a loop or a missing part stays as is)."""
    return Path(os.path.realpath(path))


def _holds_a_root(path: Path, roots: Sequence[Path]) -> bool:
    """A folder that is a root, or holds one: the workspace (or HOME, or /), never the code."""
    return any(path == root or path in root.parents for root in roots)


def _outermost(paths: list[Path]) -> list[Path]:
    return [path for path in paths if not any(other in path.parents for other in paths)]


# --- the fingerprint -------------------------------------------------------------------------------


@dataclass
class _Budget:
    files: int = 0
    bytes: int = 0

    def spend(self, path: Path, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES or self.bytes > MAX_BYTES:
            raise FingerprintLimit(
                f"{path}: what an MCP server runs is past what its trust can cover "
                f"({MAX_FILES:,} files, {MAX_BYTES // (1024 * 1024)} MiB): it cannot be trusted"
            )


def fingerprint(paths: Sequence[Path], inside: Sequence[Path]) -> str:
    """A hash of what `paths` hold: each file's name, size, modification time and content, and
    every file of a folder the same (walked without following links; a link is its target's
    text, and what it leads to inside one of `inside` is hashed too; `__pycache__` left out).
    Raises FingerprintLimit past MAX_FILES files or MAX_BYTES bytes: fail closed."""
    digest = hashlib.sha256()
    budget = _Budget()
    walked: set[Path] = set()
    queue = [Path(os.path.abspath(path)) for path in paths]
    while queue:
        top = queue.pop(0)
        for record, follow in _records(top, inside, budget, walked):
            digest.update(record + b"\n")
            if follow is not None:
                queue.append(follow)
    return digest.hexdigest()


def _records(
    top: Path, inside: Sequence[Path], budget: _Budget, walked: set[Path]
) -> Iterator[tuple[bytes, Path | None]]:
    """One record for `top` and, for a folder, for everything under it; with each link, the
    place inside it leads to (to walk too), else None."""
    key = top if top.is_symlink() else _real(top)  # a link is recorded, then its target walked
    if key in walked:
        return
    walked.add(key)
    for path in _walk(top):
        yield _record(path, budget), _followed(path, inside)


def _walk(top: Path) -> Iterator[Path]:
    yield top
    if top.is_symlink() or not top.is_dir():
        return
    for folder, folders, files in os.walk(top, followlinks=False):
        folders[:] = sorted(name for name in folders if name not in _WRITTEN_BY_THE_INTERPRETER)
        for name in [*folders, *sorted(files)]:
            yield Path(folder) / name


def _record(path: Path, budget: _Budget) -> bytes:
    name = os.fsencode(path)
    try:
        info = path.lstat()
    except OSError as exc:
        return b"gone\0" + name + b"\0" + str(exc.errno).encode()
    if stat.S_ISLNK(info.st_mode):
        try:
            return b"link\0" + name + b"\0" + os.fsencode(os.readlink(path))
        except OSError as exc:
            return b"gone\0" + name + b"\0" + str(exc.errno).encode()
    if stat.S_ISDIR(info.st_mode):
        return b"folder\0" + name
    if not stat.S_ISREG(info.st_mode):
        return b"other\0" + name + b"\0" + str(stat.S_IFMT(info.st_mode)).encode()
    budget.spend(path, info.st_size)
    facts = f"{info.st_size}\0{info.st_mtime_ns}\0{_content_hash(path)}".encode()
    return b"file\0" + name + b"\0" + facts


def _content_hash(path: Path) -> str:
    """The file's sha256, opened so that it cannot block (a FIFO swapped in) nor follow a link."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"unreadable {exc.errno}"
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return "not a file"
        digest = hashlib.sha256()
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _followed(path: Path, inside: Sequence[Path]) -> Path | None:
    """Where a link leads, when that is inside one of `inside` (commands could change it)."""
    if not path.is_symlink():
        return None
    target = _real(path)
    if target.exists() and any(target == root or root in target.parents for root in inside):
        return target
    return None
