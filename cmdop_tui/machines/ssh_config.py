"""ssh_config as OpenSSH reads it: which aliases it defines, and what each one's connection will do.

The files are read once (`Include` followed with its globs, `~` and relative paths, each included
file in the block it was included from, as deep as OpenSSH goes); each alias is then evaluated
as ssh evaluates a host: every `Host` and `Match` block in order, the first value of each
keyword winning. A concrete word of a `Host` line is an alias when ssh would apply that line for
it (a negation on the line, or an `Include` inside a block that does not match it, undoes it);
patterns, negations and `Match` criteria are never aliases.

What this reading cannot know (a `Match exec` runs a command; canonicalisation asks DNS) makes an
alias `certain=False`: there `ssh -G` (machines/ssh_resolve.py) has the last word, as it has
wherever ssh is installed. Reading never fails: a line ssh would refuse is noted in `problems`.
"""

from __future__ import annotations

import glob
import os
import pwd
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.machines.spec import MachineError, check_host
from cmdop_tui.machines.ssh_config_match import Conditions, match_block
from cmdop_tui.machines.ssh_config_syntax import Line, SyntaxProblem, is_concrete, match_pattern, parse_line

MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
SYSTEM_DIR = Path("/etc/ssh")
SYSTEM_CONFIG = SYSTEM_DIR / "ssh_config"
DEFAULT_PORT = 22
MAX_FILE_BYTES = 4 * 1024 * 1024  # a config larger than this is not a config

# Where `git push` goes, not machines: a shell there is refused. Subdomains count (ssh.github.com).
FORGE_HOSTS = (
    "github.com",
    "gitlab.com",
    "bitbucket.org",
    "ssh.dev.azure.com",
    "vs-ssh.visualstudio.com",
    "codeberg.org",
    "git.sr.ht",
    "gitea.com",
    "heptapod.net",
    "salsa.debian.org",
    "gitlab.gnome.org",
    "invent.kde.org",
    "git.launchpad.net",
)
FORGE_USER = "git"


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
class ConfigFile:
    path: Path
    entries: tuple[Entry | Included, ...]


@dataclass(frozen=True)
class Connection:
    """What a connection to an alias will do: where it goes, as whom, through what."""

    hostname: str
    user: str
    port: int = DEFAULT_PORT
    proxy_jump: str | None = None
    proxy_command: str | None = None
    identity_files: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """`user@host:port via jump`, as a person reads it (the port only when not 22)."""
        port = f":{self.port}" if self.port != DEFAULT_PORT else ""
        via = f" via {self.proxy_jump}" if self.proxy_jump else " via ProxyCommand" if self.proxy_command else ""
        return f"{self.user}@{self.hostname}{port}{via}"

    @property
    def is_forge(self) -> bool:
        """A code forge's git endpoint (github.com, ... or user `git`): no shell there."""
        host = self.hostname.lower().rstrip(".")
        return self.user == FORGE_USER or any(host == f or host.endswith("." + f) for f in FORGE_HOSTS)


@dataclass(frozen=True)
class SshHost:
    """An alias of the config: where it is defined and what our reading says it does."""

    alias: str
    path: Path
    line: int
    connection: Connection
    certain: bool = True  # False: a Match exec or DNS canonicalisation could change it; ask ssh -G


