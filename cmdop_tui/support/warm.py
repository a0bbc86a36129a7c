"""The warm agent's client, and what it shares with the agent (`cmdop_tui/warm_agent/`).

`cmdop-tui -p ...` pays ~1.5 s before its first model request, nearly all of it importing the
model SDK. A warm agent is a per-user process that has imported it already and waits on a Unix
socket; the client hands it the command line, the working directory, the environment and its
stdin/stdout/stderr (SCM_RIGHTS), and a fresh fork of the agent runs the normal `main(argv)` with
them. This module is the client: it imports only the standard library and what `cli.py` loaded
already, so asking costs a few milliseconds, and any doubt means "run it here, cold".

Safety: the socket lives in a private runtime directory (0700, owned by us, checked with lstat
before use, never created through a symlink); each side checks the other's uid with SO_PEERCRED.
Only the same user can ask, and what they can ask for is what they could run themselves.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import stat
import struct
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

NO_WARM_ENV = "CMDOP_TUI_NO_WARM"
RUNTIME_DIR_ENV = "CMDOP_TUI_RUNTIME_DIR"
LINGER_DIR = Path("/var/lib/systemd/linger")  # a file per user whose runtime dir logind keeps
IDLE_ENV = "CMDOP_TUI_WARM_IDLE_S"
DEFAULT_IDLE_S = 900.0  # an idle agent leaves after 15 minutes
LOG_NAME = "agent.log"  # one line per start, run served or refused, and exit, of every agent there
# The console script's subcommands; only `-p` runs warm (the TUI never does).
SUBCOMMANDS = frozenset({"permissions", "config", "mcp", "hooks", "serve", "machines", "rewind", "acp"})
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
JOB_SIGNALS = (signal.SIGTSTP, signal.SIGCONT)  # Ctrl-Z and `fg` on a terminal: the run follows us
HEADER = struct.Struct("!I")  # the request's length, before its JSON
MAX_REQUEST_BYTES = 256 * 1024 * 1024
# An agent that does not take the request within this (stopped, swapped out) is passed over: we
# close the socket, which ends a run it may have started, and run cold.
HANDSHAKE_TIMEOUT_S = 10.0
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
# Names never handed to the agent's own environment (each request brings its own).
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
# Read by the SDK and its dependencies when imported (logging, propagators, C extensions).
IMPORT_TIME_ENV = frozenset({"ANTHROPIC_LOG", "OTEL_PROPAGATORS", "AIOHTTP_NO_EXTENSIONS", "AIOHTTP_NOSENDFILE"})
AGENT_PROGRAM = "import sys; from cmdop_tui.warm_agent import serve; serve(sys.argv[1:])"


class WarmUnavailable(Exception):
    """No agent can take this request; `start` says whether to start one for next time."""

    def __init__(self, reason: str, *, start: bool = False) -> None:
        super().__init__(reason)
        self.start = start


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "SO_PEERCRED") and hasattr(socket, "send_fds")


def wants_warm(argv: list[str], environ: Mapping[str, str]) -> bool:
    """Whether this command line may go to the warm agent: a headless `-p` run, not turned off.
    A cheap guess; the agent parses the line with the real parser and refuses anything else."""
    if environ.get(NO_WARM_ENV, "") not in ("", "0") or "--no-warm" in argv or not supported():
        return False
    if not argv or argv[0] in SUBCOMMANDS:
        return False
    return any(arg == "--prompt" or arg.startswith(("-p", "--prompt=")) for arg in argv)


def runtime_dir(environ: Mapping[str, str]) -> Path:
    """$CMDOP_TUI_RUNTIME_DIR, else $XDG_RUNTIME_DIR/cmdop-tui, else $TMPDIR/cmdop-tui-UID."""
    explicit = environ.get(RUNTIME_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "cmdop-tui" if xdg else _temporary_dir(environ)


def agent_dir(environ: Mapping[str, str]) -> Path:
    """Where the warm agent's socket is: the runtime dir where that outlives the login, else
    $TMPDIR/cmdop-tui-UID (an agent is there for the next run, and the next run may come from
    the next login)."""
    explicit = environ.get(RUNTIME_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and outlives_logins(Path(xdg)):
        return Path(xdg) / "cmdop-tui"
    return _temporary_dir(environ)


def _temporary_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("TMPDIR") or "/tmp") / f"cmdop-tui-{os.getuid()}"


def outlives_logins(directory: Path) -> bool:
    """Whether a runtime directory stays once the user's last login has ended. logind's own
    (/run/user/UID) is removed then, unless the user lingers: an agent there would lose its
    socket as soon as the ssh connection that started it closes, and the remote end of
    ask_machine is started by just such a connection."""
    if directory != Path(f"/run/user/{os.getuid()}"):
        return True
    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return False
    return (LINGER_DIR / name).exists()


def private_dir(path: Path, *, create: bool) -> bool:
    """Whether `path` is a real directory (not a symlink) of ours that nobody else may enter;
    with `create`, make it (0700) first when it is missing. Never changes an existing one."""
    if create:
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return int(_UCRED.unpack(creds)[1])


def peer_pid(sock: socket.socket) -> int:
    """The pid of the process at the other end, as this PID namespace sees it (0: it cannot)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return int(_UCRED.unpack(creds)[0])


