"""The OpenSSH client as our only transport.

Every remote action is one `ssh` process. The user's ~/.ssh/config, keys, agent, known hosts and
jump hosts (ProxyJump: ssh hands our `-F` on to the hop) apply exactly as in their shell; we add
BatchMode (never prompt: a prompt would hang behind the UI) and a ControlMaster, so that repeated
commands to a host reuse one connection: one master per machine and route (its alias, through
whichever jump), set up by one connection at a time.

A command that must be stoppable runs on the remote side in its own process group (a job under
bash's job control), and writes that group's id to a file there; Stop kills that group over a
second connection, because killing the local `ssh` client does not stop the remote command.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import re
import shlex
import socket
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.spec import MachineError, MachineSpec, MachineUnreachable
from cmdop_tui.support.processes import kill_process_group

SSH_FAILED = 255  # ssh's own exit status when it could not connect or authenticate
# A control socket's path must fit a sockaddr_un (108 bytes with its NUL); ssh binds it first as
# PATH.<16 random characters>. Our name in the directory: a route hash, `-`, %C (40 hex digits).
SOCKET_PATH_MAX = 107 - 17
CONTROL_NAME_CHARS = 8 + 1 + 40
_FINAL_CONTROL_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{40}")  # not PATH.<random>: see _clear_dead_sockets
MASTER_GRACE_S = 1.0  # beyond the connect timeout, how long the first connection may take to set up its master
# Looking for a dead master's socket means connecting to the live one's, milliseconds each, which a
# command to a hundred hosts pays a hundred times in a row: done at most this often per machine.
# A master that dies in between is met by a connection with ControlMaster=auto, which clears it.
CLEAR_EVERY_S = 60.0


@dataclass(frozen=True)
class SshOptions:
    config_file: Path | None = None  # None: the user's ~/.ssh/config
    control_dir: Path | None = None  # None: a private directory under /tmp (socket paths are short)
    connect_timeout_s: int = 5
    control_persist_s: int = 120
    # A link that answers nothing this many times this far apart is dead: a frozen host or a
    # dropped route ends the command (and its connection) instead of holding it for ever.
    alive_interval_s: int = 5
    alive_count_max: int = 3


@dataclass(frozen=True)
class RemoteResult:
    status: int
    stdout: bytes
    stderr: bytes

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


def default_control_dir() -> Path:
    """A short, private directory for control sockets (a socket path must stay under ~100 bytes:
    $XDG_RUNTIME_DIR or the temporary directory when short enough, else /tmp).

    Someone else's directory there (made first, or a symlink) could hold a planted master socket
    that would see every command: it must be ours and 0700, else a fresh private one is used.
    """
    name = f"cmdop-{os.getuid()}"
    bases = (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir())
    base = next((Path(b) for b in bases if b and _short_enough(Path(b) / f"{name}-xxxxxxxx")), Path("/tmp"))
    path = base / name
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return Path(tempfile.mkdtemp(prefix="cmdop-", dir=base))
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return Path(tempfile.mkdtemp(prefix="cmdop-", dir=base))
    return path


def _short_enough(directory: Path | None) -> Path | None:
    """`directory` if a control socket's path in it fits (else ssh would warn, into the
    command's output, and go without a master); None otherwise."""
    if directory is None or len(os.fsencode(directory)) + 1 + CONTROL_NAME_CHARS > SOCKET_PATH_MAX:
        return None
    return directory


def _clear_dead_sockets(directory: Path, route: str) -> None:
    """Remove this route's control sockets whose master is gone. A master killed outright (the
    app killed with -9) leaves its socket file; a client with `ControlMaster=no` that finds it
    prints `Control socket connect(...): Connection refused` into its command's output (with
    `auto` ssh removes it quietly, but only one connection at a time gets `auto`).

    Only final names count: a master that is starting binds `NAME.<16 random characters>`, then
    listens, then renames it to NAME; between bind and listen that file refuses connections too,
    and removing it makes that ssh (of this or another cmdop-tui process) give up its master."""
    for path in directory.glob(f"{route}-*"):
        if _FINAL_CONTROL_NAME.fullmatch(path.name) is None:
            continue
        with socket.socket(socket.AF_UNIX) as probe:
            probe.setblocking(False)  # a live master's full backlog must not hold us
            if probe.connect_ex(str(path)) == errno.ECONNREFUSED:
                path.unlink(missing_ok=True)


# What OpenSSH says when a session that was up goes down (as opposed to one never made).
_LINK_LOST = re.compile(
    r"closed by remote host|client_loop:|Broken pipe|Connection reset|Timeout, server .* not responding"
    r"|packet_write_wait|Read from remote host|Connection to .* closed",
    re.IGNORECASE,
)


