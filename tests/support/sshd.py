"""Real OpenSSH servers on 127.0.0.1 for tests of SSH machine support.

Tests of remote machines must talk to a real ``sshd`` (never a fake): the project drives the
system ``ssh`` client, and the only honest check of host aliases, host keys, ControlMaster
reuse, offline detection and the remote environment is the real thing. This module starts
throw-away servers, each in its own temporary directory with its own host key, and writes a
client side (key pair, ``known_hosts``, ``ssh_config``) so that ``ssh -F <config> alpha CMD``
just works, non-interactively, with strict host key checking.

* :class:`SshServer` -- one ``sshd -D`` on a free 127.0.0.1 port.
* :class:`SshClientSetup` -- the client key pair, ``known_hosts`` and ``ssh_config``.
* :class:`SshLab` -- both together: ``count`` servers named alpha, bravo, ... plus an
  offline alias; what the ``ssh_hosts`` fixture in ``conftest.py`` hands to tests.

Quirks this module deals with (found on Debian's OpenSSH 9.2; see the docstrings for detail):

* As root, sshd refuses to start without its privilege separation directory (``/run/sshd``
  on Debian), which only systemd creates; we create it (root-owned, 0755) when sshd says so.
* Only the FIRST ``SetEnv`` line of an sshd_config counts; later ones are silently ignored.
  All variables therefore go on one line.
* Debian's bash sources ``~/.bashrc`` (and ``/etc/bash.bashrc``) for commands run by sshd, so
  a user's rc file can prepend to PATH (root's does here: pyenv, cargo). By default we set
  ``SHLVL=1`` on the server so bash skips those files and the remote environment is exactly
  sshd's plus our ``SetEnv`` (see ``shell_rc``).
* Per-connection sshd children call ``setsid()``, so they outlive the listener and are not in
  its process group, and sshd leaves orphans to init (which in some containers reaps them
  only seconds later). On Linux each sshd therefore runs under a tiny Python "subreaper"
  (``_SUBREAPER``, run as ``<temp dir>/subreaper.py``): every orphan of the server,
  including anything a remote command daemonised, becomes its child, is reaped at once and
  is killed when the server stops (or when the test process dies). Elsewhere
  :meth:`SshServer.stop` kills the process tree it can see.
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

SSHD = Path("/usr/sbin/sshd")
"""The server binary; the fixtures skip when it is missing (CI installs openssh-server)."""

READY_TIMEOUT = 10.0
"""Seconds a server gets to accept a TCP connection and run ``ssh ... true``."""

POLL_INTERVAL = 0.01
"""Seconds between readiness polls: startup of a child process, nothing else to wait on."""

ALIASES = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
)  # fmt: skip
"""Host aliases given to a lab's servers, in order (then ``host27``, ``host28``, ...)."""

OFFLINE_ALIAS = "offline-host"

_ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_USER_PATH = "/usr/local/bin:/usr/bin:/bin"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

StrPath = str | os.PathLike[str]


def sshd_unavailable_reason() -> str | None:
    """Why real-sshd tests cannot run here (for ``pytest.skip``), or None when they can."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing (install openssh-server)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH (install openssh-client)"
    return None


def current_user() -> str:
    """The user the servers run as and everyone logs in as (sshd as non-root can't switch)."""
    return pwd.getpwuid(os.geteuid()).pw_name


def generate_keypair(private_key: Path, comment: str) -> str:
    """Write an ed25519 key pair without passphrase; return the public key line.

    ed25519 because generation takes ~4 ms (RSA takes far longer) and every server needs one.
    """
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(private_key)],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return private_key.with_name(private_key.name + ".pub").read_text().strip()