def is_stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (by a signal, or traced): it cannot answer now."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return bool(fields) and fields[0] in (b"T", b"t")


NAMESPACES = ("mnt", "pid", "user")


def shares_namespaces(pid: int) -> bool:
    """Whether process `pid` is in this process's mount, PID and user namespaces: a sandboxed
    command (its own namespaces) is not, whatever its uid."""
    if pid <= 0:
        return False
    try:
        for name in NAMESPACES:
            theirs, ours = os.stat(f"/proc/{pid}/ns/{name}"), os.stat(f"/proc/self/ns/{name}")
            if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
                return False
    except OSError:
        return False
    return True


def package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cmdop_tui/support/..


def site_dirs() -> list[str]:
    """The site-packages folders on sys.path: an upgraded SDK changes their mtime."""
    return [entry for entry in sys.path if entry.endswith("-packages")]


def fingerprint() -> str:
    """The install the client runs: its version and where its package lives. (The agent checks
    its own imported code against the disk: `warm_agent.CodeWatch`.)"""
    from cmdop_tui.support.version import VERSION

    return json.dumps([VERSION, package_dir()])


def agent_file(directory: Path, key: str, kind: str) -> Path:
    """The agent's socket, lock or pid file (`kind`: sock, lock, pid) for the interpreter `key`:
    one agent per install and interpreter set-up, so that each serves only its own kind."""
    return directory / f"agent-{key}.{kind}"


def interpreter_key(compatible: str) -> str:
    return f"{zlib.crc32(compatible.encode()):08x}"


def compatibility() -> str:
    """What must match between the agent's interpreter and the client's for a warm run to be
    the cold run: the interpreter, sys.path past its first entry (the script's or the cwd's),
    flags, -X and -W options, encodings, and the environment read at import time (PYTHON*,
    IMPORT_TIME_ENV), which a run's fresh environment comes too late for."""
    import locale  # the default encoding of open() and of text pipes

    options = {name: value for name, value in sys._xoptions.items() if name != "utf8"}  # in sys.flags
    read_at_import = sorted(
        (name, value) for name, value in os.environ.items() if name.startswith("PYTHON") or name in IMPORT_TIME_ENV
    )
    interpreter = [sys.executable, sys.version, sys.path[1:], list(sys.flags), options, sys.warnoptions]
    encodings = [sys.getfilesystemencoding(), locale.getpreferredencoding(False)]
    return json.dumps([*interpreter, *encodings, read_at_import], default=str)


def mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def code_files(top: str) -> dict[str, int]:
    """Every Python file under `top` and its mtime (caches and an editor's files do not count)."""
    files: dict[str, int] = {}
    with os.scandir(top) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    files.update(code_files(entry.path))
            elif entry.name.endswith(".py"):
                files[entry.path] = entry.stat(follow_symlinks=False).st_mtime_ns
    return files