def ssh_failure(spec: MachineSpec, stderr: str, *, ran: bool = False) -> MachineError:
    """ssh's exit 255 for people: the machine could not be reached, or the link went down while a
    command ran there (`ran`: it printed something; it may still be running: saying "cannot reach"
    would invite a second run). Through a shared connection ssh may say nothing at all."""
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "ssh failed"
    if ran or _LINK_LOST.search(stderr):
        return MachineError(
            f"the connection to {spec.name} was lost while the command ran ({last}); it may still be "
            f"running there: check (e.g. with ps) before running it again"
        )
    return MachineUnreachable(f"cannot reach {spec.name} over ssh: {last}")


class SshTransport:
    """Runs commands on one machine through `ssh`."""

    def __init__(self, spec: MachineSpec, options: SshOptions = SshOptions()) -> None:
        self.spec = spec
        self.options = options
        self._control_dir = _short_enough(options.control_dir) or default_control_dir()
        self._master_until = 0.0  # until then, the connection that may become the master is setting up
        self._cleared_at = -CLEAR_EVERY_S  # when this route's dead control sockets were last cleared

    # --- argv ----------------------------------------------------------------------------------

    def argv(self, remote_command: str) -> list[str]:
        """The ssh command line that runs `remote_command` (a shell string) on the machine."""
        return [*self._options_argv(self._master_mode()), self.spec.host, "--", remote_command]

    @property
    def _route(self) -> str:
        """What tells this machine's master from another's beyond %C (which hashes only the
        local host, HostName, port and user before OpenSSH 9.6): the alias and the config file.
        Two aliases for one address behind different bastions (10.0.0.5 at two sites, each
        with its ProxyJump) must never share a master, nor a jumped alias a direct one; so
        neither must two inventory hosts with one address and their own ssh options."""
        route = f"{self.options.config_file or ''}\0{self.spec.host}"
        if self.spec.ssh_options or self.spec.identity_file:  # an inventory's own route (a ProxyCommand)
            route += "\0".join(("", self.spec.identity_file or "", *self.spec.ssh_options))
        return hashlib.sha256(route.encode()).hexdigest()[:8]

    def _master_mode(self) -> str:
        """`auto` (use the master, or become it), except while another connection of ours is
        setting it up: then `no` (use it if it is up, else connect directly).

        Two clients that both find no master both try to become it; the loser carries on
        unshared and prints `ControlSocket ... already exists, disabling multiplexing` into the
        command's stderr (a health probe and a command at a session's start did). Only one
        connection at a time is let try; the others share its master once it is up.
        """
        now = time.monotonic()
        if now < self._master_until:
            return "no"
        self._master_until = now + self.options.connect_timeout_s + MASTER_GRACE_S
        if now - self._cleared_at >= CLEAR_EVERY_S:
            self._cleared_at = now
            _clear_dead_sockets(self._control_dir, self._route)
        return "auto"

    def _options_argv(self, master: str = "auto") -> list[str]:
        options = self.options
        argv = ["ssh"]
        if options.config_file is not None:
            argv += ["-F", str(options.config_file)]
        argv += [
            "-o", "BatchMode=yes",
            "-o", f"ControlMaster={master}",
            "-o", f"ControlPath={self._control_dir}/{self._route}-%C",
            "-o", f"ControlPersist={options.control_persist_s}",
            "-o", f"ConnectTimeout={options.connect_timeout_s}",
            "-o", f"ServerAliveInterval={options.alive_interval_s}",
            "-o", f"ServerAliveCountMax={options.alive_count_max}",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip
        if self.spec.port is not None:
            argv += ["-p", str(self.spec.port)]
        if self.spec.user:
            argv += ["-l", self.spec.user]
        if self.spec.identity_file:
            argv += ["-i", self.spec.identity_file]
        for option in self.spec.ssh_options:  # after ours: for an option set twice, ssh keeps the first
            argv += ["-o", option]
        return argv

    # --- short commands ------------------------------------------------------------------------

    async def run(self, script: str, *, input: bytes | None = None, timeout_s: float = 30.0) -> RemoteResult:
        """Run a bash script there and collect its output. ssh failures raise MachineError."""
        process = await asyncio.create_subprocess_exec(
            *self.argv("bash -c " + shlex.quote(script)),
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_s):
                stdout, stderr = await process.communicate(input)
        except TimeoutError:
            raise MachineError(f"{self.spec.name} did not answer within {timeout_s:.0f} s") from None
        finally:
            if process.returncode is None:
                kill_process_group(process.pid)
                await process.wait()
        result = RemoteResult(process.returncode or 0, stdout, stderr)
        if result.status == SSH_FAILED:
            raise ssh_failure(self.spec, result.stderr_text)
        return result

    # --- stoppable commands --------------------------------------------------------------------

    def stoppable(self, command: str, cwd: str | None, *, login_bash: bool = False) -> tuple[str, str]:
        """(remote shell string, run id): `command` in its own process group, noted for kill().
        `login_bash`: the login shell there is bash, which then runs our script itself.

        A kill that comes before the group exists leaves a stop marker, which the command checks
        first: a Stop at the very start is not missed.

        Every process here costs a command CPU time there (a hundred hosts sharing a few cores
        feel it), and a bash that starts is a millisecond, so there are only the outer bash (the
        login shell itself when that is bash, else one it starts) and a subshell of it, a job of
        its own under job control (`set -m`: its own process group, which the subshell's
        children stay in), which runs the command (`eval`: no third bash; our commands start
        their user's script in a bash of its own, where `$$` is its own shell). kill() finds the
        group as the child of the outer bash, whose command line names the run (`pgrep`), so
        nothing is written there; a host without pgrep gets the group's id noted in a file
        (`$BASHPID`; bash 3, macOS's: `$(exec sh -c 'echo $PPID')`), removed when the group ends.
        """
        run_id = uuid.uuid4().hex[:16]
        pgid_file, stop_file = _run_file(run_id, "pgid"), _run_file(run_id, "stop")
        enter = f"cd -- {shlex.quote(cwd)} || exit 1; " if cwd else ""
        note = "command -v pgrep >/dev/null 2>&1 || echo ${BASHPID:-$(exec sh -c 'echo $PPID')} > " + pgid_file
        stop = f"[ -e {stop_file} ] && {{ rm -f {stop_file}; exit 130; }}"
        # Noted before the marker is checked: a kill() that finds no note has touched the marker
        # already, so a group that is not noted yet is bound to see it.
        inner = f"{note}; {stop}; {enter}eval {shlex.quote(command)}"
        # The outer bash's own stderr goes nowhere (job control would report a killed group there,
        # our wrapper's text with it); the subshell gets the real one back (fd 3).
        script = (
            f"exec 3>&2 2>/dev/null; set -m; ( exec 2>&3 3>&-; {inner}\n); s=$?; "
            f"[ -e {pgid_file} ] && rm -f {pgid_file}; exit $s"
        )
        return (script if login_bash else "bash -c " + shlex.quote(script)), run_id

    async def kill(self, run_id: str, grace_s: float = 0.0) -> None:
        """Kill the process group of a stoppable command there (TERM first when given a grace).

        The stop marker is left first, then the group is looked for: a group that starts after
        the look sees the marker (one forked between a look and a later marker would have checked
        for it already, and run unstopped). The group is the child of the bash whose command line
        holds the run's stop marker (the pattern is written so that this script's own command
        line does not match it; the subshell, a fork of that bash, matches too, and its children
        are killed as well); or, with no pgrep there, the one noted in the run's file. A
        group found is killed and the marker removed; none yet: the marker stays."""
        pgid_file = _run_file(run_id, "pgid")
        stop_file = f"\"${{TMPDIR:-/tmp}}/cmdop-{run_id}\"'.stop'"  # spelled so that `marker` misses it
        marker = f"'^bash -c .*cmdop-{run_id}[.]stop'"
        find = (
            f"touch {stop_file}; "
            f"if command -v pgrep >/dev/null 2>&1; then g=$(for o in $(pgrep -f {marker}); do pgrep -P $o; done); "
            f"else g=$(cat {pgid_file} 2>/dev/null); fi; "
            '[ -n "$g" ] || exit 0; '
        )
        signal = 'for p in $g; do kill -{0} -- -"$p" 2>/dev/null || kill -{0} "$p" 2>/dev/null; done; '
        alive = 'a=; for p in $g; do kill -0 -- -"$p" 2>/dev/null && a=1; done; '
        wait = f'for i in $(seq {max(1, int(grace_s * 20))}); do {alive}[ -n "$a" ] || break; sleep 0.05; done; '
        term = signal.format("TERM") + wait if grace_s > 0 else ""
        script = find + term + signal.format("KILL") + f"rm -f {pgid_file} {stop_file}"
        try:
            await self.run(script, timeout_s=10)
        except MachineError:
            pass  # unreachable now: nothing more we can do from here

    async def close(self) -> None:
        """Stop the control master, if one runs: it takes no new sessions and ends with its last.

        Not `-O exit`, which ends it at once: the master (one per user, machine and route) is
        shared with every other cmdop-tui process, whose commands run through it; a `machines
        list` in one terminal must not cut the commands of an open session in another."""
        process = await asyncio.create_subprocess_exec(
            *self._options_argv(), "-O", "stop", self.spec.host,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await process.wait()


def _run_file(run_id: str, kind: str) -> str:
    return f'"${{TMPDIR:-/tmp}}/cmdop-{run_id}.{kind}"'
