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

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.spec import MachineError, check_host
from cmdop_tui.machines.ssh_config_eval import DEFAULT_PORT, FORGE_HOSTS, FORGE_USER, Connection, evaluate, local_user
from cmdop_tui.machines.ssh_config_files import SYSTEM_DIR, ConfigFile, Entry, Reader
from cmdop_tui.machines.ssh_config_syntax import is_concrete

__all__ = ["DEFAULT_PORT", "FORGE_HOSTS", "FORGE_USER", "SYSTEM_CONFIG", "Connection", "SshConfig", "SshHost"]

SYSTEM_CONFIG = SYSTEM_DIR / "ssh_config"


@dataclass(frozen=True)
class SshHost:
    """An alias of the config: where it is defined and what our reading says it does."""

    alias: str
    path: Path
    line: int
    connection: Connection
    certain: bool = True  # False: a Match exec or DNS canonicalisation could change it; ask ssh -G
    forge: bool = False  # a code forge's git endpoint: where git pushes go, not a machine


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
        return [host for host in self.hosts if not host.forge]

    @property
    def forges(self) -> list[SshHost]:
        return [host for host in self.hosts if host.forge]


# --- the aliases --------------------------------------------------------------------------------


def _candidates(configs: Iterable[ConfigFile]) -> dict[str, list[Entry]]:
    """Each concrete word of a `Host` line that ssh could take as a host name, with its lines."""
    found: dict[str, list[Entry]] = {}
    for config in configs:
        for entry in config.host_lines():
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
    reader = Reader(home=home or Path.home())
    configs = [config for path, is_user in tops if (config := reader.read(path, user=is_user)) is not None]
    hosts: list[SshHost] = []
    user = user or local_user()
    for alias, entries in _candidates(configs).items():
        connection, evaluation = evaluate(alias, configs, user)
        defining = next((e for e in entries if (e.path, e.number) in evaluation.applied), None)
        if defining is not None:
            # `User git` counts only when the config says it (the local user may be called git).
            forge = connection.goes_to_forge or evaluation.values.get("user") == FORGE_USER
            hosts.append(SshHost(alias, defining.path, defining.number, connection, evaluation.certain, forge))
    return SshConfig(tuple(hosts), tuple(reader.files), tuple(reader.problems))
