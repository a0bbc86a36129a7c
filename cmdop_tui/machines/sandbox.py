"""The sandbox under the floor: what a command may touch is held by the operating system.

The boundary, in one sentence: a sandboxed command can write only its writable roots (the
working directory and the session's private /tmp), sees none of the user's secrets, processes,
sockets or capabilities, and nothing it writes runs later outside the sandbox without a person's
word. The floor reads the text of a command, so it is a first line only; this holds whatever the
text says.

On Linux, every command runs inside bubblewrap (machines/bubblewrap.py says what each option
does): its own user, PID and IPC namespaces with no capability, a fresh /proc, the
machine read-only, no /run, the session's private /tmp and /var/tmp (machines/sandbox_state.py),
the writable roots read-write with protected paths inside them read-only (`.git`, `.cmdop`,
`CMDOP.md`, what an MCP server runs from...: machines/sandbox_view.py), secrets hidden (every
credential store of secret_kinds, `.env` files anywhere the scan reaches: machines/secret_index.py,
the app's own config, data and runtime folders), the system-call filter (machines/seccomp.py: no
Unix socket at all), and an environment without secrets or doors (agents, buses, terminals).
A working directory that is the home, `/` or an ancestor of the home (or inside a hidden place)
is never made writable whole: the session works in a scratch workspace instead, and says so.

`strict` also turns the network off; `off` runs commands bare. Where bubblewrap cannot run,
Landlock holds the writes ("sandbox workspace (landlock, writes only)"); where neither can, the
status line says "no sandbox". Keeping every process of a tool call from outliving the app is
the supervisor's work (support/containment.py), sandbox or not.
"""

from __future__ import annotations

import functools
import os
import pwd
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from cmdop_tui.machines import bubblewrap as bwrap
from cmdop_tui.machines.beneath import O_PATH, real_path
from cmdop_tui.machines.denials import READ_ONLY, denied_path
from cmdop_tui.machines.sandbox_policy import MODES, SandboxMode, SandboxPolicy
from cmdop_tui.machines.sandbox_state import SandboxState
from cmdop_tui.machines.sandbox_view import PROTECTED_NAMES, SandboxView, within
from cmdop_tui.machines.secret_index import Found, SecretIndex
from cmdop_tui.support.secret_kinds import HOME_STORES, SOCKET_ENV, is_secret_env, secret_locations
from cmdop_tui.support.secrets import CREDENTIAL_ENV
from cmdop_tui.support.warm import agent_dir, runtime_dir

__all__ = [
    "MODES",
    "SECRET_PATHS",
    "Launch",
    "Sandbox",
    "SandboxMode",
    "SandboxPolicy",
    "bubblewrap",
    "command_environment",
    "denied_path",
]

SECRET_PATHS = HOME_STORES  # credential stores under a home (support/secret_kinds.py has them all)
SCAN_WAIT_S = 60.0  # a command waits this long at most for the first scan of secrets; then none runs
LANDLOCK_SCRIPT = Path(__file__).with_name("landlock.py")


@dataclass(frozen=True)
class Launch:
    """A command as the spawner starts it: its argv, the files it gets open as fds 3, 4..., and
    its environment."""

    argv: list[str]
    opens: tuple[Path, ...] = ()
    env: dict[str, str] | None = None


def bubblewrap() -> str | None:
    """The bwrap program, if it can make every namespace the sandbox uses here (checked once)."""
    return bwrap.program()


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


def command_environment(environ: Mapping[str, str], *, confined: bool) -> dict[str, str]:
    """A command's environment: never the app's credentials; confined, no secret the user's
    environment holds (`*_TOKEN`, `*_PASSWORD`, a URL with a password...) and no variable that
    points at a door out (the ssh agent, D-Bus, tmux, the display...)."""
    env = {name: value for name, value in environ.items() if name not in CREDENTIAL_ENV}
    if confined:
        env = {k: v for k, v in env.items() if k not in SOCKET_ENV and not is_secret_env(k, v)}
        env["TMPDIR"] = "/tmp"
    return env


