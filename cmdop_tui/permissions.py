"""Permissions: the safety floor, rules, modes, their TOML file and the audit log.

Every tool call, in the TUI and in headless mode alike, goes through :meth:`Permissions.decide`
before it runs. The decision is made in three layers, first match wins:

1. **The floor** (:func:`floor_violation`). Catastrophic or secret-leaking calls are refused,
   whatever the rules, the mode or the user say (``--yes`` included): deleting ``/``, a home
   directory or a system directory, ``find / -delete``, fork bombs, writing to a disk device,
   ``mkfs``/``wipefs``/partition-table edits, ``dd of=/dev/<disk>``, ``shred`` of a device,
   recursive ``chmod``/``chown`` of ``/``, reading or writing SSH private keys (``.ssh/id_*``
   but not ``*.pub``, ``/etc/ssh/ssh_host_*_key``), ``.env`` files (``.env``, ``.env.*`` but
   not ``.env.example``/``.sample``/``.template``/``.dist``), ``/etc/shadow``,
   ``/etc/gshadow``, and writing ``/etc/sudoers`` (or ``/etc/sudoers.d/*``).

   Shell commands are *parsed* with bashlex, not matched with regexes: pipelines, lists,
   subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies, functions, command and process
   substitution, here-documents and here-strings fed to a shell, ``bash -c``/``sh -c``/``su -c``/
   ``eval``/``watch``/``trap``/``ssh host CMD`` strings (parsed again, to any depth up to
   :data:`MAX_DEPTH`), ``echo ... | sh`` (also through ``base64 -d``), ``xargs``, ``find -exec``,
   and the wrappers ``sudo``, ``doas``, ``env``, ``nohup``, ``nice``, ``timeout``, ``exec``,
   ``command``, ``builtin``, ``time``, ``stdbuf``, ``ionice``, ``setsid``, ``flock``,
   ``chroot``, ``busybox``, ``systemd-run`` and more. Words are expanded the way bash would
   as far as that can be known before the command runs: quotes (``'rm'``, ``r"m"``, ``\\rm``,
   ``$'\\x72m'``), ``~`` and ``$HOME``, variables assigned earlier in the same command line
   (``X=/; rm -rf $X``), ``for`` loop values, brace expansion (``/{,}``), ``${IFS}`` word
   splitting, ``$(echo /)``, ``cd DIR`` before a relative path, and the tool's ``cwd``
   argument. A variable that is not known may be empty: ``rm -rf "$DIR"/*`` is refused (use
   ``${DIR:?}``). When bashlex cannot parse a command (``[[ ]]``, ``case``, arithmetic), known
   unsupported constructs are rewritten and the parse retried; the raw text is also scanned
   word by word with the same checks; and if nothing parses at all, quoted strings are checked
   as commands too: an unparseable command that looks dangerous anywhere is refused.

   Known limits: the floor judges text, not effects. It cannot see what a script file, an
   alias, ``source``, a program's configuration (``git -c core.pager=...``), a variable from
   the environment or a download (``curl ... | sh``) will do; a container or VM boundary
   (``docker exec``) is not modelled; ``grep -r`` over a directory that happens to hold a
   ``.env`` cannot be known to do so; relative paths are judged only by their name unless a
   ``cd``/``cwd`` says where they are; and file tools resolve paths lexically (a symlink to a
   key is not followed). It is a floor against accidents and naive evasion, not a sandbox.

   Deliberate choices: commands that only *use* a secret pass (``ssh -i key``, ``scp -i key``,
   ``ssh-add``, ``ssh-keygen -y``, ``chmod 600 key``, ``ls``/``stat``/``test``/``echo`` of a
   path, ``set -a; . ./.env``, ``docker --env-file .env``, ``git rm --cached .env``); every
   other command naming one is refused, writes included (``cp .env.example .env``). ``mkfs``
   and ``wipefs`` on an image file pass, on anything under ``/dev`` or unknown they do not.
   ``find`` from ``/``, a home or a system directory with ``-delete`` needs a narrow ``-name``.
   ``chown -R``/``chmod -R`` of a home, ``/usr/local``, ``/opt`` or ``/srv`` pass (routine);
   of ``/`` or a system directory they do not. An unknown variable may be empty (``rm -rf
   "$D"/*`` is refused); a command substitution is assumed to print something.

2. **Rules**: ``[machine:]tool(argument glob)`` with a verdict ``allow``, ``ask`` or ``deny``
   (see :class:`Rule` for the syntax and the glob semantics). Session rules are consulted
   first: a session rule that matches decides; otherwise the global rules (the TOML file)
   decide. Within a layer, ``deny`` beats ``ask`` beats ``allow``. For ``execute_command`` a
   command line is split into its simple commands (``a && b | c $(d)`` has four): an ``allow``
   rule must cover every one of them, while one ``deny`` or ``ask`` match anywhere is enough.

3. **The mode** decides what no rule matched: ``default`` allows read-only tools and asks for
   mutating ones (``Tool.mutating``: execute_command, write_file, ask_machine, ask_machines);
   ``strict`` denies mutating tools; ``auto`` (``--yes``) allows everything, and turns ``ask``
   rules into ``allow`` (there is no one to ask); ``deny`` rules and the floor still apply.

API
---
``floor_violation(tool, args) -> str | None``
    The floor alone: a reason the model can read, or None.
``check_command(command, *, cwd=None) -> str | None``
    The floor for one shell command line.
``protected_path_reason(path, *, write=False) -> str | None``
    Whether a path is a protected secret (for tools that walk directories, e.g. grep).
``Rule``, ``Rule.parse(text, verdict)``; ``derive_rule(tool, args, machine)``
    Rules and the rule "Allow always" would add.
``Decision(verdict, reason, rule, floor)``
    ``verdict`` is ``"allow"``, ``"ask"`` or ``"deny"``; ``rule`` the deciding rule (or None);
    ``floor`` True when the floor refused.
``Permissions`` (thread-safe)
    ``Permissions.load(path=None, mode=None, *, audit_path=None, audit=True)``: the global rules
    file (default ``config_dir()/permissions.toml``); `mode` wins over the file's ``mode``.
    ``decide(tool, args, *, machine=None, mutating=None, cwd=None) -> Decision``: pure, records
    nothing. `machine` None means the call's own ``machine`` argument, else ``"local"``;
    `mutating` None means :data:`MUTATING_TOOLS` (unknown tools count as mutating).
    ``check(...)``: decide, then record. ``record(decision, tool, args, machine=None,
    outcome=None, *, call_id=None)``: one audit line (call again with the outcome once known).
    ``add_session_rule(rule, verdict=None)``, ``add_rule(rule, verdict=None)`` (saved at once,
    re-reading the file first so concurrent sessions' rules are kept), ``remove_rule(rule)``,
    ``allow_always(tool, args, machine="local", *, cwd=None, session=False, any_machine=False)
    -> Rule`` (see :func:`derive_rule`), ``save()``; attributes ``mode`` (settable), ``rules``
    (global), ``session_rules``, ``path``, ``audit_path``, ``last_audit_error``.
``list_rules_text(permissions=None, *, path=None) -> str``
    The rules with their source, for ``cmdop-tui permissions list``.
``PermissionsError``
    A rules file that cannot be used; the message names the file and the line.

Files: rules in ``config_dir()/permissions.toml`` (``[[rule]]`` tables with ``rule`` and
``verdict``, optional ``note``; optional top-level ``mode``), read with tomllib, written
atomically (temp file + ``os.replace``) with mode 0600 via tomli-w, and never overwritten when
it cannot be parsed. Decisions are appended to ``data_dir()/audit.jsonl`` (mode 0600), one JSON
object a line: ``time`` (UTC), ``call_id``, ``tool``, ``machine``, ``argument`` (the rules'
argument: the command, path, pattern or host(s), as given), ``verdict``, ``reason``, ``rule``,
``rule_source``, ``floor``, ``mode``, ``outcome``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as _dt
import fnmatch
import itertools
import json
import logging
import os
import posixpath
import re
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import tomli_w

__all__ = [
    "MODES",
    "MUTATING_TOOLS",
    "VERDICTS",
    "Decision",
    "Mode",
    "Permissions",
    "PermissionsError",
    "Rule",
    "Verdict",
    "audit_path",
    "check_command",
    "derive_rule",
    "floor_violation",
    "list_rules_text",
    "main_argument",
    "protected_path_reason",
    "rules_path",
]

log = logging.getLogger(__name__)

Verdict = Literal["allow", "ask", "deny"]
Mode = Literal["default", "strict", "auto"]
VERDICTS: tuple[str, ...] = ("allow", "ask", "deny")
MODES: tuple[str, ...] = ("default", "strict", "auto")
_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}

#: Tools that change things when the registry's ``Tool.mutating`` is not at hand.
MUTATING_TOOLS = frozenset({"execute_command", "write_file", "ask_machine", "ask_machines"})
#: The argument rules match, per tool (grep: the searched path, not the regex).
MAIN_ARGUMENTS: Mapping[str, str] = {
    "execute_command": "command",
    "read_file": "path",
    "write_file": "path",
    "list_dir": "path",
    "grep": "path",
    "glob": "pattern",
    "ask_machine": "hostname",
    "ask_machines": "hostnames",
}
_PATH_TOOLS = frozenset({"read_file", "write_file", "list_dir", "grep", "glob"})

#: How deeply shell strings inside shell strings are followed before giving up (and refusing).
MAX_DEPTH = 12
_MAX_CANDIDATES = 32
_FLOOR_NOTE = "(safety floor: no rule, mode or approval can allow this)"


class PermissionsError(Exception):
    """The rules file cannot be used; the message names the file (and line)."""


# =============================================================================================
# The floor: paths
# =============================================================================================

_HOME = "/home/~"  # where ~ and $HOME point: a home directory whose name we do not know
_UNKNOWN = "\x00"  # a non-empty value that cannot be known before the command runs
_GLOB_CHARS = frozenset("*?[")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SYSTEM_TOP = _words(
    "bin boot dev etc home lib lib32 lib64 libx32 mnt media opt proc root sbin snap srv sys usr "
    "var Users System Library Applications Volumes private"
)
_SYSTEM_SECOND = _words(
    "usr/bin usr/sbin usr/lib usr/lib32 usr/lib64 usr/libexec usr/local usr/share usr/include "
    "var/lib boot/efi System/Library private/etc private/var"
)
_BROAD_SAMPLES = (
    "bin",
    "lib",
    "etc",
    "share",
    "local",
    "passwd",
    "hosts",
    "Documents",
    "src",
    ".ssh",
    ".config",
    ".bashrc",
    ".profile",
    ".local",
)
_KEY_SAMPLES = ("id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk", "id_ecdsa_sk")
_HOST_KEY_SAMPLES = ("ssh_host_rsa_key", "ssh_host_ed25519_key", "ssh_host_ecdsa_key")
_ENV_SAMPLES = (".env", ".env.local", ".env.production")
_ENV_SAFE_SUFFIXES = frozenset({"example", "sample", "template", "dist"})
_SHADOW_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/master.passwd")
_SUDOERS_FILES = ("/etc/sudoers", "/etc/sudoers.d", "/etc/sudoers.d/x", "/private/etc/sudoers")

_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:"
    r"(?:sd|hd|vd|xvd)[a-z]+\d*"
    r"|nvme\d+(?:n\d+(?:p\d+)?)?"
    r"|mmcblk\d+(?:p\d+|boot\d+)?"
    r"|r?disk\d+(?:s\d+)*"
    r"|md\d+|md/.+|dm-\d+|mapper/.+|disk/by-[^/]+/.+|block/.+|root|ubi\w*|loop\d+"
    r"|mem|kmem|port"
    r")$"
)
_BLOCK_SAMPLES = (
    "/dev/sda",
    "/dev/sda1",
    "/dev/vda",
    "/dev/xvda",
    "/dev/hda",
    "/dev/nvme0n1",
    "/dev/mmcblk0",
    "/dev/disk0",
    "/dev/md0",
    "/dev/dm-0",
)


def _has_glob(text: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in text)


def _gmatch(pattern: str, name: str) -> bool:
    """Does one path component `pattern` (a bash glob) match `name`? A leading dot must be
    matched literally (bash without dotglob)."""
    if not _has_glob(pattern):
        return pattern == name
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def _path_match(pattern: str, path: str) -> bool:
    """Component-wise glob match of a whole path (so `*` never crosses `/`)."""
    pat, concrete = pattern.split("/"), path.split("/")
    return len(pat) == len(concrete) and all(_gmatch(p, c) for p, c in zip(pat, concrete, strict=True))


def _broad(glob: str) -> bool:
    """A glob that matches most names in a directory (`*`, `.*`, `?*`, `[a-z]*`...)."""
    return sum(_gmatch(glob, name) for name in _BROAD_SAMPLES) >= 3


def _show(path: str) -> str:
    """A resolved path as the user wrote it, near enough."""
    if path == _HOME or path.startswith(_HOME + "/"):
        path = "~" + path[len(_HOME) :]
    return path.replace(_UNKNOWN, "…") or "''"


def _resolve(value: str, cwd: str | None) -> str:
    """`value` as a normalised path: relative paths joined to `cwd` when it is known."""
    if value == "":
        return ""
    path = value
    if not path.startswith("/") and cwd:
        path = cwd.rstrip("/") + "/" + path
    path = re.sub(r"/{2,}", "/", path)
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    return normal


def _home_dir(path: str) -> bool:
    parts = path.split("/")
    if path in ("/root", "/var/root"):
        return True
    return len(parts) == 3 and parts[0] == "" and parts[1] in ("home", "Users") and parts[2] != ""


def _critical(path: str) -> str | None:
    """What deleting (or moving away, or chmod -R) `path` would destroy, or None."""
    if not path.startswith("/"):
        return None
    if path == "/":
        return "the whole file system"
    comps = path[1:].split("/")
    if len(comps) == 1:
        name = comps[0]
        if _has_glob(name) and any(_gmatch(name, top) for top in _SYSTEM_TOP):
            return f"everything in / ({path})"
        if name in ("root",):
            return "the home directory of root (/root)"
        if name in _SYSTEM_TOP:
            return f"the system directory {path}"
        return None
    if len(comps) == 2:
        if comps[0] in ("home", "Users") or (_has_glob(comps[0]) and _gmatch(comps[0], "home")):
            if _has_glob(comps[1]):
                return f"every home directory ({_show(path)})" if _broad(comps[1]) or comps[1] == "*" else None
            return f"a home directory ({_show(path)})"
        if path == "/var/root":
            return "a home directory (/var/root)"
        joined = "/".join(comps)
        if any(_path_match(joined, sys2) for sys2 in _SYSTEM_SECOND):
            return f"the system directory {path}"
        if (comps[0] in _SYSTEM_TOP or comps[0] == "root") and _has_glob(comps[1]) and _broad(comps[1]):
            what = "the home directory of root" if comps[0] == "root" else f"/{comps[0]}"
            return f"everything in {what} ({path})"
        return None
    if len(comps) == 3 and comps[0] in ("home", "Users") and _has_glob(comps[2]) and _broad(comps[2]):
        return f"everything in a home directory ({_show(path)})"
    return None


def _block_device(path: str) -> bool:
    if not path.startswith("/dev/"):
        return False
    if _has_glob(path):
        return any(_path_match(path, sample) for sample in _BLOCK_SAMPLES)
    return bool(_BLOCK_DEVICE.match(path))


PathClass = Literal["key", "env", "shadow", "sudoers", "keydir"]


def _path_class(path: str) -> tuple[PathClass, str] | None:
    """Is `path` (resolved, possibly a glob) a protected secret? (class, description)."""
    if not path:
        return None
    comps = path.split("/")
    name = comps[-1]
    parent = comps[-2] if len(comps) > 1 else ""
    shown = _show(path)
    # SSH private keys: .ssh/id_* (not *.pub), ssh_host_*_key
    if parent and _gmatch(parent, ".ssh"):
        if _has_glob(name):
            if any(_gmatch(name, sample) for sample in _KEY_SAMPLES):
                return "key", f"an SSH private key ({shown})"
        elif name.startswith("id_") and not name.endswith(".pub"):
            return "key", f"an SSH private key ({shown})"
    if _has_glob(name):
        if any(_gmatch(name, sample) for sample in _HOST_KEY_SAMPLES) and parent and _gmatch(parent, "ssh"):
            return "key", f"an SSH host key ({shown})"
    elif re.fullmatch(r"ssh_host_\w+_key", name):
        return "key", f"an SSH host key ({shown})"
    # .env files
    if _has_glob(name):
        if any(_gmatch(name, sample) for sample in _ENV_SAMPLES):
            return "env", f"a .env file ({shown})"
    elif name == ".env" or (name.startswith(".env.") and name[5:].lower() not in _ENV_SAFE_SUFFIXES):
        return "env", f"a .env file ({shown})"
    # password hashes
    for shadow in _SHADOW_FILES:
        if _path_match(path, shadow) if _has_glob(path) else path == shadow:
            return "shadow", f"{shadow} (password hashes)"
    for sudoers in _SUDOERS_FILES:
        if _path_match(path, sudoers) if _has_glob(path) else (path == sudoers or path.startswith("/etc/sudoers.d/")):
            return "sudoers", f"the sudo configuration ({shown})"
    # directories that hold private keys
    if _gmatch(name, ".ssh") or path == "/etc/ssh":
        return "keydir", f"the SSH key directory {shown}"
    return None


def protected_path_reason(path: str, *, write: bool = False) -> str | None:
    """Why reading (or, with `write`, writing) `path` is refused by the floor, or None.

    `~` is expanded to "a home directory"; relative paths are judged by their name (``.env``,
    ``.ssh/id_rsa``). Meant for tools that walk directories (a recursive grep can skip such
    files) and for the file tools' checks.
    """
    if not isinstance(path, str) or not path:
        return None
    resolved = _resolve(_expand_tilde_text(path), None)
    if write and _block_device(resolved):
        return f"refused: writing {path} would overwrite the block device {resolved} {_FLOOR_NOTE}"
    found = _path_class(resolved)
    if found is None:
        return None
    kind, what = found
    if kind == "keydir":
        return None
    if kind == "sudoers" and not write:
        return None
    verb = "writing" if write else "reading"
    return f"refused: {verb} {what} {_FLOOR_NOTE}"


def _expand_tilde_text(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return _HOME + path[1:]
    match = re.match(r"~([A-Za-z_][\w.-]*)(/.*)?$", path)
    if match:
        user = match.group(1)
        base = "/root" if user == "root" else f"/home/{user}"
        return base + (match.group(2) or "")
    if path == "$HOME" or path.startswith("$HOME/"):
        return _HOME + path[5:]
    return path


# =============================================================================================
# The floor: word expansion
# =============================================================================================


class _Refuse(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Ctx:
    """What is known while walking one command line."""

    vars: dict[str, tuple[str, ...]] = field(default_factory=dict)
    funcs: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None
    positional: tuple[str, ...] | None = None
    depth: int = 0
    calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Arg:
    """One expanded word: its possible values (unknown parts as '' or _UNKNOWN)."""

    raw: str
    values: tuple[str, ...]
    dynamic: bool = False
    split: bool = False  # an unquoted expansion: the value is split on whitespace

    @property
    def text(self) -> str:
        return self.values[0] if self.values else ""


def _literal(text: str) -> _Arg:
    return _Arg(text, (text,))


_ALWAYS_SET = _words(
    "USER LOGNAME HOSTNAME SHELL RANDOM UID EUID PPID SECONDS LINENO BASHPID OLDPWD BASH "
    "BASH_VERSION HOSTTYPE OSTYPE MACHTYPE PATH TERM LANG"
)


def _lookup(name: str, ctx: _Ctx) -> tuple[str, ...] | None:
    """Possible values of `$name`, or None when nothing is known (it may be empty)."""
    if name in ctx.vars:
        return ctx.vars[name]
    if name == "HOME":
        return (_HOME,)
    if name == "PWD":
        return (ctx.cwd,) if ctx.cwd else (_UNKNOWN,)
    if name == "IFS":
        return (" ",)
    if name in _ALWAYS_SET or name in ("$", "!", "#", "?", "-", "0"):
        return (_UNKNOWN,)
    if name.isdigit() or name in ("@", "*"):
        if ctx.positional is None:
            return None
        if name in ("@", "*"):
            return (" ".join(ctx.positional),)
        index = int(name) - 1
        return (ctx.positional[index],) if 0 <= index < len(ctx.positional) else ("",)
    return None


def _product(segments: list[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for combo in itertools.product(*segments):
        out.append("".join(combo))
        if len(out) >= _MAX_CANDIDATES:
            break
    return tuple(dict.fromkeys(out))


def _match_close(text: str, start: int, open_ch: str = "(", close_ch: str = ")") -> int:
    """Index just past the bracket that closes `text[start]` (an `open_ch`), quote-aware."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch == '"':
            i = _skip_double(text, i)
            continue
        if ch == "`":
            end = _find_backtick(text, i + 1)
            i = end + 1
            continue
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_double(text: str, start: int) -> int:
    """Index just past the double-quoted string starting at `start`."""
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        if ch == "$" and text.startswith("$(", i):
            i = _match_close(text, i + 1)
            continue
        if ch == "`":
            i = _find_backtick(text, i + 1) + 1
            continue
        i += 1
    return n


