"""The files of an ssh_config, read once: each one's lines cut into blocks (a `Host` or `Match`
line and what follows it), `Include` followed where it stands.

`Include` takes several arguments, each a glob; `~` is the home (user configs only) and a
relative path is relative to ~/.ssh for the user's config, to /etc/ssh for the system one, as
in OpenSSH; an Include of an Include goes as deep as OpenSSH goes (16), no deeper. A config may
come from anywhere (a dotfiles repository): only regular files are read (a FIFO or a terminal
would block the reading for ever, a device never ends), at most MAX_FILE_BYTES each and
MAX_FILES_READ in all (files that include each other multiply at each level; a glob may match
thousands), each limit named in the reading's problems.

A block's `Host` line naming only concrete hosts is indexed by those names, so that evaluating
one host visits its own blocks and the pattern blocks only, not every block of a long config.
"""

from __future__ import annotations

import functools
import glob
import itertools
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.machines.ssh_config_syntax import Line, SyntaxProblem, is_concrete, parse_line

MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
SYSTEM_DIR = Path("/etc/ssh")
MAX_FILE_BYTES = 4 * 1024 * 1024  # a config larger than this is not a config
MAX_FILES_READ = 1000  # files read in one reading, the same file counted each time it is included
NO_FILE = Path(os.devnull)  # `-F /dev/null`: no config, which is no problem


@dataclass(frozen=True)
class Entry:
    """A directive, where it stands."""

    line: Line
    path: Path
    number: int


@dataclass(frozen=True)
class Included:
    """An `Include` line and the files it read, in order (glob order, as ssh)."""

    files: tuple[ConfigFile, ...]


@dataclass(frozen=True)
class Block:
    """A `Host` or `Match` line (None: the top of a file) and the lines under it."""

    header: Entry | None
    items: tuple[Entry | Included, ...]

    @functools.cached_property
    def names(self) -> frozenset[str] | None:
        """The hosts a `Host` line of concrete names only applies to (None: any other header);
        kept, as every alias of the line asks it."""
        header = self.header
        if header is None or header.line.keyword != "host" or not all(map(is_concrete, header.line.args)):
            return None
        return frozenset(header.line.args)


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    blocks: tuple[Block, ...]
    general: tuple[int, ...] = ()  # the blocks any host may meet (patterns, Match, the top)
    by_name: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # a concrete name's own blocks
    wants_final: bool = False  # a `Match final` anywhere in it: ssh reads everything twice

    def blocks_for(self, host: str) -> Iterator[Block]:
        """The blocks that can apply to `host`, in order (the others cannot: skipping them is
        what ssh's reading does with them, for that host)."""
        own = self.by_name.get(host, ())
        indexes = sorted((*self.general, *own)) if own else self.general
        return (self.blocks[i] for i in indexes)

    def host_lines(self) -> Iterator[Entry]:
        """Every `Host` line, included files' too, in order."""
        for block in self.blocks:
            if block.header is not None and block.header.line.keyword == "host":
                yield block.header
            for item in block.items:
                if isinstance(item, Included):
                    for included in item.files:
                        yield from included.host_lines()


def _indexed(path: Path, blocks: list[Block]) -> ConfigFile:
    general: list[int] = []
    by_name: dict[str, list[int]] = {}
    for index, block in enumerate(blocks):
        names = block.names
        if names is None:
            general.append(index)
        else:
            for name in names:
                by_name.setdefault(name, []).append(index)
    wants_final = any(_asks_final(block) for block in blocks)
    return ConfigFile(path, tuple(blocks), tuple(general), {k: tuple(v) for k, v in by_name.items()}, wants_final)


def _asks_final(block: Block) -> bool:
    header = block.header
    if header is not None and header.line.keyword == "match":
        if any(word.lower() in ("final", "!final") for word in header.line.args):
            return True
    return any(isinstance(item, Included) and any(f.wants_final for f in item.files) for item in block.items)


@dataclass
class Reader:
    """Reads config files, following Includes; what ssh would refuse is noted, not raised."""

    home: Path
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def read(self, path: Path, *, user: bool, depth: int = 0) -> ConfigFile | None:
        if depth > MAX_INCLUDE_DEPTH:
            self.problems.append(f"{path}: too many nested Includes (more than {MAX_INCLUDE_DEPTH})")
            return None
        if len(self.files) >= MAX_FILES_READ:
            self._note_too_many()
            return None
        found = self._contents(path)
        if found is None:
            return None
        data, info = found
        if depth > 0 and (info.st_uid not in (0, os.getuid()) or info.st_mode & 0o022):
            self.problems.append(f"{path}: ssh refuses it: bad owner or permissions (writable by others)")
        if len(data) > MAX_FILE_BYTES:
            self.problems.append(f"{path}: larger than {MAX_FILE_BYTES // 1024 // 1024} MB; not read")
            return None
        self.files.append(path)
        blocks: list[Block] = []
        header: Entry | None = None
        items: list[Entry | Included] = []
        for number, raw in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
            try:
                line = parse_line(raw)
            except SyntaxProblem as exc:
                self.problems.append(f"{path} line {number}: {exc}")
                continue
            if line is None:
                continue
            if line.keyword in ("host", "match"):
                blocks.append(Block(header, tuple(items)))
                header, items = Entry(line, path, number), []
            elif line.keyword == "include":
                items.append(Included(tuple(self._include(line, path, number, user=user, depth=depth))))
            else:
                items.append(Entry(line, path, number))
        blocks.append(Block(header, tuple(items)))
        return _indexed(path, blocks)

    def _include(self, line: Line, path: Path, number: int, *, user: bool, depth: int) -> Iterator[ConfigFile]:
        for word in line.args:
            pattern = self._anchor(word, user=user)
            if pattern is None:
                self.problems.append(f"{path} line {number}: bad include path {word}")
                continue
            matched = itertools.islice(glob.iglob(pattern), MAX_FILES_READ - len(self.files) + 1)
            for name in sorted(matched):
                included = self.read(Path(name), user=user, depth=depth + 1)
                if included is not None:
                    yield included

    def _contents(self, path: Path) -> tuple[bytes, os.stat_result] | None:
        """A regular file's first MAX_FILE_BYTES + 1 bytes and its status; None (a problem noted
        unless it is missing or /dev/null) for anything else. Opened without blocking: a FIFO
        with no writer would wait for one for ever."""
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            return None  # a missing file is no problem, to ssh either
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                if path != NO_FILE:
                    self.problems.append(f"{path}: not a regular file; not read")
                return None
            return handle.read(MAX_FILE_BYTES + 1), info

    def _note_too_many(self) -> None:
        note = f"more than {MAX_FILES_READ} files included; the rest not read"
        if note not in self.problems:
            self.problems.append(note)

    def _anchor(self, word: str, *, user: bool) -> str | None:
        """An Include word as a glob: `~` is the home (user configs only); a relative path is
        relative to ~/.ssh for the user's config, to /etc/ssh for the system one."""
        if word.startswith("~"):
            if not user:
                return None
            return str(self.home) + word[1:] if word == "~" or word.startswith("~/") else os.path.expanduser(word)
        if os.path.isabs(word):
            return word
        return str((self.home / ".ssh" if user else SYSTEM_DIR) / word)
