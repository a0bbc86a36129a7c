"""The floor: a first line that fails closed. What it can tell is catastrophic or leaks a secret
is refused, whatever the rules, the mode or the user say (``--yes`` included); what it cannot
resolve, where the command could reach a protected target, is asked of a person and of no one
else (``person_only``: not a rule, not auto mode, not an approve-everything function).

Refused: deleting ``/``, a home directory (wherever the password database puts it) or a system
directory (or moving it away), ``find`` from one of them with ``-delete`` or a destroying
``-exec``, fork bombs and killing every process however written (:mod:`.processes`), writing to
a block device by any of its names (:mod:`.devices`), ``mkfs``/``wipefs``/partition-table edits,
recursive ``chmod``/``chown``/``setfacl``/``chattr`` of ``/``, a home or a system directory,
reading or writing SSH private keys, ``.env`` files at any depth, ``/etc/shadow``, reading the
credential stores of every kind (:mod:`.stores`: ``~/.aws``, ``~/.config/rclone``, shell
histories, ``$KUBECONFIG``...), writing ``/etc/sudoers``, writing files that run code later
(``authorized_keys``, shell start-up files, crontabs, autostart entries...), printing the
environment once a ``.env`` file was sourced, and running a file the same command line wrote
with content that cannot be known (``curl ... > x.sh; sh x.sh``).

Asked of a person (:mod:`.doubts`): shell code built from values that cannot be known (``eval
"$X"``, ``bash -c "$(curl ...)"``, ``curl ... | sh``), a program whose name cannot be known,
text nothing parses that runs something dangerous, an interpreter or an editor given code it
cannot read (``awk '{system($0)}'``, ``sed 's/.*/&/e'``, ``vim -c 'exe ...'``), targets the
command computes in a way the floor does not follow, ``LD_PRELOAD`` and its kind.

Shell commands are *parsed* with bashlex, not matched with regexes (:mod:`.walk`): pipelines,
lists, subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies, functions, command and process
substitution, here-documents and here-strings fed to a shell, the commands whose arguments are
shell code (:mod:`.shell_code`), ``xargs`` and ``parallel`` (:mod:`.xargs`), programs that run
commands their options name (:mod:`.runners`: ``git -c``, ``tar --to-command``, ``gdb -ex``,
``make``; :mod:`.editors`: ``sed``, ``awk``, ``vim -c``), variables that make programs run
commands (:mod:`.command_env`: ``LESSOPEN``, ``GIT_PAGER``...), interpreter one-liners
(:mod:`.interpreters`), files written then run in the same line (:mod:`.scripts`), and the
wrappers (:mod:`.wrappers`). Words are expanded the way bash would as far as that can be known
before the command runs (:mod:`.expansion`: braces, parameter operators, namerefs, arithmetic),
split on ``IFS`` as assigned (:mod:`.splitting`), and the tool's ``cwd`` argument resolves
relative paths. A variable of the environment that is not known may be empty: ``rm -rf
"$DIR"/*`` is refused (write ``${DIR:?}``). A command substitution whose output cannot be known
may print anything: a destroying command whose target depends on one is refused.

Known limits: the floor judges text, not effects. It cannot see what a script file written
before this command line, an alias or a program's own configuration files will do; a container
or VM boundary (``docker exec``) is not modelled; ``grep -r`` over a directory that happens to
hold a ``.env`` cannot be known to do so; relative paths are judged only by their name unless a
``cd``/``cwd`` says where they are. It is a first line; the OS sandbox beneath it holds what
must never happen.

Deliberate choices: commands that only *use* a secret pass (:mod:`.secret_args`); sourcing a
``.env`` file passes, printing the environment afterwards does not (:mod:`.environment`).
``mkfs`` and ``wipefs`` on an image file pass, on anything under ``/dev`` or unknown they do
not. ``find`` from ``/``, a home or a system directory with ``-delete`` or a destroying
``-exec`` needs a narrow ``-name`` (not under ``-o`` or ``!``). ``chown -R``/``chmod -R`` of
``/usr/local``, ``/opt`` or ``/srv`` pass (routine). Files that run code later may be read;
``/etc/systemd/system`` units may be written (an operator's work), user units may not.

Which calls the floor judges comes from the tool's declaration (``Tool.subject``): a
``command`` subject is parsed as a shell command; a ``path`` subject is checked as a write when
the tool is mutating, as a read for the tools that read what a file holds; a subject with
``every_string`` (an MCP server's tool) has every string of its arguments judged
(:mod:`.tool_strings`).
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
    block_device_here,
    expand_tilde,
    path_class,
    resolve,
)
from .stores import refresh_environment
from .tool_strings import judge_strings
from .verdicts import FloorVerdict, worst
from .walk import FloorWalk, check_script

log = logging.getLogger(__name__)


def judge_command(command: str, *, cwd: str | None = None) -> FloorVerdict | None:
    """The floor for one shell command line: a refusal, a question only a person may answer
    (what it cannot resolve could reach a protected target), or None.

    `cwd` is the directory it runs in, when known (relative paths are judged against it).
    Never raises: an internal error refuses the command (a floor that crashes open is no floor).
    """
    refresh_environment()
    return _judge_command(command, cwd)


def _judge_command(command: str, cwd: str | None = None) -> FloorVerdict | None:
    ctx = Ctx(walk=FloorWalk(), cwd=_initial_cwd(cwd))
    try:
        check_script(command, ctx)
    except Refuse as refusal:
        return FloorVerdict("deny", refusal.reason)
    except RecursionError:
        return FloorVerdict("deny", f"refused: the command is nested too deeply to check {FLOOR_NOTE}")
    except Exception as exc:  # a bug here must not let a command through unchecked
        log.exception("permission floor failed on a command")
        return FloorVerdict("deny", f"refused: the command could not be checked ({type(exc).__name__}) {FLOOR_NOTE}")
    doubts = ctx.facts.doubts
    if not doubts:
        return None
    more = f" (and {len(doubts) - 1} more)" if len(doubts) > 1 else ""
    return FloorVerdict("ask", doubts[0] + more)


def check_command(command: str, *, cwd: str | None = None) -> str | None:
    """The floor's refusal of one shell command line, or None (see :func:`judge_command`,
    which also says when only a person may allow it)."""
    verdict = judge_command(command, cwd=cwd)
    return verdict.reason if verdict is not None and verdict.verdict == "deny" else None


def _initial_cwd(cwd: str | None) -> str | None:
    if not isinstance(cwd, str) or not cwd:
        return None
    resolved = resolve(expand_tilde(cwd), None)
    return resolved if resolved.startswith("/") else None


def judge_call(tool: str, args: Mapping[str, Any], *, spec: Tool | None = None) -> FloorVerdict | None:
    """The floor's verdict on a tool call: refused, only a person may allow it, or None.

    `spec` is the tool's declaration (None: the built-in tool called `tool`, if any).
    execute_command: the command is parsed and checked; its `cwd` argument, when given,
    resolves relative paths. read_file/grep: reading a private key, a .env file, /etc/shadow or
    credentials (grep also a .ssh or credentials directory). write_file: keys, .env files,
    /etc/shadow, the sudo configuration, files that run code later (authorized_keys, shell
    start-up files, crontabs, autostart units) and block devices. A tool whose every string is
    judged (an MCP server's, `Subject.every_string`): each string by :mod:`.tool_strings`.
    list_dir, glob and ask_machine(s) have no floor (the remote agent of ask_machine applies
    its own); nor has a tool without a declaration.
    """
    spec = spec if spec is not None else declared_tool(tool)
    subject = spec.subject if spec is not None else None
    if spec is None or subject is None:
        return None
    refresh_environment()
    if subject.every_string:
        judged = [judge_strings(tool, args, mutating=spec.mutating, judge=_judge_command)]
        if subject.kind == "command" and isinstance(args.get(subject.argument), str):
            judged.append(_judge_command(str(args[subject.argument])))
        return worst(judged)
    if subject.many:
        return None
    value = subject.value(args)  # a string: `many` subjects were left out above
    if subject.kind == "command":
        cwd = args.get("cwd") if isinstance(args.get("cwd"), str) else None
        return _judge_command(str(value), cwd)
    if subject.kind != "path" or not value:
        return None
    if not spec.mutating and not subject.reads_content:
        return None
    try:
        reason = _file_tool_floor(tool, str(value), args, writes=spec.mutating, searches=subject.reach == "search")
    except Exception:  # pragma: no cover - defensive, like judge_command
        log.exception("permission floor failed on a file tool call")
        reason = f"refused: the path could not be checked {FLOOR_NOTE}"
    return FloorVerdict("deny", reason) if reason is not None else None


def floor_violation(tool: str, args: Mapping[str, Any], *, spec: Tool | None = None) -> str | None:
    """Why the floor refuses this tool call, as a sentence the model can read; None if it does
    not refuse it (it may still need a person: :func:`judge_call`)."""
    verdict = judge_call(tool, args, spec=spec)
    return verdict.reason if verdict is not None and verdict.verdict == "deny" else None


def _file_tool_floor(tool: str, path: str, args: Mapping[str, Any], *, writes: bool, searches: bool) -> str | None:
    resolved = resolve(expand_tilde(path), None)
    found = path_class(resolved)
    if writes:
        if block_device_here(resolved):
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