def _find_backtick(text: str, start: int) -> int:
    i, n = start, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    return n


_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _ansi_c(body: str) -> str:
    """Decode the inside of $'...'."""
    out, i, n = [], 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_ESCAPES:
            out.append(_ANSI_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            match = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            if match:
                out.append(chr(int(match.group(0), 16)))
                i += 2 + len(match.group(0))
            else:
                out.append("\\x")
                i += 2
        elif nxt in "uU":
            match = re.match(r"[0-9A-Fa-f]{1,8}" if nxt == "U" else r"[0-9A-Fa-f]{1,4}", body[i + 2 :])
            if match:
                with contextlib.suppress(ValueError, OverflowError):
                    out.append(chr(int(match.group(0), 16)))
                i += 2 + len(match.group(0))
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            match = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert match is not None
            out.append(chr(int(match.group(0), 8) & 0xFF))
            i += 1 + len(match.group(0))
        elif nxt == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _brace_expand(text: str) -> list[str]:
    """Bash brace expansion ({a,b} and {1..3}), bounded."""
    match = None
    depth = 0
    start = -1
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = text[start + 1 : i]
                match = (start, i, inner)
                break
    if match is None:
        return [text]
    start, end, inner = match
    options = _split_top_commas(inner)
    if len(options) < 2:
        seq = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", inner) or re.fullmatch(r"([a-zA-Z])\.\.([a-zA-Z])", inner)
        if not seq:
            rest = _brace_expand(text[end + 1 :])
            return [text[: end + 1] + r for r in rest][:_MAX_CANDIDATES]
        a, b = seq.group(1), seq.group(2)
        if a.lstrip("-").isdigit():
            lo, hi = int(a), int(b)
            step = 1 if hi >= lo else -1
            options = [str(v) for v in range(lo, hi + step, step)][:_MAX_CANDIDATES]
        else:
            step = 1 if ord(b) >= ord(a) else -1
            options = [chr(v) for v in range(ord(a), ord(b) + step, step)]
    out: list[str] = []
    for option in options:
        for expanded in _brace_expand(text[:start] + option + text[end + 1 :]):
            out.append(expanded)
            if len(out) >= _MAX_CANDIDATES:
                return out
    return out


def _split_top_commas(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


class _Expander:
    """Expands one raw word the way bash would, as far as can be known statically.

    Command substitutions found on the way are collected in `scripts` (they run, so the
    caller checks them) and, when they are a plain `echo`/`printf`, replaced by their output.
    """

    def __init__(self, ctx: _Ctx) -> None:
        self.ctx = ctx
        self.scripts: list[str] = []
        self.dynamic = False
        self.split = False

    def word(self, raw: str, *, assignment: bool = False) -> _Arg:
        segments = self._segments(raw, assignment=assignment)
        values = _product(segments) if segments else ("",)
        if "{" in raw and "," in raw or ".." in raw:
            expanded: list[str] = []
            for value in values:
                expanded.extend(_brace_expand(value))
            values = tuple(dict.fromkeys(expanded))[:_MAX_CANDIDATES]
        return _Arg(raw, values, self.dynamic, self.split)

    # -- the scanner ---------------------------------------------------------------------------

    def _segments(self, raw: str, *, assignment: bool, quoted: bool = False) -> list[tuple[str, ...]]:
        segs: list[tuple[str, ...]] = []
        i, n = 0, len(raw)
        if not quoted and raw.startswith("~"):
            i = self._tilde(raw, 0, segs)
        while i < n:
            ch = raw[i]
            if ch == "\\" and not quoted:
                if i + 1 < n and raw[i + 1] != "\n":
                    segs.append((raw[i + 1],))
                i += 2
            elif ch == "\\" and quoted:
                nxt = raw[i + 1] if i + 1 < n else ""
                if nxt in '$`"\\':
                    segs.append((nxt,))
                    i += 2
                elif nxt == "\n":
                    i += 2
                else:
                    segs.append(("\\",))
                    i += 1
            elif ch == "'" and not quoted:
                end = raw.find("'", i + 1)
                end = n if end < 0 else end
                segs.append((raw[i + 1 : end],))
                i = end + 1
            elif ch == '"' and not quoted:
                end = _skip_double(raw, i)
                inner = raw[i + 1 : end - 1] if end <= n and raw[end - 1 : end] == '"' else raw[i + 1 : end]
                segs.extend(self._segments(inner, assignment=False, quoted=True))
                i = end
            elif ch == "$":
                i = self._dollar(raw, i, segs, quoted)
            elif ch == "`":
                end = _find_backtick(raw, i + 1)
                inner = re.sub(r"\\([`$\\])", r"\1", raw[i + 1 : end])
                segs.append(self._substitution(inner, quoted))
                i = end + 1
            elif ch in "<>" and raw.startswith("(", i + 1) and not quoted:
                end = _match_close(raw, i + 1)
                self.scripts.append(raw[i + 2 : end - 1])
                segs.append(("/dev/fd/63",))
                i = end
            elif assignment and ch == ":" and not quoted and raw.startswith("~", i + 1):
                segs.append((":",))
                i = self._tilde(raw, i + 1, segs)
            else:
                segs.append((ch,))
                i += 1
        return segs

    def _tilde(self, raw: str, i: int, segs: list[tuple[str, ...]]) -> int:
        match = re.match(r"~([A-Za-z_][\w.-]*|[+-])?(?=/|:|$)", raw[i:])
        if not match:
            segs.append(("~",))
            return i + 1
        user = match.group(1)
        if not user:
            segs.append((_HOME,))
        elif user in "+-":
            segs.append((_UNKNOWN,))
        else:
            segs.append(("/root" if user == "root" else f"/home/{user}",))
        return i + len(match.group(0))

    def _unknown(self, quoted: bool) -> tuple[str, ...]:
        self.dynamic = True
        if not quoted:
            self.split = True
        return ("", _UNKNOWN)

    def _known(self, values: tuple[str, ...], quoted: bool) -> tuple[str, ...]:
        if not quoted:
            self.split = True
        if any(_UNKNOWN in v for v in values):
            self.dynamic = True
        return values

    def _dollar(self, raw: str, i: int, segs: list[tuple[str, ...]], quoted: bool) -> int:
        n = len(raw)
        nxt = raw[i + 1] if i + 1 < n else ""
        if nxt == "'" and not quoted:
            end = i + 2
            while end < n and raw[end] != "'":
                end += 2 if raw[end] == "\\" else 1
            segs.append((_ansi_c(raw[i + 2 : min(end, n)]),))
            return end + 1
        if nxt == '"' and not quoted:
            end = _skip_double(raw, i + 1)
            segs.extend(self._segments(raw[i + 2 : end - 1], assignment=False, quoted=True))
            return end
        if nxt == "(":
            if raw.startswith("((", i + 1):
                end = _match_close(raw, i + 1)
                self.dynamic = True
                segs.append((_UNKNOWN,))
                return end
            end = _match_close(raw, i + 1)
            inner = raw[i + 2 : end - 1] if raw[end - 1 : end] == ")" else raw[i + 2 : end]  # unclosed: to the end
            segs.append(self._substitution(inner, quoted))
            return end
        if nxt == "{":
            end = _match_close(raw, i + 1, "{", "}")
            expr = raw[i + 2 : end - 1] if raw[end - 1 : end] == "}" else raw[i + 2 : end]
            segs.append(self._parameter(expr, quoted))
            return end
        match = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!\-]", raw[i + 1 :])
        if not match:
            segs.append(("$",))
            return i + 1
        values = _lookup(match.group(0), self.ctx)
        segs.append(self._unknown(quoted) if values is None else self._known(values, quoted))
        return i + 1 + len(match.group(0))

    def _parameter(self, expr: str, quoted: bool) -> tuple[str, ...]:
        if expr.startswith("#") and len(expr) > 1:
            self.dynamic = True
            return (_UNKNOWN,)
        if expr.startswith("!"):
            return self._unknown(quoted)
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])(.*)$", expr, re.DOTALL)
        if not match:
            return self._unknown(quoted)
        name, op = match.group(1), match.group(2)
        values = _lookup(name, self.ctx)
        if op == "":
            return self._unknown(quoted) if values is None else self._known(values, quoted)
        opm = re.match(r"(:?)([-=?+])(.*)$", op, re.DOTALL)
        if opm:
            colon, kind, word = opm.group(1), opm.group(2), opm.group(3)
            sub = _Expander(self.ctx)
            alternative = sub.word(word).values if word else ("",)
            self.scripts.extend(sub.scripts)
            self.dynamic |= sub.dynamic
            if kind == "?":  # ${X:?msg}: the command never runs with X empty
                kept = tuple(v for v in (values or (_UNKNOWN,)) if v) or (_UNKNOWN,)
                return self._known(kept, quoted)
            if kind == "+":
                if values is None:
                    return self._known(tuple(dict.fromkeys(("",) + alternative)), quoted)
                return self._known(alternative, quoted)
            # - and =: the value, or the default when unset (or empty with the colon)
            if values is None:
                return self._known(tuple(dict.fromkeys(alternative + (_UNKNOWN,))), quoted)
            kept = tuple(v for v in values if v or not colon)
            return self._known(tuple(dict.fromkeys(kept + (alternative if "" in values or not kept else ()))), quoted)
        # ${X%pat} ${X#pat} ${X/a/b} ${X^^} ${X:1:2} ${X[0]}: some string we do not compute
        return self._unknown(quoted)

    def _substitution(self, inner: str, quoted: bool) -> tuple[str, ...]:
        self.scripts.append(inner)
        output = _static_output(inner, self.ctx)
        if output is None:
            self.dynamic = True
            if not quoted:
                self.split = True
            return (_UNKNOWN,)
        if not quoted:
            self.split = True
        return (output.rstrip("\n"),)


