"""What the tools may ask of a machine, wherever it is: run a command, read, write, edit, list, search.

`LocalMachine` (machines/local.py) does it here; `RemoteMachine` (machines/remote.py) over ssh.
Every answer is a `MachineResult`: text already made inert and cut to size, ready for the model,
and whether it reports a failure. Operations never raise for a failure of the operation itself
(a missing file, a command that cannot start): that is an error result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

# What an operation shows at most, on any machine (the tools promise it in their descriptions).
READ_MAX_LINES = 2_000
READ_MAX_CHARS = 100_000
LIST_MAX_ENTRIES = 1_000
GREP_MAX_MATCHES = 500
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024  # bigger files are skipped (by the local grep)
GLOB_MAX_RESULTS = 1_000
EDIT_MAX_BYTES = 64 * 1024 * 1024  # edit_file holds the file in memory: bigger ones are refused

OutputStream = Literal["stdout", "stderr", "info"]
ProgressSink = Callable[[str, OutputStream], None]


@dataclass(frozen=True)
class SandboxRefusal:
    """What the sandbox itself refused an operation, for the person asked to let it run outside.

    Built by the machine from its own rules, never from what the operation printed: `paths` are
    places the operation met that the sandbox keeps from it (each checked against the sandbox's
    rules), `held` says what the sandbox allows there. The command that would run outside is the
    call's own, shown whole by whoever asks.
    """

    action: str  # "write", "read", "connect"...: what was refused
    paths: tuple[str, ...] = ()  # where (inert text), checked against the sandbox's rules
    held: str = ""  # what the sandbox allows: "only /work and /tmp are writable here"
    machine: str = "local"

    @property
    def needs(self) -> str:
        """One line: "write /etc/nginx/nginx.conf" (on a remote machine: "... on web1")."""
        where = ", ".join(self.paths) or "a path outside the writable places"
        on = "" if self.machine == "local" else f" on {self.machine}"
        return f"{self.action} {where}{on}"


@dataclass(frozen=True)
class MachineResult:
    """The outcome of one operation: inert text for the model, and whether it is an error. A
    command also says, typed, how it ended: its `exit_code` when it ran to its end, or the
    timeout (`timed_out_ms`) past which it was killed, or that its machine was `unreachable`."""

    text: str
    is_error: bool = False
    sandbox_denied: SandboxRefusal | None = None  # what the sandbox refused: may be escalated
    exit_code: int | None = None
    timed_out_ms: int | None = None
    unreachable: bool = False  # the machine could not be reached (offline, ssh could not connect)

    @classmethod
    def error(cls, message: str) -> MachineResult:
        return cls(text=message, is_error=True)

    @classmethod
    def denied(cls, message: str, needs: SandboxRefusal) -> MachineResult:
        """An operation the sandbox refused: the user may allow it outside (see tools/escalation.py)."""
        return cls(text=message, is_error=True, sandbox_denied=needs)


@dataclass(frozen=True)
class FileBytes:
    """A file's bytes as they are now (what a diff of a write compares with): `exists` is False
    when there is no such file; `error` says why it could not be read (too big, hidden, ...)."""

    data: bytes = b""
    exists: bool = True
    error: str | None = None

    @classmethod
    def missing(cls) -> FileBytes:
        return cls(exists=False)

    @classmethod
    def failed(cls, why: str) -> FileBytes:
        return cls(error=why)


class Machine(Protocol):
    """A machine the tools act on. Relative paths start at the machine's working directory."""

    @property
    def name(self) -> str: ...

    async def run_command(
        self,
        command: str,
        *,
        cwd: str | None,
        timeout_ms: int,
        progress: ProgressSink,
        output_limit: int,
        sandboxed: bool = True,
        output_fd: int | None = None,
    ) -> MachineResult:
        """Run `command` with bash (in `cwd`, None: the default directory), its output streamed
        to `progress` and at most about `output_limit` bytes of it kept; killed after
        `timeout_ms` or when the caller is cancelled. `sandboxed=False` runs it outside the
        machine's sandbox (only after the user allowed it). `output_fd` (a file open for reading
        and appending): the command's output goes there raw, not through the app, and only its
        tail is reported (a background job's way: machines/process.py)."""
        ...

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        """Lines `start`..`end` (1-based, inclusive; None: to the end) numbered like `cat -n`."""
        ...

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        """Replace the file's content atomically (UTF-8), keeping its mode, creating parents."""
        ...

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        """Replace `old_string` (which must occur once, unless `replace_all`) with `new_string`,
        keeping the file's encoding, line endings, mode and owner; atomically. A failed edit
        (no match, several, a binary file) leaves the file as it was (support/diffs.py)."""
        ...

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        """The file's bytes, for a diff of what a write would change (symlinks followed)."""
        ...

    async def list_dir(self, path: str) -> MachineResult:
        """The directory's entries, one a line."""
        ...

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        """`path:line:text` for lines matching `pattern` in a file or a tree (files named like `glob`)."""
        ...

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        """Paths under `cwd` matching `pattern` (`**` spans directories), relative to `cwd`."""
        ...
