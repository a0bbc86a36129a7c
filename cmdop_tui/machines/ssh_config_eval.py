"""One host's reading of an ssh_config, as ssh's own: every block that can apply, in order, the
first value of each keyword winning; a second, final pass where the config asks for one
(`Match final`, CanonicalizeHostname). The result is a Connection: where it goes, as whom,
through what.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.machines.ssh_config_files import Block, ConfigFile, Entry, Included
from cmdop_tui.machines.ssh_config_match import Conditions, match_block
from cmdop_tui.machines.ssh_config_syntax import Line, host_line_applies

DEFAULT_PORT = 22

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
    def goes_to_forge(self) -> bool:
        """Its host is a code forge's (github.com, ..., or a subdomain such as ssh.github.com)."""
        host = self.hostname.lower().rstrip(".")
        return any(host == forge or host.endswith("." + forge) for forge in FORGE_HOSTS)


# --- evaluating one host ----------------------------------------------------------------------


@dataclass
class Evaluation:
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

    def walk(self, config: ConfigFile) -> None:
        """One file, as ssh reads it for this host. Blocks that cannot apply are skipped: a Host
        line of other names leaves the block inactive, and so everything under it unread."""
        for block in config.blocks_for(self.host):
            if block.header is not None:
                self._header(block.header, block.names)
            if self.active:
                self._items(block)

    def _header(self, header: Entry, names: frozenset[str] | None) -> None:
        """`names`: the header's, when it is a Host line of concrete names only (a name applies
        when it is one of them: no need to match it against each)."""
        if header.line.keyword == "match":
            self._match(header.line.args)
            return
        self.active = self.host in names if names is not None else host_line_applies(self.host, header.line.args)
        if self.active:
            self.applied.add((header.path, header.number))

    def _items(self, block: Block) -> None:
        for item in block.items:
            if isinstance(item, Included):
                # Included under an active block (an inactive one's Includes apply nowhere);
                # a Match in an included file does not leak out of it.
                for included in item.files:
                    self.walk(included)
                    self.active = True
            elif self.active:
                self._take(item.line)

    def _match(self, args: tuple[str, ...]) -> None:
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
        self.active = verdict.matches

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


def _jump(spec: str) -> str:
    """A ProxyJump value as ssh prints it: the hops before the last as written; the last one
    read (`ssh://` dropped, a numeric host in brackets, the port as a number)."""
    before, _, last = spec.rpartition(",")
    last = last.removeprefix("ssh://").rstrip("/") if last.startswith("ssh://") else last
    user, _, place = last.rpartition("@")
    if place.startswith("["):
        host, _, tail = place[1:].partition("]")
        port = tail.removeprefix(":")
    else:
        host, _, port = place.partition(":")
    numeric = ":" in host or all(c in "0123456789." for c in host)
    shown = f"[{host}]" if numeric else host
    number = f":{int(port)}" if port.isdigit() and int(port) > 0 else ""
    return f"{before + ',' if before else ''}{user + '@' if user else ''}{shown}{number}"


def _is_address(host: str) -> bool:
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


def evaluate(alias: str, configs: Iterable[ConfigFile], user: str | None = None) -> tuple[Connection, Evaluation]:
    """What ssh makes of `alias` with these top files (a final pass when the config asks for one)."""
    configs = tuple(configs)
    evaluation = Evaluation(host=alias, original=alias, local_user=user or local_user())
    for config in configs:
        evaluation.active = True
        evaluation.walk(config)
    evaluation.want_final |= any(config.wants_final for config in configs)
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


def _connection(evaluation: Evaluation, hostname: str) -> Connection:
    values = evaluation.values
    jump = values.get("proxyjump")
    command = values.get("proxycommand")
    return Connection(
        hostname=hostname,
        user=values.get("user", evaluation.local_user),
        port=_port(values.get("port")),
        proxy_jump=None if jump is None or jump.lower() == "none" else _jump(jump),
        proxy_command=None if command is None or command.lower() == "none" else command,
        identity_files=tuple(evaluation.identity_files),
    )
