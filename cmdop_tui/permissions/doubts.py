"""What the floor cannot resolve, and whether it could reach a protected target: then only a
person may allow the command (:func:`.context.doubt`), never a rule, auto mode or an
approve-everything function.

A hole is a part of a word the floor cannot know: what a command substitution prints
(:data:`.paths.RUNTIME`), what the command computes in a way not followed
(:data:`.paths.OPAQUE`), and for a program's name or for shell code, what the environment
holds (:data:`.paths.UNKNOWN`). A target with a hole is judged by what it could be: each hole
filled with a sample of what the floor protects (``/``, a home, a key, credentials, a disk, a
start-up file). ``"$(git rev-parse --show-toplevel)"/build`` could be none of them;
``$(cat f)`` could be any.

The holes of the environment are its own: ``rm -rf "$BUILD_DIR"`` is judged as today (it
may be empty), only a name or code built from them is a doubt.
"""

from __future__ import annotations

import posixpath
import re

from .context import Arg, Ctx, doubt
from .expansion import expand
from .parsing import lex
from .paths import (
    HOME,
    OPAQUE,
    SECRET_CLASSES,
    WRITABLE_CLASSES,
    block_device,
    chosen_by_command,
    critical,
    path_class,
    resolve,
    show,
)
from .scanning import words

_HOLE_SAMPLES = (
    "/",
    HOME,
    HOME + "/.ssh/id_rsa",
    HOME + "/.aws/credentials",
    HOME + "/.bashrc",
    "/etc/shadow",
    "/etc/sudoers",
    "/dev/sda",
    ".env",
)
# a hole with more of the path after it is a folder: one of these
_FOLDER_SAMPLES = ("/", HOME, HOME + "/.ssh", "/etc", "/dev")
_HOLE = re.compile("[\x00\x01\x03]")
# programs that show what a file holds (or send it somewhere)
CONTENT_READERS = words(
    "cat tac head tail less more most bat batcat nl od xxd hexdump strings base64 base32 grep egrep "
    "fgrep rg ag ack sed awk gawk mawk cut sort uniq paste join column fold fmt tr iconv diff cmp "
    "comm jq yq cp scp rsync tar zip gzip bzip2 xz zstd 7z curl wget nc ncat socat openssl gpg "
    "view vim vi nvim nano emacs tee dd install ssh-keygen python python3 perl ruby node source ."
)
# programs that destroy or take away what they are given, a whole tree (rm, chmod: with -r)
_TREE_DESTROYERS = words("rm mv shred truncate chmod chown chgrp wipe srm")
# programs whose mere presence in text that could not be parsed means it could reach anything
_RISKY = words(
    "rm rmdir unlink dd mkfs wipefs shred truncate mv cp install ln rsync chmod chown chgrp chattr "
    "setfacl find xargs parallel tee sed awk gawk perl python python3 python2 ruby node nodejs php "
    "lua sh bash dash zsh ksh fish csh tcsh eval exec source . sudo doas su env nohup timeout "
    "ssh scp curl wget kill pkill killall crontab git tar make gdb vim vi nvim ex emacs tmux screen "
    "systemctl launchctl docker kubectl"
)


def filled(value: str, cwd: str | None) -> list[str]:
    """The paths `value` may be once each hole in it is one of the samples (none: [])."""
    if not _HOLE.search(value):
        return []
    if value.startswith("-") and "=" in value:  # --file=...: the path is the option's value
        value = value.split("=", 1)[1]
    last = max(value.rfind(mark) for mark in "\x00\x01\x03")
    samples = _HOLE_SAMPLES if "/" not in value[last:] else _FOLDER_SAMPLES
    return [resolve(_HOLE.sub(sample, value), cwd) for sample in samples]


def could_reach(value: str, cwd: str | None, *, reads: bool = True, writes: bool = True) -> str | None:
    """What protected target `value` could be once its holes are filled, or None."""
    for path in filled(value, cwd):
        what = critical(path)
        if what and writes:
            return what
        found = path_class(path)
        if found and reads and found[0] in SECRET_CLASSES:
            return found[1]
        if found and writes and found[0] not in WRITABLE_CLASSES:
            return found[1]
        if writes and block_device(path):
            return f"the block device {path}"
    return None


def check_chosen_operands(name: str, argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """Operands the command computes that could be a protected target: any such operand of a
    program that shows what a file holds (a secret), an OPAQUE one of a program that destroys
    a tree (`/`, a home: a command substitution's is refused by the program's own check)."""
    reader = name in CONTENT_READERS
    destroyer = name in _TREE_DESTROYERS and (name not in ("rm", "chmod", "chown", "chgrp") or _recursive(argv))
    if not (reader or destroyer):
        return
    for arg in argv[1:]:
        for value in arg.values:
            what = None
            if reader and chosen_by_command(value):
                what = could_reach(value, ctx.cwd, writes=False)
            if what is None and destroyer and OPAQUE in value:
                what = next((c for path in filled(value, ctx.cwd) if (c := critical(path))), None)
            if what:
                doubt(ctx, snippet, f"works on a path the command computes, which could be {what}")
                return


def _recursive(argv: list[Arg]) -> bool:
    return any(re.fullmatch(r"-[a-zA-Z]*[rR][a-zA-Z]*|--recursive", a.text) for a in argv[1:])


def check_written_chosen(value: str, ctx: Ctx, snippet: str) -> None:
    """Writing a path the command computes: it could be a start-up file, a key, a disk."""
    if chosen_by_command(value):
        what = could_reach(value, ctx.cwd, reads=False)
        if what:
            doubt(ctx, snippet, f"writes to a path the command computes, which could be {what}")


def check_unknown_program(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """A command whose program cannot be named: it may be anything when its words come from
    a hole (`$CMD`, `$(cat cmd)`), or when what it is given could be a protected target."""
    head = argv[0]
    if head.split and any(chosen_by_command(value) for value in head.values):
        doubt(ctx, snippet, "runs a command whose name and words cannot be known before it runs")
        return
    for arg in argv[1:]:
        for value in arg.values:
            what = _named_target(value, ctx) or could_reach(value, ctx.cwd)
            if what:
                doubt(ctx, snippet, f"runs a program whose name cannot be known before it runs on {what}")
                return


def _named_target(value: str, ctx: Ctx) -> str | None:
    path = resolve(value, ctx.cwd)
    found = path_class(path)
    return (
        critical(path) or (found[1] if found else None) or (f"the block device {path}" if block_device(path) else None)
    )


def check_unreadable_code(text: str, ctx: Ctx) -> None:
    """Shell code with a hole the command chose (`eval "$(curl ...)"`, `xargs sh -c '{}'`, a
    line `read` took from input): it may be anything. The environment's values are its own."""
    if chosen_by_command(text):
        doubt(ctx, text, "runs shell code built from values that cannot be known before it runs")


def check_unparsed_reach(text: str, ctx: Ctx) -> None:
    """Text that could not be parsed at all: a doubt when it runs a program that could reach a
    protected target, or names one."""
    for kind, value, target in lex(text):
        word = value if kind == "word" else target
        if not word:
            continue
        arg, _scripts = expand(word, ctx)
        for candidate in arg.values:
            if posixpath.basename(candidate) in _RISKY or _named_target(candidate, ctx):
                doubt(ctx, text, f"could not be parsed, and it runs or names {show(candidate)}")
                return
