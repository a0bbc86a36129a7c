"""The sandbox on another machine: bubblewrap there, the same boundary as on this machine.

The health probe (`REMOTE_PROBE`) says whether the machine has a bubblewrap that can make every
namespace, and what the sandbox must know of it (`RemoteFacts`: its home, data dir, `uname -m`,
where its environment moves credential stores, which of its variables hold secrets). No command
and no file tool runs there before that is known (machines/fleet.py waits for the probe).

Each operation there is one shell script (remote_sandbox_sh.py) that runs it inside
bubblewrap: its own user, PID, IPC and cgroup namespaces with no capability (as root too), a
fresh /proc, the machine read-only, no /run, the session's private /tmp and /var/tmp (folders
of the remote user's, kept for the session's commands, removed at its end), the machine's
workspace (`~/.local/share/cmdop-tui-workspace`) and `[machines.NAME] writable` read-write with
`.git`, `.cmdop`, `CMDOP.md`... read-only inside them, every credential store of
support/secret_kinds.py, `.env` files and SSH keys anywhere under the home and the writable roots,
and the app's own folders hidden, the system-call filter of machines/seccomp.py for its
architecture, and no secret or door in its environment. The remote home is never writable whole.
"""

from __future__ import annotations

import base64
import binascii
import functools
import posixpath
import re
import secrets
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from cmdop_tui.machines import remote_sandbox_sh as sh
from cmdop_tui.machines.agent import DATA_DIR_SH, WORKSPACE_NAME
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox_view import PROTECTED_ANYWHERE, PROTECTED_NAMES
from cmdop_tui.machines.seccomp import program as filter_program
from cmdop_tui.support.secret_kinds import ENV_RELOCATIONS, SOCKET_ENV, is_secret_env, secret_locations, secret_name
from cmdop_tui.support.secrets import CREDENTIAL_ENV
from cmdop_tui.support.text import inert_line

__all__ = [
    "FACT_PREFIXES",
    "REMOTE_PROBE",
    "RemoteFacts",
    "RemoteSandbox",
    "Tags",
    "sandbox_label",
]

# What the probe tries: every option a command's bubblewrap gets that could fail on that kernel.
_BWRAP_TEST = (
    "bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-cgroup-try --cap-drop ALL --die-with-parent "
    "--new-session --ro-bind / / --dev /dev --proc /proc --tmpfs /run -- true"
)
REMOTE_PROBE = (
    f"if command -v bwrap >/dev/null 2>&1 && {_BWRAP_TEST} >/dev/null 2>&1; "
    "then echo sandbox:bubblewrap; else echo sandbox:none; fi; "
    'echo "arch:$(uname -m)"; echo "home:$HOME"; echo "realhome:$(cd -P -- "$HOME" 2>/dev/null && pwd)"; '
    f'{DATA_DIR_SH}; echo "data:$d"; echo "config:${{XDG_CONFIG_HOME:-$HOME/.config}}/cmdop-tui"; '
    'echo "resolv:$(readlink -f /etc/resolv.conf 2>/dev/null)"; '
    "echo \"environ:$(env -0 2>/dev/null | base64 2>/dev/null | tr -d '\\n')\""
)
FACT_PREFIXES = ("sandbox:", "arch:", "home:", "realhome:", "data:", "config:", "resolv:", "environ:")
_XDG = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
SandboxKind = Literal["bubblewrap", "bubblewrap-unfiltered", "none"]


def sandbox_label(kind: str) -> str:
    """What holds commands on a machine, in a few words, from its Health.sandbox."""
    return {
        "bubblewrap": "sandboxed",
        "bubblewrap-unfiltered": "sandboxed, weaker (no system-call filter there)",
        "none": "no sandbox there",
        "unknown": "sandbox unknown: no commands",
    }.get(kind, "")


@functools.lru_cache(maxsize=1024)
def _hidden_places(facts: RemoteFacts) -> tuple[str, ...]:
    """hidden_places of a machine's facts, made once: every operation there sends them, and making
    them costs milliseconds, which a command to a hundred hosts would pay a hundred times."""
    environ = dict(facts.relocations)
    homes = dict.fromkeys([facts.home, facts.real_home])
    places = [str(p) for home in homes for p in secret_locations(Path(home), _tilde(environ, home))]
    return tuple(dict.fromkeys([*places, facts.data_dir, facts.config_dir]))