@dataclass(frozen=True)
class SshConfig:
    """The aliases of one or more top config files (read in order, as ssh reads the user's file,
    then the system one), every file read, and the lines ssh would refuse."""

    hosts: tuple[SshHost, ...] = ()
    files: tuple[Path, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def aliases(self) -> list[str]:
        return [host.alias for host in self.hosts]

    @property
    def machines(self) -> list[SshHost]:
        return [host for host in self.hosts if not host.connection.is_forge]

    @property
    def forges(self) -> list[SshHost]:
        return [host for host in self.hosts if host.connection.is_forge]


# --- reading the files ------------------------------------------------------------------------


@dataclass
class _Reader:
    home: Path
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def read(self, path: Path, *, user: bool, depth: int = 0) -> ConfigFile | None:
        if depth > MAX_INCLUDE_DEPTH:
            self.problems.append(f"{path}: too many nested Includes (more than {MAX_INCLUDE_DEPTH})")
            return None
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None  # a missing file is no problem, to ssh either
        if len(data) > MAX_FILE_BYTES:
            self.problems.append(f"{path}: larger than {MAX_FILE_BYTES // 1024 // 1024} MB; not read")
            return None
        self.files.append(path)
        entries: list[Entry | Included] = []
        for number, raw in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
            try:
                line = parse_line(raw)
            except SyntaxProblem as exc:
                self.problems.append(f"{path} line {number}: {exc}")
                continue
            if line is None:
                continue
            if line.keyword == "include":
                entries.append(Included(tuple(self._include(line, path, number, user=user, depth=depth))))
            else:
                entries.append(Entry(line, path, number))
        return ConfigFile(path, tuple(entries))

    def _include(self, line: Line, path: Path, number: int, *, user: bool, depth: int) -> Iterator[ConfigFile]:
        for word in line.args:
            pattern = self._anchor(word, user=user)
            if pattern is None:
                self.problems.append(f"{path} line {number}: bad include path {word}")
                continue
            for name in sorted(glob.glob(pattern)):
                included = self.read(Path(name), user=user, depth=depth + 1)
                if included is not None:
                    yield included

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


# --- evaluating one host ----------------------------------------------------------------------


@dataclass
class _Evaluation:
    """One host's pass over the files, as ssh's read_config_file: first value wins."""

    host: str
    original: str
    local_user: str
    final: bool = False
    active: bool = True
    values: dict[str, str] = field(default_factory=dict)
    identity_files: list[str] = field(default_factory=list)
    applied: set[tuple[Path, int]] = field(default_factory=set)  # the Host lines that applied
    want_final: bool = False
    certain: bool = True

    def walk(self, config: ConfigFile, nevermatch: bool = False) -> None:
        for entry in config.entries:
            if isinstance(entry, Included):
                was_active = self.active
                for included in entry.files:
                    self.walk(included, nevermatch or not was_active)
                    self.active = was_active  # a Match in an included file does not leak out
            elif entry.line.keyword == "host":
                self.active = not nevermatch and self._host_applies(entry.line.args)
                if self.active:
                    self.applied.add((entry.path, entry.number))
            elif entry.line.keyword == "match":
                self._match(entry.line.args, nevermatch)
            elif self.active:
                self._take(entry.line)

    def _host_applies(self, patterns: Iterable[str]) -> bool:
        applies = False
        for pattern in patterns:
            negated = pattern.startswith("!")
            if match_pattern(self.host, pattern[1:] if negated else pattern):
                if negated:
                    return False
                applies = True
        return applies

    def _match(self, args: tuple[str, ...], nevermatch: bool) -> None:
        conditions = Conditions(
            host=self.host if self.final else _expand_hostname(self.values.get("hostname"), self.host),
            original=self.original,
            user=self.values.get("user", self.local_user),
            local_user=self.local_user,
            final=self.final,
        )
        verdict = match_block(args, conditions)
        self.want_final |= verdict.wants_final
        self.certain &= verdict.certain
        self.active = not nevermatch and verdict.matches

    def _take(self, line: Line) -> None:
        keyword, first = line.keyword, line.args[0] if line.args else ""
        if keyword == "identityfile":
            self.identity_files.append(first)
        elif keyword in ("hostname", "user", "port", "canonicalizehostname"):
            self.values.setdefault(keyword, first)
        elif keyword == "proxycommand" and "proxyjump" not in self.values:
            self.values.setdefault("proxycommand", line.rest.lstrip(" \t=").rstrip())
        elif keyword == "proxyjump" and "proxyjump" not in self.values and "proxycommand" not in self.values:
            jump = line.rest.lstrip(" \t=").split("#", 1)[0].rstrip()
            self.values["proxyjump"] = jump
            if jump.lower() != "none":
                self.values["proxycommand"] = "none"


def _expand_hostname(hostname: str | None, host: str) -> str:
    """HostName with `%h` (the name given) and `%%` expanded, as ssh expands it."""
    if hostname is None:
        return host
    return hostname.replace("%%", "\0").replace("%h", host).replace("\0", "%")


def _is_address(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _port(value: str | None) -> int:
    if value is None:
        return DEFAULT_PORT
    if value.isdigit() and 0 < int(value) < 65536:
        return int(value)
    import socket

    try:
        return socket.getservbyname(value, "tcp")
    except OSError:
        return DEFAULT_PORT


def local_user() -> str:
    """The user ssh logs in as when the config names none (the account's name, as ssh)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER", "")


def evaluate(alias: str, configs: Iterable[ConfigFile], user: str | None = None) -> tuple[Connection, _Evaluation]:
    """What ssh makes of `alias` with these top files (a final pass when the config asks for one)."""
    configs = tuple(configs)
    evaluation = _Evaluation(host=alias, original=alias, local_user=user or local_user())
    for config in configs:
        evaluation.active = True
        evaluation.walk(config)
    canonicalize = evaluation.values.get("canonicalizehostname", "no").lower()
    if canonicalize in ("yes", "always"):
        evaluation.want_final = True
        evaluation.certain = False  # ssh may rename the host from DNS
    hostname = _expand_hostname(evaluation.values.get("hostname"), alias)
    hostname = hostname if _is_address(hostname) else hostname.lower()
    if evaluation.want_final:
        evaluation.host, evaluation.final = hostname, True
        for config in configs:
            evaluation.active = True
            evaluation.walk(config)
    return _connection(evaluation, hostname), evaluation


def _connection(evaluation: _Evaluation, hostname: str) -> Connection:
    values = evaluation.values
    jump = values.get("proxyjump")
    command = values.get("proxycommand")
    return Connection(
        hostname=hostname,
        user=values.get("user", evaluation.local_user),
        port=_port(values.get("port")),
        proxy_jump=None if jump is None or jump.lower() == "none" else jump,
        proxy_command=None if command is None or command.lower() == "none" else command,
        identity_files=tuple(evaluation.identity_files),
    )


# --- the aliases --------------------------------------------------------------------------------


def _host_lines(config: ConfigFile) -> Iterator[Entry]:
    for entry in config.entries:
        if isinstance(entry, Included):
            for included in entry.files:
                yield from _host_lines(included)
        elif entry.line.keyword == "host":
            yield entry


def _candidates(configs: Iterable[ConfigFile]) -> dict[str, list[Entry]]:
    """Each concrete word of a `Host` line that ssh could take as a host name, with its lines."""
    found: dict[str, list[Entry]] = {}
    for config in configs:
        for entry in _host_lines(config):
            for word in entry.line.args:
                if is_concrete(word) and _is_host(word):
                    found.setdefault(word, []).append(entry)
    return found


def _is_host(word: str) -> bool:
    try:
        check_host(word)
    except MachineError:
        return False
    return True


def read_ssh_config(
    paths: Path | Iterable[tuple[Path, bool]], *, home: Path | None = None, user: str | None = None
) -> SshConfig:
    """The aliases of `paths`: one user config file, or (file, is_user_config) pairs read in order
    as ssh reads them. Never raises: what cannot be read is left out and noted in `problems`."""
    tops = [(paths, True)] if isinstance(paths, Path) else list(paths)
    reader = _Reader(home=home or Path.home())
    configs = [config for path, is_user in tops if (config := reader.read(path, user=is_user)) is not None]
    hosts: list[SshHost] = []
    for alias, entries in _candidates(configs).items():
        connection, evaluation = evaluate(alias, configs, user)
        defining = next((e for e in entries if (e.path, e.number) in evaluation.applied), None)
        if defining is not None:
            hosts.append(SshHost(alias, defining.path, defining.number, connection, evaluation.certain))
    return SshConfig(tuple(hosts), tuple(reader.files), tuple(reader.problems))
