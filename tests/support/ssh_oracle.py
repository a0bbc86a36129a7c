"""Our reading of an ssh_config set beside what OpenSSH itself makes of it (`ssh -G -v`).

For each config under tests/data/ssh_config/<name>/ (laid out as a ~/.ssh: relative Includes
resolve there), a home is made with that folder as its `.ssh`, and for every alias we read:

* ssh must apply the very `Host` line we say defines it (`ssh -G -v` logs `FILE line N:
  Applying options for ...`): a negation, a conditional Include or a misread name fails here;
* the HostName, User, Port and ProxyJump we read must be those ssh prints;

and every word of every `Host` line ssh reads that ssh applies as a name (`Applying options for
WORD`) must be one of our aliases (nothing missed). Used by tests/machines/test_ssh_config_real.py
and bench/bench_ssh_config.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.ssh_config import Connection, SshConfig, read_ssh_config
from cmdop_tui.machines.ssh_config_syntax import is_concrete
from cmdop_tui.machines.ssh_resolve import parse_ssh_g, run_ssh_g, ssh_g_argv

DATA = Path(__file__).resolve().parents[1] / "data" / "ssh_config"
_APPLYING = re.compile(r"debug1: (.+) line (\d+): Applying options for (.+)$")
_READING = re.compile(r"debug1: Reading configuration data (.+)$")
COMPARED = ("hostname", "user", "port", "proxy_jump")


@dataclass(frozen=True)
class Answer:
    """What `ssh -G -v` said of one name."""

    status: int
    connection: Connection | None
    applied: frozenset[tuple[str, int]]  # (real path, line) of each Host/Match line that applied
    applied_names: frozenset[str]  # the pattern each applying line was applied for
    files: tuple[str, ...]  # every file ssh read
    errors: tuple[str, ...]  # what ssh said beside its debug lines, in order

    @property
    def error(self) -> str:
        return self.errors[-1] if self.errors else ""


@dataclass(frozen=True)
class Comparison:
    name: str
    ours: SshConfig
    differences: tuple[str, ...]  # one line per alias that differs, or one for a config ssh refuses
    refused: str  # ssh's errors, a line each, when it refuses the whole config ("" when it reads it)


def case_names() -> list[str]:
    return sorted(p.name for p in DATA.iterdir() if (p / "config").is_file())


def lay_out(name: str, home: Path) -> Path:
    """A home whose ~/.ssh is a copy of the case (ssh wants included files not group-writable)."""
    ssh_dir = home / ".ssh"
    shutil.copytree(DATA / name, ssh_dir)
    for path in [ssh_dir, *ssh_dir.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    return ssh_dir / "config"


async def ask_ssh(alias: str, config: Path, home: Path) -> Answer:
    status, stdout, stderr = await run_ssh_g(ssh_g_argv(alias, config, verbose=True), env={"HOME": str(home)})
    applied, names, files = set(), set(), []
    for line in stderr.splitlines():
        if match := _APPLYING.match(line):
            applied.add((os.path.realpath(match[1]), int(match[2])))
            names.add(match[3])
        elif match := _READING.match(line):
            files.append(os.path.realpath(match[1]))
    errors = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("debug", "OpenSSH_"))]
    return Answer(
        status,
        parse_ssh_g(stdout) if status == 0 else None,
        frozenset(applied),
        frozenset(names),
        tuple(files),
        tuple(errors),
    )


def _differs(ours: Connection, theirs: Connection) -> list[str]:
    return [
        f"{field} {getattr(ours, field)!r} != ssh's {getattr(theirs, field)!r}"
        for field in COMPARED
        if getattr(ours, field) != getattr(theirs, field)
    ]


async def compare(name: str, home: Path) -> Comparison:
    """Our reading of case `name` against ssh's, laid out under `home`."""
    config = lay_out(name, home)
    ours = read_ssh_config(config, home=home)
    probe = await ask_ssh("cmdop-no-such-alias.invalid", config, home)
    if probe.status != 0:
        refusal = "\n".join(probe.errors) or f"ssh exited {probe.status}"
        return Comparison(name, ours, (f"{name}: ssh refuses the config: {probe.error}",), refusal)
    differences: list[str] = []
    answers = await asyncio.gather(*(ask_ssh(host.alias, config, home) for host in ours.hosts))
    for host, answer in zip(ours.hosts, answers, strict=True):
        problems = []
        if (os.path.realpath(host.path), host.line) not in answer.applied:
            problems.append(f"ssh does not apply {host.path.name} line {host.line} to it")
        if answer.connection is not None:
            problems += _differs(host.connection, answer.connection)
        if problems:
            differences.append(f"{name}: {host.alias}: " + "; ".join(problems))
    differences += await _missed(name, ours, config, home, probe.files)
    return Comparison(name, ours, tuple(differences), "")


async def _missed(name: str, ours: SshConfig, config: Path, home: Path, files: tuple[str, ...]) -> list[str]:
    """Host-line words that ssh applies as names but we do not list."""
    words = set()
    for file in files:
        for raw in Path(file).read_text(encoding="utf-8", errors="replace").splitlines():
            tokens = raw.replace("=", " ").replace('"', " ").replace("'", " ").split()
            if tokens and tokens[0].lower() == "host":
                words.update(word for word in tokens[1:] if is_concrete(word) and not word.startswith("#"))
    unlisted = sorted(words - set(ours.aliases))
    answers = await asyncio.gather(*(ask_ssh(word, config, home) for word in unlisted))
    return [f"{name}: {word}: ssh applies a Host line to it; we do not list it" for word, answer in
            zip(unlisted, answers, strict=True) if word in answer.applied_names]  # fmt: skip
