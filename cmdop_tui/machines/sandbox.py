"""The sandbox under the floor: what a command may touch is held by the operating system.

The floor reads the text of a command, so it is a first line only. Under it, on Linux, every
command runs inside bubblewrap (Debian's `bubblewrap`):

* the filesystem is read-only except the working directory, /tmp and the configured writable
  roots (`[sandbox] writable`); in `strict` mode /tmp is private and only the working directory
  is writable;
* the user's secrets are hidden: ~/.ssh, ~/.aws, ~/.gnupg and their like, `.env` files of the
  working directory, and the app's own config and data directories (an empty directory or an
  empty file stands in for each);
* the app's own /proc entries are hidden, so its environment (and API key) cannot be read from
  there; in `strict` mode the command gets a PID namespace of its own and sees no other process;
* the network is on unless configured off (`strict` turns it off).

Keeping every process of a tool call from outliving the app is the supervisor's work
(support/containment.py), sandbox or not: background jobs a command leaves (`server &`) live on
while the app does, and no longer. `off` runs commands bare. Where
bubblewrap is missing or cannot run (no user namespaces), commands run bare and the status line
says "no sandbox": honestly, never silently.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from cmdop_tui.machines.sandbox_view import SandboxView

__all__ = [
    "SECRET_PATHS",
    "Sandbox",
    "SandboxMode",
    "SandboxPolicy",
    "bubblewrap",
    "denied_path",
    "env_files",
]

SandboxMode = Literal["off", "workspace", "strict"]
MODES: tuple[SandboxMode, ...] = ("off", "workspace", "strict")

# Under the home directory: credentials a command has no business reading.
SECRET_PATHS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
)
ENV_FILE = re.compile(r"^\.env(\..+)?$")
HARMLESS_ENV_FILES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
ENV_SEARCH_DEPTH = 3
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "dist"})


@dataclass(frozen=True)
class SandboxPolicy:
    """What commands may do: `[sandbox]` in the settings, `--sandbox`, per profile and machine."""

    mode: SandboxMode = "workspace"
    writable: tuple[str, ...] = ()  # more writable roots (`~` allowed)
    network: bool = True
    hidden: tuple[str, ...] = ()  # more paths to hide (the app adds its config and data dirs)


LANDLOCK_SCRIPT = Path(__file__).with_name("landlock.py")


@functools.cache
def landlock_available() -> bool:
    """Whether this kernel has Landlock (checked once)."""
    if not sys.platform.startswith("linux"):
        return False
    from cmdop_tui.machines.landlock import abi_version

    try:
        return abi_version() >= 1
    except (OSError, AttributeError):
        return False


@functools.cache
def bubblewrap() -> str | None:
    """The bwrap program, if it is installed and can make namespaces here (checked once)."""
    program = shutil.which("bwrap")
    if program is None:
        return None
    probe = [program, "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return program if done.returncode == 0 else None


@dataclass(frozen=True)
class Sandbox:
    """A policy and the means to hold it on this machine (`program` None: no sandbox)."""

    policy: SandboxPolicy = field(default_factory=SandboxPolicy)
    program: str | None = None  # bubblewrap
    home: Path = field(default_factory=Path.home)
    landlock: bool = False  # where bubblewrap cannot run: Landlock holds the writes

    @classmethod
    def detect(cls, policy: SandboxPolicy) -> Sandbox:
        program = bubblewrap()
        return cls(policy, program, landlock=program is None and landlock_available())

    @property
    def active(self) -> bool:
        return self.program is not None or self.landlock

    @property
    def confines(self) -> bool:
        """Whether commands are held to the policy's filesystem rules (not `off`, not absent)."""
        return self.active and self.policy.mode != "off"

    @property
    def label(self) -> str:
        """For the status line: what holds the commands."""
        if not self.active:
            return "no sandbox"
        if self.policy.mode == "off":
            return "sandbox off"
        return f"sandbox: {self.policy.mode}" + (" (landlock, writes only)" if self.program is None else "")

    def wrap(self, argv: list[str], workspace: Path, *, chdir: Path | None = None) -> list[str]:
        """`argv` run inside the sandbox of a session working in `workspace`, from `chdir`
        (as it is, where there is no sandbox or it is off)."""
        if not self.confines:
            return argv
        if self.program is None:
            return self._landlocked(argv, workspace)
        return [self.program, *self._arguments(workspace), "--chdir", str(chdir or workspace), "--", *argv]

    def _landlocked(self, argv: list[str], workspace: Path) -> list[str]:
        roots = [option for root in self.writable_roots(workspace) for option in ("--write", str(root))]
        return [sys.executable, "-S", "-I", str(LANDLOCK_SCRIPT), *roots, "--", *argv]

    @property
    def denial_errors(self) -> tuple[str, ...]:
        """What a command says when this sandbox refused it a write."""
        return (READ_ONLY,) if self.program is not None else ("Permission denied",)

    def unconfined(self) -> Sandbox:
        """No sandbox (a command the user let out); the supervisor still contains it."""
        return replace(self, policy=replace(self.policy, mode="off"))

    def writable_roots(self, cwd: Path) -> list[Path]:
        """Where commands may write (everything under `off`)."""
        if not self.confines:
            return [Path("/")]
        roots = [cwd] if self.policy.mode == "strict" else [cwd, Path("/tmp")]
        roots += [Path(os.path.expanduser(raw)) for raw in self.policy.writable]
        return [root for root in roots if root.exists()]

    def private_roots(self) -> list[Path]:
        """Directories the sandbox replaces with empty ones of its own (strict mode's /tmp)."""
        strict = self.program is not None and self.policy.mode == "strict"
        return [Path("/tmp")] if strict else []

    def hidden_paths(self, cwd: Path) -> list[Path]:
        """What commands cannot see (nothing under `off`)."""
        if not self.confines:
            return []
        paths = [self.home / relative for relative in SECRET_PATHS]
        paths += [Path(os.path.expanduser(raw)) for raw in self.policy.hidden]
        paths += env_files(cwd)
        return [path for path in paths if path.exists() or path.is_symlink()]

    def view(self, cwd: Path) -> SandboxView:
        """The rules for a session working in `cwd`, for the file tools."""
        if not self.confines:
            return SandboxView()
        return SandboxView(True, writable=_real(self.writable_roots(cwd)), hidden=_real(self.hidden_paths(cwd)))

    def _arguments(self, cwd: Path) -> list[str]:
        arguments = [
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--tmpfs",
            "/dev/shm",
        ]
        if not self.policy.network or self.policy.mode == "strict":
            arguments.append("--unshare-net")
        if self.policy.mode == "strict":
            arguments += ["--unshare-pid", "--proc", "/proc", "--tmpfs", "/tmp"]
        else:  # the machine's processes stay in view (ps, kill); the app's own do not
            for pid in {os.getpid(), os.getppid()}:
                arguments += ["--tmpfs", f"/proc/{pid}"]
        for root in self.writable_roots(cwd):
            arguments += ["--bind", str(root), str(root)]
        for path in self.hidden_paths(cwd):
            arguments += _hiding(path)
        return arguments