@functools.lru_cache(maxsize=1024)
def _rules_text(facts: RemoteFacts, extra_roots: tuple[str, ...], network: bool) -> str:
    """The script's rules as bash arrays and values, made once per machine and policy (the same
    reason as _hidden_places: a filter to assemble and hundreds of words to quote)."""
    program = facts.seccomp
    arrays = {
        "STORES": _hidden_places(facts),
        "EXTRA": extra_roots,
        "UNSET": facts.unset,
        "P": PROTECTED_NAMES,
    }
    homes = {facts.home: "$h", facts.real_home: "$H"}  # H: the real home, set before the rules
    lines = [f"h={shlex.quote(facts.home)}"]
    lines += [f"{name}=({' '.join(_word(v, homes) for v in values)})" for name, values in arrays.items()]
    lines.append(f"F={base64.b64encode(program).decode() if program else ''}")
    lines.append(f"RESOLV={shlex.quote(facts.resolv)}; NET={int(network)}")
    lines.append(f"CLEAR={int(not facts.environ_known)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class RemoteFacts:
    """What the probe learned of a machine that the sandbox there needs."""

    bubblewrap: bool
    arch: str
    home: str
    real_home: str
    data_dir: str
    config_dir: str
    resolv: str = ""
    relocations: tuple[tuple[str, str], ...] = ()  # the variables that move credential stores
    unset: tuple[str, ...] = ()  # variables a command must not get (secrets, doors out)
    environ_known: bool = True  # False: its environment could not be read: a command gets a bare one
    login_bash: bool = False  # its login shell is bash, which can run our scripts itself (one bash fewer)

    @classmethod
    def parse(cls, lines: Iterable[str]) -> RemoteFacts | None:
        """The facts in a probe's output; None when it said nothing of a sandbox (unknown)."""
        values = {p: line[len(p) :] for line in lines for p in FACT_PREFIXES if line.startswith(p)}
        kind, home = values.get("sandbox:"), values.get("home:", "")
        if kind not in ("bubblewrap", "none") or not home.startswith("/") or not values.get("data:"):
            return None
        environ = _environment(values.get("environ:", ""))
        return cls(
            bubblewrap=kind == "bubblewrap",
            arch=values.get("arch:", ""),
            home=home,
            real_home=values.get("realhome:") or home,
            data_dir=values["data:"],
            config_dir=values.get("config:", ""),
            resolv=values.get("resolv:", ""),
            relocations=tuple((k, v) for k, v in (environ or {}).items() if k in (*ENV_RELOCATIONS, *_XDG)),
            unset=tuple(sorted(_unset(environ or {}))),
            environ_known=environ is not None,
            login_bash=PurePosixPath((environ or {}).get("SHELL", "")).name == "bash",
        )

    @property
    def seccomp(self) -> bytes | None:
        """The system-call filter for its architecture (None: none known for it)."""
        return filter_program(self.arch) if self.arch else None

    @property
    def kind(self) -> SandboxKind:
        """For Health.sandbox: bubblewrap with its filter, without one, or no sandbox."""
        if not self.bubblewrap:
            return "none"
        return "bubblewrap" if self.seccomp is not None else "bubblewrap-unfiltered"

    @property
    def workspace(self) -> str:
        """Where commands and relative paths start there, and what they may write."""
        return str(PurePosixPath(self.data_dir).parent / WORKSPACE_NAME)


def _word(path: str, homes: Mapping[str, str]) -> str:
    """`path` as a shell word, a home in it as its variable: a hundred places under the home
    are most of what every operation sends there."""
    for home, variable in homes.items():
        if home != "/" and path.startswith(home + "/"):
            return f'"{variable}"/{shlex.quote(path[len(home) + 1 :])}'
    return shlex.quote(path)


def _environment(encoded: str) -> dict[str, str] | None:
    try:
        raw = base64.b64decode(encoded, validate=True) if encoded else b""
    except (binascii.Error, ValueError):
        return None
    if not raw:
        return None
    pairs = (item.decode("utf-8", "replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, sep, value in pairs if sep}


def _unset(environ: Mapping[str, str]) -> set[str]:
    names = {name for name, value in environ.items() if is_secret_env(name, value)}
    return names | ({*SOCKET_ENV, *CREDENTIAL_ENV} & environ.keys())


@dataclass(frozen=True)
class Tags:
    """What the script there reported past the operation's own output (lines only it can write:
    they start with a token the operation never sees)."""

    created: tuple[tuple[str, str], ...] = ()  # (a protected name the operation created, where it went)
    failed: str = ""  # why the sandbox could not be set up ("unscanned": the scan of secrets timed out)


@dataclass(frozen=True)
class RemoteSandbox:
    """The sandbox of one session on one machine: its facts, the policy, the session's folder."""

    facts: RemoteFacts
    machine: str
    session: str  # the session's folder there: <data dir>/sandbox/<session>
    writable: tuple[str, ...] = ()  # [machines.NAME] writable (`~` allowed)
    mode: str = "workspace"  # the session's sandbox mode: off, workspace, strict
    network: bool = True
    token: str = field(default_factory=lambda: secrets.token_hex(12), compare=False)

    @property
    def confines(self) -> bool:
        """Whether operations there run inside bubblewrap."""
        return self.facts.bubblewrap and self.mode != "off"

    @property
    def workspace(self) -> str:
        return self.facts.workspace

    @property
    def folder(self) -> str:
        return f"{self.facts.data_dir}/sandbox/{self.session}"

    # --- the rules, as data --------------------------------------------------------------------

    def extra_roots(self) -> list[str]:
        """The configured writable roots, `~` read as the remote home; never the home itself, `/`
        or an ancestor of the home (the script checks their real paths again there)."""
        roots = []
        for raw in self.writable:
            path = self.absolute(raw)
            if not any(_within(PurePosixPath(home), PurePosixPath(path)) for home in self._homes()):
                roots.append(path)
        return roots

    def writable_roots(self) -> list[str]:
        return [self.workspace, *self.extra_roots()]

    def writable_text(self) -> str:
        return ", ".join([*self.writable_roots(), "/tmp", "/var/tmp"])

    def absolute(self, path: str, start: str | None = None) -> str:
        """`path` as an absolute path there: `~` is the remote home, a relative path starts at
        `start` (default: the workspace)."""
        if path == "~" or path.startswith("~/"):
            return posixpath.normpath(posixpath.join(self.facts.home, path[2:]))
        return posixpath.normpath(posixpath.join(start or self.workspace, path))

    def protects(self, path: str) -> bool:
        """Whether writing `path` (absolute, lexical) is refused though it is in a writable root:
        a protected name at the top of a root, or anything in a `.git`."""
        for root in self.writable_roots():
            if _within(PurePosixPath(path), PurePosixPath(root)):
                parts = PurePosixPath(posixpath.normpath(path)).relative_to(root).parts
                if parts and (parts[0] in PROTECTED_NAMES or any(p in PROTECTED_ANYWHERE for p in parts)):
                    return True
        return False

    def may_write(self, path: str) -> bool:
        """Whether the sandbox lets an operation write `path` (absolute, as it was resolved)."""
        inside = any(
            _within(PurePosixPath(path), PurePosixPath(r)) for r in [*self.writable_roots(), "/tmp", "/var/tmp"]
        )
        return inside and not self.protects(path) and not self.hides(path)

    def hides(self, path: str) -> bool:
        """Whether `path` (absolute, lexical) is a secret the sandbox hides."""
        if secret_name(PurePosixPath(path).name):
            return True
        return any(_within(PurePosixPath(path), PurePosixPath(hidden)) for hidden in self.hidden_places())

    def hidden_places(self) -> list[str]:
        """The credential stores of the remote home (where its environment moves them too) and the
        app's own folders there."""
        return list(_hidden_places(self.facts))

    def _homes(self) -> list[str]:
        return list(dict.fromkeys([self.facts.home, self.facts.real_home]))

    def refusal(self, action: str, paths: Iterable[str], held: str = "") -> SandboxRefusal:
        shown = tuple(inert_line(path) for path in paths)
        return SandboxRefusal(action, shown, held or self.held(), self.machine)

    def held(self) -> str:
        return f"only {self.writable_text()} are writable on {self.machine} (.git, .cmdop and their like read-only)"

    # --- the scripts -----------------------------------------------------------------------

    def script(self, body: str, *, cwd: str | None = None, confined: bool = True) -> str:
        """`body` (a bash script) for a shell there: inside the sandbox when `confined` (and the
        machine has one), else bare; from `cwd` (default: the workspace)."""
        values = {
            "S": self.folder,
            "W": self.workspace,
            "D": self.facts.data_dir,
            "H": self.facts.real_home,
            "T": self.token,
        }
        assigned = " ".join(f"{name}={shlex.quote(value)}" for name, value in values.items())
        start = f"C={self._directory(cwd)}; CMD={shlex.quote(body)}"
        if not (confined and self.confines):
            return f"{assigned}; {start}\n{sh.BARE}"
        return f"{assigned}; {start}\n{self._rules()}\n{sh.FUNCTIONS}\n{sh.CONFINED}"

    def _rules(self) -> str:
        return _rules_text(self.facts, tuple(self.extra_roots()), self.network and self.mode != "strict")

    def _directory(self, cwd: str | None) -> str:
        """A shell word for where the operation starts (an absolute path: bwrap's --chdir)."""
        if not cwd:
            return '"$W"'
        if cwd == "~" or cwd.startswith("~/"):
            return '"$HOME"' + (f"/{shlex.quote(cwd[2:])}" if cwd[2:] else "")
        return shlex.quote(cwd) if cwd.startswith("/") else f'"$W"/{shlex.quote(cwd)}'

    def hidden_list(self) -> str:
        """A bash associative array `HIDE` of the hidden places, for the file tools' listings."""
        return "HIDING=1; declare -A HIDE=(" + " ".join(f"[{shlex.quote(p)}]=1" for p in self.hidden_places()) + ")"

    def cleanup(self) -> str:
        """What removes the session's folder there at its end."""
        folder = shlex.quote(self.folder)
        return f"[ ! -d {folder} ] || {{ chmod -R u+rwX -- {folder} 2>/dev/null; rm -rf -- {folder}; }}"

    # --- what came back ----------------------------------------------------------------------

    def take_tags(self, text: str) -> tuple[str, Tags]:
        """The operation's output without the script's own lines, and what those said."""
        prefix = f"{self.token}:"
        kept, created, failed = [], [], ""
        for line in text.split("\n"):
            if not line.startswith(prefix):
                kept.append(line)
                continue
            kind, _, rest = line[len(prefix) :].partition(":")
            if kind == "created":
                path, _, moved = rest.partition("\t")
                created.append((path, moved))
            elif kind == "failed":
                failed = rest
        return "\n".join(kept), Tags(tuple(created), failed)

    def refused_write(self, output: str) -> SandboxRefusal | None:
        """What the sandbox refused a failed command, from the paths its errors name that the
        rules indeed keep from it (a path inside the writable roots is never reported); None
        when nothing points at the sandbox."""
        named = list(_read_only_paths(output))
        if not named:
            return None
        refused = [path for path in named if path is not None and not self.may_write(path)]
        if refused:
            return self.refusal("write", dict.fromkeys(refused))
        return self.refusal("write", ()) if None in named else None


_QUOTED = re.compile(r"['\"`\u2018\u2019]([^'\"`\u2018\u2019]*)['\"`\u2018\u2019]")


def _read_only_paths(output: str) -> Iterable[str | None]:
    """The paths of the output's `Read-only file system` errors, named before it (`touch: cannot
    touch '/x': Read-only...`) or after it (Python's `[Errno 30] Read-only file system: '/x'`);
    None for an error whose path cannot be read (`touch: cannot touch 'x'` names a relative one)."""
    for line in output.splitlines():
        if sh.READ_ONLY not in line:
            continue
        before, _, after = line.partition(sh.READ_ONLY)
        named = after[2:] if after.startswith(": ") else before.removesuffix(": ").rsplit(": ", 1)[-1]
        quoted = _QUOTED.search(named)
        path = quoted.group(1) if quoted else named.strip()
        yield posixpath.normpath(path) if path.startswith("/") else None


def _tilde(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The remote environment with a leading `~` (of each `:`-separated part) read as the remote
    home, not this one's."""

    def expand(part: str) -> str:
        return home + part[1:] if part == "~" or part.startswith("~/") else part

    return {name: ":".join(map(expand, value.split(":"))) for name, value in environ.items()}


def _within(path: PurePosixPath, root: PurePosixPath) -> bool:
    """Whether `path` is `root` or under it, `..` resolved lexically first."""
    path, root = PurePosixPath(posixpath.normpath(path)), PurePosixPath(posixpath.normpath(root))
    return path == root or root in path.parents
