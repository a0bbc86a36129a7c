"""Per-program checks: what rm, find, dd, cp/mv, chmod/chown, mkfs, partition tools, kill and
their kind would destroy, judged from their expanded arguments.

Each check takes the command's words (``argv[0]`` is the program), the walk's context and the
command's text (quoted in the refusal), and raises :class:`Refuse` or returns.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping

from .context import Arg, Ctx, literal, refuse
from .paths import HOME, UNKNOWN, block_device, broad, critical, has_glob, home_dir, path_class, resolve, show

#: One program's check: (argv, ctx, snippet), raising Refuse.
Check = Callable[[list[Arg], Ctx, str], None]

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
# a user's own home, /usr/local, /opt, /srv, /mnt: chown -R there is routine
_OWNABLE = frozenset({"/usr/local", "/opt", "/srv", "/mnt", "/media", "/var/www", "/snap"})


# --- options ------------------------------------------------------------------------------------


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


# --- what a command may not read or write -------------------------------------------------------


def check_write_target(path: str, snippet: str) -> None:
    """Writing `path` (a redirect, dd of=, tee, cp's destination)."""
    if block_device(path):
        raise refuse(snippet, f"would write to the block device {path}, destroying what is on it")
    found = path_class(path)
    if found and found[0] != "keydir":
        raise refuse(snippet, f"would write {found[1]}")


def check_read_target(path: str, snippet: str) -> None:
    """Reading `path` (a `<` redirect, dd if=)."""
    found = path_class(path)
    if found and found[0] in ("key", "env", "shadow"):
        raise refuse(snippet, f"would read {found[1]}")


# --- deleting, copying, moving ------------------------------------------------------------------


def check_rm(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    options, targets = split_options(argv[1:])
    if long_flag(options, "--no-preserve-root"):
        raise refuse(snippet, "turns off rm's protection of / (--no-preserve-root)")
    recursive = bool(short_flags(options) & {"r", "R"}) or long_flag(options, "--recursive")
    for arg in targets:
        for value in arg.values:
            path = resolve(value, ctx.cwd)
            what = critical(path)
            if what:
                if arg.dynamic and UNKNOWN not in value and value != arg.raw:
                    raise refuse(
                        snippet,
                        f"would delete {what} if a variable in `{arg.raw}` is empty "
                        f"or unset (write ${{VAR:?}} to stop on an unset variable)",
                    )
                raise refuse(snippet, f"would delete {what}")
            found = path_class(path)
            if found and found[0] == "keydir" and recursive:
                raise refuse(snippet, f"would delete {found[1]} with its private keys")
            if found and found[0] == "keydir" and has_glob(path):
                raise refuse(snippet, f"would delete {found[1]}")


def check_find(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """find: -delete from a critical start; -exec/-ok commands run with {} = each found path."""
    args = argv[1:]
    i = 0
    while (
        i < len(args)
        and args[i].text in ("-H", "-L", "-P", "-D")
        or (i < len(args) and re.fullmatch(r"-O\d", args[i].text))
    ):
        i += 2 if args[i].text == "-D" else 1
    starts: list[Arg] = []
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
    filtered = name_pattern is not None and not broad(name_pattern)
    start_paths = [resolve(v, ctx.cwd) for a in (starts or [literal(".")]) for v in a.values]
    if "-delete" in texts:
        for path in start_paths:
            what = critical(path)
            if what and not filtered:
                raise refuse(snippet, f"would delete everything under {show(path)} ({what})")
            found = path_class(path)
            if found and found[0] == "keydir":
                raise refuse(snippet, f"would delete files in {found[1]}")
    _check_find_commands(expr, start_paths, name_pattern, filtered, ctx, snippet)


def _check_find_commands(
    expr: list[Arg], start_paths: list[str], name_pattern: str | None, filtered: bool, ctx: Ctx, snippet: str
) -> None:
    """-exec/-execdir/-ok: each command, with {} standing for what find may find."""
    j = 0
    while j < len(expr):
        if expr[j].text in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            while k < len(expr) and expr[k].text not in (";", "+", "\\;"):
                k += 1
            command = expr[j + 1 : k]
            for path in start_paths:
                item = path.rstrip("/") + "/" + (name_pattern or "*")
                items = (item,) if filtered else (path or ".", item)
                sub = [
                    Arg(a.raw, tuple(dict.fromkeys(v.replace("{}", it) for it in items for v in a.values)), a.dynamic)
                    for a in command
                ]
                ctx.walk.command(sub, ctx, snippet)
            j = k + 1
        else:
            j += 1


def check_dd(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    for arg in argv[1:]:
        for value in arg.values:
            if value.startswith("of="):
                check_write_target(resolve(value[3:], ctx.cwd), snippet)
            elif value.startswith("if="):
                check_read_target(resolve(value[3:], ctx.cwd), snippet)


def check_writes_operands(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """tee, truncate, shred: every operand is written."""
    _options, operands = split_options(argv[1:])
    for arg in operands:
        for value in arg.values:
            path = resolve(value, ctx.cwd)
            check_write_target(path, snippet)


def check_copy(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """cp, install, mv, rsync, ln: the destination is written; mv takes its sources away."""
    name = posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = split_options(args)
    target_dir = None
    for index, arg in enumerate(args):
        if arg.text in ("-t", "--target-directory") and index + 1 < len(args):
            target_dir = args[index + 1]
        elif arg.text.startswith("--target-directory="):
            target_dir = literal(arg.text.split("=", 1)[1])
    if target_dir is not None:
        dests, sources = [target_dir], [a for a in operands if a is not target_dir]
    else:
        dests, sources = operands[-1:], operands[:-1]
    for arg in dests:
        for value in arg.values:
            check_write_target(resolve(value, ctx.cwd), snippet)
    if name == "mv":
        for arg in sources:
            for value in arg.values:
                what = critical(resolve(value, ctx.cwd))
                if what:
                    raise refuse(snippet, f"would move away {what}")
    if name == "rsync" and any(o.startswith("--del") or o == "--remove-source-files" for o in options):
        for arg in dests:
            for value in arg.values:
                what = critical(resolve(value, ctx.cwd))
                if what:
                    raise refuse(snippet, f"would delete files in {what} (rsync --delete)")


# --- permissions and owners ---------------------------------------------------------------------


def check_chmod(argv: list[Arg], ctx: Ctx, snippet: str, name: str | None = None) -> None:
    """chmod, chown, chgrp, setfacl: of / at all, of a critical directory recursively."""
    name = name or posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = split_options(args)
    if name == "chmod":
        # chmod -x file: "-x" is a mode, not an option
        options = [o for o in options if re.fullmatch(r"-[Rcfv]+|--.*", o)]
        modes = [a for a in args if re.fullmatch(r"-[rwxXst]+", a.text)]
        operands = [a for a in operands if a not in modes]
    if long_flag(options, "--no-preserve-root"):
        raise refuse(snippet, "turns off the protection of / (--no-preserve-root)")
    recursive = "R" in short_flags(options) or long_flag(options, "--recursive")
    has_reference = any(o.startswith("--reference") for o in options)
    if name in ("chmod", "chown", "chgrp") and not has_reference and not (name == "chmod" and _modes_present(args)):
        operands = operands[1:]  # the mode or the owner
    elif name == "setfacl":
        operands = [a for a in operands if not re.fullmatch(r"[ugom]:.*|[ugom]:?[^/]*:.*", a.text)]
    for arg in operands:
        for value in arg.values:
            path = resolve(value, ctx.cwd)
            if path == "/":
                raise refuse(snippet, f"would change the {'permissions' if name == 'chmod' else 'owner'} of /")
            if recursive:
                what = critical(path)
                if what and not (home_dir(path) or path in _OWNABLE or path.startswith(HOME)):
                    change = "permissions" if name in ("chmod", "setfacl") else "ownership"
                    raise refuse(snippet, f"would change the {change} of {what}, recursively")


def _modes_present(args: list[Arg]) -> bool:
    """chmod's mode given as an option-looking word (`chmod -x file`)."""
    return any(re.fullmatch(r"-[rwxXst]+", a.text) for a in args)


# --- disks --------------------------------------------------------------------------------------


def is_mkfs(name: str) -> bool:
    """mkfs, mkfs.ext4, wipefs and the other programs that format or wipe a device."""
    return name.startswith("mkfs") or name in _MKFS


def check_mkfs(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    name = posixpath.basename(argv[0].text)
    _options, operands = split_options(argv[1:])
    for arg in operands:
        if arg.dynamic:
            raise refuse(snippet, f"runs {name} on a device that cannot be known before it runs")
        path = resolve(arg.text, ctx.cwd)
        if path.startswith("/dev/") and path not in ("/dev/null", "/dev/zero"):
            raise refuse(snippet, f"would format or wipe {path} ({name}), destroying what is on it")


def _check_blkdiscard(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    _options, operands = split_options(argv[1:])
    if operands:
        raise refuse(snippet, f"would discard every block of {operands[0].text}")


def _check_partition(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    name = posixpath.basename(argv[0].text)
    values = [a.text for a in argv[1:]]
    destructive = {"mklabel", "mktable", "mkpart", "rm", "resizepart", "resize", "rescue", "mkfs"}
    if name == "parted" and any(v in destructive for v in values):
        raise refuse(snippet, "would rewrite a partition table")
    if name == "sgdisk" and any(
        re.fullmatch(r"-[A-Za-z]*[ZzondgG][A-Za-z]*", v)
        or v.startswith(("--zap", "--clear", "--new", "--delete", "--mbrtogpt", "--largest-new"))
        for v in values
    ):
        raise refuse(snippet, "would rewrite a partition table")
    if name in ("parted", "sgdisk"):
        return
    if not any(v in _PARTITION_LISTING or re.fullmatch(r"-[a-z]*l[a-z]*", v) for v in values):
        raise refuse(snippet, f"would rewrite a partition table ({name} without a listing option)")


def _check_hdparm(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
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
        raise refuse(snippet, "would erase or damage a disk")


def _check_subcommand(bad: frozenset[str], what: str) -> Check:
    """A check refusing any of the subcommands `bad` (`nvme format`, `zpool destroy`)."""

    def check(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
        if any(a.text in bad for a in argv[1:]):
            raise refuse(snippet, what)

    return check


def _check_badblocks(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    options, _operands = split_options(argv[1:])
    if "w" in short_flags(options):
        raise refuse(snippet, "would overwrite a whole disk (badblocks -w)")


# --- processes ----------------------------------------------------------------------------------


def _check_kill(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    args = [a.text for a in argv[1:]]
    i = 0
    if i < len(args) and args[i] in ("-s", "-n", "--signal"):
        i += 2
    elif i < len(args) and args[i].startswith("-") and args[i] != "--" and len(args) > 1:
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    if "-1" in args[i:]:
        raise refuse(snippet, "would kill every process on the machine (kill -1)")


#: The check for each program name (the basename of the command word).
PROGRAM_CHECKS: Mapping[str, Check] = {
    "rm": check_rm,
    "find": check_find,
    "dd": check_dd,
    "tee": check_writes_operands,
    "truncate": check_writes_operands,
    "shred": check_writes_operands,
    "cp": check_copy,
    "install": check_copy,
    "mv": check_copy,
    "rsync": check_copy,
    "ln": check_copy,
    "chmod": check_chmod,
    "chown": check_chmod,
    "chgrp": check_chmod,
    "setfacl": check_chmod,
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
