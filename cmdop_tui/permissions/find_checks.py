"""find: what ``-delete`` and the commands of ``-exec``/``-execdir``/``-ok``/``-okdir`` would do to
the paths it may find.

From a critical start (``/``, a home, ``/etc``, ``/usr``, ``/var``...) that no narrow ``-name``
filters, ``-delete`` is refused, and so is any ``-exec`` command that destroys what it is given
(``rm``, ``shred``, ``truncate``, ``chmod``...) or that can run anything (a shell, an
interpreter). Every ``-exec`` command is also checked as a command of its own, with ``{}``
standing for the start and everything under it.
"""

from __future__ import annotations

import posixpath
import re

from .context import Arg, Ctx, literal, refuse
from .paths import broad, critical, path_class, resolve, runtime_critical, show
from .scanning import words

_EXEC_FLAGS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_TERMINATORS = frozenset({";", "+", "\\;"})
# programs that destroy or change what they are given
_DESTROYERS = words(
    "rm rmdir unlink shred truncate dd mv chmod chown chgrp setfacl chattr wipe srm wipefs mkfs blkdiscard"
)
# programs that may run anything
_RUNNERS = words(
    "sh bash dash zsh ksh mksh ash fish csh tcsh rbash eval xargs python python2 python3 perl ruby "
    "node nodejs php lua awk gawk busybox"
)
# programs that overwrite their last argument
_COPIERS = words("cp install ln rsync tee")
# an operator that makes a -name test apply to only some of what is found
_ALTERNATIVES = frozenset({"-o", "-or", ",", "!", "-not"})


def check_find(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """find: -delete and destroying -exec commands from a critical start; each -exec command."""
    starts, expr = _split(argv[1:])
    texts = [a.text for a in expr]
    name_pattern = _name_pattern(texts)
    filtered = name_pattern is not None and not broad(name_pattern)
    start_values = [v for a in (starts or [literal(".")]) for v in a.values]
    start_paths = [resolve(v, ctx.cwd) for v in start_values]
    whole = [
        (path, what)
        for value, path in zip(start_values, start_paths, strict=True)
        if (what := critical(path) or runtime_critical(value, ctx.cwd))
    ]
    if "-delete" in texts:
        if whole and not filtered:
            path, what = whole[0]
            raise refuse(snippet, f"would delete everything under {show(path)} ({what})")
        for path in start_paths:
            found = path_class(path)
            if found and found[0] == "keydir":
                raise refuse(snippet, f"would delete files in {found[1]}")
    if whole and not filtered:
        program = _destroying_command(expr)
        if program:
            path, what = whole[0]
            raise refuse(snippet, f"would run {program} on everything under {show(path)} ({what})")
    _check_commands(expr, start_paths, name_pattern, filtered, ctx, snippet)


def _split(args: list[Arg]) -> tuple[list[Arg], list[Arg]]:
    """find's arguments: (the starting points, the expression)."""
    i = 0
    while i < len(args) and (args[i].text in ("-H", "-L", "-P", "-D") or re.fullmatch(r"-O\d", args[i].text)):
        i += 2 if args[i].text == "-D" else 1
    starts: list[Arg] = []
    while i < len(args) and not (args[i].text.startswith("-") or args[i].text in ("(", "!", ")")):
        starts.append(args[i])
        i += 1
    return starts, args[i:]


def _name_pattern(texts: list[str]) -> str | None:
    """The -name/-iname pattern every found path matches, or None (none, or under -o or !)."""
    if any(text in _ALTERNATIVES for text in texts):
        return None
    for flag in ("-name", "-iname"):
        if flag in texts and texts.index(flag) + 1 < len(texts):
            return texts[texts.index(flag) + 1]
    return None


def _exec_commands(expr: list[Arg]) -> list[list[Arg]]:
    """The commands of -exec/-execdir/-ok/-okdir, without their terminator."""
    commands: list[list[Arg]] = []
    j = 0
    while j < len(expr):
        if expr[j].text in _EXEC_FLAGS:
            k = j + 1
            while k < len(expr) and expr[k].text not in _TERMINATORS:
                k += 1
            commands.append(expr[j + 1 : k])
            j = k + 1
        else:
            j += 1
    return commands


def _destroying_command(expr: list[Arg]) -> str | None:
    """The first -exec program that destroys what it is given or may run anything."""
    for command in _exec_commands(expr):
        names = [posixpath.basename(v.rstrip("/")) for a in command for v in a.values]
        for name in names:
            if name in _DESTROYERS or name in _RUNNERS or re.sub(r"[\d.]+$", "", name) in _RUNNERS:
                return name
        if names and names[0] in _COPIERS and "{}" in command[-1].text:
            return names[0]
        if names and names[0] in ("sed", "gsed") and any(re.match(r"-[a-zA-Z]*i|--in-place", n) for n in names):
            return names[0]
    return None


def _check_commands(
    expr: list[Arg], start_paths: list[str], name_pattern: str | None, filtered: bool, ctx: Ctx, snippet: str
) -> None:
    """Each -exec command, with {} standing for what find may find."""
    for command in _exec_commands(expr):
        for path in start_paths:
            item = path.rstrip("/") + "/" + (name_pattern or "*")
            items = (item,) if filtered else (path or ".", item)
            sub = [
                Arg(a.raw, tuple(dict.fromkeys(v.replace("{}", it) for it in items for v in a.values)), a.dynamic)
                for a in command
            ]
            ctx.walk.command(sub, ctx, snippet)
