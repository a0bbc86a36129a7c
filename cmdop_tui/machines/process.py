"""Run a command as a child process: streamed, bounded, killed as a group on timeout or Stop.

The command runs in its own session (so its own process group and no controlling terminal: a
password prompt fails instead of hanging on the user's tty), stdin from /dev/null. On Linux it
runs under a supervisor (support/supervisor.py, machines/contained.py) that is a child subreaper:
a timeout, cancellation (the UI's Stop button) or an error kills the command's whole tree, its
group and whatever left it (a grandchild that called setsid, a daemon); a normal exit leaves
deliberate background jobs running, but only while the app lives: when it ends, in any way
(SIGKILL included), they are killed (and `support.containment.end_background_jobs` kills them at
the end of a session). Elsewhere the command is a plain child and the group is what is killed.
Output is streamed live, made inert, to a progress sink and kept in bounded buffers, so a command
that prints gigabytes costs a fixed amount of memory. The local machine runs its commands this
way, and so does anything run over the ssh client (whose tree is then killed here, and the
remote side through `on_abort`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from cmdop_tui.machines.contained import spawn_contained
from cmdop_tui.machines.machine import MachineResult, ProgressSink
from cmdop_tui.machines.timeout_hold import TIMEOUT_HOLD
from cmdop_tui.support.processes import kill_process_group
from cmdop_tui.support.text import BoundedBuffer, StreamSanitizer, inert_line

__all__ = ["DEFAULT_OUTPUT_LIMIT", "AbortHook", "ExitLine", "run_process"]

DEFAULT_OUTPUT_LIMIT = 30_000  # bytes of stdout + stderr shown to the model
READ_CHUNK = 64 * 1024
# After the shell exits, how long to keep reading from background processes that inherited
# its stdout/stderr before giving up on them.
PIPE_GRACE_S = 0.5
FROZEN_PIPE_GRACE_S = 0.05  # what the readers still have in hand, when the other side is not answering
ABORT_WAIT_S = 0.5  # how long a Stop waits for the remote side's kill before returning
_ABORTING: set[asyncio.Future[None]] = set()  # remote kills still under way (kept from the GC)
REAP_TIMEOUT_S = 2.0

_log = logging.getLogger(__name__)
AbortHook = Callable[[], Awaitable[None]]
# (returncode, stderr tail) -> an error replacing the `exit code: N` report, or None to keep it.
ExitLine = Callable[[int | None, str], str | None]
StreamName = Literal["stdout", "stderr"]


class _ShellProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol `create_subprocess_exec` uses, plus an event for "the shell has exited".

    `Process.wait()` also waits for stdout/stderr to close, which never happens while a
    background job (`server &`) holds them; this event fires when the shell itself is reaped.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _Child(Protocol):
    """A started command: its pid (its process group), output, exit code, and how to end it."""

    @property
    def pid(self) -> int: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    @property
    def exited(self) -> asyncio.Event: ...  # the command has exited

    @property
    def done(self) -> asyncio.Event: ...  # and so has everything that is killed with it

    @property
    def returncode(self) -> int | None: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


class _PlainChild:
    """The command as our own child (no supervisor here): killing it kills its process group."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _ShellProtocol) -> None:
        self.transport = transport
        self.pid = transport.get_pid()
        self.stdout = protocol.stdout
        self.stderr = protocol.stderr
        self.exited = self.done = protocol.exited

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode()

    def kill(self) -> None:
        kill_process_group(self.pid)

    def close(self) -> None:
        self.transport.close()


@dataclass
class _Shell:
    """A running shell: the child process and the buffers of its output streams."""

    child: _Child
    buffers: dict[StreamName, BoundedBuffer] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.child.pid

    @property
    def returncode(self) -> int | None:
        return self.child.returncode


def _opening(opens: Sequence[Path], argv: list[str]) -> list[str]:
    """`argv` run by a shell that first opens `opens` for reading as fds 3, 4, ... (where there
    is no supervisor to do it)."""
    if not opens:
        return argv
    script = " ".join(f'exec {3 + i}<"${i + 1}";' for i in range(len(opens))) + f' shift {len(opens)}; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *map(str, opens), *argv]