def _expand(raw: str, ctx: _Ctx, *, assignment: bool = False) -> tuple[_Arg, list[str]]:
    expander = _Expander(ctx)
    arg = expander.word(raw, assignment=assignment)
    return arg, expander.scripts


def _split_args(args: list[_Arg]) -> list[_Arg]:
    """Word splitting of unquoted expansions (`$X` with X="rm -rf /", `rm${IFS}-rf${IFS}/`)."""
    out: list[_Arg] = []
    for arg in args:
        if arg.split:
            spaced = next((v for v in arg.values if re.search(r"\s", v.strip())), None)
            if spaced is not None:
                out.extend(_Arg(piece, (piece,), arg.dynamic) for piece in spaced.split())
                continue
        out.append(arg)
    return out


# --- static evaluation of simple producers (echo, printf, base64 -d) ----------------------------


def _echo_output(args: Sequence[str]) -> str:
    interpret = False
    words = list(args)
    while words and re.fullmatch(r"-[neE]+", words[0]):
        interpret = "e" in words[0] or interpret
        words.pop(0)
    text = " ".join(words)
    return _ansi_c(text) if interpret else text


def _printf_output(args: Sequence[str]) -> str:
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    if fmt == "--" and rest:
        fmt, rest = rest[0], rest[1:]
    fmt = _ansi_c(fmt)
    out = []
    while True:

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "%%":
                return "%"
            return _ansi_c(rest.pop(0)) if rest else ""

        out.append(re.sub(r"%%|%[-+ #0]*\d*(?:\.\d+)?[sbdiouxXcq]", sub, fmt))
        if not rest or "%" not in fmt:
            break
    return "".join(out)


def _transform(argv: Sequence[str], stdin: str | None) -> str | None:
    """Output of one pipeline stage we can evaluate, or None."""
    if not argv:
        return None
    name = posixpath.basename(argv[0])
    args = list(argv[1:])
    if name == "echo":
        return _echo_output(args) + "\n"
    if name == "printf":
        return _printf_output(args)
    if stdin is None:
        return None
    if name in ("base64", "base32") and any(a in ("-d", "--decode", "-D") for a in args):
        try:
            data = re.sub(r"\s+", "", stdin)
            decoded = base64.b64decode(data + "=" * (-len(data) % 4)) if name == "base64" else base64.b32decode(data)
            return decoded.decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    if name == "xxd" and "-r" in args:
        try:
            return bytes.fromhex(re.sub(r"\s+", "", stdin)).decode("utf-8", "replace")
        except ValueError:
            return None
    if name == "rev":
        return "\n".join(line[::-1] for line in stdin.split("\n"))
    if name in ("cat", "tee") and not [a for a in args if not a.startswith("-")]:
        return stdin
    return None


def _static_output(script: str, ctx: _Ctx) -> str | None:
    """The output of a small pipeline of echo/printf/base64 -d/rev, or None if not knowable."""
    nodes = _parse(script)
    if not nodes or len(nodes) != 1:
        return None
    node = nodes[0]
    stages = (
        [node]
        if node.kind == "command"
        else ([p for p in node.parts if p.kind != "pipe"] if node.kind == "pipeline" else [])
    )
    if not stages or any(stage.kind != "command" for stage in stages):
        return None
    return _pipeline_output(stages, script, ctx)


def _pipeline_output(stages: Sequence[Any], src: str, ctx: _Ctx) -> str | None:
    output: str | None = None
    for stage in stages:
        argv = _static_argv(stage, src, ctx)
        if argv is None:
            return None
        output = _transform(argv, output)
        if output is None:
            return None
    return output


def _static_argv(node: Any, src: str, ctx: _Ctx) -> list[str] | None:
    argv: list[str] = []
    for part in node.parts:
        if part.kind == "word":
            arg, scripts = _expand(src[part.pos[0] : part.pos[1]], ctx)
            if scripts or arg.dynamic or len(arg.values) != 1:
                return None
            argv.append(arg.text)
        elif part.kind == "redirect" and part.type in ("<<<",) or part.kind != "redirect":
            return None
    return argv


# =============================================================================================
# The floor: parsing
# =============================================================================================

