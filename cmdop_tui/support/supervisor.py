"""The supervisor of the processes of tool calls: nothing a command starts outlives the app.

Run as a script, ``python -S -E -I supervisor.py PARENT_PID PDEATHSIG``, by `containment.py`:
stdlib only, no import of the package, so it starts in a few milliseconds and once per app. That
process, the *zygote*, reads spawn requests from the socket on its standard input and forks one
*supervisor* per command (a fork of a small process is cheap; an exec of Python is not). The
zygote exits when the app closes the socket or dies (PR_SET_PDEATHSIG, when asked).

A supervisor (Linux):

* is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the command leaves behind, a pipeline's
  members, a `cmd &` job, a grandchild that called setsid, is reparented to it, not to init;
* gets SIGTERM when the zygote dies (PR_SET_PDEATHSIG), and reads the app's *control* pipe: its
  only writer is the app, so it reads end-of-file when the app closes it (Stop, a timeout, the
  end of the session) or dies, even by SIGKILL;
* spawns the command in a session of its own (its pid is its process group), standard input from
  /dev/null, standard output and error to the app's pipes;
* writes ``pid N``, then ``exit RETURNCODE`` (``-SIGNAL`` when killed) on the *status* pipe, or
  ``error ERRNO STRERROR`` when the command cannot start; the pipe's end-of-file means the
  supervisor has exited;
* after the command exits it stays while its background jobs run, and exits when none is left;
  on end-of-file of the control pipe or a termination signal it SIGKILLs the command's process
  group and every process descended from it (found in /proc, again until none is left), reaps
  them, and exits.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
from collections.abc import Callable, Mapping, Sequence

__all__ = ["FD_COUNT", "MAX_REQUEST", "READY", "decode_request", "encode_request", "main"]

MAX_REQUEST = 1 << 20  # bytes of a request sent in the message itself; a larger one comes in a file
# The message that says the request is in the extra descriptor (a memfd) after the FD_COUNT ones:
# no request made by encode_request starts so (its second part is a number).
REQUEST_IN_FILE = b"\0\0request-in-file"
FD_COUNT = 4  # the command's stdout and stderr, the status pipe (write ends), the control pipe (read end)
READY = b"ready"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_TERMINATE = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# Everything the command's process gets at its default disposition (Python ignores SIGPIPE, the
# zygote SIGCHLD; an ignored signal stays ignored across exec).
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}

Prctl = Callable[[int, int, int, int, int], int]


def encode_request(argv: Sequence[bytes], cwd: bytes, env: Mapping[bytes, bytes], opens: Sequence[bytes] = ()) -> bytes:
    """One spawn request: NUL-separated, as none of its parts may hold a NUL byte. `opens`: files
    the command gets open for reading as fds 3, 4, ... (the sandbox's system-call filter)."""
    parts = [cwd, str(len(argv)).encode(), *argv, str(len(opens)).encode(), *opens]
    parts += [key + b"=" + value for key, value in env.items()]
    if any(b"\0" in part for part in parts):
        raise ValueError("embedded null byte")
    return b"\0".join(parts)


def decode_request(data: bytes) -> tuple[list[bytes], bytes, dict[bytes, bytes], list[bytes]]:
    """(argv, cwd, env, opens) of a request made by `encode_request`."""
    parts = data.split(b"\0")
    count = int(parts[1])
    argv = parts[2 : 2 + count]
    opened = int(parts[2 + count])
    opens = parts[3 + count : 3 + count + opened]
    env = dict(item.split(b"=", 1) for item in parts[3 + count + opened :] if b"=" in item)
    return argv, parts[0], env, opens


def _prctl() -> Prctl | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function: Prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


def _write(fd: int, line: str) -> None:
    try:
        os.write(fd, line.encode() + b"\n")
    except OSError:  # the app is gone or stopped listening: nothing to tell
        pass


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def descendants(root: int) -> list[int]:
    """Every process whose chain of parents leads to `root`, from /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc: the process group is all we can kill
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
            parent = int(stat[stat.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    stack = [root]
    while stack:
        for pid in children.get(stack.pop(), ()):
            found.append(pid)
            stack.append(pid)
    return found


class Supervisor:
    """One command and everything it starts (see the module docstring)."""

    def __init__(self, status: int, control: int) -> None:
        self.status = status
        self.control = control
        self.child = 0
        self.reported = False
        self.stop = False
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(wake_read, False)
        self.wake = wake_read
        signal.set_wakeup_fd(wake_write)  # a signal makes `select` return
        signal.signal(signal.SIGCHLD, self._on_signal)
        for signum in _TERMINATE:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        if signum != signal.SIGCHLD:
            self.stop = True

    def spawn(self, data: bytes, out: int, err: int) -> bool:
        """Start the command; False (and the reason on the status pipe) when it cannot start."""
        try:
            argv, cwd, env, opens = decode_request(data)
            if cwd:
                os.chdir(cwd)
            if b"PATH" in env:  # posix_spawnp looks the program up in our own PATH
                os.environb[b"PATH"] = env[b"PATH"]
            self.child = os.posix_spawnp(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, out, 1),
                    (os.POSIX_SPAWN_DUP2, err, 2),
                    *((os.POSIX_SPAWN_OPEN, 3 + i, path, os.O_RDONLY, 0) for i, path in enumerate(opens)),
                ],
                setsid=True,
                setsigdef=_DEFAULT_SIGNALS,
                setsigmask=(),
            )
        except OSError as exc:
            _write(self.status, f"error {exc.errno or 0} {exc.strerror or exc}")
            return False
        except (ValueError, IndexError) as exc:
            _write(self.status, f"error 0 {exc}")
            return False
        finally:
            _close((out, err))  # the command's copies are the only ones: its exit closes the pipes
        _write(self.status, f"pid {self.child}")
        return True

    def _reaped(self, pid: int, status: int) -> None:
        if pid == self.child and not self.reported:
            self.reported = True
            _write(self.status, f"exit {os.waitstatus_to_exitcode(status)}")

    def _reap_ready(self) -> None:
        """Reap every child that has exited; ChildProcessError when there is none left at all."""
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            self._reaped(pid, status)

    def watch(self) -> None:
        """Until nothing is left, or the app says stop (or is gone): then kill everything."""
        while True:
            if self.stop:
                return self.kill_all()
            try:
                self._reap_ready()
            except ChildProcessError:
                return None
            ready, _, _ = select.select([self.control, self.wake], [], [])
            if self.control in ready:  # the app never writes: this is end-of-file
                return self.kill_all()
            try:
                os.read(self.wake, 512)
            except BlockingIOError:
                pass

    def kill_all(self) -> None:
        """SIGKILL the command's group and every descendant, until no child is left to reap."""
        if self.child:
            try:
                os.killpg(self.child, signal.SIGKILL)
            except OSError:
                pass
        me = os.getpid()
        while True:
            for pid in descendants(me):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self._reaped(*os.waitpid(-1, 0))
                self._reap_ready()
            except ChildProcessError:
                return


def _supervise(data: bytes, fds: list[int], prctl: Prctl | None, zygote: int) -> None:
    """The forked supervisor: set up, start the command, watch it."""
    out, err, status, control = fds
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the command's stdin; and the zygote's socket is closed here
    os.close(null)
    supervisor = Supervisor(status, control)
    if prctl is not None:
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != zygote:  # the zygote (and so the app) died before we could tell
        _close(fds)
        return
    if supervisor.spawn(data, out, err):
        supervisor.watch()


def _fork(data: bytes, fds: list[int], prctl: Prctl | None) -> None:
    zygote = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        _write(fds[2], f"error {exc.errno or 0} {exc.strerror or exc}")
        pid = -1
    if pid == 0:
        code = 1
        try:
            _supervise(data, fds, prctl, zygote)
            code = 0
        finally:
            os._exit(code)
    _close(fds)


def _receive(sock: socket.socket) -> tuple[bytes, list[int]] | None:
    """The next request and its descriptors; None at end-of-file (the app is gone)."""
    data, ancillary, _flags, _address = sock.recvmsg(MAX_REQUEST, socket.CMSG_SPACE((FD_COUNT + 1) * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, len(payload) - 3, 4)]
    for fd in fds:
        os.set_inheritable(fd, False)
    if not data and not fds:
        return None
    return data, fds


def main(argv: Sequence[str]) -> None:
    """The zygote: fork a supervisor per request on stdin (a SOCK_SEQPACKET socket)."""
    parent, pdeathsig = int(argv[0]), argv[1] == "1"
    prctl = _prctl()
    if prctl is not None and pdeathsig:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        return
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the supervisors
    sock = socket.socket(fileno=0)
    sock.send(READY)
    while (request := _receive(sock)) is not None:
        data, fds = request
        if data == REQUEST_IN_FILE and len(fds) == FD_COUNT + 1:
            data, fds = _read_request(fds[-1]), fds[:-1]
        if len(fds) == FD_COUNT:
            _fork(data, fds, prctl)
        else:
            _close(fds)


def _read_request(fd: int) -> bytes:
    """A request too large for one message, from the file it came in (closed here)."""
    chunks = []
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


if __name__ == "__main__":
    main(sys.argv[1:])
