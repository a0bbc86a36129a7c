"""The warm agent: a per-user process that has imported the model SDK and the session, waiting
on a Unix socket to run `cmdop-tui -p ...` without the ~1.5 s of imports (the client and the
protocol are in `support/warm.py`).

Three processes per run, all forks of the agent:

* the agent accepts a connection, checks the peer's uid, that its code is still the code on disk
  (`CodeWatch`; changed code: it answers "stale" and leaves at once, the client runs cold and
  starts a fresh agent), the interpreter's compatibility, and that the command line is headless;
  then it forks a supervisor and goes back to waiting. It never starts a thread, an event loop or
  an HTTP client, so a fork of it is safe.
* the supervisor forks the run, tells the client "ok", forwards the client's signals to the run's
  process group, and reports its exit code. When the client goes away (killed, ssh closed) it
  sees EOF and ends the run: TERM to its group, KILL after a grace. Nothing outlives its client.
* the run: its own session, the client's fds on 0/1/2, its cwd, umask, environment, sys.path and
  stdio encodings, then the normal `cli.main(argv)`: settings, the API key, the client are all
  made fresh, as in a cold start.

The agent leaves after an idle time (CMDOP_TUI_WARM_IDLE_S, default 15 min) or on SIGTERM.
"""

from __future__ import annotations

import atexit
import fcntl
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from cmdop_tui.support.processes import parent_death_signal
from cmdop_tui.support.warm import (
    DEFAULT_IDLE_S,
    HEADER,
    IDLE_ENV,
    LOG_NAME,
    MAX_REQUEST_BYTES,
    SUBCOMMANDS,
    agent_file,
    code_files,
    compatibility,
    fingerprint,
    interpreter_key,
    mtime,
    package_dir,
    peer_pid,
    peer_uid,
    private_dir,
    runtime_dir,
    send_line,
    shares_namespaces,
    site_dirs,
)

# What a headless run imports before its first request: imported once here, shared by every fork.
PRELOAD = (
    "cmdop_tui.cli",
    "cmdop_tui.headless",
    "cmdop_tui.session.session",
    "cmdop_tui.session.errors",
    "cmdop_tui.session.local_model",
    "cmdop_tui.machines.spec",
    "cmdop_tui.permissions",
    "cmdop_tui.transcripts",
    "anthropic",
    "ctypes",
)
# What the SDK imports when it makes its client and its first request (its HTTP transport):
# names of its dependencies, so each is optional. Imports only: no client is made here.
TRANSPORT_PRELOAD = (
    "httpcore2",
    "h11",
    "anyio._backends._asyncio",
    "truststore",
    "opentelemetry.propagate",
    "concurrent.futures.thread",
    "queue",
    "pwd",
)
LOCK_WAIT_S = 2.0  # a stale agent leaving lets the next one take the lock within this
REQUEST_TIMEOUT_S = 5.0  # a client that connects and says nothing is dropped after this
STOP_GRACE_S = 2.0  # the run's time to end its turn after its client went away
GO_TIMEOUT_S = 10.0  # a client that got our ok and says nothing more is given up
LOG_LIMIT_BYTES = 1 << 20  # one line per run: started afresh past this
_BOUND: list[int] = []  # the inode of our socket's file, to remove only our own on leaving
_KEEP: list[Any] = []  # the agent's own std streams, kept so that no finaliser closes fds 0-2


class CodeWatch:
    """Whether the code this agent imported is still the code on disk: our package's modules it
    has loaded (one it has not loaded, a run imports afresh) and the site-packages folders."""

    def __init__(self) -> None:
        self.fingerprint = fingerprint()
        self.package = package_dir()
        self.files = {**code_files(self.package), **{site: mtime(site) for site in site_dirs()}}
        self.why = ""

    def loaded(self) -> list[str]:
        inside = self.package + os.sep
        paths = (getattr(module, "__file__", None) for module in list(sys.modules.values()))
        return [os.path.abspath(path) for path in paths if path and os.path.abspath(path).startswith(inside)]

    def stale(self, client_fingerprint: object) -> bool:
        if client_fingerprint != self.fingerprint:
            self.why = f"a client of another install ({client_fingerprint})"
            return True
        for path in [*self.loaded(), *site_dirs()]:
            if mtime(path) != self.files.get(path):
                self.why = f"{path} changed"
                return True
        return False


class _Stop(Exception):
    """SIGTERM: the agent leaves."""


def serve(argv: list[str] | None = None) -> None:
    """The agent's main: take the lock, import, listen, serve until idle, stale or TERM.
    `argv` may name the interpreter key its client wants (an agent of another kind leaves)."""
    directory = runtime_dir(os.environ)
    interpreter = compatibility()
    key = interpreter_key(interpreter)
    if (argv and argv[0] != key) or not private_dir(directory, create=True):
        return
    with open(agent_file(directory, key, "lock"), "a") as lock, open(directory / LOG_NAME, "a", buffering=1) as log:
        if not _take_lock(lock):
            return
        if log.tell() > LOG_LIMIT_BYTES:
            log.truncate(0)
        code = CodeWatch()  # before the imports: a change while importing counts
        _preload()
        if threading.active_count() != 1:  # a fork would copy a half-held lock: serve nobody
            log.write(f"{os.getpid()}: not serving: an import started a thread\n")
            return
        gc.freeze()  # the imported objects stay shared with the forks, not copied on write
        listener = _listen(agent_file(directory, key, "sock"))
        agent_file(directory, key, "pid").write_text(f"{os.getpid()}\n")
        log.write(f"{os.getpid()}: ready ({key})\n")
        reason = "idle"
        try:
            reason = _loop(listener, code, interpreter, [lock.fileno(), log.fileno(), listener.fileno()], log)
        except _Stop:
            reason = "SIGTERM"
        finally:
            _leave(directory, key, listener)
            log.write(f"{os.getpid()}: exit ({reason})\n")


