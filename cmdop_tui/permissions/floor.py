"""The floor: catastrophic or secret-leaking calls are refused, whatever the rules, the mode or
the user say (``--yes`` included).

Refused: deleting ``/``, a home directory or a system directory, ``find / -delete``, fork bombs,
writing to a disk device, ``mkfs``/``wipefs``/partition-table edits, ``dd of=/dev/<disk>``,
``shred`` of a device, recursive ``chmod``/``chown`` of ``/``, reading or writing SSH private
keys (``.ssh/id_*`` but not ``*.pub``, ``/etc/ssh/ssh_host_*_key``), ``.env`` files (``.env``,
``.env.*`` but not ``.env.example``/``.sample``/``.template``/``.dist``), ``/etc/shadow``,
``/etc/gshadow``, and writing ``/etc/sudoers`` (or ``/etc/sudoers.d/*``).

Shell commands are *parsed* with bashlex, not matched with regexes (:mod:`.walk`): pipelines,
lists, subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies, functions, command and process
substitution, here-documents and here-strings fed to a shell, ``bash -c``/``sh -c``/``su -c``/
``eval``/``watch``/``trap``/``ssh host CMD`` strings (parsed again, to any depth up to
``MAX_DEPTH``), ``echo ... | sh`` (also through ``base64 -d``), ``xargs``, ``find -exec``, and
the wrappers (:mod:`.wrappers`). Words are expanded the way bash would as far as that can be
known before the command runs (:mod:`.expansion`), and the tool's ``cwd`` argument resolves
relative paths. A variable that is not known may be empty: ``rm -rf "$DIR"/*`` is refused (use
``${DIR:?}``). When bashlex cannot parse a command, known unsupported constructs are rewritten
and the parse retried (:mod:`.parsing`); the raw text is also scanned word by word with the
same checks (:mod:`.fallback`).

Known limits: the floor judges text, not effects. It cannot see what a script file, an alias,
``source``, a program's configuration (``git -c core.pager=...``), a variable from the
environment or a download (``curl ... | sh``) will do; a container or VM boundary (``docker
exec``) is not modelled; ``grep -r`` over a directory that happens to hold a ``.env`` cannot be
known to do so; relative paths are judged only by their name unless a ``cd``/``cwd`` says where
they are; and file tools resolve paths lexically (a symlink to a key is not followed). It is a
floor against accidents and naive evasion, not a sandbox.

Deliberate choices: commands that only *use* a secret pass (:mod:`.secret_args`). ``mkfs`` and
``wipefs`` on an image file pass, on anything under ``/dev`` or unknown they do not. ``find``
from ``/``, a home or a system directory with ``-delete`` needs a narrow ``-name``. ``chown
-R``/``chmod -R`` of a home, ``/usr/local``, ``/opt`` or ``/srv`` pass (routine); of ``/`` or a
system directory they do not.

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
from .paths import FLOOR_NOTE, HOST_KEY_SAMPLES, KEY_SAMPLES, block_device, expand_tilde, path_class, resolve
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
    resolves relative paths. read_file/grep: reading a private key, a .env file or /etc/shadow
    (grep also a .ssh directory). write_file: those, the sudo configuration and block devices.
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
        if found and found[0] != "keydir":
            return f"refused: {tool} would write {found[1]} {FLOOR_NOTE}"
        return None
    if found is None:
        return None
    kind, what = found
    if kind in ("key", "env", "shadow"):
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
