"""What simple commands print, when that can be known before they run.

``echo``, ``printf``, ``base64 -d``, ``xxd -r``, ``rev`` and the filters that pass their input on
(``cat``, ``head``, ``sort``...) are evaluated; so are the commands that print a path (``pwd``,
``dirname``, ``realpath``, ``mktemp``, ``find``, ``ls``, ``which`` and ``command -v``: a
program of that name), a file written earlier in the same
command line (``cat f``), and commands whose output is a plain word (``date``, ``whoami``). The
walk uses them for ``$(...)``, for what a pipe feeds to ``sh`` or ``xargs``, and for what a
redirection writes to a file.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from collections.abc import Mapping, Sequence

from .paths import HOME, resolve
from .scanning import ansi_c, words

# filters that print (a part of) what they read, when given no file
_PASS_THROUGH = words("cat tee head tail sort uniq tac xargs fold")
# commands that print one word that is not a path (`/tmp/$(date +%s)`)
_WORD_PRINTERS = words("date hostname uname nproc arch uuidgen id hostid tty")
# programs that print shell code of their own to be eval'ed (`eval "$(ssh-agent -s)"`): what
# they print is theirs, not the command line's
_SHELL_SETUP = {
    "ssh-agent": (),
    "dircolors": (),
    "pyenv": ("init",),
    "rbenv": ("init",),
    "nodenv": ("init",),
    "direnv": ("hook", "export"),
    "zoxide": ("init",),
    "starship": ("init",),
    "brew": ("shellenv",),
    "minikube": ("docker-env",),
    "fnm": ("env",),
    "opam": ("env",),
    "conda": ("shell.bash", "shell.zsh"),
}
# where mktemp makes its file when asked nothing else
_MKTEMP = "/tmp/tmp.mktemp"


def _echo_output(args: Sequence[str]) -> str:
    interpret = False
    printed = list(args)
    while printed and re.fullmatch(r"-[neE]+", printed[0]):
        interpret = "e" in printed[0] or interpret
        printed.pop(0)
    text = " ".join(printed)
    return ansi_c(text) if interpret else text


def _printf_output(args: Sequence[str]) -> str:
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    if fmt == "--" and rest:
        fmt, rest = rest[0], rest[1:]
    fmt = ansi_c(fmt)
    out = []
    while True:

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "%%":
                return "%"
            return ansi_c(rest.pop(0)) if rest else ""

        out.append(re.sub(r"%%|%[-+ #0]*\d*(?:\.\d+)?[sbdiouxXcq]", sub, fmt))
        if not rest or "%" not in fmt:
            break
    return "".join(out)


def _decode(name: str, stdin: str) -> str | None:
    """What base64 -d / base32 -d print for `stdin`, or None for bad input."""
    try:
        data = re.sub(r"\s+", "", stdin)
        decoded = base64.b64decode(data + "=" * (-len(data) % 4)) if name == "base64" else base64.b32decode(data)
        return decoded.decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def transform(argv: Sequence[str], stdin: str | None) -> str | None:
    """Output of one pipeline stage we can evaluate from its words and its input, or None."""
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
        return _decode(name, stdin)
    if name == "xxd" and "-r" in args:
        try:
            return bytes.fromhex(re.sub(r"\s+", "", stdin)).decode("utf-8", "replace")
        except ValueError:
            return None
    if name == "rev":
        return "\n".join(line[::-1] for line in stdin.split("\n"))
    if name in ("head", "tail"):
        return _lines(name, args, stdin)
    if name in _PASS_THROUGH and not [a for a in args if not a.startswith("-")]:
        return stdin
    return None


def _lines(name: str, args: list[str], stdin: str) -> str | None:
    """head/tail -n N (or -N) of `stdin`; None when they read a file."""
    count = 10
    rest = list(args)
    while rest:
        option = rest.pop(0)
        if option in ("-n", "--lines") and rest and rest[0].isdigit():
            count = int(rest.pop(0))
        elif re.fullmatch(r"-n?\d+", option):
            count = int(option.lstrip("-n"))
        elif not option.startswith("-"):
            return None
    lines = stdin.rstrip("\n").split("\n")
    kept = lines[:count] if name == "head" else lines[-count:]
    return "\n".join(kept) + "\n"


def find_items(args: Sequence[str]) -> list[str]:
    """What `find ARGS` may print: each start, and everything under it (or what -name keeps)."""
    starts = [a for a in args if not a.startswith("-") and a not in ("(", "!", ")")][:1] or ["."]
    name = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-name", "-iname")), None)
    if name is not None and not any(a in ("-o", "-or", "!", "-not", ",") for a in args):
        return [start.rstrip("/") + "/" + name for start in starts]
    return [s for start in starts for s in (start, start.rstrip("/") + "/*")]


def cd_target(args: Sequence[str], cwd: str | None) -> str | None:
    """Where `cd ARGS` goes, when it can be known (`cd` alone: home)."""
    operands = [a for a in args if not a.startswith("-")]
    if not operands:
        return HOME
    path = resolve(operands[0], cwd)
    return path if path.startswith("/") else None


def _path_output(name: str, args: list[str], cwd: str | None) -> str | None:
    """What pwd, dirname, basename, realpath, readlink -f, mktemp, find and ls print."""
    operands = [a for a in args if not a.startswith("-")]
    if name == "pwd":
        return cwd + "\n" if cwd else None
    if name == "dirname" and operands:
        return "\n".join(posixpath.dirname(o.rstrip("/")) or "." for o in operands) + "\n"
    if name == "basename" and operands:
        return posixpath.basename(operands[0].rstrip("/")) + "\n"
    if (name == "realpath" or (name == "readlink" and any(re.fullmatch(r"-[a-z]*[fem]", a) for a in args))) and (
        operands
    ):
        return "\n".join(resolve(o, cwd) for o in operands) + "\n"
    if name == "mktemp":
        return _MKTEMP + "\n"
    if (
        name in ("which", "command", "type")
        and operands
        and (name == "which" or any(a in ("-v", "-P", "-p") for a in args))
    ):
        return "\n".join("/usr/bin/" + posixpath.basename(o) for o in operands) + "\n"  # a program's path
    if name == "find":
        return "\n".join(find_items(args)) + "\n"
    if name == "ls":
        dirs = operands or ["."]
        return "\n".join(p for d in dirs for p in (d, d.rstrip("/") + "/*")) + "\n"
    return None


def command_output(
    argv: Sequence[str], stdin: str | None, cwd: str | None, files: Mapping[str, tuple[str, ...] | None]
) -> str | None:
    """What one command prints, from its words, its input, the directory and the files written
    earlier in the line; None when that cannot be known."""
    if not argv:
        return None
    name = posixpath.basename(argv[0])
    args = list(argv[1:])
    if name in ("whoami", "logname") or (name == "id" and "-un" in args):
        return "~\n"  # /home/$(whoami) is a home directory
    if name in _WORD_PRINTERS:
        return "word\n"
    if name in _SHELL_SETUP and (not _SHELL_SETUP[name] or any(a in _SHELL_SETUP[name] for a in args[:2])):
        return "\n"
    found = _path_output(name, args, cwd)
    if found is not None:
        return found
    operands = [a for a in args if not a.startswith("-")]
    if name == "cat" and operands:
        contents = [files.get(resolve(o, cwd)) for o in operands]
        if all(content for content in contents):
            return "".join(content[0] for content in contents if content)
        return None
    return transform(argv, stdin)