_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[\[(?=\s)"), "["),
    (re.compile(r"(?<=\s)\]\]"), "]"),
    (re.compile(r"\$\(\((?:[^()]|\([^()]*\))*\)\)"), "0"),
    (re.compile(r"\(\((?:[^()]|\([^()]*\))*\)\)"), "true"),
    (re.compile(r"(^|[;&|\n(]\s*)time\s+(?:-p\s+)?", re.MULTILINE), r"\1"),
    (re.compile(r"(^|[;&|\n(]\s*)coproc\s+", re.MULTILINE), r"\1"),
    (re.compile(r"<<(-?)\s*(['\"])(\w+)\2"), r"<<\1\3"),
    (re.compile(r"<<(-?)\s*\\(\w+)"), r"<<\1\2"),
    (re.compile(r"\b([A-Za-z_]\w*)(\+?)=\(([^()]*)\)"), r"\1\2='\3'"),
)


_bashlex_ready = False


def _load_bashlex() -> Any:
    """bashlex, imported late (~0.1 s; the UI may import this module at start-up) and guarded:
    bashlex 0.18 loops forever on an unclosed `${` (its `_paramexpand` takes `find()`'s -1 as
    an index); the guard makes that a parse error, which sends the text to the fallback."""
    global _bashlex_ready
    import bashlex
    import bashlex.subst

    if not _bashlex_ready:
        original = bashlex.subst._paramexpand

        def _paramexpand(parserobj: Any, string: str, sindex: int) -> Any:
            if string[sindex + 1 : sindex + 2] == "{" and string.find("}", sindex + 2) < 0:
                raise ValueError("unclosed ${")
            return original(parserobj, string, sindex)

        if getattr(original, "__name__", "") == "_paramexpand" and not getattr(original, "_cmdop_guard", False):
            _paramexpand._cmdop_guard = True  # type: ignore[attr-defined]
            bashlex.subst._paramexpand = _paramexpand
        _bashlex_ready = True
    return bashlex


def _bashlex_parse(text: str) -> list[Any] | None:
    bashlex = _load_bashlex()
    try:
        return list(bashlex.parse(text))
    except Exception:
        return None


_PARSE_CACHE: dict[str, tuple[list[Any] | None, str, bool]] = {}


def _parse_full(text: str) -> tuple[list[Any] | None, str, bool]:
    """(nodes, the text the nodes' positions refer to, exact): exact is False after a rewrite."""
    cached = _PARSE_CACHE.get(text)
    if cached is not None:
        return cached
    result: tuple[list[Any] | None, str, bool]
    nodes = _bashlex_parse(text)
    if nodes is not None:
        result = (nodes, text, True)
    else:
        rewritten = text
        for pattern, replacement in _REWRITES:
            rewritten = pattern.sub(replacement, rewritten)
        nodes = _bashlex_parse(rewritten) if rewritten != text else None
        result = (nodes, rewritten, False)
    if len(_PARSE_CACHE) > 512:
        _PARSE_CACHE.clear()
    _PARSE_CACHE[text] = result
    return result


def _parse(text: str) -> list[Any] | None:
    nodes, _src, exact = _parse_full(text)
    return nodes if exact else None


# =============================================================================================
# The floor: the walk
# =============================================================================================


def check_command(command: str, *, cwd: str | None = None) -> str | None:
    """The floor for one shell command line: a reason to refuse it, or None.

    `cwd` is the directory it runs in, when known (relative paths are judged against it).
    Never raises: an internal error refuses the command (a floor that crashes open is no floor).
    """
    if not isinstance(command, str):
        return None
    ctx = _Ctx(cwd=_initial_cwd(cwd))
    try:
        _check_script(command, ctx)
    except _Refuse as refusal:
        return refusal.reason
    except RecursionError:
        return f"refused: the command is nested too deeply to check {_FLOOR_NOTE}"
    except Exception as exc:  # a bug here must not let a command through unchecked
        log.exception("permission floor failed on a command")
        return f"refused: the command could not be checked ({type(exc).__name__}) {_FLOOR_NOTE}"
    return None


def _initial_cwd(cwd: str | None) -> str | None:
    if not isinstance(cwd, str) or not cwd:
        return None
    resolved = _resolve(_expand_tilde_text(cwd), None)
    return resolved if resolved.startswith("/") else None


def _refuse(snippet: str, what: str) -> _Refuse:
    snippet = " ".join(snippet.split())
    if len(snippet) > 120:
        snippet = snippet[:117] + "..."
    return _Refuse(f"refused: `{snippet}` {what} {_FLOOR_NOTE}")


def _check_script(text: str, ctx: _Ctx) -> None:
    """Check a whole script (a command line, a `bash -c` string, a heredoc fed to a shell)."""
    if ctx.depth >= MAX_DEPTH:
        raise _refuse(text, "nests shell code too deeply to be checked")
    if not text.strip():
        return
    if _nesting(text) > 3 * MAX_DEPTH:  # cheap, before any parsing: bashlex is slow on deep nesting
        raise _refuse(text, "nests substitutions too deeply to be checked")
    ctx = replace(ctx, depth=ctx.depth + 1)
    nodes, src, exact = _parse_full(text)
    if nodes is not None:
        for node in nodes:
            _visit(node, src, ctx)
    if not exact:
        _fallback(text, ctx, broad=nodes is None)


def _nesting(text: str) -> int:
    """How deeply `$(`, `(`, `{` and backticks nest in `text`, quotes ignored (so at least as deep)."""
    depth = deepest = 0
    backtick = False
    for ch in text:
        if ch in "({":
            depth += 1
            deepest = max(deepest, depth + backtick)
        elif ch in ")}":
            depth = max(depth - 1, 0)
        elif ch == "`":
            backtick = not backtick
    return deepest


def _visit(
    node: Any, src: str, ctx: _Ctx, stdin: Callable[[], str | None] | None = None, upstream: Sequence[Any] = ()
) -> None:
    kind = node.kind
    if kind == "command":
        _visit_command(node, src, ctx, stdin, upstream)
    elif kind == "list":
        for part in node.parts:
            _visit(part, src, ctx)
    elif kind == "pipeline":
        stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
        for index, stage in enumerate(stages):
            before = stages[:index]
            feed = (lambda before=before: _pipeline_text(before, src, ctx)) if before else None
            _visit(stage, src, ctx, feed, before)
    elif kind == "compound":
        for part in node.list:
            _visit(part, src, ctx)
        for redirect in getattr(node, "redirects", None) or ():
            _check_redirect(redirect, src, ctx, src[node.pos[0] : node.pos[1]])
    elif kind == "for":
        _visit_for(node, src, ctx)
    elif kind in ("if", "while", "until"):
        for part in node.parts:
            _visit(part, src, ctx)
    elif kind == "function":
        _visit_function(node, src, ctx)
    # reservedword, operator, pipe: nothing to check


def _pipeline_text(stages: Sequence[Any], src: str, ctx: _Ctx) -> str | None:
    if not stages or any(stage.kind != "command" for stage in stages):
        return None
    return _pipeline_output(stages, src, ctx)


def _visit_for(node: Any, src: str, ctx: _Ctx) -> None:
    parts = node.parts
    words = [p for p in parts if p.kind == "word"]
    if words:
        name = words[0].word
        values: list[str] = []
        for word in words[1:]:
            arg, scripts = _expand(src[word.pos[0] : word.pos[1]], ctx)
            for script in scripts:
                _check_script(script, ctx)
            values.extend(arg.values)
        ctx.vars[name] = tuple(dict.fromkeys(values))[:_MAX_CANDIDATES] or (_UNKNOWN,)
    for part in parts:
        if part.kind in ("list", "command", "compound", "pipeline", "if", "for", "while", "until", "function"):
            _visit(part, src, ctx)


def _function_name(node: Any) -> str:
    name = getattr(node, "name", None)
    return getattr(name, "word", "") if name is not None else ""


def _visit_function(node: Any, src: str, ctx: _Ctx) -> None:
    name = _function_name(node)
    body = node.body
    snippet = src[node.pos[0] : node.pos[1]]
    if name and _is_fork_bomb(name, body):
        raise _refuse(snippet, "is a fork bomb (a function that runs itself in a pipe or in the background)")
    ctx.funcs[name] = (body, src)
    # The body is checked once as written (arguments unknown) and again at each call.
    _visit(body, src, replace(ctx, positional=None, calls=ctx.calls + (name,)))


def _iter_nodes(node: Any) -> Iterable[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for attr in ("parts", "list"):
            children = getattr(current, attr, None)
            if isinstance(children, list):
                stack.extend(children)
        for attr in ("body", "command"):
            child = getattr(current, attr, None)
            if child is not None and hasattr(child, "kind"):
                stack.append(child)


def _calls(node: Any, name: str) -> bool:
    """Does `node` (a command, pipeline, list...) run the command `name` somewhere in it?"""
    for current in _iter_nodes(node):
        if current.kind == "command":
            first = next((p for p in current.parts if p.kind == "word"), None)
            if first is not None and first.word == name:
                return True
    return False


def _is_fork_bomb(name: str, body: Any) -> bool:
    """A function that runs itself in a pipeline or in the background: :(){ :|:& };:"""
    for node in _iter_nodes(body):
        if node.kind == "pipeline":
            stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
            if len(stages) > 1 and any(_calls(stage, name) for stage in stages):
                return True
        elif node.kind == "list":
            parts = node.parts
            for part, following in itertools.pairwise(parts):
                if following.kind == "operator" and following.op == "&" and _calls(part, name):
                    return True
    return False


def _visit_command(
    node: Any, src: str, ctx: _Ctx, stdin: Callable[[], str | None] | None, upstream: Sequence[Any]
) -> None:
    snippet = src[node.pos[0] : node.pos[1]]
    words: list[_Arg] = []
    redirects = []
    scripts: list[str] = []
    for part in node.parts:
        raw = src[part.pos[0] : part.pos[1]]
        if part.kind == "assignment":
            if not words:
                _assign(raw, ctx, scripts)
            else:  # `cmd NAME=value`: an argument
                arg, found = _expand(raw, ctx)
                scripts.extend(found)
                words.append(arg)
        elif part.kind == "word":
            arg, found = _expand(raw, ctx)
            scripts.extend(found)
            words.append(arg)
        elif part.kind == "redirect":
            redirects.append(part)
    for script in scripts:
        _check_script(script, ctx)
    here_text: str | None = None
    for redirect in redirects:
        text = _check_redirect(redirect, src, ctx, snippet)
        if text is not None:
            here_text = text
    if not words:
        return
    argv = _split_args(words)
    feed = stdin
    if here_text is not None:
        feed = _given(here_text)
    _check_argv(argv, ctx, snippet, feed, _Upstream(upstream, src, ctx))


def _given(text: str) -> Callable[[], str | None]:
    """A stdin that is known before the command runs (a here-string, a static pipe)."""
    return lambda: text


def _assign(raw: str, ctx: _Ctx, scripts: list[str]) -> None:
    name, _, value = raw.partition("=")
    name = name.rstrip("+")
    arg, found = _expand(value, ctx, assignment=True)
    scripts.extend(found)
    if re.fullmatch(r"[A-Za-z_]\w*", name):
        ctx.vars[name] = arg.values


_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


def _check_redirect(redirect: Any, src: str, ctx: _Ctx, snippet: str) -> str | None:
    """Check one redirection; return the text it feeds to stdin (heredoc, here-string)."""
    kind = redirect.type
    heredoc = getattr(redirect, "heredoc", None)
    if heredoc is not None:
        body = heredoc.value
        lines = body.split("\n")
        text = "\n".join(lines[:-1]) if len(lines) > 1 else body
        delimiter = src[redirect.output.pos[0] : redirect.output.pos[1]] if hasattr(redirect.output, "pos") else ""
        if not re.search(r"['\"\\]", delimiter):  # <<EOF: $( ) and backticks in the body run
            for script in _substitutions(text):
                _check_script(script, ctx)
        return text
    target = redirect.output
    if not hasattr(target, "pos"):
        return None  # 2>&1: a file descriptor
    arg, scripts = _expand(src[target.pos[0] : target.pos[1]], ctx)
    for script in scripts:
        _check_script(script, ctx)
    if kind == "<<<":
        return arg.text
    for value in arg.values:
        path = _resolve(value, ctx.cwd)
        if kind in _WRITE_REDIRECTS:
            _check_write_target(path, snippet)
        elif kind in ("<", "<&"):
            _check_read_target(path, snippet)
    return None


def _check_write_target(path: str, snippet: str) -> None:
    if _block_device(path):
        raise _refuse(snippet, f"would write to the block device {path}, destroying what is on it")
    found = _path_class(path)
    if found and found[0] != "keydir":
        raise _refuse(snippet, f"would write {found[1]}")


def _check_read_target(path: str, snippet: str) -> None:
    found = _path_class(path)
    if found and found[0] in ("key", "env", "shadow"):
        raise _refuse(snippet, f"would read {found[1]}")


@dataclass
class _Upstream:
    """The stages before this one in a pipeline (for `... | xargs`)."""

    stages: Sequence[Any]
    src: str
    ctx: _Ctx

    def items(self) -> list[str] | None:
        """What the previous stage prints, as words, when it can be known."""
        if not self.stages:
            return None
        last = self.stages[-1]
        if last.kind != "command":
            return None
        text = _pipeline_text(self.stages, self.src, self.ctx)
        if text is not None:
            return text.split()
        argv = [p for p in last.parts if p.kind == "word"]
        if not argv:
            return None
        name = posixpath.basename(argv[0].word)
        args = [_expand(self.src[w.pos[0] : w.pos[1]], self.ctx)[0] for w in argv[1:]]
        if name == "find":
            starts = [a.text for a in args if not a.text.startswith("-") and a.text not in ("(", "!")]
            starts = starts[:1] if starts else ["."]
            return [s for start in starts for s in (start, start.rstrip("/") + "/*")]
        if name == "ls":
            dirs = [a.text for a in args if not a.text.startswith("-")]
            return [d.rstrip("/") + "/*" for d in dirs] or None
        return None


_NO_UPSTREAM = _Upstream((), "", _Ctx())


# --- command words ------------------------------------------------------------------------------

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash", "csh", "tcsh"})
_STDIN_SHELLS = _SHELLS | {"at", "batch"}
_INTERPRETERS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval"),
    "php": ("-r",),
    "lua": ("-e",),
    "deno": ("eval",),
    "bun": ("-e", "--eval"),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command"),
    "powershell": ("-c", "-Command"),
    "tclsh": (),
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})

_META = _words(
    "ls stat test [ [[ file echo printf basename dirname realpath readlink du wc md5sum sha1sum "
    "sha224sum sha256sum sha384sum sha512sum b2sum cksum lsattr getfacl namei which type true "
    "false : find tree exa eza lsof"
)
_KEY_USERS = _META | _words("ssh ssh-add ssh-keygen ssh-copy-id ssh-agent sftp autossh chmod chown chgrp mosh sshfs")
_ENV_USERS = _META | frozenset({"source", ".", "chmod", "chown", "chgrp"})
# git subcommands that name a secret without reading it (untracking a committed .env is good)
_GIT_HARMLESS = frozenset({"check-ignore", "ls-files", "status"})
_SUDOERS_READERS = _META | _words("cat less more head tail grep egrep fgrep rg diff cmp visudo view bat zcat")
_ALLOWED_USERS: Mapping[str, frozenset[str]] = {
    "key": _KEY_USERS,
    "env": _ENV_USERS,
    "shadow": _META,
    "sudoers": _SUDOERS_READERS,
}
# option values that use a secret without revealing it (ssh keys for scp, env files for docker)
_SKIP_OPTION_VALUES: Mapping[str, frozenset[str]] = {
    "scp": frozenset({"-i", "-F", "-S", "-o"}),
    "rsync": frozenset({"-e", "--rsh"}),
    "docker": frozenset({"--env-file"}),
    "podman": frozenset({"--env-file"}),
    "docker-compose": frozenset({"--env-file"}),
    "git": frozenset({"-c"}),
}
_RECURSIVE_READERS = frozenset(
    {
        "cp",
        "scp",
        "rsync",
        "tar",
        "zip",
        "7z",
        "7za",
        "rar",
        "grep",
        "egrep",
        "rg",
        "ag",
        "rm",
        "mv",
        "cpio",
        "pax",
        "gsutil",
        "rclone",
        "aws",
    }
)
_PARTITION_TOOLS = frozenset({"fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "gparted"})
_PARTITION_LISTING = frozenset(
    {
        "-l",
        "--list",
        "-d",
        "--dump",
        "-J",
        "--json",
        "-s",
        "--show-size",
        "-g",
        "--show-geometry",
        "-V",
        "--verify",
        "-h",
        "--help",
        "-v",
        "--version",
        "print",
        "-p",
        "--print",
    }
)
_MKFS = frozenset(
    {"mke2fs", "mke4fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "mkudffs", "mkreiserfs", "newfs", "wipefs", "mkfs"}
)


_GLOB_SUSPECTS = (
    "rm",
    "dd",
    "mkfs",
    "mke2fs",
    "wipefs",
    "shred",
    "chmod",
    "chown",
    "find",
    "sh",
    "bash",
    "dash",
    "zsh",
    "tee",
    "mv",
    "cp",
    "xargs",
    "eval",
    "sudo",
    "env",
    "python3",
    "perl",
)


def _name_of(arg: _Arg) -> list[str]:
    """Candidate command names of the first word (basename; `\\rm` already unquoted)."""
    names = []
    for value in arg.values[:4]:
        if value and value != _UNKNOWN:
            names.append(posixpath.basename(value.rstrip("/")) or value)
    return names


def _check_argv(
    argv: list[_Arg],
    ctx: _Ctx,
    snippet: str,
    stdin: Callable[[], str | None] | None = None,
    upstream: _Upstream = _NO_UPSTREAM,
) -> None:
    if not argv:
        return
    names = _name_of(argv[0])
    if not names:
        # The command itself is not known ($CMD -rf /, $SHELL -c '...'): judge its arguments as
        # if it were rm, chmod or a shell.
        if argv[0].dynamic and len(argv) > 1:
            _check_rm(argv, ctx, snippet)
            _check_chmod(argv, ctx, snippet, "chmod")
            _check_shell("sh", argv[1:], ctx, snippet, None)
        return
    for name in list(dict.fromkeys(names)):
        if _has_glob(name):  # /???/r? -rf /: a glob that may name a dangerous program
            names += [known for known in _GLOB_SUSPECTS if _gmatch(name, known)]
    for name in dict.fromkeys(names):
        _check_one(name, argv, ctx, snippet, stdin, upstream)


def _check_one(
    name: str, argv: list[_Arg], ctx: _Ctx, snippet: str, stdin: Callable[[], str | None] | None, upstream: _Upstream
) -> None:
    args = argv[1:]
    values = [a.text for a in args]
    # functions defined earlier in the same command line
    if name in ctx.funcs and name not in ctx.calls:
        body, src = ctx.funcs[name]
        call_ctx = replace(ctx, positional=tuple(values), calls=ctx.calls + (name,))
        _visit(body, src, call_ctx)
        return
    wrapped = _unwrap(name, argv, ctx, snippet, stdin)
    if wrapped is not None:
        new_argv, new_ctx = wrapped
        _check_argv(new_argv, new_ctx, snippet, stdin, upstream)
        return
    if name in ("cd", "pushd"):
        target = next((a for a in args if not a.text.startswith("-") or a.text == "-"), None)
        if target is None:
            ctx.cwd = _HOME
        elif target.dynamic or target.text == "-":
            ctx.cwd = None
        else:
            resolved = _resolve(target.text, ctx.cwd)
            ctx.cwd = resolved if resolved.startswith("/") else None
        return
    if name == "xargs":
        _check_xargs(argv, ctx, snippet, upstream)
        return
    if name == "set":
        if "--" in values:
            ctx.positional = tuple(values[values.index("--") + 1 :])
        elif values and not values[0].startswith(("-", "+")):
            ctx.positional = tuple(values)
        return
    checker = _CHECKERS.get(name)
    if checker is not None:
        checker(argv, ctx, snippet)
    if name.startswith("mkfs") or name in _MKFS:
        _check_mkfs(argv, ctx, snippet)
    base = re.sub(r"[\d.]+$", "", name)
    if base in _INTERPRETERS or name in _INTERPRETERS:
        _check_interpreter(base if base in _INTERPRETERS else name, argv, ctx, snippet)
    if name in _AWKS:
        program = next((a.text for a in args if not a.text.startswith("-")), "")
        _check_code(program, ctx, snippet)
    _check_protected_args(name, argv, ctx, snippet)


# --- wrappers: commands that run another command ---------------------------------------------

# options that take a value, per wrapper
_WRAPPER_OPTS: Mapping[str, frozenset[str]] = {
    "sudo": frozenset(
        {
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-T",
            "-U",
            "-R",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--close-from",
            "--chdir",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
            "--chroot",
        }
    ),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "unbuffer": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "busybox": frozenset(),
    "toybox": frozenset(),
    "systemd-run": frozenset(
        {
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--working-directory",
            "--description",
            "--slice",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--nice",
            "--on-calendar",
            "--on-active",
        }
    ),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-E", "-P", "-I", "-b", "-X", "-O", "-S"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-E", "-n"}),
    "firejail": frozenset(),
    "fakeroot": frozenset({"-l", "-s", "-i"}),
    "catchsegv": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "torsocks": frozenset(),
    "sg": frozenset(),
}


def _skip_options(args: list[_Arg], with_value: frozenset[str], *, stop_at_first: bool = True) -> int:
    """Index of the first non-option argument (the wrapped command)."""
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            return i + 1
        if not value.startswith("-") or value == "-":
            return i
        option = value.split("=", 1)[0]
        if option in with_value and "=" not in value:
            i += 2
            continue
        if len(option) > 2 and not option.startswith("--") and option[:2] in with_value:
            i += 1  # -uroot
            continue
        i += 1
    return i


def _unwrap(
    name: str, argv: list[_Arg], ctx: _Ctx, snippet: str, stdin: Callable[[], str | None] | None
) -> tuple[list[_Arg], _Ctx] | None:
    """For a command that runs another one, the inner argv (shell strings are checked here)."""
    args = argv[1:]
    if name in _SHELLS:
        _check_shell(name, args, ctx, snippet, stdin)
        return None
    if name in ("at", "batch"):
        if stdin is not None:
            text = stdin()
            if text:
                _check_script(text, ctx)
        return None
    if name == "eval":
        _check_script(" ".join(a.text for a in args), ctx)
        return None
    if name == "trap":
        if args and args[0].text not in ("-l", "-p"):
            _check_script(args[0].text, ctx)
        return None
    if name == "alias":
        for arg in args:
            if "=" in arg.text:
                _check_script(arg.text.split("=", 1)[1], ctx)
        return None
    if name == "watch":
        start = _skip_options(args, frozenset({"-n", "--interval", "-q", "--equexit", "-d"}))
        if start < len(args):
            _check_script(" ".join(a.text for a in args[start:]), ctx)
        return None
    if name in ("su", "runuser"):
        for i, arg in enumerate(args):
            if arg.text in ("-c", "--command") and i + 1 < len(args):
                _check_script(args[i + 1].text, ctx)
            elif arg.text.startswith("--command="):
                _check_script(arg.text.split("=", 1)[1], ctx)
        if name == "runuser":
            start = _skip_options(args, frozenset({"-u", "-g", "-G", "--user", "--group"}))
            if start < len(args) and "-u" in [a.text for a in args]:
                return args[start:], ctx
        return None
    if name == "script":
        for i, arg in enumerate(args):
            if i + 1 < len(args) and (arg.text in ("-c", "--command") or re.fullmatch(r"-[a-z]*c", arg.text)):
                _check_script(args[i + 1].text, ctx)
        return None
    if name == "ssh":
        _check_ssh(args, ctx)
        return None
    if name == "flock":
        start = _skip_options(args, frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}))
        rest = args[start + 1 :]
        if rest and rest[0].text in ("-c", "--command") and len(rest) > 1:
            _check_script(rest[1].text, ctx)
            return None
        return (rest, ctx) if rest else None
    if name == "env":
        return _unwrap_env(args, ctx)
    if name == "sudo":
        if any(a.text in ("-e", "--edit") for a in args):
            start = _skip_options(args, _WRAPPER_OPTS["sudo"])
            return [_literal("sudoedit"), *args[start:]], ctx
        if any(a.text in ("-l", "--list", "-v", "--validate", "-k", "-K") for a in args[:1]):
            return None
        start = _skip_options(args, _WRAPPER_OPTS["sudo"])
        return (args[start:], ctx) if start < len(args) else None
    if name == "command":
        if any(a.text in ("-v", "-V") for a in args[:2]):
            return None
        start = _skip_options(args, frozenset())
        return (args[start:], ctx) if start < len(args) else None
    if name == "nice":
        start = _skip_options(args, _WRAPPER_OPTS["nice"])
        # nice -10 cmd
        while start < len(args) and re.fullmatch(r"-?-?\d+", args[start].text):
            start += 1
        return (args[start:], ctx) if start < len(args) else None
    if name == "timeout":
        start = _skip_options(args, frozenset({"-s", "--signal", "-k", "--kill-after"}))
        start += 1  # the duration
        return (args[start:], ctx) if start < len(args) else None
    if name in ("chrt", "taskset"):
        start = _skip_options(args, frozenset({"-c", "--cpu-list"} if name == "taskset" else set()))
        if any(a.text in ("-p", "--pid") for a in args):
            return None
        start += 1  # the priority or the mask
        if name == "taskset" and any(a.text in ("-c", "--cpu-list") for a in args):
            start -= 1
        return (args[start:], ctx) if start < len(args) else None
    if name == "chroot":
        start = _skip_options(args, frozenset({"--userspec", "--groups"}))
        rest = args[start + 1 :]
        return (rest, ctx) if rest else None
    if name in ("ionice",) and any(a.text in ("-p", "--pid", "-P", "--pgid", "-u", "--uid") for a in args):
        return None
    if name in _WRAPPER_OPTS:
        start = _skip_options(args, _WRAPPER_OPTS[name])
        return (args[start:], ctx) if start < len(args) else None
    return None