def reserve_port() -> socket.socket:
    """A socket bound to a free 127.0.0.1 port but NOT listening: connections are refused.

    Holding it (instead of closing it) keeps any other process from taking the port, so an
    alias pointing there stays reliably offline for as long as the socket is open.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _free_port() -> int:
    """A port free right now. sshd binds it a moment later; a lost race is retried on start."""
    with reserve_port() as sock:
        return sock.getsockname()[1]


@functools.cache
def sshd_version() -> tuple[int, int]:
    """(major, minor) of the installed OpenSSH server, to emit only options it knows."""
    result = subprocess.run([str(SSHD), "-V"], check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    match = re.search(r"OpenSSH_(\d+)\.(\d+)", result.stdout + result.stderr)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def _account_locked(user: str) -> bool:
    """True if ``user``'s shadow password is locked ("!..."), which sshd with UsePAM no refuses.

    Only readable as root, and only matters as root: unprivileged sshd can't read the shadow
    file and so never sees a lock.
    """
    if os.geteuid() != 0:
        return False
    try:
        for line in Path("/etc/shadow").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name == user:
                password = rest.split(":", 1)[0]
                return password.startswith("!") or password == "*LK*"
    except OSError:
        pass
    return False


def _quote_config_word(word: str) -> str:
    """Quote one sshd_config argument: double quotes, with backslash and quote escaped."""
    if "\n" in word or "\r" in word or "\0" in word:
        raise ValueError(f"sshd_config values cannot hold newlines or NULs: {word!r}")
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def process_table() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc on Linux, else from ``ps``)."""
    table: dict[int, int] = {}
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # exited meanwhile
                continue
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z":  # a zombie is dead already, only awaiting its parent
                table[int(entry)] = int(fields[1])
        return table
    ps = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,stat="], capture_output=True, text=True, check=True)
    for line in ps.stdout.splitlines():
        pid, ppid, stat = line.split()
        if not stat.startswith("Z"):
            table[int(pid)] = int(ppid)
    return table


def descendants(root: int, table: Mapping[int, int]) -> list[int]:
    """All live descendants of ``root``, deepest first (so parents can reap their children)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    ordered: list[int] = []
    level = [root]
    while level:
        level = [child for pid in level for child in children.get(pid, [])]
        ordered = level + ordered
    return ordered


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


_SUBREAPER = r"""
# python -I -S subreaper.py /usr/sbin/sshd ARGS...: run sshd as our child with this process as
# its "child subreaper", so every orphan in sshd's tree is re-parented HERE (not to init):
# reaped at once, and killed when we get SIGTERM/SIGINT/SIGHUP, when sshd exits, or when our
# parent (the test run) dies. Exit code: sshd's. Only os/signal/sys/time/ctypes are imported,
# because Python startup is most of the cost of this wrapper (~15 ms).
import ctypes, os, signal, sys, time


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    stat = file.read()
            except OSError:
                continue
            state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]  # comm may hold ") "
            if state != "Z":
                children.setdefault(int(ppid), []).append(int(entry))
    found, level = [], [root]
    while level:
        level = [child for pid in level for child in children.get(pid, [])]
        found += level
    return found


def reap(watch):
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == watch:
            code = os.waitstatus_to_exitcode(status)


ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
parent = os.getppid()
stops = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, *stops})
sshd = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, setsigmask=set())
code = None
while code is None:
    info = signal.sigtimedwait({signal.SIGCHLD, *stops}, 0.5)
    code = reap(sshd)
    if (info is not None and info.si_signo in stops) or os.getppid() != parent:
        break
deadline, signalled = time.monotonic() + 2, set()
while tree := descendants(os.getpid()):
    late = time.monotonic() > deadline
    for pid in tree:
        if late or pid not in signalled:
            try:
                os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
            except ProcessLookupError:
                pass
    signalled.update(tree)
    time.sleep(0.01)
    reap(None)
