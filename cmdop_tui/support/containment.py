"""Containment of the processes of tool calls: the app's side of `supervisor.py`.

    start() -> bool                     start the zygote ahead of the first command (optional)
    launch(argv, cwd, fds) -> bool      hand a command to the zygote (False: not Linux, run it directly)
    keep(status, control)               a finished command's supervisor, still minding its jobs
    end_background_jobs()               kill what finished commands left running

On Linux, one zygote per app (started on first use, about 20 ms once) forks a supervisor per
command; see supervisor.py for what a supervisor guarantees. The app holds the only write end of
each command's *control* pipe, so closing it, or dying in any way (the kernel closes it), makes
the supervisor kill the command's whole tree. A request larger than one message (a large
environment) goes in a memfd passed with it. On other systems `launch` says False and the
caller runs the command as before (own session, killed as a group). On Linux containment fails
closed: when the zygote cannot start, `launch` raises `ContainmentUnavailable` and the command is
refused, never run without it.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from cmdop_tui.support import supervisor
from cmdop_tui.support.secrets import CREDENTIAL_ENV

__all__ = ["ContainmentUnavailable", "end_background_jobs", "keep", "launch", "start"]

START_TIMEOUT_S = 5.0
SEND_BUFFER = 2 * supervisor.MAX_REQUEST
_SCRIPT = Path(supervisor.__file__)

_log = logging.getLogger(__name__)


class ContainmentUnavailable(OSError):
    """Commands are refused: on Linux they run contained or not at all."""

    def __init__(self, cause: str) -> None:
        super().__init__(f"refused: commands run only contained, and the supervisor did not start ({cause})")


class _Zygote:
    """The zygote process and our end of its socket (per process: a fork of us starts its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.unsupported = not sys.platform.startswith("linux")
        self.failure: str | None = None if _SCRIPT.is_file() else f"{_SCRIPT} is missing"
        # (status fd, control fd) of supervisors whose command has exited but not every job.
        self.leftovers: list[tuple[int, int]] = []

    def adopt(self) -> None:
        """In a fork of the app, forget the parent's zygote and supervisors (they are not ours)."""
        if self.owner != os.getpid():
            self.owner, self.process, self.sock, self.leftovers = os.getpid(), None, None, []

    def connection(self) -> socket.socket | None:
        """The socket to a running zygote, started if need be; None on a system without one.
        ContainmentUnavailable when it cannot start (it is not tried again in this process)."""
        self.adopt()
        if self.unsupported:
            return None
        if self.sock is None and self.failure is None:
            try:
                self.sock = self._start()
            except (OSError, subprocess.SubprocessError) as exc:
                self.failure = str(exc) or type(exc).__name__
                _log.warning("commands are refused: the supervisor did not start (%s)", self.failure)
        if self.sock is None:
            raise ContainmentUnavailable(self.failure or "unknown")
        return self.sock

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        main = threading.current_thread() is threading.main_thread()  # PDEATHSIG follows a thread
        argv = [sys.executable, "-S", "-E", "-I", str(_SCRIPT), str(os.getpid()), "1" if main else "0"]
        # Each command gets the environment of its request; the zygote needs none of our secrets
        # (a command may read its parent's /proc/PID/environ).
        env = {name: value for name, value in os.environ.items() if name not in CREDENTIAL_ENV}
        try:
            with theirs:
                self.process = subprocess.Popen(
                    argv,
                    stdin=theirs.fileno(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    env=env,
                )
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            ours.settimeout(START_TIMEOUT_S)
            if ours.recv(len(supervisor.READY)) != supervisor.READY:
                raise OSError("the supervisor exited at start")
            ours.settimeout(None)
        except BaseException:
            ours.close()
            self._discard()
            raise
        return ours

    def _discard(self) -> None:
        """Forget a zygote that is gone (or must go); it exits when its socket closes."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None


_ZYGOTE = _Zygote()


def start() -> bool:
    """Start the zygote now (it starts on first use otherwise); whether commands are contained
    (False also where they are refused for want of it)."""
    with _ZYGOTE.lock:
        try:
            return _ZYGOTE.connection() is not None
        except ContainmentUnavailable:
            return False


def launch(
    argv: Sequence[str],
    cwd: Path | None,
    fds: tuple[int, int, int, int],
    env: Mapping[str, str] | None = None,
    opens: Sequence[Path] = (),
) -> bool:
    """Hand `argv` to a new supervisor with (stdout, stderr, status, control) `fds`, the
    environment `env` (default: ours) and `opens` open for reading as its fds 3, 4, ...

    False on a system without containment (the caller then runs the command itself);
    ContainmentUnavailable on Linux when the supervisor cannot start (the command is refused).
    ValueError for a NUL byte in the command, its directory or the environment.
    """
    where = os.fsencode(cwd) if cwd is not None else _current_directory()
    environment = dict(os.environb) if env is None else {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    data = supervisor.encode_request(
        [os.fsencode(arg) for arg in argv], where, environment, [os.fsencode(path) for path in opens]
    )
    message, extra = (data, None) if len(data) <= supervisor.MAX_REQUEST else _in_a_file(data)
    try:
        return _send(message, [*fds, *([extra] if extra is not None else [])])
    finally:
        if extra is not None:
            os.close(extra)


def _in_a_file(data: bytes) -> tuple[bytes, int]:
    """A request too large for one message (a large environment): in a memfd, passed with it."""
    fd = os.memfd_create("cmdop-request", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return supervisor.REQUEST_IN_FILE, fd


def _send(data: bytes, fds: list[int]) -> bool:
    """Hand one request to the zygote; False when there is no zygote to take it."""
    zygote = _ZYGOTE
    with zygote.lock:
        _prune(zygote)
        for _attempt in range(2):  # a zygote that died (killed by someone) is replaced once
            sock = zygote.connection()
            if sock is None:
                return False
            try:
                socket.send_fds(sock, [data], fds)
            except OSError as exc:
                _log.warning("the supervisor is gone (%s); starting another", exc)
                zygote._discard()
                continue
            return True
    return False


def _current_directory() -> bytes:
    try:
        return os.getcwdb()
    except OSError:  # deleted: the command starts where the zygote is
        return b""


def keep(status: int, control: int) -> None:
    """Keep a supervisor's pipes while it minds what its finished command left running.

    `status` reads end-of-file when the supervisor exits (the jobs ended); closing `control`
    kills them. Both are ours now: closed on that end-of-file, or by `end_background_jobs`.
    """
    with _ZYGOTE.lock:
        _ZYGOTE.adopt()
        _ZYGOTE.leftovers.append((status, control))
        _prune(_ZYGOTE)


def _prune(zygote: _Zygote) -> None:
    """Close the pipes of supervisors that have exited."""
    if not zygote.leftovers:
        return
    gone = _ended([status for status, _ in zygote.leftovers], 0)
    for status, control in [pair for pair in zygote.leftovers if pair[0] in gone]:
        os.close(status)
        os.close(control)
    zygote.leftovers = [pair for pair in zygote.leftovers if pair[0] not in gone]


def _ended(statuses: list[int], timeout_s: float) -> set[int]:
    """The status pipes (of `statuses`) at end-of-file within the timeout: their supervisor exited."""
    readable, _, _ = select.select(statuses, [], [], timeout_s)
    return {status for status in readable if not os.read(status, 4096)}


def end_background_jobs(wait_s: float = 2.0) -> int:
    """Kill everything that finished commands left running; wait (up to `wait_s`) until it is gone.

    For the end of a session (the end of the app does it by itself: the kernel closes the
    control pipes). Returns how many commands still had processes.
    """
    with _ZYGOTE.lock:
        if _ZYGOTE.owner != os.getpid():
            return 0
        leftovers, _ZYGOTE.leftovers = _ZYGOTE.leftovers, []
    for _, control in leftovers:
        os.close(control)
    waiting = [status for status, _ in leftovers]
    deadline = time.monotonic() + wait_s
    while waiting and (left := deadline - time.monotonic()) > 0:
        ended = _ended(waiting, left)
        waiting = [status for status in waiting if status not in ended]
    for status, _ in leftovers:
        os.close(status)
    return len(leftovers)