def _preload() -> None:
    for module in PRELOAD:
        importlib.import_module(module)
    for module in TRANSPORT_PRELOAD:
        try:
            importlib.import_module(module)
        except ImportError:
            pass  # another SDK version, another transport: imported by the run instead


def _take_lock(lock: IO[str]) -> bool:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def _listen(path: Path) -> socket.socket:
    """Bind under a temporary name, then rename: a client sees the old socket or the new one."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary.unlink(missing_ok=True)
    listener.bind(str(temporary))
    listener.listen(64)
    os.replace(temporary, path)
    _BOUND.append(os.stat(path).st_ino)
    return listener


def _leave(directory: Path, key: str, listener: socket.socket) -> None:
    """Remove our socket and pid file, unless a newer agent has replaced them already."""
    path, pid_file = agent_file(directory, key, "sock"), agent_file(directory, key, "pid")
    try:
        if os.stat(path).st_ino in _BOUND:
            path.unlink()
    except OSError:
        pass
    listener.close()
    try:
        if pid_file.read_text().strip() == str(os.getpid()):
            pid_file.unlink()
    except OSError:
        pass


def idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def _loop(listener: socket.socket, code: CodeWatch, interpreter: str, own: list[int], log: IO[str]) -> str:
    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors reap themselves
    idle = idle_seconds()
    while True:
        ready, _, _ = select.select([listener], [], [], idle)
        if not ready:
            return "idle"
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        with conn:
            outcome = _take(conn, code, interpreter, own, log)
        if outcome == "stale":
            return "the installed code changed"


def _take(conn: socket.socket, code: CodeWatch, interpreter: str, own: list[int], log: IO[str]) -> str:
    """One connection: check it, and fork its supervisor. Returns what became of it, which
    the log says before the client hears it."""

    def outcome(what: str) -> str:
        log.write(f"{os.getpid()}: {what}\n")
        return what

    if peer_uid(conn) != os.getuid():
        return outcome("refused: another user")
    if not shares_namespaces(peer_pid(conn)):  # the same uid inside a sandbox is not the user
        return outcome("refused: another namespace")
    conn.settimeout(REQUEST_TIMEOUT_S)
    fds: list[int] = []
    try:
        request, fds = _read_request(conn)
        refusal = _refusal(request, code, interpreter, len(fds))
        if refusal is not None:
            outcome(f"stale: {code.why}" if refusal == "stale" else f"refused: {refusal}")
            send_line(conn, {"refused": refusal})
            return refusal
        conn.settimeout(None)
        outcome("serving a run")
        if os.fork() == 0:
            _child(lambda: _supervise(conn, fds, request, own))
        return "served"
    except (OSError, ValueError) as exc:
        return outcome(f"refused: {exc}")
    finally:
        for fd in fds:
            os.close(fd)


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, flags, _ = socket.recv_fds(conn, 64 * 1024, 3)
    if flags & socket.MSG_CTRUNC:
        raise ValueError("file descriptors were cut")
    if len(data) < HEADER.size:
        raise ValueError("a short request")
    (size,) = HEADER.unpack(data[: HEADER.size])
    if size > MAX_REQUEST_BYTES:
        raise ValueError("an oversized request")
    body = bytearray(data[HEADER.size :])
    while len(body) < size:
        chunk = conn.recv(min(1 << 20, size - len(body)))
        if not chunk:
            raise ValueError("a cut request")
        body += chunk
    request = json.loads(body)
    if not isinstance(request, dict):
        raise ValueError("a request that is not an object")
    return request, list(fds)


def _refusal(request: dict[str, Any], code: CodeWatch, interpreter: str, fd_count: int) -> str | None:
    if code.stale(request.get("fingerprint")):
        return "stale"
    if request.get("compatibility") != interpreter:
        return "another interpreter"
    if fd_count != 3:
        return "no standard streams"
    if not _headless(request.get("argv")):
        return "not a headless command line"
    return None


def _headless(argv: object) -> bool:
    """Whether the real parser reads `argv` as a `-p` run (anything else runs cold)."""
    from cmdop_tui.config.flags import parser

    if not isinstance(argv, list) or not argv or argv[0] in SUBCOMMANDS:
        return False
    try:
        args = parser().parse_args([str(arg) for arg in argv])
    except SystemExit:  # a usage error: the cold run prints it
        return False
    return args.prompt is not None and not args.no_warm


def _child(body: Callable[[], int]) -> None:
    """A forked process's whole life: `body`'s code, and never a return into the parent's code."""
    code = 1
    try:
        code = body()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _supervise(conn: socket.socket, fds: list[int], request: dict[str, Any], own: list[int]) -> int:
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
        _child(lambda: _run(fds, request, hook, go_read))
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