reap(None)
sys.exit(code or 0)
"""


def _wait_gone(pids: Sequence[int], timeout: float) -> bool:
    """Wait until none of ``pids`` is alive (zombies count as gone); False on timeout."""
    deadline = time.monotonic() + timeout
    while pids:
        alive = process_table()
        pids = [pid for pid in pids if pid in alive]
        if not pids:
            break
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_INTERVAL)
    return True


class SshServer:
    """One real ``sshd -D -e`` on a free 127.0.0.1 port, in a private temporary directory.

    The directory holds the config, a fresh ed25519 host key, ``authorized_keys`` (the
    client's public key), the pid file and ``sshd.log`` (sshd's stderr, i.e. its log at
    LogLevel ERROR). Only public-key logins as the current user are possible. When run as
    root, the server runs as root (logins as root: ``PermitRootLogin prohibit-password``);
    otherwise it runs as the current user, which OpenSSH supports without privilege
    separation (``UsePAM no``, ``StrictModes no``, a host key the user can read).

    ``env`` becomes one ``SetEnv`` line, so every remote command sees those variables without
    the client sending them (e.g. ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL for a remote
    cmdop-tui). ``path`` (one directory or several) goes first on the remote PATH, followed by
    ``env["PATH"]`` if given, else the standard system path: non-interactive sessions get
    only sshd's minimal PATH, so this is how a test makes the project's venv ``bin/`` visible
    remotely. With ``shell_rc=False`` (the default) the server also sets ``SHLVL=1``, which
    makes bash skip ``/etc/bash.bashrc`` and ``~/.bashrc`` (Debian's bash sources them for
    sshd commands; root's here prepends pyenv shims to PATH, which would shadow ``python``):
    the remote environment is then the same on every machine. Pass ``shell_rc=True`` to test
    against the user's real shell setup.

    Use :meth:`start` (or ``with SshServer(...) as server``) for one server and
    :func:`start_servers` for several at once; :meth:`stop` always cleans up.
    """

    def __init__(
        self,
        client_key: StrPath,
        *,
        env: Mapping[str, str] | None = None,
        path: StrPath | Sequence[StrPath] | None = None,
        shell_rc: bool = False,
        name: str = "sshd",
        listen: Sequence[str] = (),
        extra_config: Sequence[str] = (),
    ) -> None:
        """Prepare the directory, keys and config; ``client_key`` is the client's private key.

        The public key must sit next to it as ``<client_key>.pub`` (as ssh-keygen writes it);
        the private key is used for the readiness probe. ``listen``: more loopback addresses
        (``127.0.0.2``...) the server also listens on, on the same port (a host per address,
        for many distinct hosts from one server). ``extra_config``: more sshd_config lines,
        appended (e.g. ``AllowUsers``, ``LogLevel VERBOSE``, a ``Match`` block last).
        """
        self.client_key = Path(client_key)
        self.env = self._server_env(env, path, shell_rc)
        self.user = current_user()
        self.directory = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.config_path = self.directory / "sshd_config"
        self.log_path = self.directory / "sshd.log"
        self.host_key = self.directory / "ssh_host_ed25519_key"
        self.host_public_key = generate_keypair(self.host_key, f"{name}-host-key")
        self.authorized_keys = self.directory / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._probe: subprocess.Popen[bytes] | None = None
        self._probe_error = ""
        self._ready = False
        self._starts = 0
        self._log_offset = 0
        self._subreaper = sys.platform == "linux"
        self.listen = tuple(listen)
        self.extra_config = tuple(extra_config)

    @staticmethod
    def _server_env(
        env: Mapping[str, str] | None, path: StrPath | Sequence[StrPath] | None, shell_rc: bool
    ) -> dict[str, str]:
        result = dict(env or {})
        for name in result:
            if not _ENV_NAME.match(name):
                raise ValueError(f"invalid environment variable name: {name!r}")
        if path is not None:
            dirs = [path] if isinstance(path, (str, os.PathLike)) else list(path)
            tail = result.get("PATH") or (_ROOT_PATH if os.geteuid() == 0 else _USER_PATH)
            result["PATH"] = os.pathsep.join([*map(os.fspath, dirs), tail])
        if not shell_rc:
            result.setdefault("SHLVL", "1")
        return result

    # -- configuration ------------------------------------------------------------------

    def _config_text(self) -> str:
        lines = [
            f"ListenAddress 127.0.0.1:{self.port}",
            *(f"ListenAddress {address}:{self.port}" for address in self.listen),
            "AddressFamily inet",
            f"HostKey {_quote_config_word(str(self.host_key))}",
            f"PidFile {_quote_config_word(str(self.directory / 'sshd.pid'))}",
            f"AuthorizedKeysFile {_quote_config_word(str(self.authorized_keys))}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            # PAM needs root and a working /etc/pam.d/sshd (pam_loginuid, pam_env, motd, ...) and
            # slows every login; it is needed only to log in to a locked account as root
            # (without PAM, sshd refuses those itself).
            f"UsePAM {'yes' if _account_locked(self.user) else 'no'}",
            # The temp dir and files are ours; sshd's ownership/mode checks only get in the way
            # (e.g. a group-writable /tmp parent when run as a normal user).
            "StrictModes no",
            "LogLevel ERROR",
            # Tests open many connections and sessions at once (10 is the default startups cap).
            "MaxStartups 100:30:200",
            "MaxSessions 100",
            # The default post-quantum kex (sntrup761x25519) costs ~70 ms of CPU per connection on
            # each side; tests open many connections and are not testing key exchange.
            "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "PermitUserEnvironment no",
            # scp uses the SFTP protocol by default since OpenSSH 9.0.
            "Subsystem sftp internal-sftp",
        ]
        if sshd_version() >= (9, 8):
            # 9.8+ penalises sources with failed/aborted logins by refusing them for a while;
            # tests deliberately fail logins (e.g. unknown host keys) from 127.0.0.1 all the time.
            lines.append("PerSourcePenalties no")
        if self.env:
            # Only the first SetEnv line counts: everything goes on one line.
            words = [_quote_config_word(f"{name}={value}") for name, value in self.env.items()]
            lines.append("SetEnv " + " ".join(words))
        lines.extend(self.extra_config)  # last: a Match block there holds to the end of the file
        return "\n".join(lines) + "\n"

    def _write_known_hosts(self) -> Path:
        """A known_hosts with just this server, for the readiness probe."""
        known_hosts = self.directory / "known_hosts"
        known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.host_public_key}\n")
        return known_hosts

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The sshd listener's pid (from its PidFile) once it runs, else None."""
        if self.process is None:
            return None
        if self._subreaper:
            try:
                return int((self.directory / "sshd.pid").read_text())
            except (OSError, ValueError):
                return None
        return self.process.pid

    @property
    def ready(self) -> bool:
        return self._ready

    def log(self) -> str:
        """What sshd wrote to stderr so far (its log: errors only)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def spawn(self) -> None:
        """Start sshd on a fresh free port without waiting; see :meth:`poll_ready`."""
        if self.process is not None:
            raise RuntimeError("sshd already started")
        self._starts += 1
        self._ready = False
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.port = _free_port()
        self.config_path.write_text(self._config_text())
        self._write_known_hosts()
        argv = [str(SSHD), "-D", "-e", "-f", str(self.config_path)]
        if self._subreaper:
            # A file rather than ``-c SOURCE``: keeps ``ps`` output readable.
            reaper = self.directory / "subreaper.py"
            reaper.write_text(_SUBREAPER)
            argv = [sys.executable, "-I", "-S", str(reaper), *argv]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                # Own process group: stop() can signal everything that did not setsid().
                start_new_session=True,
            )

    def _retry_after_early_exit(self) -> bool:
        """sshd exited during startup: fix what is fixable and respawn; False if not fixable."""
        log = self.log()[self._log_offset :]
        self.process = None
        if self._starts >= 5:
            return False
        missing = re.search(r"Missing privilege separation directory: (\S+)", log)
        if missing:
            # Debian's openssh-server leaves /run/sshd to systemd (RuntimeDirectory=sshd); in a
            # container without systemd it does not exist. sshd requires it root-owned and not
            # group/world-writable (it chroots there), exactly what the package would create.
            os.makedirs(missing[1], mode=0o755, exist_ok=True)
            self.spawn()
            return True
        if "Address already in use" in log or "Bind to port" in log:
            self.spawn()  # another process took the free port between our check and sshd
            return True
        return False

    def _probe_command(self) -> list[str]:
        return [
            "ssh", "-F", "/dev/null", "-i", str(self.client_key), "-p", str(self.port),
            "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.directory / 'known_hosts'}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
            "-o", "LogLevel=ERROR", f"{self.user}@127.0.0.1", "true",
        ]  # fmt: skip

    def poll_ready(self) -> bool:
        """One non-blocking readiness step; True once ``ssh ... true`` succeeded.

        Steps: sshd still running (else respawn if the cause is fixable, else raise), the port
        accepts a TCP connection, then an ``ssh ... true`` probe (started here, checked on the
        next calls) exits 0 -- which proves host key, authorized key, config and shell all work.
        """
        if self._ready:
            return True
        if self.process is None:
            raise RuntimeError("sshd not started")
        if self.process.poll() is not None:
            if self._retry_after_early_exit():
                return False
            raise SshdStartError(self, "sshd exited during startup")
        if self._probe is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                return False
            self._probe = subprocess.Popen(
                self._probe_command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            return False
        if self._probe.poll() is None:
            return False
        _, stderr = self._probe.communicate()
        returncode, self._probe = self._probe.returncode, None
        if returncode == 0:
            self._ready = True
            return True
        self._probe_error = stderr.decode(errors="replace").strip()
        return False

    def start(self, timeout: float = READY_TIMEOUT) -> Self:
        """Start sshd and wait until it serves logins; raise :class:`SshdStartError` if not."""
        start_servers([self], timeout)
        return self

    def stop(self) -> None:
        """Kill sshd and every process it started; remove the directory. Idempotent.

        sshd's per-connection children call setsid(), so neither they nor the remote commands
        under them die with the listener or its process group (sessions are meant to survive
        an sshd restart). The subreaper kills and reaps its whole tree on SIGTERM; without
        one (or if it hangs) we terminate the tree we can see from here.
        """
        try:
            self._kill_probe()
            if self.process is not None:
                if self._subreaper:
                    self.process.terminate()
                    try:
                        self.process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        self._kill_tree(self.process)
                else:
                    self._kill_tree(self.process)
                self.process = None
        finally:
            self._ready = False
            shutil.rmtree(self.directory, ignore_errors=True)

    def request_stop(self) -> None:
        """Tell the subreaper to stop without waiting (for :func:`stop_servers`)."""
        if self._subreaper and self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def _kill_probe(self) -> None:
        if self._probe is not None:
            if self._probe.poll() is None:
                self._probe.kill()
            self._probe.communicate()
            self._probe = None

    @staticmethod
    def _kill_tree(process: subprocess.Popen[bytes]) -> None:
        # Sessions first, while the listener still lives to reap them (an orphan would become
        # a zombie of init, which need not reap promptly), then the listener and its group.
        tree = descendants(process.pid, process_table())
        _signal_all(tree, signal.SIGTERM)
        if not _wait_gone(tree, timeout=2):
            _signal_all(tree, signal.SIGKILL)
            _wait_gone(tree, timeout=1)
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> Self:
        if self.process is None:
            try:
                self.start()
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<SshServer 127.0.0.1:{self.port} pid={self.pid} dir={self.directory}>"


class SshdStartError(RuntimeError):
    """sshd did not come up; the message carries its log and the last probe's stderr."""

    def __init__(self, server: SshServer, what: str) -> None:
        code = server.process.returncode if server.process is not None else None
        super().__init__(
            f"{what} (127.0.0.1:{server.port}, exit code {code}, config {server.config_path})\n"
            f"--- sshd stderr ---\n{server.log().strip() or '(empty)'}\n"
            f"--- last `ssh ... true` stderr ---\n{server._probe_error or '(none)'}"
        )


def start_servers(servers: Sequence[SshServer], timeout: float = READY_TIMEOUT) -> None:
    """Start several servers concurrently: spawn all, then poll all until every one is ready.

    Concurrency is what makes ten servers as quick as one: the cost is process startup and
    one SSH handshake each, which overlap. On failure every server given is stopped.
    """
    try:
        for server in servers:
            if server.process is None:
                server.spawn()
        deadline = time.monotonic() + timeout
        while True:
            pending = [server for server in servers if not server.poll_ready()]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise SshdStartError(pending[0], f"sshd not ready within {timeout:g} s")
            time.sleep(POLL_INTERVAL)
    except BaseException:
        for server in servers:
            server.stop()
        raise


def stop_servers(servers: Sequence[SshServer]) -> None:
    """Stop several servers concurrently: signal all first, then wait for each in turn."""
    for server in servers:
        server.request_stop()
    errors: list[BaseException] = []
    for server in servers:
        try:
            server.stop()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


class SshClientSetup:
    """The client side: a key pair, a ``known_hosts`` and an ``ssh_config`` with host aliases.

    Every alias block pins the server's address, port, user and key and disables everything
    interactive (``BatchMode``, ``StrictHostKeyChecking yes`` against our own known_hosts),
    so ``ssh -F <config> ALIAS CMD`` never prompts, and neither ``~/.ssh/config`` nor the
    user's known_hosts play any part (``-F`` also skips ``/etc/ssh/ssh_config``, and with
    it any ``SendEnv``). The files are rewritten after every change, so they can be read at
    any time.
    """

    def __init__(self) -> None:
        self.user = current_user()
        self.directory = Path(tempfile.mkdtemp(prefix="sshclient-"))
        self.identity = self.directory / "id_ed25519"
        self.public_key = generate_keypair(self.identity, "cmdop-tui-tests")
        self.known_hosts = self.directory / "known_hosts"
        self.config = self.directory / "ssh_config"
        self._blocks: dict[str, list[str]] = {}
        self._known: list[str] = []
        self._reserved: list[socket.socket] = []
        self._write()

    def add_server(self, alias: str, server: SshServer, extra: Sequence[str] = ()) -> None:
        """``Host alias`` -> ``server``; its host key is known as ``[127.0.0.1]:PORT`` and
        under the alias (for tools that look keys up by host alias). ``extra``: more lines for
        the alias's block (``ProxyJump jumphost``, ``BindAddress 127.0.0.9``...)."""
        self._known.append(f"[127.0.0.1]:{server.port},{alias},[{alias}]:{server.port} {server.host_public_key}")
        self._add_block(alias, server.port, extra)

    def add_offline_alias(self, alias: str = OFFLINE_ALIAS) -> int:
        """``Host alias`` -> a 127.0.0.1 port where nothing listens; returns the port.

        The port stays reserved by a bound, never-listening socket (connections to it are
        refused at once) until :meth:`close`, so no other process can start listening there.
        """
        sock = reserve_port()
        self._reserved.append(sock)
        port: int = sock.getsockname()[1]
        self._add_block(alias, port)
        return port

    def add_unknown_host_key_alias(self, alias: str, server: SshServer) -> None:
        """``Host alias`` -> a live ``server`` whose host key is NOT in known_hosts.

        ``HostKeyAlias`` makes ssh look the key up under the alias name only, which is absent,
        so with ``StrictHostKeyChecking yes`` ssh fails with "Host key verification failed".
        """
        self._add_block(alias, server.port, [f"HostKeyAlias {alias}-unknown-key"])

    def _add_block(self, alias: str, port: int, extra: Sequence[str] = ()) -> None:
        if alias in self._blocks:
            raise ValueError(f"alias already defined: {alias}")
        self._blocks[alias] = [
            f"Host {alias}",
            "    HostName 127.0.0.1",
            f"    Port {port}",
            f"    User {self.user}",
            f'    IdentityFile "{self.identity}"',
            "    IdentitiesOnly yes",
            f'    UserKnownHostsFile "{self.known_hosts}"',
            "    StrictHostKeyChecking yes",
            "    BatchMode yes",
            "    ConnectTimeout 5",
            "    LogLevel ERROR",
            *(f"    {line}" for line in extra),
        ]
        self._write()

    def _write(self) -> None:
        self.known_hosts.write_text("".join(f"{line}\n" for line in self._known))
        self.config.write_text("\n".join("\n".join(block) + "\n" for block in self._blocks.values()))

    def ssh_command(self, alias: str, *remote: str) -> list[str]:
        """``["ssh", "-F", config, alias, *remote]`` (remote words are joined by the remote shell)."""
        return ["ssh", "-F", str(self.config), alias, *remote]

    def close(self) -> None:
        """Release reserved ports and remove the directory."""
        for sock in self._reserved:
            sock.close()
        self._reserved.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


def alias_for(index: int) -> str:
    """The alias of the ``index``-th server (0-based): alpha, bravo, ..., then host27, ..."""
    return ALIASES[index] if index < len(ALIASES) else f"host{index + 1}"


class SshLab:
    """``count`` real servers with aliases alpha, bravo, ... plus an offline alias.

    Attributes: ``config`` (the ssh_config Path), ``aliases``, ``servers`` (by position),
    ``offline_alias``, ``client`` (the :class:`SshClientSetup`). All servers share the same
    ``env`` / ``path`` / ``shell_rc`` (see :class:`SshServer`).
    """

    def __init__(
        self,
        count: int = 1,
        *,
        env: Mapping[str, str] | None = None,
        path: StrPath | Sequence[StrPath] | None = None,
        shell_rc: bool = False,
        timeout: float = READY_TIMEOUT,
        host_env: Callable[[str], Mapping[str, str]] | None = None,
    ) -> None:
        """Start the servers (concurrently) and write the client side; clean up on failure.
        ``host_env``: more variables for one host, by its alias (say a runtime dir of its own, as
        each machine of a real fleet has)."""
        if count < 0:
            raise ValueError("count must be >= 0")
        self.client = SshClientSetup()
        self.servers: list[SshServer] = []
        try:
            self.servers = [
                SshServer(
                    self.client.identity,
                    env={**(env or {}), **(host_env(alias_for(i)) if host_env else {})},
                    path=path,
                    shell_rc=shell_rc,
                    name=f"sshd-{alias_for(i)}",
                )
                for i in range(count)
            ]
            start_servers(self.servers, timeout)
            self.aliases = [alias_for(i) for i in range(count)]
            for alias, server in zip(self.aliases, self.servers, strict=True):
                self.client.add_server(alias, server)
            self.offline_alias = OFFLINE_ALIAS
            self.offline_port = self.client.add_offline_alias(self.offline_alias)
        except BaseException:
            self.close()
            raise

    @property
    def config(self) -> Path:
        return self.client.config

    def server(self, alias: str) -> SshServer:
        """The server behind ``alias``."""
        return self.servers[self.aliases.index(alias)]

    def ssh_command(self, alias: str, *remote: str) -> list[str]:
        """``["ssh", "-F", config, alias, *remote]``."""
        return self.client.ssh_command(alias, *remote)

    def run(
        self, alias: str, *remote: str, timeout: float = 30, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run ``ssh alias remote...`` and capture its text output (stdin is /dev/null)."""
        return subprocess.run(
            self.ssh_command(alias, *remote),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def close(self) -> None:
        """Stop every server and remove the client files. Idempotent."""
        try:
            stop_servers(self.servers)
        finally:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


if __name__ == "__main__":  # manual check: python tests/sshd.py [count]
    began = time.monotonic()
    with SshLab(int(sys.argv[1]) if len(sys.argv) > 1 else 1) as lab:
        print(f"{len(lab.servers)} server(s) ready in {time.monotonic() - began:.3f} s; config {lab.config}")
        for alias in lab.aliases:
            print(alias, lab.run(alias, "echo $SSH_CONNECTION").stdout.strip())