async def _spawn(
    argv: list[str],
    cwd: Path | None,
    output_limit: int,
    env: Mapping[str, str] | None,
    opens: Sequence[Path],
    output_fd: int | None,
) -> _Shell:
    """Start `argv` in a new session with stdin from /dev/null (under a supervisor if we can);
    its output to `output_fd` when given, else to pipes read here."""
    child: _Child | None = await spawn_contained(argv, cwd, env, opens, output_fd)
    if child is None:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _ShellProtocol(limit=READ_CHUNK, loop=loop),
            *_opening(opens, argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if output_fd is None else output_fd,
            stderr=subprocess.PIPE if output_fd is None else output_fd,
            start_new_session=True,
        )
        child = _PlainChild(transport, protocol)
    buffers: dict[StreamName, BoundedBuffer] = {
        "stdout": BoundedBuffer(output_limit),
        "stderr": BoundedBuffer(output_limit),
    }
    return _Shell(child, buffers)


async def _pump(
    reader: asyncio.StreamReader, buffer: BoundedBuffer, stream: StreamName, progress: ProgressSink
) -> None:
    """Copy one output stream into its buffer and, made inert, to the progress sink."""
    sanitizer = StreamSanitizer()
    live = True
    while True:
        chunk = await reader.read(READ_CHUNK)
        text = sanitizer.feed(chunk) if chunk else sanitizer.flush()
        buffer.append(chunk)
        if text and live:
            live = _report(progress, text, stream)
        if not chunk:
            return


def _report(progress: ProgressSink, text: str, stream: StreamName) -> bool:
    """Send text to the progress sink; a failing sink is logged and not called again.

    A broken display must neither kill the user's command nor stall it on a full pipe.
    """
    try:
        progress(text, stream)
    except Exception:
        _log.exception("progress sink failed; further output of this command is not streamed")
        return False
    return True


async def _wait_for_exit(shell: _Shell, timeout_s: float) -> bool:
    """Whether the shell exited within the timeout."""
    try:
        async with asyncio.timeout(timeout_s) as timer:
            if (hold := TIMEOUT_HOLD.get()) is not None:  # a command moved to the background: no timeout
                hold.hold(timer)
            await shell.child.exited.wait()
    except TimeoutError:
        return False
    return True


async def _drain(pumps: asyncio.Future[Any], grace_s: float = PIPE_GRACE_S) -> bool:
    """Let the readers finish what is left in the pipes; False if something still holds them."""
    done, _ = await asyncio.wait({pumps}, timeout=grace_s)
    if done:
        pumps.result()  # surface an unexpected reader error instead of losing it
    return bool(done)


async def _reap(shell: _Shell) -> None:
    """Wait (briefly) for the killed shell (and all it started) to be reaped, leaving no zombie."""
    try:
        async with asyncio.timeout(REAP_TIMEOUT_S):
            await shell.child.done.wait()
    except TimeoutError:
        _log.warning("shell %d did not exit after SIGKILL", shell.pid)


async def _supervise(
    shell: _Shell, timeout_s: float, progress: ProgressSink, on_abort: AbortHook | None = None
) -> tuple[bool, bool]:
    """Run the shell to completion or timeout; returns (timed_out, output_complete).

    Any way out other than a normal return (cancellation, an error) kills the process group
    and reaps the shell before propagating. `on_abort` then also runs: for a command on another
    machine it kills what runs there, which killing the local ssh client does not.
    """
    readers: dict[StreamName, Any] = {"stdout": shell.child.stdout, "stderr": shell.child.stderr}
    pumps = asyncio.gather(
        *(_pump(reader, shell.buffers[name], name, progress) for name, reader in readers.items() if reader is not None)
    )
    try:
        timed_out = not await _wait_for_exit(shell, timeout_s)
        if timed_out and not await _abort(shell, on_abort):
            # The other side did not confirm the kill: the link is frozen, and ssh's master, which
            # holds the pipes, gives nothing more; what arrived is the output, without waiting.
            return timed_out, await _drain(pumps, grace_s=FROZEN_PIPE_GRACE_S)
        return timed_out, await _drain(pumps)
    except BaseException:
        await asyncio.shield(_abort(shell, on_abort))
        raise
    finally:
        pumps.cancel()
        pumps.add_done_callback(_retrieve)
        shell.child.close()


async def _abort(shell: _Shell, on_abort: AbortHook | None) -> bool:
    """Kill the process group here (and, through the hook, whatever it started elsewhere);
    whether the hook finished in time (True without one).

    The hook is waited on for ABORT_WAIT_S at most: over a link that froze it cannot finish until
    ssh gives the link up, and a Stop or a time-out must not wait for that; it goes on alone."""
    finished = True
    if on_abort is not None:
        remote = asyncio.ensure_future(_remote_abort(on_abort))
        _ABORTING.add(remote)
        remote.add_done_callback(_ABORTING.discard)
        finished = bool((await asyncio.wait({remote}, timeout=ABORT_WAIT_S))[0])
    shell.child.kill()
    await _reap(shell)
    return finished