def _unwrap_env(args: list[_Arg], ctx: _Ctx) -> tuple[list[_Arg], _Ctx] | None:
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value in ("-u", "--unset", "-C", "--chdir", "-P"):
            if value in ("-C", "--chdir") and i + 1 < len(args):
                ctx.cwd = _resolve(args[i + 1].text, ctx.cwd) if not args[i + 1].dynamic else None
            i += 2
            continue
        if (
            value in ("-S", "--split-string")
            or value.startswith("--split-string=")
            or (value.startswith("-S") and len(value) > 2)
        ):
            if value.startswith("--split-string="):
                string, i = value.split("=", 1)[1], i + 1
            elif value.startswith("-S") and len(value) > 2:
                string, i = value[2:], i + 1
            else:
                string, i = (args[i + 1].text if i + 1 < len(args) else ""), i + 2
            rest = " ".join(a.raw for a in args[i:])
            _check_script(string + " " + rest, ctx)
            return None
        if value.startswith("-") and value != "-":
            i += 1
            continue
        match = re.fullmatch(r"([A-Za-z_]\w*)=(.*)", value, re.DOTALL)
        if match:
            ctx.vars[match.group(1)] = (match.group(2),)
            i += 1
            continue
        break
    return (args[i:], ctx) if i < len(args) else None


def _check_shell(name: str, args: list[_Arg], ctx: _Ctx, snippet: str, stdin: Callable[[], str | None] | None) -> None:
    """bash -c STRING, bash -s / bash with its script on stdin."""
    i = 0
    command_string: str | None = None
    script_file = False
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if value.startswith("-") and not value.startswith("--") and "c" in value[1:]:
            rest = [a for a in args[i + 1 :] if a.text != "--"]
            if rest:
                command_string = rest[0].text
            break
        if value.startswith(("-", "+")) and value not in ("-", "+"):
            i += 1
            continue
        break
    else:
        i = len(args)
    if command_string is not None:
        _check_script(command_string, ctx)
        return
    if i < len(args) and args[i].text not in ("-s",):
        script_file = True
    if not script_file and stdin is not None:
        text = stdin()
        if text:
            _check_script(text, ctx)


_SSH_OPTS = _words("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")


def _check_ssh(args: list[_Arg], ctx: _Ctx) -> None:
    """ssh [options] host [command...]: the remote command is checked like a local one."""
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value.startswith("-") and len(value) > 1:
            letter = value[:2]
            i += 2 if (letter in _SSH_OPTS and len(value) == 2) else 1
            continue
        break
    rest = args[i + 1 :]
    if rest:
        remote = " ".join(a.text for a in rest)
        _check_script(remote, _Ctx(depth=ctx.depth))


def _check_xargs(argv: list[_Arg], ctx: _Ctx, snippet: str, upstream: _Upstream) -> None:
    args = argv[1:]
    replace_str: str | None = None
    i = 0
    with_value = {
        "-I",
        "-n",
        "-L",
        "-P",
        "-d",
        "-a",
        "-E",
        "-s",
        "-e",
        "--max-args",
        "--max-lines",
        "--max-procs",
        "--delimiter",
        "--arg-file",
        "--eof",
        "--max-chars",
        "--replace",
    }
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if not value.startswith("-"):
            break
        if value == "-I" and i + 1 < len(args):
            replace_str = args[i + 1].text
            i += 2
            continue
        if value.startswith("-I") and len(value) > 2:
            replace_str = value[2:]
        elif value in ("-i", "--replace"):
            replace_str = "{}"
        elif value.startswith(("-i", "--replace=")):
            replace_str = value.split("=", 1)[1] if "=" in value else value[2:]
        if value in with_value and "=" not in value:
            i += 2
            continue
        i += 1
    command = args[i:] or [_literal("echo")]
    items = upstream.items()
    if items is None:
        feed: list[_Arg] = [_Arg("", ("", _UNKNOWN), dynamic=True)]
    else:
        feed = [_literal(item) for item in items[:_MAX_CANDIDATES]]
    if replace_str:
        for item in feed:
            new = [_Arg(a.raw, tuple(v.replace(replace_str, item.text) for v in a.values), a.dynamic) for a in command]
            _check_argv(new, ctx, snippet)
    else:
        _check_argv(list(command) + feed, ctx, snippet)


# --- specific commands -------------------------------------------------------------------------


def _split_options(args: list[_Arg]) -> tuple[list[str], list[_Arg]]:
    """GNU-style: options anywhere until `--`; returns (options, operands)."""
    options: list[str] = []
    operands: list[_Arg] = []
    done = False
    for arg in args:
        value = arg.text
        if not done and value == "--":
            done = True
            continue
        if not done and value.startswith("-") and len(value) > 1 and not arg.dynamic:
            options.append(value)
        else:
            operands.append(arg)
    return options, operands


def _short_flags(options: list[str]) -> set[str]:
    flags: set[str] = set()
    for option in options:
        if not option.startswith("--"):
            flags.update(option[1:])
    return flags


def _long_flag(options: list[str], *names: str) -> bool:
    for option in options:
        if option.startswith("--"):
            stem = option.split("=", 1)[0]
            if any(len(stem) > 3 and name.startswith(stem) for name in names):
                return True
    return False


