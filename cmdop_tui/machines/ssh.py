"""The OpenSSH client as our only transport.

Every remote action is one `ssh` process. The user's ~/.ssh/config, keys, agent, known hosts and
jump hosts apply exactly as in their shell; we add BatchMode (never prompt: a prompt would hang
behind the UI) and a ControlMaster, so that repeated commands to a host reuse one connection.

A command that must be stoppable runs on the remote side in its own session (`setsid`), and
writes its process group id to a file there; Stop kills that group over a second connection,
because killing the local `ssh` client does not stop the remote command.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.support.processes import kill_process_group

SSH_FAILED = 255  # ssh's own exit status when it could not connect or authenticate


@dataclass(frozen=True)
class SshOptions:
    config_file: Path | None = None  # None: the user's ~/.ssh/config
    control_dir: Path | None = None  # None: a private directory under /tmp (socket paths are short)
    connect_timeout_s: int = 5
    control_persist_s: int = 120


@dataclass(frozen=True)
class RemoteResult:
    status: int
    stdout: bytes
    stderr: bytes

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


def default_control_dir() -> Path:
    """A short, private directory for control sockets (a socket path must stay under ~100 bytes).

    Someone else's directory there (made first, or a symlink) could hold a planted master socket
    that would see every command: it must be ours and 0700, else a fresh private one is used.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and len(runtime) < 40 else Path(tempfile.gettempdir())
    path = base / f"cmdop-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return Path(tempfile.mkdtemp(prefix="cmdop-"))
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return Path(tempfile.mkdtemp(prefix="cmdop-"))
    return path


def ssh_failure(spec: MachineSpec, stderr: str) -> MachineError:
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "ssh failed"
    return MachineError(f"cannot reach {spec.name} over ssh: {last}")


class SshTransport:
    """Runs commands on one machine through `ssh`."""

    def __init__(self, spec: MachineSpec, options: SshOptions = SshOptions()) -> None:
        self.spec = spec
        self.options = options
        self._control_dir = options.control_dir or default_control_dir()

    # --- argv ----------------------------------------------------------------------------------

    def argv(self, remote_command: str) -> list[str]:
        """The ssh command line that runs `remote_command` (a shell string) on the machine."""
        return [*self._options_argv(), self.spec.host, "--", remote_command]

    def _options_argv(self) -> list[str]:
        options = self.options
        argv = ["ssh"]
        if options.config_file is not None:
            argv += ["-F", str(options.config_file)]
        argv += [
            "-o", "BatchMode=yes",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self._control_dir}/%C",
            "-o", f"ControlPersist={options.control_persist_s}",
            "-o", f"ConnectTimeout={options.connect_timeout_s}",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip
        if self.spec.port is not None:
            argv += ["-p", str(self.spec.port)]
        if self.spec.user:
            argv += ["-l", self.spec.user]
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

    def stoppable(self, command: str, cwd: str | None) -> tuple[str, str]:
        """(remote shell string, run id): `command` in its own process group, noted for kill().

        A kill that comes before the group is noted leaves a stop marker, which the command
        checks once noted: a Stop at the very start is not missed.
        """
        run_id = uuid.uuid4().hex[:16]
        pgid_file, stop_file = _run_file(run_id, "pgid"), _run_file(run_id, "stop")
        enter = f"cd -- {shlex.quote(cwd)} || exit 1; " if cwd else ""
        inner = (
            f"trap 'rm -f {pgid_file} {stop_file}' EXIT; echo $$ > {pgid_file}; "
            f"[ -e {stop_file} ] && exit 130; {enter}bash -c {shlex.quote(command)}"
        )
        # setsid -w: a new session (so a group to kill), and its exit status passed through.
        script = (
            f"if command -v setsid >/dev/null 2>&1; then exec setsid -w bash -c {shlex.quote(inner)}; "
            f"else exec bash -c {shlex.quote(inner)}; fi"
        )
        return "bash -c " + shlex.quote(script), run_id

    async def kill(self, run_id: str, grace_s: float = 0.0) -> None:
        """Kill the process group of a stoppable command there (TERM first when given a grace)."""
        pgid_file, stop_file = _run_file(run_id, "pgid"), _run_file(run_id, "stop")
        read = f"p=$(cat {pgid_file} 2>/dev/null) || {{ touch {stop_file}; exit 0; }}; "
        term = 'kill -TERM -- -"$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; '
        wait = (
            f'for i in $(seq {max(1, int(grace_s * 20))}); do kill -0 -- -"$p" 2>/dev/null || break; sleep 0.05; done; '
        )
        kill = f'kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; rm -f {pgid_file}'
        script = read + (term + wait if grace_s > 0 else "") + kill
        try:
            await self.run(script, timeout_s=10)
        except MachineError:
            pass  # unreachable now: nothing more we can do from here

    async def close(self) -> None:
        """Stop the control master, if one runs."""
        process = await asyncio.create_subprocess_exec(
            *self._options_argv(), "-O", "exit", self.spec.host,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await process.wait()


def _run_file(run_id: str, kind: str) -> str:
    return f'"${{TMPDIR:-/tmp}}/cmdop-{run_id}.{kind}"'
