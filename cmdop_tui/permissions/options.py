"""Reading a command's options the way GNU tools (and wrappers) take them."""

from __future__ import annotations

from .context import Arg


def split_options(args: list[Arg]) -> tuple[list[str], list[Arg]]:
    """GNU-style: options anywhere until `--`; returns (options, operands)."""
    options: list[str] = []
    operands: list[Arg] = []
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


def short_flags(options: list[str]) -> set[str]:
    """The letters of the short options (`-rf` -> {"r", "f"})."""
    flags: set[str] = set()
    for option in options:
        if not option.startswith("--"):
            flags.update(option[1:])
    return flags


def long_flag(options: list[str], *names: str) -> bool:
    """Is one of the long options `names` given, perhaps abbreviated (`--recur`)?"""
    for option in options:
        if option.startswith("--"):
            stem = option.split("=", 1)[0]
            if any(len(stem) > 3 and name.startswith(stem) for name in names):
                return True
    return False


def skip_options(args: list[Arg], with_value: frozenset[str]) -> int:
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
