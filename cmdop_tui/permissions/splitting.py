"""Word splitting on ``IFS``, and ``read``/``mapfile``, which split their input the same way.

An unquoted expansion is split on the characters of ``IFS`` as assigned in the command line
(``IFS=,; c=rm,-rf,/; $c``); when ``IFS`` cannot be known, on any likely separator. A variable
that may hold several values gives one command line per value (``for c in "ls" "rm -rf /"; do
$c; done``). ``read`` fed by a here-string, a here-document or a known pipe sets its variables
to the fields of that input; fed by something unknown, they are unknown, and a command name
taken from them, or from any unknown expansion once ``IFS`` was changed, is refused when its
arguments look destructive.
"""

from __future__ import annotations

import re

from .context import MAX_CANDIDATES, Arg, Ctx, Stdin
from .paths import OPAQUE, block_device, critical, path_class, resolve, runtime_critical, unknowable

_DEFAULT_IFS = " \t\n"
_ANY_IFS = " \t\n,:;|=+@%^!#&"  # IFS unknown: split on every likely separator
_READ_VALUE_OPTIONS = "adpnNtui"  # the letters of read's options that take a value
_MAPFILE_VALUE_OPTIONS = "dnOsuCc"
_DESTRUCTIVE_OPTION = re.compile(r"-[a-zA-Z]*[rRf][a-zA-Z]*|--(?:recursive|force|no-preserve-root|delete)\b.*")


def ifs_values(ctx: Ctx) -> list[str]:
    """The separators IFS may hold ('' for none)."""
    values = ctx.vars.get("IFS")
    if values is None:
        return [_DEFAULT_IFS]
    return list(dict.fromkeys(_ANY_IFS if unknowable(value) else value for value in values[:4]))


def _fields(value: str, ifs: str) -> list[str]:
    if not ifs:
        return [value]
    return [piece for piece in re.split("[" + re.escape(ifs) + "]+", value) if piece]


def split_args(args: list[Arg], ctx: Ctx) -> list[list[Arg]]:
    """The command lines `args` may become once unquoted expansions are split (at least one)."""
    if not any(arg.split for arg in args):
        return [args]
    most = max(len(arg.values) for arg in args if arg.split)
    found: dict[tuple[tuple[str, tuple[str, ...]], ...], list[Arg]] = {}
    for ifs in ifs_values(ctx):
        for k in range(most):
            argv: list[Arg] = []
            for arg in args:
                pieces = _fields(arg.values[min(k, len(arg.values) - 1)], ifs) if arg.split else []
                if len(pieces) > 1:
                    argv.extend(Arg(piece, (piece,), arg.dynamic) for piece in pieces)
                else:
                    argv.append(arg)
            found.setdefault(tuple((a.raw, a.values) for a in argv), argv)
            if len(found) >= MAX_CANDIDATES:
                return list(found.values())
    return list(found.values())


# --- read and mapfile -----------------------------------------------------------------------------


def _read_words(args: list[str], with_value: str) -> tuple[list[str], dict[str, str]]:
    """read's (mapfile's) variable names and its options with their values (-a NAME...);
    `with_value`: the letters of the options that take one."""
    names: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-") and len(word) > 1 and not names:
            for letter in word[1:]:
                options[letter] = ""
            if word[-1] in with_value:
                options[word[-1]] = args[i + 1] if i + 1 < len(args) else ""
                i += 1
        else:
            names.append(word)
        i += 1
    return names, options


def check_read(name: str, argv: list[Arg], ctx: Ctx, stdin: Stdin | None) -> None:
    """read [-r] [-a ARRAY] [NAME...] / mapfile [-t] [ARRAY]: set the variables from the input."""
    mapping = name in ("mapfile", "readarray")
    names, options = _read_words([a.text for a in argv[1:]], _MAPFILE_VALUE_OPTIONS if mapping else _READ_VALUE_OPTIONS)
    text = stdin() if stdin is not None else None
    if mapping:
        lines = text.split("\n") if text is not None else None
        _set_array(names[0] if names else "MAPFILE", lines, ctx)
        return
    array = options.get("a")
    targets = [] if array else (names or ["REPLY"])
    if text is None:
        for target in targets:
            ctx.vars[target] = (OPAQUE,)  # what input holds: chosen by whoever wrote it
            ctx.facts.input_vars.add(target)
        if array:
            _set_array(array, None, ctx)
        return
    delimiter = options.get("d", "\n") or "\x00"
    line = text.split(delimiter)[0]
    if "r" not in options:
        line = re.sub(r"\\(.)", r"\1", line)
    values: dict[str, list[str]] = {target: [] for target in targets}
    for ifs in ifs_values(ctx):
        stripped = line.strip(" \t\n") if set(ifs) <= set(_DEFAULT_IFS) else line
        if array:
            _set_array(array, _fields(stripped, ifs), ctx)
            continue
        if ifs and len(targets) > 1:
            pieces = re.split("[" + re.escape(ifs) + "]+", stripped, maxsplit=len(targets) - 1)
        else:
            pieces = [stripped]
        for index, target in enumerate(targets):
            values[target].append(pieces[index] if index < len(pieces) else "")
    for target, found in values.items():
        ctx.vars[target] = tuple(dict.fromkeys(found))


def _set_array(name: str, items: list[str] | None, ctx: Ctx) -> None:
    """An array's elements (`${A[0]}`) and its words joined (`${A[@]}`); None: unknown input."""
    if items is None:
        ctx.vars[name] = (OPAQUE,)
        ctx.facts.input_vars.add(name)
        return
    items = [item for item in items if item][:MAX_CANDIDATES]
    ctx.vars[name] = (" ".join(items),)
    for index, item in enumerate(items):
        ctx.vars[f"{name}[{index}]"] = (item,)


# --- a command whose name cannot be known ---------------------------------------------------------


def suspicious_name(arg: Arg, ctx: Ctx) -> bool:
    """Does the command name come from an unknown expansion after IFS changed, or from input?"""
    used = set(re.findall(r"\$\{?([A-Za-z_]\w*)", arg.raw))
    return ctx.facts.ifs_changed or bool(used & ctx.facts.input_vars)


def looks_destructive(args: list[Arg], ctx: Ctx) -> bool:
    """Arguments that would be dangerous for rm, chmod or dd: -rf, a critical path, a secret, a
    disk, or a value that cannot be known."""
    for arg in args:
        for value in arg.values:
            if _DESTRUCTIVE_OPTION.fullmatch(value) or unknowable(value):
                return True
            path = resolve(value.split("=", 1)[1] if value.startswith(("of=", "if=")) else value, ctx.cwd)
            if critical(path) or runtime_critical(value, ctx.cwd) or path_class(path) or block_device(path):
                return True
    return False
