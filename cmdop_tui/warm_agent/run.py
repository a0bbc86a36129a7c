"""A connection's supervisor and its run, both forks of the agent: the supervisor forks the run,
forwards the client's signals and reports the exit code, and ends the run when the client goes;
the run becomes the client's process and calls `cli.main`."""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

from cmdop_tui.support.processes import parent_death_signal
from cmdop_tui.support.warm import send_line

STOP_GRACE_S = 2.0  # the run's time to end its turn after its client went away
GO_TIMEOUT_S = 10.0  # a client that got our ok and says nothing more is given up
_KEEP: list[Any] = []  # the agent's own std streams, kept so that no finaliser closes fds 0-2


def child(body: Callable[[], int]) -> None:
    """A forked process's whole life: `body`'s code, and never a return into the parent's code."""
    code = 1
    try:
        code = body()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def supervise(conn: socket.socket, fds: list[int], request: dict[str, Any], own: list[int]) -> int:
    """Fork the run; forward the client's signals; report its exit code; end it on EOF."""
    for fd in own:
        os.close(fd)
    for signum in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    hook = parent_death_signal()  # the run gets TERM if this supervisor dies
    go_read, go_write = os.pipe()  # the run waits on it until the client has committed to it
    pid = os.fork()
    if pid == 0:
        conn.close()
        os.close(go_write)
        child(lambda: _run(fds, request, hook, go_read))
    os.close(go_read)
    for fd in fds:
        os.close(fd)
    fds.clear()
    pidfd = os.pidfd_open(pid)
    try:
        send_line(conn, {"ok": pid})
        rest = _await_go(conn)
        os.write(go_write, b"g")
    except (OSError, ValueError):
        os.close(go_write)  # the run reads no go, and never starts
        status = _end(pid, pidfd)
    else:
        os.close(go_write)
        try:
            status = _watch(conn, pid, pidfd, rest)
        except OSError:
            status = _end(pid, pidfd)
    code = os.waitstatus_to_exitcode(status)
    try:
        send_line(conn, {"exit": code if code >= 0 else 128 - code})
    except OSError:
        pass
    return 0


def _await_go(conn: socket.socket) -> bytes:
    """The client's go, after our ok: it will not run this command line cold as well (a client
    that gave up waiting for the ok closes instead, and the run never starts). Returns what the
    client sent after it; raises ValueError when it went away or said something else."""
    conn.settimeout(GO_TIMEOUT_S)
    received = b""
    while b"\n" not in received:
        data = conn.recv(4096)
        if not data:
            raise ValueError("the client went away before its go")
        received += data
    conn.settimeout(None)
    line, rest = received.split(b"\n", 1)
    if json.loads(line) != {"go": True}:
        raise ValueError("no go from the client")
    return rest


def _watch(conn: socket.socket, pid: int, pidfd: int, pending: bytes = b"") -> int:
    """Until the run ends: forward signals; on EOF from the client, end the run."""
    while True:
        ready, _, _ = select.select([conn.fileno(), pidfd], [], [])
        if pidfd in ready:
            return os.waitpid(pid, 0)[1]
        data = conn.recv(4096)
        if not data:
            return _end(pid, pidfd)
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            signum = _signal_asked(line)
            if signum is not None:
                # The run's group is orphaned (a session of its own), and the kernel drops TSTP
                # sent to one: STOP stops it alike, and the client's CONT resumes it.
                _signal_group(pid, signal.SIGSTOP if signum == signal.SIGTSTP else signum)


def _signal_asked(line: bytes) -> int | None:
    """The signal a client's line asks for; None for anything else (ignored)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    signum = message.get("signal") if isinstance(message, dict) else None
    return signum if isinstance(signum, int) and 0 < signum < signal.NSIG else None


def _end(pid: int, pidfd: int) -> int:
    """The client is gone: TERM the run's group, KILL it after a grace; the run's status."""
    _signal_group(pid, signal.SIGTERM)
    _signal_group(pid, signal.SIGCONT)  # a run stopped with its client (Ctrl-Z) must see the TERM
    ready, _, _ = select.select([pidfd], [], [], STOP_GRACE_S)
    if not ready:
        _signal_group(pid, signal.SIGKILL)
    status = os.waitpid(pid, 0)[1]
    _signal_group(pid, signal.SIGKILL)  # whatever of its group is left
    return status


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:  # not its own group yet (or gone): the process itself
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _run(fds: list[int], request: dict[str, Any], hook: Callable[[], None] | None, go: int) -> int:
    """The run: once the client has committed to it, become the client's process (fds, cwd,
    umask, environment), then `cli.main`."""
    os.setsid()
    if hook is not None:
        hook()
    if os.read(go, 1) != b"g":
        return 0  # the client ran it cold instead, or went away: this run never starts
    os.close(go)
    for signum in (signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [request["argv0"], *request["argv"]]
    sys.path[:] = request["path"]
    _reopen_stdio(request["stdio"])
    if "tempfile" in sys.modules:  # it caches $TMPDIR's answer
        import tempfile

        tempfile.tempdir = None
    return _main(request["argv"])


def _reopen_stdio(described: list[list[Any]]) -> None:
    """sys.stdin/stdout/stderr on fds 0-2, decoded and buffered as the client's were."""
    _KEEP.extend((sys.stdin, sys.stdout, sys.stderr))
    streams = []
    for fd, (encoding, errors, line_buffering, write_through) in enumerate(described):
        stream = open(fd, "r" if fd == 0 else "w", encoding=encoding, errors=errors, closefd=False)
        stream.reconfigure(line_buffering=line_buffering, write_through=write_through)
        streams.append(stream)
    sys.stdin, sys.stdout, sys.stderr = streams


def _main(argv: list[str]) -> int:
    """`cli.main(argv)` as the console script runs it: exit codes, uncaught errors, atexit."""
    from cmdop_tui.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except Exception:
        traceback.print_exc()
        code = 1
    if code == 0:
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1
