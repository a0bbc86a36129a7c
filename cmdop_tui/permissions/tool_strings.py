"""The floor for a tool whose every string argument is judged (``Subject.every_string``): an MCP
server's tool, whose arguments nobody here declared, so they are judged whatever they are
called.

Every string in the arguments, in arrays and objects at any depth:

* under a key named like a command (``command``, ``cmd``, ``script``, ``shell``...): a shell
  command line, which the floor parses;
* one that names a path (absolute, ``~``, ``./``, ``../``, a relative path with a ``/``, a bare
  dotfile name, a ``file://`` URI, decoded): no reading a secret (a key, a ``.env`` file,
  credentials, ``/etc/shadow``); and for a tool that changes things, no writing a file that
  runs code later, the sudo configuration or a disk, and a person asked before it acts on
  ``/``, a home, a system directory or a folder of keys.

``readOnlyHint`` only makes a tool a reader: it is judged as one, never skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from .context import ASK_NOTE
from .paths import (
    FLOOR_NOTE,
    SECRET_CLASSES,
    WRITABLE_CLASSES,
    block_device,
    critical,
    expand_tilde,
    path_class,
    resolve,
)
from .verdicts import FloorVerdict, worst

#: Judges one shell command line (the floor's own entry point, given to avoid a cycle).
CommandJudge = Callable[[str], FloorVerdict | None]

_COMMAND_KEYS = frozenset(
    {"command", "commands", "cmd", "cmds", "script", "scripts", "shell", "shellcommand", "bash", "sh", "zsh"}
    | {"commandline", "cmdline", "exec", "execute", "runcommand", "shellscript"}
)
_MAX_STRINGS = 2_000
_MAX_DEPTH = 32
_MAX_PATH = 4_096
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")


_URL_JUNK = re.compile(r"[\t\r\n]")
_URL_EDGES = "".join(map(chr, range(0x21)))


def strings(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(the key it is under, the string) for every string in `value`, at any depth (bounded)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield from strings(item, str(name), depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item, key, depth + 1)


def named_path(value: str) -> str | None:
    """The path `value` names (a `file://` URI decoded), or None when it names none."""
    if len(value) > _MAX_PATH or "\x00" in value:
        return None
    uri = _URL_JUNK.sub("", value).strip(_URL_EDGES)  # what a URL parser drops (WHATWG, urlsplit)
    if uri[:5].lower() == "file:":
        return unquote(urlsplit(uri).path) or None
    if "\n" in value:
        return None
    if _URL.match(value):
        return None
    if value.startswith(("/", "~", "./", "../", "$HOME", "${HOME}")) or value in (".", ".."):
        return value
    if re.fullmatch(r"\.[^/\s]+", value) and value != "..":
        return value
    return value if "/" in value else None


def _command_key(key: str) -> bool:
    return re.sub(r"[^a-z]", "", key.lower()) in _COMMAND_KEYS


def _path_verdict(tool: str, path: str, *, mutating: bool) -> FloorVerdict | None:
    resolved = resolve(expand_tilde(path), None)
    # the server follows a symlink (one a command made in the workspace): judged as its target too
    real = os.path.realpath(resolved) if resolved.startswith("/") else resolved
    found = path_class(resolved) or (path_class(real) if real != resolved else None)
    if found and found[0] in SECRET_CLASSES:
        return FloorVerdict("deny", f"refused: {tool} would read {found[1]} {FLOOR_NOTE}")
    if not mutating:
        return None
    if block_device(resolved):
        return FloorVerdict("deny", f"refused: {tool} would write the block device {resolved} {FLOOR_NOTE}")
    if found and found[0] not in WRITABLE_CLASSES:
        return FloorVerdict("deny", f"refused: {tool} would write {found[1]} {FLOOR_NOTE}")
    what = critical(resolved) or (found[1] if found and found[0] == "keydir" else None)
    if what:
        return FloorVerdict("ask", f"needs a person: {tool} changes things and is given {what} {ASK_NOTE}")
    return None


def judge_strings(tool: str, args: Mapping[str, Any], *, mutating: bool, judge: CommandJudge) -> FloorVerdict | None:
    """The floor's verdict on every string of `args` (see the module doc)."""
    found: list[FloorVerdict | None] = []
    for count, (key, value) in enumerate(strings(args)):
        if count >= _MAX_STRINGS:
            found.append(FloorVerdict("ask", f"needs a person: {tool} is given too many values to check {ASK_NOTE}"))
            break
        path = named_path(value)
        if _command_key(key):
            found.append(judge(value))
        elif path is not None:
            found.append(_path_verdict(tool, path, mutating=mutating))
        if found and found[-1] is not None and found[-1].verdict == "deny":
            break
    return worst(found)
