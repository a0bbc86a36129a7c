"""The floor: catastrophic or secret-leaking calls are refused, whatever the rules, the mode or
the user say (``--yes`` included).

Refused: deleting ``/``, a home directory or a system directory (or moving it away), ``find``
from one of them with ``-delete`` or a destroying ``-exec`` (``rm``, ``shred``, ``truncate``,
``chmod``, a shell...), fork bombs, killing every process (``kill -1``), writing to a disk
device, ``mkfs``/``wipefs``/partition-table edits, ``dd of=/dev/<disk>``, ``shred`` of a device,
recursive ``chmod``/``chown``/``setfacl``/``chattr`` of ``/``, a home or a system directory,
reading or writing SSH private keys (``.ssh/id_*`` but not ``*.pub``,
``/etc/ssh/ssh_host_*_key``), ``.env`` files (``.env``, ``.env.*`` but not
``.env.example``/``.sample``/``.template``/``.dist``), ``/etc/shadow``, ``/etc/gshadow``,
reading cloud credentials (``~/.aws/credentials``, ``~/.kube/config``...), writing
``/etc/sudoers`` (or ``/etc/sudoers.d/*``), writing files that run code later
(``authorized_keys``, ``~/.ssh/config``, shell start-up files, ``/etc/profile.d``,
``/etc/ld.so.preload``, crontabs and ``crontab FILE``, systemd user units, autostart entries),
printing the environment once a ``.env`` file was sourced, and running a file the same command
line wrote with content that cannot be known (``curl ... > x.sh; sh x.sh``).

Shell commands are *parsed* with bashlex, not matched with regexes (:mod:`.walk`): pipelines,
lists, subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies, functions, command and process
substitution, here-documents and here-strings fed to a shell, ``bash -c``/``sh -c``/``su -c``/
``eval``/``watch``/``trap``/``ssh host CMD`` strings (parsed again, to any depth up to
``MAX_DEPTH``), ``echo ... | sh`` (also through ``base64 -d``), ``xargs`` (fed by a pipe, a
here-string or a here-document), ``find -exec``, interpreter one-liners and scripts on stdin
(:mod:`.interpreters`), files written then run in the same line (:mod:`.scripts`), and the
wrappers (:mod:`.wrappers`). Words are expanded the way bash would as far as that can be known
before the command runs (:mod:`.expansion`), split on ``IFS`` as assigned (:mod:`.splitting`,
with ``read``), and the tool's ``cwd`` argument resolves relative paths. A variable that is not
known may be empty: ``rm -rf "$DIR"/*`` is refused (write ``${DIR:?}``). A command substitution
whose output cannot be known may print anything: a destroying command whose target depends on
one could hit ``/`` or a home, and is refused (fail closed). When bashlex cannot parse a
command, known unsupported constructs are rewritten and the parse retried (:mod:`.parsing`); the
raw text is also scanned word by word with the same checks (:mod:`.fallback`).

Known limits: the floor judges text, not effects. It cannot see what a script file written
before this command line, an alias, a program's configuration (``git -c core.pager=...``), a
variable from the environment or a download piped to a shell (``curl ... | sh``) will do; a
container or VM boundary (``docker exec``) is not modelled; ``grep -r`` over a directory that
happens to hold a ``.env`` cannot be known to do so; relative paths are judged only by their
name unless a ``cd``/``cwd`` says where they are; and file tools resolve paths lexically (a
symlink to a key is not followed). It is a floor against accidents and evasion by spelling, with
the OS sandbox beneath it.

Deliberate choices: commands that only *use* a secret pass (:mod:`.secret_args`); sourcing a
``.env`` file passes, printing the environment afterwards does not (:mod:`.environment`).
``mkfs`` and ``wipefs`` on an image file pass, on anything under ``/dev`` or unknown they do
not. ``find`` from ``/``, a home or a system directory with ``-delete`` or a destroying
``-exec`` needs a narrow ``-name`` (not under ``-o`` or ``!``). ``chown -R``/``chmod -R`` of
``/usr/local``, ``/opt`` or ``/srv`` pass (routine); of ``/``, a home or a system directory they
do not. Files that run code later may be read; ``/etc/systemd/system`` units may be written (an
operator's work), user units may not.

Which calls the floor judges comes from the tool's declaration (``Tool.subject``): a
``command`` subject is parsed as a shell command; a ``path`` subject is checked as a write when
the tool is mutating, as a read for the tools that read what a file holds.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Mapping
from typing import Any

from cmdop_tui.tools.base import Tool
from cmdop_tui.tools.registry import declared_tool

from .context import Ctx, Refuse
from .paths import (
    FLOOR_NOTE,
    HOST_KEY_SAMPLES,
    KEY_SAMPLES,
    SECRET_CLASSES,
    WRITABLE_CLASSES,
    block_device,
    expand_tilde,
    path_class,
    resolve,
)
from .walk import FloorWalk, check_script

log = logging.getLogger(__name__)


def check_command(command: str, *, cwd: str | None = None) -> str | None:
    """The floor for one shell command line: a reason to refuse it, or None.

    `cwd` is the directory it runs in, when known (relative paths are judged against it).
    Never raises: an internal error refuses the command (a floor that crashes open is no floor).
    """
    ctx = Ctx(walk=FloorWalk(), cwd=_initial_cwd(cwd))
    try:
        check_script(command, ctx)
    except Refuse as refusal:
        return refusal.reason
    except RecursionError:
        return f"refused: the command is nested too deeply to check {FLOOR_NOTE}"
    except Exception as exc:  # a bug here must not let a command through unchecked
        log.exception("permission floor failed on a command")
        return f"refused: the command could not be checked ({type(exc).__name__}) {FLOOR_NOTE}"
    return None


def _initial_cwd(cwd: str | None) -> str | None:
    if not isinstance(cwd, str) or not cwd:
        return None
    resolved = resolve(expand_tilde(cwd), None)
    return resolved if resolved.startswith("/") else None


def floor_violation(tool: str, args: Mapping[str, Any], *, spec: Tool | None = None) -> str | None:
    """Why the floor refuses this tool call, as a sentence the model can read; None if it does not.

    `spec` is the tool's declaration (None: the built-in tool called `tool`, if any).
    execute_command: the command is parsed and checked; its `cwd` argument, when given,
    resolves relative paths. read_file/grep: reading a private key, a .env file, /etc/shadow or
    credentials (grep also a .ssh or credentials directory). write_file: keys, .env files,
    /etc/shadow, the sudo configuration, files that run code later (authorized_keys, shell
    start-up files, crontabs, autostart units) and block devices.
    list_dir, glob and ask_machine(s) have no floor (the remote agent of ask_machine applies
    its own); nor has a tool without a declaration.
    """
    spec = spec if spec is not None else declared_tool(tool)
    subject = spec.subject if spec is not None else None
    if spec is None or subject is None or subject.many:
        return None
    value = subject.value(args)  # a string: `many` subjects were left out above
    if subject.kind == "command":
        cwd = args.get("cwd") if isinstance(args.get("cwd"), str) else None
        return check_command(str(value), cwd=cwd)
    if subject.kind != "path" or not value:
        return None
    if not spec.mutating and not subject.reads_content:
        return None
    try:
        return _file_tool_floor(tool, str(value), args, writes=spec.mutating, searches=subject.reach == "search")
    except Exception:  # pragma: no cover - defensive, like check_command
        log.exception("permission floor failed on a file tool call")
        return f"refused: the path could not be checked {FLOOR_NOTE}"


def _file_tool_floor(tool: str, path: str, args: Mapping[str, Any], *, writes: bool, searches: bool) -> str | None:
    resolved = resolve(expand_tilde(path), None)
    found = path_class(resolved)
    if writes:
        if block_device(resolved):
            return f"refused: {tool} to {path} would overwrite the block device {resolved} {FLOOR_NOTE}"
        if found and found[0] not in WRITABLE_CLASSES:
            return f"refused: {tool} would write {found[1]} {FLOOR_NOTE}"
        return None
    if found is None:
        return None
    kind, what = found
    if kind in SECRET_CLASSES:
        return f"refused: {tool} would read {what} {FLOOR_NOTE}"
    if searches and kind == "keydir":  # a search of a key folder reads the keys, unless it skips them
        name_glob = args.get("glob")
        if (
            isinstance(name_glob, str)
            and name_glob
            and not any(fnmatch.fnmatchcase(sample, name_glob) for sample in KEY_SAMPLES + HOST_KEY_SAMPLES)
        ):
            return None
        return f"refused: {tool} over {what} would read private keys {FLOOR_NOTE}"
    return None