def _check_rm(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    options, targets = _split_options(argv[1:])
    if _long_flag(options, "--no-preserve-root"):
        raise _refuse(snippet, "turns off rm's protection of / (--no-preserve-root)")
    recursive = bool(_short_flags(options) & {"r", "R"}) or _long_flag(options, "--recursive")
    for arg in targets:
        for value in arg.values:
            path = _resolve(value, ctx.cwd)
            what = _critical(path)
            if what:
                if arg.dynamic and _UNKNOWN not in value and value != arg.raw:
                    raise _refuse(
                        snippet,
                        f"would delete {what} if a variable in `{arg.raw}` is empty "
                        f"or unset (write ${{VAR:?}} to stop on an unset variable)",
                    )
                raise _refuse(snippet, f"would delete {what}")
            found = _path_class(path)
            if found and found[0] == "keydir" and recursive:
                raise _refuse(snippet, f"would delete {found[1]} with its private keys")
            if found and found[0] == "keydir" and _has_glob(path):
                raise _refuse(snippet, f"would delete {found[1]}")


def _check_find(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    args = argv[1:]
    i = 0
    while (
        i < len(args)
        and args[i].text in ("-H", "-L", "-P", "-D")
        or (i < len(args) and re.fullmatch(r"-O\d", args[i].text))
    ):
        i += 2 if args[i].text == "-D" else 1
    starts: list[_Arg] = []
    while i < len(args) and not (args[i].text.startswith("-") or args[i].text in ("(", "!", ")")):
        starts.append(args[i])
        i += 1
    expr = args[i:]
    texts = [a.text for a in expr]
    name_pattern = None
    for flag in ("-name", "-iname"):
        if flag in texts and texts.index(flag) + 1 < len(texts):
            name_pattern = texts[texts.index(flag) + 1]
            break
    filtered = name_pattern is not None and not _broad(name_pattern)
    start_values = [(_resolve(v, ctx.cwd), a) for a in (starts or [_literal(".")]) for v in a.values]
    if "-delete" in texts:
        for path, _arg in start_values:
            what = _critical(path)
            if what and not filtered:
                raise _refuse(snippet, f"would delete everything under {_show(path)} ({what})")
            found = _path_class(path)
            if found and found[0] == "keydir":
                raise _refuse(snippet, f"would delete files in {found[1]}")
    # -exec/-execdir/-ok: the command runs with {} = each found path
    j = 0
    while j < len(expr):
        if expr[j].text in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            while k < len(expr) and expr[k].text not in (";", "+", "\\;"):
                k += 1
            command = expr[j + 1 : k]
            for path, _arg in start_values:
                item = path.rstrip("/") + "/" + (name_pattern or "*")
                items = (item,) if filtered else (path or ".", item)
                sub = [
                    _Arg(a.raw, tuple(dict.fromkeys(v.replace("{}", it) for it in items for v in a.values)), a.dynamic)
                    for a in command
                ]
                _check_argv(sub, ctx, snippet)
            j = k + 1
        else:
            j += 1


def _check_dd(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    for arg in argv[1:]:
        for value in arg.values:
            if value.startswith("of="):
                _check_write_target(_resolve(value[3:], ctx.cwd), snippet)
            elif value.startswith("if="):
                _check_read_target(_resolve(value[3:], ctx.cwd), snippet)


def _check_writes_operands(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    """tee, truncate, shred: every operand is written."""
    _options, operands = _split_options(argv[1:])
    for arg in operands:
        for value in arg.values:
            path = _resolve(value, ctx.cwd)
            _check_write_target(path, snippet)


def _check_copy(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    """cp, install, mv, rsync, ln: the destination is written; mv takes its sources away."""
    name = posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = _split_options(args)
    target_dir = None
    for index, arg in enumerate(args):
        if arg.text in ("-t", "--target-directory") and index + 1 < len(args):
            target_dir = args[index + 1]
        elif arg.text.startswith("--target-directory="):
            target_dir = _literal(arg.text.split("=", 1)[1])
    if target_dir is not None:
        dests, sources = [target_dir], [a for a in operands if a is not target_dir]
    else:
        dests, sources = operands[-1:], operands[:-1]
    for arg in dests:
        for value in arg.values:
            _check_write_target(_resolve(value, ctx.cwd), snippet)
    if name == "mv":
        for arg in sources:
            for value in arg.values:
                what = _critical(_resolve(value, ctx.cwd))
                if what:
                    raise _refuse(snippet, f"would move away {what}")
    if name == "rsync" and any(o.startswith("--del") or o == "--remove-source-files" for o in options):
        for arg in dests:
            for value in arg.values:
                what = _critical(_resolve(value, ctx.cwd))
                if what:
                    raise _refuse(snippet, f"would delete files in {what} (rsync --delete)")


def _check_chmod(argv: list[_Arg], ctx: _Ctx, snippet: str, name: str | None = None) -> None:
    name = name or posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = _split_options(args)
    if name == "chmod":
        # chmod -x file: "-x" is a mode, not an option
        options = [o for o in options if re.fullmatch(r"-[Rcfv]+|--.*", o)]
        modes = [a for a in args if re.fullmatch(r"-[rwxXst]+", a.text)]
        operands = [a for a in operands if a not in modes]
    if _long_flag(options, "--no-preserve-root"):
        raise _refuse(snippet, "turns off the protection of / (--no-preserve-root)")
    recursive = "R" in _short_flags(options) or _long_flag(options, "--recursive")
    has_reference = any(o.startswith("--reference") for o in options)
    if name in ("chmod", "chown", "chgrp") and not has_reference and not (name == "chmod" and _modes_present(args)):
        operands = operands[1:]  # the mode or the owner
    elif name == "setfacl":
        operands = [a for a in operands if not re.fullmatch(r"[ugom]:.*|[ugom]:?[^/]*:.*", a.text)]
    for arg in operands:
        for value in arg.values:
            path = _resolve(value, ctx.cwd)
            if path == "/":
                raise _refuse(snippet, f"would change the {'permissions' if name == 'chmod' else 'owner'} of /")
            if recursive:
                what = _critical(path)
                # a user's own home, /usr/local, /opt, /srv, /mnt: chown -R there is routine
                if what and not (_home_dir(path) or path in _OWNABLE or path.startswith(_HOME)):
                    change = "permissions" if name in ("chmod", "setfacl") else "ownership"
                    raise _refuse(snippet, f"would change the {change} of {what}, recursively")


def _modes_present(args: list[_Arg]) -> bool:
    """chmod's mode given as an option-looking word (`chmod -x file`)."""
    return any(re.fullmatch(r"-[rwxXst]+", a.text) for a in args)


_OWNABLE = frozenset({"/usr/local", "/opt", "/srv", "/mnt", "/media", "/var/www", "/snap"})


def _check_mkfs(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    name = posixpath.basename(argv[0].text)
    _options, operands = _split_options(argv[1:])
    for arg in operands:
        if arg.dynamic:
            raise _refuse(snippet, f"runs {name} on a device that cannot be known before it runs")
        path = _resolve(arg.text, ctx.cwd)
        if path.startswith("/dev/") and path not in ("/dev/null", "/dev/zero"):
            raise _refuse(snippet, f"would format or wipe {path} ({name}), destroying what is on it")


def _check_blkdiscard(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    _options, operands = _split_options(argv[1:])
    if operands:
        raise _refuse(snippet, f"would discard every block of {operands[0].text}")


def _check_partition(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    name = posixpath.basename(argv[0].text)
    values = [a.text for a in argv[1:]]
    destructive = {"mklabel", "mktable", "mkpart", "rm", "resizepart", "resize", "rescue", "mkfs"}
    if name == "parted" and any(v in destructive for v in values):
        raise _refuse(snippet, "would rewrite a partition table")
    if name == "sgdisk" and any(
        re.fullmatch(r"-[A-Za-z]*[ZzondgG][A-Za-z]*", v)
        or v.startswith(("--zap", "--clear", "--new", "--delete", "--mbrtogpt", "--largest-new"))
        for v in values
    ):
        raise _refuse(snippet, "would rewrite a partition table")
    if name in ("parted", "sgdisk"):
        return
    if not any(v in _PARTITION_LISTING or re.fullmatch(r"-[a-z]*l[a-z]*", v) for v in values):
        raise _refuse(snippet, f"would rewrite a partition table ({name} without a listing option)")


def _check_hdparm(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    if any(
        a.text.startswith(
            (
                "--security-erase",
                "--trim-sector",
                "--write-sector",
                "--make-bad-sector",
                "--fwdownload",
                "--dco-restore",
            )
        )
        for a in argv[1:]
    ):
        raise _refuse(snippet, "would erase or damage a disk")


def _check_subcommand(bad: frozenset[str], what: str) -> Callable[[list[_Arg], _Ctx, str], None]:
    def check(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
        if any(a.text in bad for a in argv[1:]):
            raise _refuse(snippet, what)

    return check


def _check_badblocks(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    options, _operands = _split_options(argv[1:])
    if "w" in _short_flags(options):
        raise _refuse(snippet, "would overwrite a whole disk (badblocks -w)")


def _check_kill(argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    args = [a.text for a in argv[1:]]
    i = 0
    if i < len(args) and args[i] in ("-s", "-n", "--signal"):
        i += 2
    elif i < len(args) and args[i].startswith("-") and args[i] != "--" and len(args) > 1:
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    if "-1" in args[i:]:
        raise _refuse(snippet, "would kill every process on the machine (kill -1)")


_CHECKERS: Mapping[str, Callable[[list[_Arg], _Ctx, str], None]] = {
    "rm": _check_rm,
    "find": _check_find,
    "dd": _check_dd,
    "tee": _check_writes_operands,
    "truncate": _check_writes_operands,
    "shred": _check_writes_operands,
    "cp": _check_copy,
    "install": _check_copy,
    "mv": _check_copy,
    "rsync": _check_copy,
    "ln": _check_copy,
    "chmod": _check_chmod,
    "chown": _check_chmod,
    "chgrp": _check_chmod,
    "setfacl": _check_chmod,
    "blkdiscard": _check_blkdiscard,
    **{tool: _check_partition for tool in _PARTITION_TOOLS},
    "hdparm": _check_hdparm,
    "nvme": _check_subcommand(frozenset({"format", "sanitize"}), "would erase an NVMe disk"),
    "cryptsetup": _check_subcommand(
        frozenset({"luksFormat", "erase", "luksErase", "reencrypt"}), "would erase the encryption header of a disk"
    ),
    "zpool": _check_subcommand(frozenset({"destroy", "labelclear"}), "would destroy a ZFS pool"),
    "badblocks": _check_badblocks,
    "kill": _check_kill,
}


def _check_protected_args(name: str, argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    """Arguments naming a secret: refused unless the command only uses it (ssh -i key)."""
    if name == "ssh":
        return
    if name == "git":
        subcommand = next((a.text for a in argv[1:] if not a.text.startswith("-")), None)
        if subcommand in _GIT_HARMLESS or (subcommand == "rm" and any(a.text == "--cached" for a in argv)):
            return
    skip = _SKIP_OPTION_VALUES.get(name, frozenset())
    recursive = _recursive_reader(name, argv)
    args = argv[1:]
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        value0 = arg.text
        if value0 in skip:
            skip_next = True
            continue
        if any(value0.startswith(option + "=") for option in skip if option.startswith("--")):
            continue
        for value in arg.values:
            candidates = [value]
            if "=" in value:
                candidates.append(value.split("=", 1)[1])
            candidates += [c[1:] for c in candidates if c.startswith("@")]  # curl -d @file
            for candidate in candidates:
                if candidate.startswith(("ssh ", "/usr/bin/ssh ")):
                    _check_script(candidate, ctx)
                    continue
                found = _path_class(_resolve(candidate, ctx.cwd))
                if found is None:
                    continue
                kind, what = found
                if kind == "keydir":
                    if recursive:
                        raise _refuse(snippet, f"would copy or read {what}, which holds private keys")
                    continue
                if name in _ALLOWED_USERS[kind]:
                    continue
                if kind == "sudoers":
                    raise _refuse(snippet, f"would change {what}; use visudo")
                if kind == "env":
                    raise _refuse(
                        snippet,
                        f"would read or write {what}; to load it into the shell without "
                        f"showing it, `set -a; . ./.env; set +a` is allowed",
                    )
                raise _refuse(snippet, f"would read or write {what}")


def _recursive_reader(name: str, argv: list[_Arg]) -> bool:
    if name not in _RECURSIVE_READERS:
        return False
    if name in ("tar", "rsync", "rg", "ag", "mv", "7z", "7za", "rar", "cpio", "pax", "rclone", "gsutil", "aws"):
        return True
    options, _ = _split_options(argv[1:])
    flags = _short_flags(options)
    if name in ("grep", "egrep"):
        return (
            bool(flags & {"r", "R"})
            or _long_flag(options, "--recursive", "--dereference-recursive")
            or any(o.startswith("--directories=rec") for o in options)
        )
    return bool(flags & {"r", "R", "a"}) or _long_flag(options, "--recursive", "--archive")


# --- code given to interpreters ------------------------------------------------------------------

_STRING_LITERAL = re.compile(r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)\"""")
_SHELL_OUT = re.compile(
    r"\b(os\.system|os\.popen|os\.exec\w*|subprocess|Popen|check_output|check_call|system|exec|execSync|spawn\w*|"
    r"child_process|shell_exec|passthru|proc_open|popen|qx|run|call|do shell script|Runtime)\b|`|%x\{|%x\(|qx\{|qx\("
)
_DELETE_TREE = re.compile(
    r"(rmtree|rm_rf|rm_r|rmSync|rimraf|remove_tree|rmdirSync|deltree|removedirs|remove_all|rmdir)\s*\(\s*(.*?)\)",
    re.DOTALL,
)
_HOME_EXPR = re.compile(
    r"Path\.home\(\)|expanduser\(\s*['\"]~['\"]\s*\)|environ\[\s*['\"]HOME|getenv\(\s*['\"]HOME|"
    r"\$ENV\{\s*HOME|ENV\[\s*['\"]HOME|os\.homedir\(\)|process\.env\.HOME"
)
_FORK_LOOP = re.compile(
    r"fork\s+while\s+fork|while\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]?[^\n]{0,80}?\bfork\s*\(|"
    r"for\s*\(\s*;\s*;\s*\)\s*\{?\s*[^\n]{0,40}?fork\s*\(|loop\s*\{?\s*fork",
    re.DOTALL,
)


def _check_interpreter(base: str, argv: list[_Arg], ctx: _Ctx, snippet: str) -> None:
    flags = _INTERPRETERS.get(base, ())
    args = argv[1:]
    for index, arg in enumerate(args):
        text = arg.text
        code = None
        if text in flags and index + 1 < len(args):
            code = args[index + 1].text
        elif text.startswith("-") and not text.startswith("--") and len(text) > 2 and text[:2] in flags:
            code = text[2:]
        elif re.fullmatch(r"-[A-Za-z]*[ceE]", text) and index + 1 < len(args) and base in ("perl", "ruby", "python"):
            code = args[index + 1].text
        if code:
            _check_code(code, ctx, snippet)


def _check_code(code: str, ctx: _Ctx, snippet: str) -> None:
    """Code for python/perl/ruby/node/awk: fork loops, shell-outs, deleted trees, secret paths."""
    if not code:
        return
    if _FORK_LOOP.search(code):
        raise _refuse(snippet, "is a fork bomb (a loop that forks without end)")
    literals = [m.group(1) if m.group(1) is not None else m.group(2) for m in _STRING_LITERAL.finditer(code)]
    literals = [re.sub(r"\\(.)", r"\1", lit) for lit in literals]
    if _SHELL_OUT.search(code):
        for literal in literals:
            if re.search(r"[a-z]", literal) and " " in literal.strip():
                _check_script(literal, ctx)
        for listing in re.finditer(r"[\[(]\s*((?:['\"][^'\"]*['\"]\s*,\s*)+['\"][^'\"]*['\"])\s*,?\s*[\])]", code):
            words = re.findall(r"['\"]([^'\"]*)['\"]", listing.group(1))
            _check_argv([_literal(w) for w in words], ctx, snippet)
    for match in _DELETE_TREE.finditer(code):
        argument = match.group(2)
        if _HOME_EXPR.search(argument):
            raise _refuse(snippet, "would delete a home directory")
        quoted = re.search(r"['\"]([^'\"]*)['\"]", argument)
        if quoted:
            what = _critical(_resolve(_expand_tilde_text(quoted.group(1)), ctx.cwd))
            if what:
                raise _refuse(snippet, f"would delete {what}")
    writes = re.search(r"['\"](?:[wa]b?\+?|r\+b?|rb\+)['\"]|write|O_WRONLY|O_RDWR|>", code) is not None
    for literal in literals:
        path = _resolve(_expand_tilde_text(literal), ctx.cwd)
        found = _path_class(path)
        if found and found[0] in ("key", "env", "shadow"):
            raise _refuse(snippet, f"would read or write {found[1]}")
        if found and found[0] == "sudoers" and writes:
            raise _refuse(snippet, f"would change {found[1]}")
        if _block_device(path) and writes:
            raise _refuse(snippet, f"would write to the block device {path}")


# --- the fallback: a word-by-word scan of text bashlex could not parse --------------------------

_RESERVED = _words("if then else elif fi do done while until for case esac in select function ! { } [[ ]] time coproc")
_REDIRECT = re.compile(r"(\d*|&)(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)")
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n")
_FORK_BOMB_TEXT = re.compile(r"(?:function\s+)?([^\s(){};|&<>'\"]+)\s*\(\s*\)\s*\{([^}]*)\}")


def _read_word(text: str, i: int) -> int:
    """Index just past the shell word starting at `i`."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n;&|()<>":
            if ch in "<>" and text.startswith("(", i + 1):  # <(...) inside a word
                i = _match_close(text, i + 1)
                continue
            if ch in "()" and i > 0 and text[i - 1] == "$":
                pass
            else:
                return i
        if ch == "\\":
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif ch == '"':
            i = _skip_double(text, i)
        elif ch == "`":
            i = _find_backtick(text, i + 1) + 1
        elif ch == "$" and text.startswith("$(", i):
            i = _match_close(text, i + 1)
        elif ch == "$" and text.startswith("${", i):
            i = _match_close(text, i + 1, "{", "}")
        else:
            i += 1
    return min(i, n)


def _lex(text: str) -> list[tuple[str, str, str]]:
    """Words, operators and redirections of `text`: (kind, value, target)."""
    items: list[tuple[str, str, str]] = []
    i, n = 0, len(text)
    at_word_start = True
    while i < n:
        ch = text[i]
        if ch in " \t\r":
            i += 1
            at_word_start = True
            continue
        if ch == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        if ch == "#" and at_word_start:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch in "<>" and text.startswith("(", i + 1):
            end = _read_word(text, i)
            items.append(("word", text[i:end], ""))
            i = end
            continue
        match = _REDIRECT.match(text, i)
        if match and (ch in "<>&" or ch.isdigit()) and match.group(2):
            i = match.end()
            while i < n and text[i] in " \t":
                i += 1
            end = _read_word(text, i)
            items.append(("redir", match.group(2) if match.group(1) != "&" else "&" + match.group(2), text[i:end]))
            i = end
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                items.append(("op", op, ""))
                i += len(op)
                break
        else:
            end = max(_read_word(text, i), i + 1)
            items.append(("word", text[i:end], ""))
            i = end
        at_word_start = True
    return items


def _fallback(text: str, ctx: _Ctx, *, broad: bool) -> None:
    """Check text bashlex could not parse, one simple command at a time; with `broad`, also
    every quoted string in it as if it were a command, and fork-bomb shapes anywhere."""
    if broad:
        for match in _FORK_BOMB_TEXT.finditer(text):
            name, body = match.group(1), match.group(2)
            pieces = re.split(r"[\s;|&]+", body)
            if name in pieces and ("|" in body or "&" in body):
                raise _refuse(
                    match.group(0), "is a fork bomb (a function that runs itself in a pipe or in the background)"
                )
    items = _lex(text)
    segment: list[str] = []
    redirects: list[tuple[str, str]] = []
    previous: list[str] | None = None
    previous_op = ""

    def flush(op: str) -> None:
        nonlocal segment, redirects, previous, previous_op
        words = list(segment)
        while words and words[0] in _RESERVED:
            words.pop(0)
        if words and words[0].endswith("()"):
            words = []
        _fallback_segment(words, redirects, ctx, previous if previous_op == "|" else None, broad)
        previous, previous_op = words, op
        segment, redirects = [], []

    for kind, value, target in items:
        if kind == "word":
            segment.append(value)
        elif kind == "redir":
            redirects.append((value, target))
        else:
            flush(value)
    flush("")


def _fallback_segment(
    words: list[str], redirects: list[tuple[str, str]], ctx: _Ctx, piped_from: list[str] | None, broad: bool
) -> None:
    snippet = " ".join(words + [f"{op} {target}" for op, target in redirects])
    args: list[_Arg] = []
    for index, raw in enumerate(words):
        if not args and re.match(r"[A-Za-z_]\w*\+?=", raw):
            scripts: list[str] = []
            _assign(raw, ctx, scripts)
            for script in scripts:
                _check_script(script, ctx)
            continue
        arg, scripts = _expand(raw, ctx)
        for script in scripts:
            _check_script(script, ctx)
        args.append(arg)
        if broad and index > 0:
            for value in arg.values:
                if re.search(r"\s", value.strip()) and value != raw:
                    with contextlib.suppress(RecursionError):
                        _check_script(value, ctx)
    here: str | None = None
    for op, target_raw in redirects:
        target, scripts = _expand(target_raw, ctx)
        for script in scripts:
            _check_script(script, ctx)
        if op == "<<<":
            here = target.text
            continue
        if op in ("<<", "<<-"):
            continue
        for value in target.values:
            path = _resolve(value, ctx.cwd)
            if op in _WRITE_REDIRECTS or op.startswith("&"):
                _check_write_target(path, snippet)
            elif op in ("<", "<&"):
                _check_read_target(path, snippet)
    if not args:
        return
    argv = _split_args(args)
    stdin: Callable[[], str | None] | None = None
    if here is not None:
        stdin = _given(here)
    elif piped_from:
        produced = _transform([_expand(w, ctx)[0].text for w in piped_from], None)
        if produced is not None:
            stdin = _given(produced)
    _check_argv(argv, ctx, snippet, stdin)


# =============================================================================================
# The floor for every tool
# =============================================================================================


def floor_violation(tool: str, args: Mapping[str, Any]) -> str | None:
    """Why the floor refuses this tool call, as a sentence the model can read; None if it does not.

    execute_command: the command is parsed and checked (see the module doc); its `cwd`
    argument, when given, resolves relative paths. read_file/grep: reading a private key, a
    .env file or /etc/shadow (grep also a .ssh directory). write_file: those, the sudo
    configuration and block devices. list_dir, glob and ask_machine(s) have no floor (the remote
    agent of ask_machine applies its own).
    """
    if not isinstance(args, Mapping):
        return None
    if tool == "execute_command":
        command = args.get("command")
        if not isinstance(command, str):
            return None
        cwd = args.get("cwd") if isinstance(args.get("cwd"), str) else None
        return check_command(command, cwd=cwd)
    if tool in ("read_file", "write_file", "grep"):
        path = args.get("path", "." if tool == "grep" else None)
        if not isinstance(path, str) or not path:
            return None
        try:
            return _file_tool_floor(tool, path, args)
        except Exception:  # pragma: no cover - defensive, like check_command
            log.exception("permission floor failed on a file tool call")
            return f"refused: the path could not be checked {_FLOOR_NOTE}"
    return None


def _file_tool_floor(tool: str, path: str, args: Mapping[str, Any]) -> str | None:
    resolved = _resolve(_expand_tilde_text(path), None)
    found = _path_class(resolved)
    if tool == "write_file":
        if _block_device(resolved):
            return f"refused: write_file to {path} would overwrite the block device {resolved} {_FLOOR_NOTE}"
        if found and found[0] != "keydir":
            return f"refused: write_file would write {found[1]} {_FLOOR_NOTE}"
        return None
    if found is None:
        return None
    kind, what = found
    if kind in ("key", "env", "shadow"):
        return f"refused: {tool} would read {what} {_FLOOR_NOTE}"
    if tool == "grep" and kind == "keydir":
        name_glob = args.get("glob")
        if (
            isinstance(name_glob, str)
            and name_glob
            and not any(fnmatch.fnmatchcase(sample, name_glob) for sample in _KEY_SAMPLES + _HOST_KEY_SAMPLES)
        ):
            return None
        return f"refused: grep over {what} would read private keys {_FLOOR_NOTE}"
    return None


# =============================================================================================
# Rules
# =============================================================================================

_RULE_TEXT = re.compile(
    r"^\s*(?:(?P<machine>[^:()\s][^:()]*):)?(?P<tool>[A-Za-z_*?][\w*?-]*)(?:\((?P<arg>.*)\))?\s*$", re.DOTALL
)


@dataclass(frozen=True)
class Rule:
    """One permission rule: ``[machine:]tool(argument)`` with a verdict.

    Syntax: ``execute_command(git status *)``, ``read_file(/etc/**)``, ``write_file(~/projects/**)``,
    ``execute_command(!rm *)`` (a leading ``!`` negates the argument match: the rule applies when
    the argument does *not* match), ``web1:execute_command(systemctl status *)`` (only on
    machine web1; the machine is a glob too, ``web*:``; no prefix: every machine, ``local:``
    this one). The tool is a name or a glob (``*``). ``tool`` alone, or ``tool(*)``, matches any
    argument. The argument matched is the tool's main argument (:data:`MAIN_ARGUMENTS`).

    Glob semantics:
      * commands (execute_command): the command line as a string, whitespace collapsed; ``*``
        matches any characters (spaces and ``/`` included), ``?`` one character, ``\\`` escapes
        the next character; a trailing `` *`` also matches nothing, so ``git status *`` matches
        ``git status`` and ``git status -s``. Each simple command of a line is matched on its
        own (see :meth:`Permissions.decide`), so ``*`` never reaches across ``;``, ``&&``,
        ``|`` or into ``$( )``; an allow rule never covers a command with an output redirection
        to a file, nor one that could not be parsed.
      * paths (read_file, write_file, list_dir, grep, glob): ``*`` and ``?`` stay within one path
        segment, ``**`` spans any number of segments (``/etc/**`` matches ``/etc`` and everything
        below it), ``[abc]`` is a character class and ``{a,b}`` alternatives. ``~`` is the home
        directory (on the local machine); ``..`` is resolved before matching, so
        ``~/projects/**`` does not match ``~/projects/../.bashrc``. Relative paths are resolved
        against the session's directory when :meth:`Permissions.decide` is given ``cwd``.
      * machine names (ask_machine, ask_machines; rule prefixes): like paths.
    """

    tool: str
    pattern: str = "*"
    verdict: Verdict = "allow"
    machine: str | None = None
    negate: bool = False
    source: str = "session"  # "session" or "global"
    note: str | None = None

    @classmethod
    def parse(cls, text: str, verdict: str = "allow", *, source: str = "session", note: str | None = None) -> Rule:
        """A rule from its text; ValueError says what is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("empty rule")
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
        match = _RULE_TEXT.match(text)
        if not match:
            raise ValueError(f"cannot read rule {text!r}: expected tool(argument), e.g. execute_command(git status *)")
        arg = match.group("arg")
        negate = False
        if arg is None:
            arg = "*"
        elif arg.startswith("!"):
            negate, arg = True, arg[1:]
        machine = match.group("machine")
        return cls(
            tool=match.group("tool"),
            pattern=arg,
            verdict=verdict,  # type: ignore[arg-type]
            machine=machine.strip() if machine else None,
            negate=negate,
            source=source,
            note=note,
        )

    @property
    def text(self) -> str:
        """The rule as written in the file, e.g. ``web1:execute_command(!rm *)``."""
        prefix = f"{self.machine}:" if self.machine else ""
        return f"{prefix}{self.tool}({'!' if self.negate else ''}{self.pattern})"

    def __str__(self) -> str:
        return self.text

    def applies_to(self, tool: str, machine: str) -> bool:
        """Does the rule concern this tool on this machine (whatever the argument)?"""
        if not _glob_name(self.tool, tool):
            return False
        return self.machine is None or _glob_name(self.machine, machine)

    def matches_argument(self, tool: str, argument: str, *, machine: str = "local", cwd: str | None = None) -> bool:
        """Does the rule's argument glob match `argument` (a command or a path or a host)?"""
        if tool == "execute_command":
            hit = _command_match(self.pattern, argument)
        elif tool in _PATH_TOOLS:
            hit = _path_rule_match(self.pattern, argument, machine=machine, cwd=cwd)
        else:
            hit = _name_glob_regex(self.pattern).fullmatch(argument) is not None
        return hit != self.negate

    def matches(self, tool: str, argument: str, *, machine: str = "local", cwd: str | None = None) -> bool:
        return self.applies_to(tool, machine) and self.matches_argument(tool, argument, machine=machine, cwd=cwd)


def _glob_name(pattern: str, name: str) -> bool:
    return _name_glob_regex(pattern).fullmatch(name) is not None


_REGEX_CACHE: dict[tuple[str, str], re.Pattern[str]] = {}


def _cached(kind: str, pattern: str, build: Callable[[str], str]) -> re.Pattern[str]:
    key = (kind, pattern)
    compiled = _REGEX_CACHE.get(key)
    if compiled is None:
        if len(_REGEX_CACHE) > 2048:
            _REGEX_CACHE.clear()
        compiled = _REGEX_CACHE[key] = re.compile(build(pattern), re.DOTALL)
    return compiled


def _command_regex(pattern: str) -> str:
    pattern = " ".join(pattern.split())
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == " " and pattern[i:] == " *":
            out.append(r"(?: .*)?")
            break
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _command_match(pattern: str, command: str) -> bool:
    return _cached("cmd", pattern, _command_regex).fullmatch(" ".join(command.split())) is not None


def _path_glob_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("/**", i) and (i + 3 == n or pattern[i + 3] == "/"):
            if i + 3 == n:
                out.append(r"(?:/.*)?")
                i += 3
            else:
                out.append(r"(?:/.*)?/")
                i += 4
            continue
        if i == 0 and pattern.startswith("**/"):
            out.append(r"(?:.*/)?")
            i += 3
            continue
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end]
                body = "^" + body[1:] if body.startswith("!") else body
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif ch == "{":
            end = _match_close(pattern, i, "{", "}")
            options = _split_top_commas(pattern[i + 1 : end - 1])
            if len(options) < 2 or end > n or pattern[end - 1] != "}":
                out.append(re.escape(ch))
                i += 1
            else:
                out.append("(?:" + "|".join(_path_glob_regex(option) for option in options) + ")")
                i = end
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _name_glob_regex(pattern: str) -> re.Pattern[str]:
    return _cached("path", pattern, _path_glob_regex)


def _local_home() -> str:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError):
        return "~"


def _normalise_rule_path(path: str, *, machine: str, cwd: str | None) -> str:
    """A path (or a path pattern) as rules compare it: ~ expanded locally, made absolute, normalised."""
    if machine == "local" and (path == "~" or path.startswith("~/")):
        path = _local_home() + path[1:]
    if not path.startswith(("/", "~")) and cwd and machine == "local":
        path = cwd.rstrip("/") + "/" + path
    trailing = path.endswith("/**")
    path = re.sub(r"/{2,}", "/", path)
    normal = posixpath.normpath(path) if path else path
    if trailing and not normal.endswith("/**"):
        normal += "/**"
    return normal


def _path_rule_match(pattern: str, path: str, *, machine: str, cwd: str | None) -> bool:
    if pattern in ("*", "**"):
        return True
    want = _normalise_rule_path(pattern, machine=machine, cwd=cwd)
    have = _normalise_rule_path(path, machine=machine, cwd=cwd)
    return _name_glob_regex(want).fullmatch(have) is not None


# --- the parts of a call that rules judge --------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    text: str
    trusted: bool = True  # False: allow rules do not apply (output redirection, unparseable)


def main_argument(tool: str, args: Mapping[str, Any]) -> str | list[str]:
    """The argument rules match for this call (a list for ask_machines' hostnames)."""
    key = MAIN_ARGUMENTS.get(tool)
    if key is None:
        for key in ("command", "path", "pattern", "hostname"):
            if isinstance(args.get(key), str):
                return args[key]
        return ""
    value = args.get(key)
    if tool == "ask_machines":
        return [str(v) for v in value] if isinstance(value, list) else []
    if value is None and tool in ("list_dir", "grep"):
        return "."
    if tool == "glob" and isinstance(value, str) and isinstance(args.get("cwd"), str) and args["cwd"]:
        return posixpath.join(args["cwd"], value)
    return value if isinstance(value, str) else ""


def _command_parts(command: str) -> list[_Part]:
    """The simple commands of a command line, each as its own text, for rule matching."""
    nodes, src, exact = _parse_full(command)
    if nodes is None or not exact:
        return [_Part(" ".join(command.split()), trusted=False)]
    parts: list[_Part] = []
    for node in nodes:
        _collect_parts(node, src, parts)
    return parts or [_Part("", trusted=True)]


_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def _collect_parts(node: Any, src: str, out: list[_Part]) -> None:
    for current in _iter_nodes_ordered(node):
        if current.kind != "command":
            continue
        pieces: list[str] = []
        trusted = True
        for part in current.parts:
            raw = src[part.pos[0] : part.pos[1]]
            if part.kind in ("word", "assignment"):
                pieces.append(raw)
                for inner in _substitutions(raw):
                    out.extend(_command_parts(inner))
            elif part.kind == "redirect":
                target = part.output
                if (
                    part.type in _WRITE_REDIRECTS
                    and hasattr(target, "pos")
                    and src[target.pos[0] : target.pos[1]] not in _SAFE_TARGETS
                ):
                    trusted = False
        out.append(_Part(" ".join(" ".join(pieces).split()), trusted))


def _iter_nodes_ordered(node: Any) -> Iterable[Any]:
    yield node
    for attr in ("parts", "list"):
        children = getattr(node, attr, None)
        if isinstance(children, list):
            for child in children:
                if child.kind in ("word", "assignment", "redirect"):
                    continue
                yield from _iter_nodes_ordered(child)
    body = getattr(node, "body", None)
    if body is not None and hasattr(body, "kind"):
        yield from _iter_nodes_ordered(body)
    yield from getattr(node, "redirects", None) or ()


def _substitutions(raw: str) -> list[str]:
    """The command substitutions ($( ), backticks, <( )) in a raw word."""
    found: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif ch == "$" and raw.startswith("$((", i):
            i = _match_close(raw, i + 1)
        elif (ch == "$" or ch in "<>") and raw.startswith("(", i + 1):
            end = _match_close(raw, i + 1)
            found.append(raw[i + 2 : end - 1])
            i = end
        elif ch == "`":
            end = _find_backtick(raw, i + 1)
            found.append(raw[i + 1 : end])
            i = end + 1
        else:
            i += 1
    return found


def _call_parts(tool: str, args: Mapping[str, Any]) -> list[_Part]:
    argument = main_argument(tool, args)
    if tool == "execute_command":
        return _command_parts(argument if isinstance(argument, str) else "")
    if isinstance(argument, list):
        return [_Part(host) for host in argument] or [_Part("")]
    return [_Part(argument)]


# --- "Allow always" ---------------------------------------------------------------------------

_EXACT_PROGRAMS = _words(
    "rm rmdir dd mkfs shred wipefs chmod chown chgrp mv kill killall pkill reboot shutdown halt "
    "poweroff bash sh zsh dash ksh fish eval exec xargs env sudo doas su python python3 perl ruby "
    "node php curl wget ssh scp rsync find crontab systemctl iptables nft ufw truncate tee source "
    ". docker kubectl"
)
_SUBCOMMAND_PROGRAMS = _words(
    "git docker kubectl systemctl journalctl apt apt-get dnf yum brew npm pnpm yarn pip pip3 uv "
    "cargo go make poetry helm terraform gh podman service snap flatpak conda rustup gcloud aws "
    "az"
)


def derive_rule(
    tool: str, args: Mapping[str, Any], machine: str = "local", *, cwd: str | None = None, any_machine: bool = False
) -> Rule:
    """The allow rule that "Allow always" adds for this call.

    * execute_command: a simple command gives its program, plus its subcommand for tools such
      as git, docker, systemctl, apt, npm (``git status -s`` -> ``git status *``, ``ls -la`` ->
      ``ls *``); a command line with several commands, redirections, substitutions or
      variables, and any command of a program that deletes, runs other code or escalates
      (rm, dd, chmod, bash, python, sudo, ssh, curl, find, xargs, systemctl...; with their
      subcommand for systemctl/docker/kubectl) gives the exact command line.
    * read_file, write_file, grep, list_dir: the directory of the path with ``/**``
      (``~/projects/app/src/x.py`` -> ``~/projects/app/src/**``); list_dir the directory itself.
    * glob: its pattern; ask_machine: the host; ask_machines: ``{a,b}`` of the hosts.

    The rule is scoped to `machine` (``web1:...``, ``local:...``) unless `any_machine`.
    """
    prefix = None if any_machine else (machine or "local")
    argument = main_argument(tool, args)
    if tool == "execute_command":
        pattern = _derive_command_pattern(argument if isinstance(argument, str) else "")
    elif tool in ("read_file", "write_file", "grep", "list_dir"):
        path = argument if isinstance(argument, str) else ""
        normal = _normalise_rule_path(path or ".", machine=machine or "local", cwd=cwd)
        home = _local_home()
        if (machine or "local") == "local" and (normal == home or normal.startswith(home + "/")):
            normal = "~" + normal[len(home) :]
        directory = (
            normal
            if tool == "list_dir" or (tool == "grep" and not posixpath.splitext(normal)[1])
            else (posixpath.dirname(normal) or ".")
        )
        pattern = _escape_path_glob(directory).rstrip("/") + "/**"
    elif tool == "ask_machines":
        hosts = list(dict.fromkeys(argument if isinstance(argument, list) else []))
        pattern = (
            _escape_path_glob(hosts[0])
            if len(hosts) == 1
            else "{" + ",".join(_escape_path_glob(h) for h in hosts) + "}"
        )
    else:
        pattern = _escape_path_glob(argument) if isinstance(argument, str) and argument else "*"
    return Rule(tool=tool, pattern=pattern, verdict="allow", machine=prefix, source="global")


def _escape_path_glob(text: str) -> str:
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", text)


def _escape_command_glob(text: str) -> str:
    return re.sub(r"([*?\\])", r"\\\1", " ".join(text.split()))


def _derive_command_pattern(command: str) -> str:
    parts = _command_parts(command)
    simple = len(parts) == 1 and parts[0].trusted and not re.search(r"[;&|<>`$\n(){}]", command)
    words = command.split()
    if not simple or not words:
        return _escape_command_glob(command)
    program = words[0]
    base = posixpath.basename(program)
    if not re.fullmatch(r"[\w.+-]+", base) or re.match(r"[A-Za-z_]\w*=", program):
        return _escape_command_glob(command)
    subcommand = words[1] if len(words) > 1 and re.fullmatch(r"[a-z][a-z0-9_-]*", words[1]) else None
    if base in _EXACT_PROGRAMS:
        return _escape_command_glob(command)
    if base in _SUBCOMMAND_PROGRAMS and subcommand:
        return f"{_escape_command_glob(program)} {subcommand} *"
    return f"{_escape_command_glob(program)} *"


# =============================================================================================
# Decisions
# =============================================================================================


@dataclass(frozen=True)
class Decision:
    """The answer for one tool call.

    `verdict`: ``"allow"`` (run it), ``"ask"`` (ask the user), ``"deny"`` (the reason goes back
    to the model as the tool result). `rule`: the rule that decided, or None (the mode or the
    floor decided). `floor`: True when the safety floor refused; then nothing may override it.
    """

    verdict: Verdict
    reason: str
    rule: Rule | None = None
    floor: bool = False

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    @property
    def denied(self) -> bool:
        return self.verdict == "deny"

    @property
    def needs_approval(self) -> bool:
        return self.verdict == "ask"


def rules_path() -> Path:
    """Where the global rules live: ``config_dir()/permissions.toml``."""
    from cmdop_tui.config.settings import config_dir

    return config_dir() / "permissions.toml"


def audit_path() -> Path:
    """Where decisions are logged: ``data_dir()/audit.jsonl``."""
    from cmdop_tui.config.settings import data_dir

    return data_dir() / "audit.jsonl"


def _check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise ValueError(f"unknown permission mode {mode!r} (one of {', '.join(MODES)})")
    return mode  # type: ignore[return-value]


def _describe(rule: Rule) -> str:
    return f"`{rule.text}` ({rule.source})"


class Permissions:
    """Rules, mode and audit log for one session. Thread-safe.

    ``Permissions.load()`` reads the global rules file; session rules live in memory only.
    """

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        mode: str = "default",
        path: Path | None = None,
        audit_path: Path | None = None,
        audit: bool = True,
    ) -> None:
        self._mode: Mode = _check_mode(mode)
        self._global: list[Rule] = [replace(r, source="global") for r in rules]
        self._session: list[Rule] = []
        self.path = path
        self.audit_path = audit_path
        self.audit = audit
        self._file_mode: str | None = None
        self._lock = threading.RLock()
        self.last_audit_error: OSError | None = None

    # --- loading and saving --------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: Path | None = None, mode: str | None = None, *, audit_path: Path | None = None, audit: bool = True
    ) -> Permissions:
        """Global rules from `path` (default :func:`rules_path`); a missing file means none.

        `mode` wins over the file's ``mode``, which wins over ``"default"``. Raises
        :class:`PermissionsError` naming the file and the line when the file cannot be used.
        """
        path = path or rules_path()
        rules, file_mode = _read_rules_file(path)
        chosen = mode or file_mode or "default"
        try:
            _check_mode(chosen)
        except ValueError as exc:
            if mode:
                raise
            raise PermissionsError(f"{path}: {exc}") from None
        perms = cls(rules, mode=chosen, path=path, audit_path=audit_path, audit=audit)
        perms._file_mode = file_mode
        return perms

    def save(self) -> None:
        """Write the global rules to the file, atomically, mode 0600.

        Refuses (PermissionsError) to replace a file that exists but cannot be parsed, so a
        hand-edited file with a typo is never lost.
        """
        with self._lock:
            path = self._require_path()
            if path.exists():
                _read_rules_file(path)  # raises on a corrupt file: never overwrite it
            _write_rules_file(path, self._global, self._file_mode)

    def _require_path(self) -> Path:
        if self.path is None:
            self.path = rules_path()
        return self.path

    # --- the mode and the rules ----------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = _check_mode(value)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The global rules (from the file), in file order."""
        with self._lock:
            return tuple(self._global)

    @property
    def session_rules(self) -> tuple[Rule, ...]:
        with self._lock:
            return tuple(self._session)

    def add_session_rule(self, rule: Rule | str, verdict: str | None = None) -> Rule:
        """Add a rule for this session only (not saved). A string is parsed (`verdict` default allow)."""
        parsed = _as_rule(rule, verdict, source="session")
        with self._lock:
            if not any(r.text == parsed.text and r.verdict == parsed.verdict for r in self._session):
                self._session.append(parsed)
        return parsed

    def add_rule(self, rule: Rule | str, verdict: str | None = None) -> Rule:
        """Add a global rule and save it to the file (re-read first, so concurrent sessions'
        additions are kept)."""
        parsed = _as_rule(rule, verdict, source="global")
        with self._lock:
            path = self._require_path()
            on_disk, file_mode = _read_rules_file(path)
            if not any(r.text == parsed.text and r.verdict == parsed.verdict for r in on_disk):
                on_disk.append(parsed)
            _write_rules_file(path, on_disk, file_mode)
            self._global, self._file_mode = on_disk, file_mode
        return parsed

    def remove_rule(self, rule: Rule | str, verdict: str | None = None) -> bool:
        """Remove a rule (session first, then global, saving the file); True if one was removed."""
        text = rule.text if isinstance(rule, Rule) else Rule.parse(rule).text
        wanted = rule.verdict if isinstance(rule, Rule) and verdict is None else verdict

        def same(candidate: Rule) -> bool:
            return candidate.text == text and (wanted is None or candidate.verdict == wanted)

        with self._lock:
            for index, candidate in enumerate(self._session):
                if same(candidate):
                    del self._session[index]
                    return True
            path = self._require_path()
            on_disk, file_mode = _read_rules_file(path)
            kept = [r for r in on_disk if not same(r)]
            if len(kept) == len(on_disk):
                return False
            _write_rules_file(path, kept, file_mode)
            self._global, self._file_mode = kept, file_mode
            return True

    def allow_always(
        self,
        tool: str,
        args: Mapping[str, Any],
        machine: str = "local",
        *,
        cwd: str | None = None,
        session: bool = False,
        any_machine: bool = False,
    ) -> Rule:
        """ "Allow always" from the approval modal: add :func:`derive_rule`'s rule and return it.

        Saved to the global file, or kept for this session with `session=True`.
        """
        rule = derive_rule(tool, args, machine, cwd=cwd, any_machine=any_machine)
        return self.add_session_rule(replace(rule, source="session")) if session else self.add_rule(rule)

    # --- deciding ------------------------------------------------------------------------------

    def decide(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        machine: str | None = None,
        mutating: bool | None = None,
        cwd: str | None = None,
    ) -> Decision:
        """Decide one tool call: floor, then rules (session, then global), then the mode.

        `machine` is the machine the call runs on (``"local"`` for this one; None: the call's
        own ``machine`` argument, else ``"local"``; pass the fleet's resolved name when a session
        is scoped to a machine). `mutating` is the tool's ``Tool.mutating`` (None:
        :data:`MUTATING_TOOLS` decides; unknown tools count as mutating). `cwd`, the session's
        directory, resolves relative paths in path rules. Pure: nothing is recorded (see
        :meth:`check`).
        """
        args = args if isinstance(args, Mapping) else {}
        machine = _machine_of(machine, args)
        reason = floor_violation(tool, args)
        if reason is not None:
            return Decision("deny", reason, None, True)
        if mutating is None:
            mutating = tool in MUTATING_TOOLS or tool not in MAIN_ARGUMENTS
        with self._lock:
            session, global_ = list(self._session), list(self._global)
        verdict, rule = self._rules_verdict(tool, args, machine, cwd, session, global_)
        mode = self._mode
        if verdict == "deny":
            assert rule is not None
            return Decision("deny", f"denied by rule {_describe(rule)}", rule)
        if verdict == "ask":
            assert rule is not None
            if mode == "auto":
                return Decision("allow", f"auto mode: allowed without asking (rule {_describe(rule)} asks)", rule)
            return Decision("ask", f"rule {_describe(rule)} asks for approval", rule)
        if verdict == "allow":
            assert rule is not None
            return Decision("allow", f"allowed by rule {_describe(rule)}", rule)
        if mode == "auto":
            return Decision("allow", "auto mode: allowed without asking")
        if not mutating:
            return Decision("allow", f"{tool} only reads; allowed in {mode} mode")
        if mode == "strict":
            return Decision(
                "deny",
                f"strict mode: {tool} changes things and no rule allows this call; "
                f"a user can add an allow rule (cmdop-tui permissions)",
            )
        return Decision("ask", f"{tool} changes things; approval needed in default mode")

    def _rules_verdict(
        self,
        tool: str,
        args: Mapping[str, Any],
        machine: str,
        cwd: str | None,
        session: list[Rule],
        global_: list[Rule],
    ) -> tuple[str | None, Rule | None]:
        session = [r for r in session if r.applies_to(tool, machine)]
        global_ = [r for r in global_ if r.applies_to(tool, machine)]
        if not session and not global_:
            return None, None
        parts = _call_parts(tool, args)
        results: list[tuple[str | None, Rule | None]] = []
        for part in parts:
            results.append(_layered(tool, part, machine, cwd, session, global_))
        if tool == "execute_command":
            # the whole line too: deny/ask rules written with operators (curl * | sh), and exact
            # allow rules (what "Allow always" saves for a compound command)
            whole = _Part(" ".join(main_argument(tool, args).split()), trusted=False)  # type: ignore[union-attr]
            verdict, rule = _layered(tool, whole, machine, cwd, session, global_)
            if verdict in ("deny", "ask"):
                results.append((verdict, rule))
            exact = _layered(
                tool,
                _Part(whole.text),
                machine,
                cwd,
                [r for r in session if not _has_wildcards(r)],
                [r for r in global_ if not _has_wildcards(r)],
            )
            if exact[0] == "allow":
                results = [res if res[0] in ("deny", "ask") else exact for res in results]
        for wanted in ("deny", "ask"):
            for verdict, rule in results:
                if verdict == wanted:
                    return verdict, rule
        if results and all(verdict == "allow" for verdict, _ in results):
            return "allow", results[0][1]
        return None, None

    # --- the audit log -------------------------------------------------------------------------

    def check(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        machine: str | None = None,
        mutating: bool | None = None,
        cwd: str | None = None,
        call_id: str | None = None,
    ) -> Decision:
        """:meth:`decide`, then :meth:`record` the decision; returns it."""
        decision = self.decide(tool, args, machine=machine, mutating=mutating, cwd=cwd)
        self.record(decision, tool, args, machine, call_id=call_id)
        return decision

    def record(
        self,
        decision: Decision,
        tool: str,
        args: Mapping[str, Any],
        machine: str | None = None,
        outcome: str | None = None,
        *,
        call_id: str | None = None,
    ) -> None:
        """Append one decision (and, if known, its outcome) to the audit log.

        Call it again with `outcome` (e.g. "approved", "denied by user", "exit 0") when the
        outcome is known; each call is one line. An I/O error is logged and swallowed
        (`last_audit_error` keeps it): a full disk must not stop the agent loop. The argument
        is stored as given; redacting secrets in it is the caller's job.
        """
        if not self.audit:
            return
        entry = {
            "time": _now(),
            "call_id": call_id,
            "tool": tool,
            "machine": _machine_of(machine, args if isinstance(args, Mapping) else {}),
            "argument": main_argument(tool, args if isinstance(args, Mapping) else {}),
            "verdict": decision.verdict,
            "reason": decision.reason,
            "rule": decision.rule.text if decision.rule else None,
            "rule_source": decision.rule.source if decision.rule else None,
            "floor": decision.floor,
            "mode": self.mode,
            "outcome": outcome,
        }
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            target = self.audit_path or audit_path()
            self.audit_path = target
            try:
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    if os.fstat(fd).st_mode & 0o777 != 0o600:
                        os.fchmod(fd, 0o600)
                    os.write(fd, line)
                finally:
                    os.close(fd)
                self.last_audit_error = None
            except OSError as exc:
                self.last_audit_error = exc
                log.warning("cannot write the audit log %s: %s", target, exc)


def _machine_of(machine: str | None, args: Mapping[str, Any]) -> str:
    if machine:
        return machine
    own = args.get("machine")
    return own if isinstance(own, str) and own else "local"


def _has_wildcards(rule: Rule) -> bool:
    return rule.negate or re.search(r"(?<!\\)[*?]", rule.pattern) is not None


def _layered(
    tool: str, part: _Part, machine: str, cwd: str | None, session: list[Rule], global_: list[Rule]
) -> tuple[str | None, Rule | None]:
    """The verdict for one part: the session layer decides if a rule of it matches, else global."""
    for layer in (session, global_):
        best: Rule | None = None
        matched = False
        for rule in layer:
            if rule.matches_argument(tool, part.text, machine=machine, cwd=cwd):
                matched = True
                if rule.verdict == "allow" and not part.trusted:
                    continue  # it decides for its layer, but cannot allow an untrusted part
                if best is None or _SEVERITY[rule.verdict] > _SEVERITY[best.verdict]:
                    best = rule
        if best is not None:
            return best.verdict, best
        if matched:
            return None, None
    return None, None


def _as_rule(rule: Rule | str, verdict: str | None, *, source: str) -> Rule:
    if isinstance(rule, Rule):
        return replace(rule, source=source, verdict=verdict or rule.verdict)  # type: ignore[arg-type]
    return Rule.parse(rule, verdict or "allow", source=source)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the rules file --------------------------------------------------------------------------

_RULE_KEYS = frozenset({"rule", "verdict", "note"})
_TOP_KEYS = frozenset({"rule", "mode"})


def _rule_lines(raw: str) -> list[int]:
    return [number for number, line in enumerate(raw.splitlines(), 1) if re.match(r"\s*\[\[\s*rule\s*\]\]", line)]


def _read_rules_file(path: Path) -> tuple[list[Rule], str | None]:
    """(global rules, the file's mode or None); no file: ([], None). PermissionsError if unusable."""
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        raise PermissionsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        raw = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PermissionsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise PermissionsError(f"{path}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PermissionsError(f"{path}: unknown key(s) {', '.join(unknown)} (expected [[rule]] tables and mode)")
    mode = data.get("mode")
    if mode is not None and (not isinstance(mode, str) or mode not in MODES):
        raise PermissionsError(f"{path}: mode must be one of {', '.join(MODES)}, not {mode!r}")
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        raise PermissionsError(f"{path}: `rule` must be an array of tables ([[rule]])")
    lines = _rule_lines(raw)
    rules: list[Rule] = []
    for index, entry in enumerate(entries):
        where = f"{path}: rule #{index + 1}" + (f" (line {lines[index]})" if index < len(lines) else "")
        if not isinstance(entry, dict):
            raise PermissionsError(f"{where}: must be a table with `rule` and `verdict`")
        extra = sorted(set(entry) - _RULE_KEYS)
        if extra:
            raise PermissionsError(f"{where}: unknown key(s) {', '.join(extra)} (expected rule, verdict, note)")
        text, verdict, note = entry.get("rule"), entry.get("verdict"), entry.get("note")
        if not isinstance(text, str):
            raise PermissionsError(f'{where}: `rule` must be a string such as "execute_command(git status *)"')
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            raise PermissionsError(f"{where}: `verdict` must be one of {', '.join(VERDICTS)}, not {verdict!r}")
        if note is not None and not isinstance(note, str):
            raise PermissionsError(f"{where}: `note` must be a string")
        try:
            rules.append(Rule.parse(text, verdict, source="global", note=note))
        except ValueError as exc:
            raise PermissionsError(f"{where}: {exc}") from None
    return rules, mode


def _write_rules_file(path: Path, rules: Sequence[Rule], mode: str | None) -> None:
    """Write atomically: a temp file in the same directory (0600), fsync, os.replace."""
    chunks = [
        (
            '# cmdop-tui permission rules: [[rule]] tables with rule = "[machine:]tool(argument glob)"\n'
            '# and verdict = "allow" | "ask" | "deny". See `cmdop-tui permissions list`.\n'
        )
    ]
    if mode is not None:
        chunks.append(tomli_w.dumps({"mode": mode}))
    for rule in rules:
        entry = {"rule": rule.text, "verdict": rule.verdict}
        if rule.note:
            entry["note"] = rule.note
        chunks.append("[[rule]]\n" + tomli_w.dumps(entry))
    text = "\n".join(chunks)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            os.fchmod(stream.fileno(), 0o600)
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


# --- the CLI listing -------------------------------------------------------------------------


def list_rules_text(permissions: Permissions | None = None, *, path: Path | None = None) -> str:
    """The rules with their source, for ``cmdop-tui permissions list``.

    With no `permissions`, the global rules file (`path`, default :func:`rules_path`) is read;
    PermissionsError propagates (the CLI prints it).
    """
    perms = permissions or Permissions.load(path, audit=False)
    file_path = perms.path or rules_path()
    lines = [f"mode: {perms.mode}", ""]
    session = perms.session_rules
    if session:
        lines.append("session rules (this session only, consulted first):")
        lines.extend(f"  {rule.verdict:<5}  {rule.text}" for rule in session)
        lines.append("")
    lines.append(f"global rules ({file_path}):")
    if perms.rules:
        lines.extend(
            f"  {rule.verdict:<5}  {rule.text}" + (f"    # {rule.note}" if rule.note else "") for rule in perms.rules
        )
    else:
        lines.append("  (none)" + ("" if file_path.exists() else " - the file does not exist yet"))
    lines += [
        "",
        "Precedence: session rules, then global rules (deny > ask > allow), then the mode",
        "(default: read-only tools allowed, others ask; strict: others denied; auto: all allowed).",
        "The safety floor (deleting / or a home directory, disk writes, fork bombs, SSH private",
        "keys, .env files, /etc/shadow, /etc/sudoers) always applies.",
    ]
    return "\n".join(lines) + "\n"