def _homes(home: Path) -> tuple[Path, ...]:
    """The user's home as the environment says and as the password database says."""
    homes = [home]
    try:
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        pass
    return tuple(dict.fromkeys(Path(os.path.realpath(h)) for h in homes))


@dataclass(frozen=True)
class Sandbox:
    """A policy and the means to hold it on this machine (`program` None: no sandbox)."""

    policy: SandboxPolicy = field(default_factory=SandboxPolicy)
    program: str | None = None  # bubblewrap
    home: Path = field(default_factory=Path.home)
    landlock: bool = False  # where bubblewrap cannot run: Landlock holds the writes
    state: SandboxState = field(default_factory=SandboxState, compare=False, repr=False)

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
        return f"sandbox {self.policy.mode}" + (" (landlock, writes only)" if self.program is None else "")

    def unconfined(self) -> Sandbox:
        """No sandbox (a command the user let out); the supervisor still contains it."""
        return replace(self, policy=replace(self.policy, mode="off"))

    @property
    def denial_errors(self) -> tuple[str, ...]:
        """What a command says when this sandbox refused it a write."""
        return (READ_ONLY,) if self.program is not None else ("Permission denied",)

    def describe(self, cwd: Path) -> str:
        """What holds commands here, for the model: where they may write, what they cannot do."""
        if not self.confines:
            return "" if self.active else "Commands run without a sandbox."
        if self.program is None:
            roots = ", ".join(map(str, self.writable_roots(cwd)))
            return f"Commands run in a sandbox that lets them write only in {roots} (reads are open)."
        roots = ", ".join(map(str, self.writable_roots(cwd)))
        network = "no network" if self.policy.mode == "strict" or not self.policy.network else "the network"
        moved = (
            "" if self.workspace_for(cwd) == cwd else f" (the working directory {cwd} is read-only: work in {roots})"
        )
        return (
            f"Commands and file tools run in a sandbox: they may write only in {roots}, /tmp and /var/tmp "
            f"(the session's own){moved}; .git, .cmdop, CMDOP.md, AGENTS.md, .mcp.json, .envrc and .vscode "
            f"are read-only; credentials and .env files are hidden; no Unix sockets; {network}. "
            "A command's background processes end with it. A refused write can be run outside the "
            "sandbox only if the user allows it."
        )

    # --- where a session works ---------------------------------------------------------------

    def workspace_for(self, cwd: Path) -> Path:
        """Where a session started in `cwd` writes: `cwd`, unless making it writable would make
        the home (or all of `/`, a hidden place, a protected folder) writable: then a scratch
        workspace."""
        key = ("unsafe", cwd, self.policy.protected)
        if not self.confines or not self.state.cached(key, lambda: self.unsafe_workspace(cwd)):
            return cwd
        base = Path(self.policy.data) if self.policy.data else self.state.private()[0][1].parent
        scratch = base / "scratch"
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        return scratch

    def unsafe_workspace(self, cwd: Path) -> bool:
        """Whether `cwd` may not be a writable root (see `why_unsafe`)."""
        return self.why_unsafe(cwd) is not None

    def why_unsafe(self, cwd: Path) -> str | None:
        """Why `cwd` may not be a writable root, for the user; None: it may. Not a home, `/` or
        an ancestor of a home; not in a place the sandbox hides (a credential store, the app's
        own folders); not in a protected folder (an Ansible inventory folder: whatever a command
        added to it, the next session would read, and run, outside the sandbox)."""
        real = Path(os.path.realpath(cwd))
        if any(within(home, real) for home in _homes(self.home)):
            return "it holds your home"
        if any(within(real, hidden) for hidden in self._fixed_hidden()):
            return "the sandbox hides it"
        folder = next((p for p in self._protected_folders() if within(real, p)), None)
        return None if folder is None else f"it is in {folder}, which commands may not change"

    def _protected_folders(self) -> list[Path]:
        places = (Path(os.path.realpath(os.path.expanduser(raw))) for raw in self.policy.protected)
        return [place for place in places if place.is_dir()]

    def writable_roots(self, cwd: Path) -> list[Path]:
        """Where commands may write besides the private /tmp (everything under `off`); a root
        inside a protected folder is not one."""
        if not self.confines:
            return [Path("/")]
        roots = [self.workspace_for(cwd), *(Path(os.path.expanduser(raw)) for raw in self.policy.writable)]
        real = [Path(os.path.realpath(root)) for root in roots if root.exists()]
        folders = self._protected_folders()
        return [root for root in real if not any(within(root, folder) for folder in folders)]

    # --- what is hidden and what is protected --------------------------------------------------

    def _fixed_hidden(self) -> list[Path]:
        """The places hidden whatever a scan finds: credential stores (by kind, where the
        environment moves them too), the app's own folders, what the settings add."""
        return self.state.cached(("hidden", self.home, self.policy.hidden), self._find_fixed_hidden)

    def _find_fixed_hidden(self) -> list[Path]:
        paths = [path for home in _homes(self.home) for path in secret_locations(home)]
        paths += [Path(os.path.expanduser(raw)) for raw in self.policy.hidden]
        paths += [runtime_dir(os.environ), agent_dir(os.environ)]  # the app's state; the warm agent's socket
        return [Path(os.path.realpath(path)) for path in paths if os.path.lexists(path)]

    def prepare(self, cwd: Path) -> None:
        """Start the scan of secrets for a session in `cwd` (so the first command need not wait)."""
        if self.confines and self.program is not None:
            self._index(cwd).start()

    def _index_roots(self, cwd: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        writable = tuple(self.writable_roots(cwd))
        around = [root.parent for root in writable if root.parent != Path("/")]
        roots = [*writable, *around, *_homes(self.home)]
        kept: list[Path] = []
        for root in roots:  # a root inside another is scanned with it
            if not any(within(root, other) for other in kept):
                kept = [other for other in kept if not within(other, root)] + [root]
        order = {root: i for i, root in enumerate(roots)}
        return tuple(sorted(kept, key=order.__getitem__)), writable

    def _index(self, cwd: Path) -> SecretIndex:
        roots, writable = self._index_roots(cwd)
        return self.state.index(roots, writable, tuple(self._fixed_hidden()))

    def found(self, cwd: Path, timeout_s: float | None = SCAN_WAIT_S) -> Found | None:
        """The latest scan of secrets for `cwd` (waiting for the first); None: not in time."""
        return self._index(cwd).found(timeout_s)

    def fresh(self, cwd: Path, timeout_s: float | None = SCAN_WAIT_S, asked: float | None = None) -> Found | None:
        """What a command about to start in `cwd` must hide: the latest scan, with the writable
        roots checked for what changed since the command `asked` (machines/secret_index.py).
        Blocking."""
        return self._index(cwd).fresh(timeout_s, asked)

    def hidden_paths(self, cwd: Path, found: Found | None = None) -> list[Path]:
        """What commands cannot see (nothing under `off`): existing real paths."""
        if not self.confines:
            return []
        found = found or Found()
        writable = tuple(self.writable_roots(cwd))
        outside, inside = self.state.per_scan(found, ("secrets", writable), lambda: self._split(cwd, found, writable))
        # Where this session's commands cannot write, a secret stays where the scan found it (a
        # person may move it: then it is not there, and the next scan finds it); inside the
        # writable roots, a command may have put a symlink on its way, so each is asked where it
        # is now.
        settled = [path for path in outside if os.path.lexists(path)]
        pointed = self._hideable(cwd, real_paths(inside), real_paths(found.unscanned))
        return list(dict.fromkeys([*real_paths(self._fixed_hidden()), *pointed, *settled]))

    def _split(self, cwd: Path, found: Found, writable: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
        """The scan's secrets outside the writable roots (where they really are, those to hide)
        and inside them. Outside is not out of every command's reach: another session's
        workspace (a project beside this one, in the home) is, and a symlink its commands named
        `.env` to /bin/bash must not hide that from this session's."""
        outside, inside = _split_secrets(found, writable)
        return self._hideable(cwd, outside, []), inside

    def _hideable(self, cwd: Path, secrets: list[Path], unscanned: list[Path]) -> list[Path]:
        """Of the places the scan's secrets and unscanned folders are now (real paths), those
        to hide. A command names what it makes: a symlink it calls `.env` to /bin/bash, /usr or
        the home would hide that from every later command. So a place is hidden only where the
        scan looks (the writable roots, the folders around them, the homes) or in the session's
        private folders (a `.env` linked into its /tmp), and a secret never
        where it would hide what commands work from (`/`, a home, a folder holding a writable
        root or a private or shared place)."""
        roots = self._index_roots(cwd)[0]
        private = self.state.private() if self.program is not None else ()
        used = {Path("/"), *_homes(self.home)}
        for place in (*self.writable_roots(cwd), *self._shared(), *(path for pair in private for path in pair)):
            used.update((place, *place.parents))

        def scanned(path: Path) -> bool:  # or in a private folder, where commands write too
            return any(within(path, root) for root in (*roots, *(real for _, real in private)))

        return [*(p for p in secrets if scanned(p) and p not in used), *(p for p in unscanned if scanned(p))]

    def protected_paths(self, cwd: Path, found: Found | None = None) -> list[Path]:
        """What commands may read but not write inside the writable roots: existing real paths."""
        if not self.confines:
            return []
        roots = self.writable_roots(cwd)
        paths = [root / name for root in roots for name in PROTECTED_NAMES]
        paths += [*(found.repositories if found else ()), *(Path(os.path.expanduser(p)) for p in self.policy.protected)]
        paths += [hooks for root in roots if (hooks := _hooks_path(root)) is not None]
        return [path for path in real_paths(paths) if any(within(path, root) for root in roots)]

    def absent_protected(self, cwd: Path) -> list[Path]:
        """The protected names missing at the top of the writable roots, and the protected places
        of the policy that are missing inside them (the vars folders beside an Ansible
        inventory...): a command must not create them (checked after it ran: see LocalMachine)."""
        if not self.confines or self.program is None:
            return []
        names = [root / name for root in self.writable_roots(cwd) for name in PROTECTED_NAMES]
        return [path for path in names if not os.path.exists(path)] + self._absent_policy_places(cwd)

    def _absent_policy_places(self, cwd: Path) -> list[Path]:
        """The policy's protected places that do not exist (yet) inside the writable roots, as
        their real paths would be: bubblewrap cannot bind what is not there, so they are held by
        the checks after a command and by the file tools' view."""
        roots = self.writable_roots(cwd)
        missing = [
            Path(os.path.expanduser(p)) for p in self.policy.protected if not os.path.lexists(os.path.expanduser(p))
        ]
        real = [Path(os.path.realpath(path)) for path in missing]
        return [path for path in dict.fromkeys(real) if any(within(path, root) for root in roots)]

    def after_command(self, cwd: Path) -> None:
        """A command ran: it (or the user meanwhile) may have made new secrets; scan again soon."""
        if self.program is not None:
            self._index(cwd).refresh()

    def view(self, cwd: Path) -> SandboxView:
        """The rules for a session working in `cwd`, for the file tools."""
        if not self.confines:
            return SandboxView()
        found = self.found(cwd, 0) if self.program is not None else None
        private = self.state.private() if self.program is not None else ()
        return SandboxView(
            True,
            writable=(*self.writable_roots(cwd), *(real for _, real in private)),
            private=private,
            # The host's /tmp is not the session's: only the private folders in it, a workspace or
            # a home there are seen there (and a scratch workspace in the hidden data folder).
            hidden=(*self.hidden_paths(cwd, found), *(seen for seen, _ in private)),
            exempt=(*(real for _, real in private), *self.writable_roots(cwd), *self._shared()),
            protected=(*self.protected_paths(cwd, found), *self._absent_policy_places(cwd)),
            shared=self._shared(),
        )

    def _shared(self) -> tuple[Path, ...]:
        """What stays visible, read-only, where a private folder is seen: a home under /tmp, and
        the Python install this app runs from (a checkout and its venv under /tmp, as in CI)."""
        private = self.private_roots()
        installs = (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))
        places = [*_homes(self.home), *(Path(os.path.realpath(path)) for path in installs)]
        shared = [path for path in dict.fromkeys(places) if any(within(path, seen) for seen in private)]
        return tuple(path for path in shared if not any(other != path and within(path, other) for other in shared))

    # --- the command line ----------------------------------------------------------------------

    def launch(self, argv: list[str], cwd: Path, *, chdir: Path, found: Found | None) -> Launch:
        """`argv` run inside the sandbox of a session working in `cwd`, from `chdir`."""
        env = command_environment(os.environ, confined=self.confines)
        if not self.confines:
            return Launch(argv, env=env)
        if self.program is None:
            roots = [option for root in self.writable_roots(cwd) for option in ("--write", str(root))]
            return Launch([sys.executable, "-S", "-I", str(LANDLOCK_SCRIPT), *roots, "--", *argv], env=env)
        seccomp = self.state.filter_file()
        layout = bwrap.Layout(
            writable=tuple(self.writable_roots(cwd)),
            private=self.state.private(),
            hidden=tuple(self.hidden_paths(cwd, found)),
            protected=tuple(self.protected_paths(cwd, found)),
            network=self.policy.network and self.policy.mode != "strict",
            filtered=seccomp is not None,
            run_kept=_resolver_files(),
            shared=self._shared(),
            homes=_homes(self.home),
        )
        opens = (seccomp,) if seccomp is not None else ()
        return Launch([self.program, *bwrap.arguments(layout, chdir), "--", *argv], opens, env)

    def private_roots(self) -> list[Path]:
        """Where commands see a private folder of the session's (/tmp, /var/tmp)."""
        return [seen for seen, _ in self.state.private()] if self.program is not None else []


def _split_secrets(found: Found, writable: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
    """The secrets of a scan outside the writable roots (their real paths) and inside them."""
    inside = [path for path in found.secrets if any(within(path, root) for root in writable)]
    kept = set(inside)
    return real_paths(path for path in found.secrets if path not in kept), inside


def real_paths(paths: Iterable[Path]) -> list[Path]:
    """Where each of `paths` that exists really is, once each, in order: asked of the kernel
    for each path as it is now (a folder on the way may have become a symlink since a scan).
    The kernel resolves it in one open (`O_PATH`: nothing is read) and names it
    (`/proc/self/fd`): `os.path.realpath` asks for each component in turn, and thousands of
    secrets cost 100 ms a command that way."""
    if not O_PATH or not os.path.isdir("/proc/self/fd"):
        return list(dict.fromkeys(Path(os.path.realpath(p)) for p in paths if os.path.exists(p)))
    found: dict[Path, None] = {}
    for path in paths:
        try:
            fd = os.open(path, O_PATH | os.O_CLOEXEC)
        except OSError:  # gone, or where we cannot look: a command cannot either
            continue
        try:
            found[real_path(fd)] = None
        except OSError:
            continue
        finally:
            os.close(fd)
    return list(found)


def _hooks_path(root: Path) -> Path | None:
    """The folder a repository's `core.hooksPath` names (husky's `.husky`...), read from its
    `.git/config` as git reads it: the last value in a `[core]` section wins."""
    try:
        text = (root / ".git" / "config").read_text(errors="replace")
    except OSError:
        return None
    section, value = "", ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[] ").split()[0].lower() if line.strip("[] ") else ""
        elif section == "core" and "=" in line and line.split("=", 1)[0].strip().lower() == "hookspath":
            value = line.split("=", 1)[1].strip().strip('"')
    return root / os.path.expanduser(value) if value else None


def _resolver_files() -> tuple[Path, ...]:
    """Where /etc/resolv.conf (and its like) point under /run, kept visible so names resolve."""
    kept: list[Path] = []
    for name in ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"):
        real = Path(os.path.realpath(name))
        if within(real, Path("/run")):
            kept.append(real)
    return tuple(kept)