def _real(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(Path(os.path.realpath(path)) for path in paths)


def _hiding(path: Path) -> list[str]:
    """What stands in for a hidden path: an empty directory, or an empty file."""
    target = str(path)
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", target]
    return ["--ro-bind", "/dev/null", target]


def env_files(root: Path, depth: int = ENV_SEARCH_DEPTH) -> list[Path]:
    """`.env` files (and `.env.local`, `.env.production`...) in `root`, a few levels down."""
    return sorted(_env_files(root, depth))


def _env_files(directory: Path, depth: int) -> Iterator[Path]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if ENV_FILE.match(entry.name) and entry.name not in HARMLESS_ENV_FILES:
            yield Path(entry.path)
        elif depth > 0 and entry.name not in SKIPPED_DIRS and entry.is_dir(follow_symlinks=False):
            yield from _env_files(Path(entry.path), depth - 1)


# --- when the sandbox said no -------------------------------------------------------------

READ_ONLY = "Read-only file system"  # what the sandbox says where a command may not write
_QUOTED_PATH = re.compile(r"['\"`\u2018\u2019](/[^'\"`\u2018\u2019]*)['\"`\u2018\u2019]")


def _object_of(line: str, error: str) -> str | None:
    """The path an error line is about: the part just before `: <error>`, quoted or bare
    (`touch: cannot touch '/etc/x': Read-only file system`, `tee: /etc/x: Read-only file system`)."""
    before = line.split(f": {error}", 1)[0].rsplit(": ", 1)[-1].strip()
    quoted = _QUOTED_PATH.search(before)
    path = quoted.group(1) if quoted else before
    return path if path.startswith("/") else None


def denied_path(
    output: str, writable: Iterable[Path], private: Iterable[Path] = (), errors: tuple[str, ...] = (READ_ONLY,)
) -> str | None:
    """The path a failed command could not write because the sandbox keeps it read-only (read
    from its errors), or one it could not find in a directory the sandbox keeps private (strict
    mode's /tmp) though it exists outside; None when it failed for another reason. Permission
    errors are not the sandbox's: running outside it would not change them."""
    roots = [str(root).rstrip("/") + "/" for root in writable]
    hidden = [str(root).rstrip("/") + "/" for root in private]
    unnamed = False  # a read-only error whose path cannot be read
    for line in output.splitlines():
        error = next((e for e in errors if f": {e}" in line), None)
        if error is not None:
            path = _object_of(line, error)
            unnamed = unnamed or path is None
            if path is not None and not _under(path, roots):
                return path
        elif hidden and ": No such file or directory" in line:
            path = _object_of(line, "No such file or directory")
            if path is not None and _under(path, hidden) and Path(path).parent.exists():
                return path
    return "a path outside the writable places" if unnamed else None


def _under(path: str, roots: list[str]) -> bool:
    return any((path.rstrip("/") + "/").startswith(root) for root in roots)