async def _remote_abort(on_abort: AbortHook) -> None:
    try:
        await on_abort()
    except Exception:
        _log.exception("could not stop the command's remote side")


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a cancelled reader group's outcome as seen, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


def _take_tail(shell: _Shell, output_fd: int, output_limit: int, progress: ProgressSink) -> None:
    """What a command that wrote to a file printed last: its report's output, and told once."""
    size = os.fstat(output_fd).st_size
    tail = os.pread(output_fd, output_limit, max(0, size - output_limit))
    shell.buffers["stdout"].append(tail)
    sanitizer = StreamSanitizer()
    text = sanitizer.feed(tail) + sanitizer.flush()
    if text:
        _report(progress, text, "stdout")


def _split_budget(sizes: list[int], limit: int) -> list[int]:
    """Share `limit` between streams: small ones get all they need, big ones split the rest."""
    shares = [0] * len(sizes)
    remaining, left = limit, len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        shares[index] = min(sizes[index], remaining // left)
        remaining -= shares[index]
        left -= 1
    return shares


def _exit_line(returncode: int | None) -> str:
    """`exit code: N`, naming the signal when the shell was killed by one."""
    if returncode is None:
        return "exit code: unknown"
    if returncode < 0:
        try:
            return f"exit code: {returncode} (killed by {signal.Signals(-returncode).name})"
        except ValueError:
            return f"exit code: {returncode} (killed by signal {-returncode})"
    return f"exit code: {returncode}"


def _report_text(shell: _Shell, header: str, output_limit: int, complete: bool) -> str:
    """Header, then the stdout and stderr sections (empty ones left out), within the limit."""
    names: list[StreamName] = ["stdout", "stderr"]
    shares = _split_budget([shell.buffers[name].total for name in names], output_limit)
    parts = [header]
    for name, share in zip(names, shares, strict=True):
        if shell.buffers[name].total:
            parts.append(f"{name}:\n" + shell.buffers[name].render(share).rstrip("\n"))
    if len(parts) == 1:
        parts.append("(no output)")
    if not complete:
        parts.append(
            "note: background processes still hold the output open; later output is not "
            "captured (redirect it, e.g. `cmd > /tmp/cmd.log 2>&1 &`)"
        )
    return "\n\n".join(parts)


async def run_process(
    argv: list[str],
    *,
    cwd: Path | None,
    timeout_ms: int,
    progress: ProgressSink,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    on_abort: AbortHook | None = None,
    exit_line: ExitLine | None = None,
    env: Mapping[str, str] | None = None,
    opens: Sequence[Path] = (),
    output_fd: int | None = None,
) -> MachineResult:
    """Run `argv` to completion, timeout or cancellation; report its exit code and output.
    `env`: its environment (default: ours); `opens`: files it gets open for reading as fds 3, 4...

    `output_fd` (a file open for reading and appending): the command writes its stdout and stderr
    there itself, so its output costs the event loop nothing while it runs; once it is over, the
    file's last `output_limit` bytes are the report's output (stdout) and go to `progress` once.

    `exit_line(returncode, stderr_tail)` may replace the `exit code: N` header with an error
    (the ssh client's own failures, for instance); returning None keeps the default.
    """
    try:
        shell = await _spawn(argv, cwd, output_limit, env, opens, output_fd)
    except (OSError, ValueError) as exc:  # bad cwd, missing program, NUL byte in the command
        reason = getattr(exc, "strerror", None) or exc
        where = inert_line(str(cwd))
        return MachineResult.error(f"could not start the command in {where}: {reason}")
    timed_out, complete = await _supervise(shell, timeout_ms / 1000, progress, on_abort)
    if output_fd is not None:
        _take_tail(shell, output_fd, output_limit, progress)
    if timed_out:
        header = f"error: the command timed out after {timeout_ms} ms and was killed"
        return MachineResult(
            _report_text(shell, header, output_limit, complete), is_error=True, timed_out_ms=timeout_ms
        )
    errors = shell.buffers["stderr" if output_fd is None else "stdout"]  # a file holds both, in order
    failure = exit_line(shell.returncode, errors.render(400)) if exit_line else None
    if failure is not None:
        return MachineResult.error(failure)
    header = _exit_line(shell.returncode)
    return MachineResult(_report_text(shell, header, output_limit, complete), exit_code=shell.returncode)
