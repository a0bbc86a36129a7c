"""The agent itself: the lock, the preloaded imports, the socket, and each connection's checks
(peer, code on disk, interpreter, a headless command line) before a supervisor takes it over
(`run.py`). The whole design is in this package's `__init__`."""

from __future__ import annotations

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
from pathlib import Path
from typing import IO, Any

from cmdop_tui.support.warm import (
    DEFAULT_IDLE_S,
    HEADER,
    IDLE_ENV,
    LOG_NAME,
    MAX_REQUEST_BYTES,
    SUBCOMMANDS,
    agent_dir,
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
    send_line,
    shares_namespaces,
    site_dirs,
)

from .run import child, supervise

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
    "cmdop_tui.mcp.client",  # the MCP SDK (~0.5 s): a run with MCP servers waits for them before its first request
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
LOG_LIMIT_BYTES = 1 << 20  # one line per run: started afresh past this
DEFAULT_CHECK_S = 30.0  # how often an agent with nothing to do looks whether its socket is still there
CHECK_ENV = "CMDOP_TUI_WARM_CHECK_S"
_BOUND: list[int] = []  # the inode of our socket's file, to remove only our own on leaving


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
    directory = agent_dir(os.environ)
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
        socket_path = agent_file(directory, key, "sock")
        listener = _listen(socket_path)
        agent_file(directory, key, "pid").write_text(f"{os.getpid()}\n")
        log.write(f"{os.getpid()}: ready ({key})\n")
        reason = "idle"
        try:
            own = [lock.fileno(), log.fileno(), listener.fileno()]
            reason = _loop(listener, socket_path, code, interpreter, own, log)
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
    return _seconds(IDLE_ENV, DEFAULT_IDLE_S)


def _seconds(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def _still_ours(path: Path) -> bool:
    """Whether our socket is still where clients look for it: logind removes a runtime dir
    when the user's last login ends, and a tidy-up may remove the file; then no client can
    reach us again and we leave at once instead of idling out."""
    try:
        return os.stat(path).st_ino in _BOUND
    except OSError:
        return False


def _loop(listener: socket.socket, path: Path, code: CodeWatch, interpreter: str, own: list[int], log: IO[str]) -> str:
    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors reap themselves
    idle, check = idle_seconds(), _seconds(CHECK_ENV, DEFAULT_CHECK_S)
    last_run = time.monotonic()
    while True:
        left = last_run + idle - time.monotonic()
        ready, _, _ = select.select([listener], [], [], max(0.0, min(left, check)))
        if not ready:
            if time.monotonic() - last_run >= idle:
                return "idle"
            if not _still_ours(path):
                return "its socket was removed"
            continue
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        with conn:
            outcome = _take(conn, code, interpreter, own, log)
        last_run = time.monotonic()
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
            child(lambda: supervise(conn, fds, request, own))
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