def send_line(sock: socket.socket, message: Mapping[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def _stdio() -> list[list[Any]]:
    """How our stdin, stdout and stderr are decoded and buffered, for the agent to do the same."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if any(stream is None for stream in streams):
        raise WarmUnavailable("a standard stream is closed")
    return [[s.encoding, s.errors, s.line_buffering, getattr(s, "write_through", False)] for s in streams]


def request(argv: list[str], compatible: str) -> dict[str, Any]:
    """Everything a cold run would take from this process, but its file descriptors."""
    mask = os.umask(0o077)
    os.umask(mask)
    try:
        cwd = os.getcwd()
    except OSError as exc:
        raise WarmUnavailable("no working directory") from exc
    return {
        "argv": argv,
        "argv0": sys.argv[0] if sys.argv else "cmdop-tui",
        "cwd": cwd,
        "env": dict(os.environ),
        "umask": mask,
        "path": list(sys.path),
        "stdio": _stdio(),
        "fingerprint": fingerprint(),
        "compatibility": compatible,
    }


class _Forwarder:
    """Our INT/TERM/HUP/QUIT, sent on to the run (held until the agent took it); once it runs,
    TSTP and CONT too, so that a job stopped on a terminal stops its run with it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.accepted = False
        self.pending: list[int] = []
        self.previous = {signum: signal.signal(signum, self) for signum in FORWARDED_SIGNALS}

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not self.accepted:
            self.pending.append(signum)
            return
        try:
            send_line(self.sock, {"signal": signum})
        except OSError:
            pass  # the run is over already; its exit line is on its way

    def accept(self) -> None:
        self.accepted = True
        for job_signal in JOB_SIGNALS:
            signal.signal(job_signal, self._job)
        for signum in self.pending:
            self(signum, None)

    def _job(self, signum: int, frame: FrameType | None) -> None:
        self(signum, None)
        if signum == signal.SIGTSTP:  # then stop here, as a job does; CONT comes back through here
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)
            signal.signal(signal.SIGTSTP, self._job)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def run_warm(argv: list[str]) -> int | None:
    """Run the headless command line `argv` in the warm agent and return its exit code; None
    when no agent took it (the caller runs it cold), after starting one for next time if none
    runs. An agent that took the run returns its code even if the run failed."""
    directory, compatible = agent_dir(os.environ), compatibility()
    try:
        return _run(directory, argv, compatible)
    except WarmUnavailable as exc:
        if exc.start:
            start_agent(directory, interpreter_key(compatible))
        return None


def _run(directory: Path, argv: list[str], compatible: str) -> int:
    if not private_dir(directory, create=False):
        raise WarmUnavailable("no private runtime directory", start=not os.path.lexists(directory))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        sock.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            sock.connect(str(agent_file(directory, interpreter_key(compatible), "sock")))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise WarmUnavailable("no agent", start=True) from exc
        except OSError as exc:
            raise WarmUnavailable(f"cannot reach the agent: {exc}") from exc
        if peer_uid(sock) != os.getuid():
            raise WarmUnavailable("the agent is not ours")
        if is_stopped(peer_pid(sock)):  # it would take the run and never answer: said, not waited on
            sys.stderr.write("cmdop-tui: the warm agent is stopped (SIGSTOP or Ctrl-Z); running without it\n")
            raise WarmUnavailable("the agent is stopped")
        forwarder = _Forwarder(sock)
        try:
            return _converse(sock, request(argv, compatible), forwarder)
        except WarmUnavailable:
            if forwarder.pending:  # stopped while asking: stop, do not start over cold
                return 128 + forwarder.pending[0]
            forwarder.restore()
            raise


def _converse(sock: socket.socket, asked: dict[str, Any], forwarder: _Forwarder) -> int:
    body = json.dumps(asked).encode()
    try:
        socket.send_fds(sock, [HEADER.pack(len(body))], [0, 1, 2])
        sock.sendall(body)
    except OSError as exc:
        raise WarmUnavailable(f"the agent went away: {exc}") from exc
    replies = sock.makefile("rb")
    first = _reply(replies)
    if first is None or "ok" not in first:
        refused = (first or {}).get("refused", "the agent went away")
        raise WarmUnavailable(str(refused), start=refused == "stale")
    try:
        send_line(sock, {"go": True})  # from here on the run is the agent's: never run it cold as well
    except OSError as exc:
        raise WarmUnavailable(f"the agent went away: {exc}") from exc
    sock.settimeout(None)  # the run takes as long as it takes
    forwarder.accept()
    while (message := _reply(replies)) is not None:
        if "exit" in message:
            return int(message["exit"])
    sys.stderr.write("cmdop-tui: the warm agent went away during the run\n")
    return 1


def _reply(replies: Any) -> dict[str, Any] | None:
    try:
        line = replies.readline()
    except OSError:
        return None
    if not line:
        return None
    message = json.loads(line)
    return message if isinstance(message, dict) else None


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's own environment: ours without secrets (each run brings its own)."""
    return {name: value for name, value in environ.items() if not any(w in name.upper() for w in _SECRET_WORDS)}


def start_agent(directory: Path, key: str) -> None:
    """Start a warm agent in the background, detached: its own session, no terminal, no stdio.
    If another starts at the same time, one of them keeps the lock and the other leaves."""
    import subprocess

    if not private_dir(directory, create=True):
        return
    try:
        subprocess.Popen(
            # UTF-8 mode as ours: the C locale's coercion put LC_CTYPE in our environment, so
            # the agent would not coerce, and would decide otherwise on its own.
            [sys.executable, "-X", f"utf8={sys.flags.utf8_mode}", "-c", AGENT_PROGRAM, key],
            cwd="/",
            env=agent_environment(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # no warm agent this time: nothing is lost but speed
