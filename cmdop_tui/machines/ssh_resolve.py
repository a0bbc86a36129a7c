"""What `ssh -G ALIAS` says a connection will do: the last word on an alias, where ssh is installed.

`ssh -G` evaluates the config exactly as a connection would (Match exec, canonicalisation, the
system file) and prints the result without connecting. It is a process per alias, so answers
are asked a few at a time, off the event loop (each a child process awaited), and kept for the
session; nothing waits on them to show the machines (the inventory's own reading stands in
until an answer comes).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.ssh_config import DEFAULT_PORT, Connection
from cmdop_tui.support.processes import kill_process_group

DEFAULT_JOBS = 8
RESOLVE_TIMEOUT_S = 5.0  # a Match exec that hangs must not hold an answer for ever


@dataclass(frozen=True)
class Resolution:
    """ssh's answer for one alias: its connection, or why there is none (`error`, one line)."""

    alias: str
    connection: Connection | None = None
    error: str = ""


def parse_ssh_g(output: str) -> Connection:
    """`ssh -G` output (`keyword value` lines) as a Connection."""
    values: dict[str, str] = {}
    identity_files: list[str] = []
    for line in output.splitlines():
        key, _, value = line.partition(" ")
        if key == "identityfile":
            identity_files.append(value)
        else:
            values.setdefault(key, value)
    port = values.get("port", "")
    return Connection(
        hostname=values.get("hostname", ""),
        user=values.get("user", ""),
        port=int(port) if port.isdigit() else DEFAULT_PORT,
        proxy_jump=values.get("proxyjump"),
        proxy_command=values.get("proxycommand"),
        identity_files=tuple(identity_files),
    )


def ssh_g_argv(alias: str, config_file: Path | None, *, verbose: bool = False) -> list[str]:
    """The command that asks ssh about `alias` (`-F` when the settings name the config)."""
    argv = ["ssh", "-G", *(["-v"] if verbose else [])]
    if config_file is not None:
        argv += ["-F", str(config_file)]
    return [*argv, "--", alias]


class SshResolver:
    """`ssh -G` for the aliases of one config, at most `jobs` at once, each answer kept."""

    def __init__(self, config_file: Path | None = None, *, jobs: int = DEFAULT_JOBS) -> None:
        self.config_file = config_file
        self._slots = asyncio.Semaphore(max(1, jobs))
        self._answers: dict[str, asyncio.Future[Resolution]] = {}

    def known(self, alias: str) -> Resolution | None:
        """The answer already in hand for `alias` (None: not asked yet, or not answered yet)."""
        future = self._answers.get(alias)
        return future.result() if future is not None and future.done() else None

    async def resolve(self, alias: str) -> Resolution:
        """ssh's answer for `alias`; asked once a session, shared by every caller."""
        future = self._answers.get(alias)
        if future is None:
            future = self._answers[alias] = asyncio.ensure_future(self._ask(alias))
        return await asyncio.shield(future)

    async def resolve_all(self, aliases: list[str]) -> dict[str, Resolution]:
        answers = await asyncio.gather(*(self.resolve(alias) for alias in aliases))
        return {answer.alias: answer for answer in answers}

    async def _ask(self, alias: str) -> Resolution:
        async with self._slots:
            try:
                status, stdout, stderr = await run_ssh_g(ssh_g_argv(alias, self.config_file))
            except FileNotFoundError:
                return Resolution(alias, error="ssh is not installed")
            except TimeoutError:  # before OSError, of which it is one
                return Resolution(alias, error=f"ssh -G did not answer within {RESOLVE_TIMEOUT_S:g} s")
            except OSError as exc:  # not runnable here: say so, never take the caller down
                return Resolution(alias, error=f"cannot run ssh: {exc.strerror or exc}")
        if status != 0:
            lines = [line for line in stderr.splitlines() if line.strip()]
            return Resolution(alias, error=lines[-1] if lines else f"ssh -G exited {status}")
        return Resolution(alias, parse_ssh_g(stdout))


async def run_ssh_g(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run an `ssh -G` command: (exit status, stdout, stderr). Raises FileNotFoundError without
    ssh, TimeoutError past RESOLVE_TIMEOUT_S (its process group killed)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, **env} if env else None,
    )
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            stdout, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            kill_process_group(process.pid)
            await process.wait()
    return process.returncode or 0, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
