"""Per-program checks: what rm, find (:mod:`.find_checks`), dd, cp/mv, shred/truncate,
chmod/chown, mkfs, partition tools, crontab, kill and their kind would destroy, judged from their
expanded arguments.

Each check takes the command's words (``argv[0]`` is the program), the walk's context and the
command's text (quoted in the refusal), and raises :class:`Refuse` or returns. A target built
from a command substitution that cannot be known before it runs is judged by what it could be
(``/``, a home, a system directory, a disk): a destroying command fails closed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping

from .context import Arg, Ctx, doubt, literal, refuse
from .doubts import check_written_chosen
from .find_checks import check_find
from .options import long_flag, short_flags, split_options
from .paths import (
    SECRET_CLASSES,
    UNKNOWN,
    WRITABLE_CLASSES,
    block_device,
    block_device_here,
    critical,
    expand_tilde,
    has_glob,
    path_class,
    resolve,
    runtime_critical,
    runtime_samples,
)
from .processes import check_fuser, check_kill, check_killall, check_killall5, check_loginctl, check_pkill

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
_SCP_VALUE_OPTIONS = frozenset({"-i", "-P", "-o", "-F", "-S", "-l", "-c", "-J", "-D", "-X"})
# /usr/local, /opt, /srv, /mnt: chown -R there is routine (of a home, or of / it is not)
_OWNABLE = frozenset({"/usr/local", "/opt", "/srv", "/mnt", "/media", "/var/www", "/snap"})


# --- what a command may not read or write -------------------------------------------------------


def check_write_target(path: str, snippet: str) -> None:
    """Writing `path` (a redirect, dd of=, tee, cp's destination): a disk by its name, or here
    by what the path is (a device node, a symlink to one)."""
    if block_device_here(path):
        raise refuse(snippet, f"would write to the block device {path}, destroying what is on it")
    found = path_class(path)
    if found and found[0] not in WRITABLE_CLASSES:
        raise refuse(snippet, f"would write {found[1]}")


def check_written_value(value: str, ctx: Ctx, snippet: str) -> None:
    """Writing the path `value` (as expanded): the path, and what a command substitution in it
    could make it (a disk)."""
    check_write_target(resolve(value, ctx.cwd), snippet)
    for sample in runtime_samples(value, ctx.cwd):
        if block_device(sample):
            raise refuse(
                snippet,
                f"would write to a path that comes from a command substitution that cannot be "
                f"checked before it runs (it could be the block device {sample})",
            )
    check_written_chosen(value, ctx, snippet)


def check_read_target(path: str, snippet: str) -> None:
    """Reading `path` (a `<` redirect, dd if=)."""
    found = path_class(path)
    if found and found[0] in SECRET_CLASSES:
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
            if recursive and (what := runtime_critical(value, ctx.cwd)):
                raise refuse(snippet, f"would delete {what}")
            found = path_class(path)
            if found and found[0] == "keydir" and recursive:
                raise refuse(snippet, f"would delete {found[1]} with its private keys")
            if found and found[0] == "keydir" and has_glob(path):
                raise refuse(snippet, f"would delete {found[1]}")


def check_dd(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """dd: of= is written, if= is read (bash expands `~` after `of=`, as in an assignment)."""
    for arg in argv[1:]:
        for value in arg.values:
            if value.startswith("of="):
                check_written_value(expand_tilde(value[3:]), ctx, snippet)
            elif value.startswith("if="):
                check_read_target(resolve(expand_tilde(value[3:]), ctx.cwd), snippet)


def check_writes_operands(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """tee, sponge: every operand is written."""
    _options, operands = split_options(argv[1:])
    for arg in operands:
        for value in arg.values:
            check_written_value(value, ctx, snippet)


def check_overwrite(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """shred, truncate, wipe, srm: what they are given is destroyed, so not / or a home or a
    system directory (or everything in one), nor what a command substitution may print."""
    name = posixpath.basename(argv[0].text)
    _options, operands = split_options(argv[1:])
    for arg in operands:
        for value in arg.values:
            check_written_value(value, ctx, snippet)
            what = critical(resolve(value, ctx.cwd)) or runtime_critical(value, ctx.cwd)
            if what:
                raise refuse(snippet, f"would destroy what is in {what} ({name})")


def check_copy(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """cp, install, mv, rsync, ln, scp: the destination is written; mv takes its sources away."""
    name = posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = split_options(args)
    if name == "scp":  # the values of -i KEY, -P PORT...: not files to copy
        valued = {id(args[i + 1]) for i, a in enumerate(args[:-1]) if a.text in _SCP_VALUE_OPTIONS}
        operands = [a for a in operands if id(a) not in valued]
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
            remote = re.match(r"(?:[\w.-]+@)?[\w.-]+:(?!//)(.*)$", value) if name in ("scp", "rsync") else None
            if remote is not None:  # host:path, a path on another machine (from its home)
                value = remote.group(1) if remote.group(1).startswith(("/", "~")) else "~/" + remote.group(1)
            check_written_value(value, ctx, snippet)
            # a folder as the destination: each source lands in it under its own name
            for source in (v for s in sources for v in s.values):
                leaf = posixpath.basename(source.rstrip("/"))
                if leaf and leaf not in (".", ".."):
                    check_write_target(resolve(value.rstrip("/") + "/" + leaf, ctx.cwd), snippet)
    if name == "ln" and "s" in short_flags(options) | ({"s"} if long_flag(options, "--symbolic") else set()):
        for source in (v for arg in sources for v in arg.values):
            if block_device(resolve(source, ctx.cwd)):
                doubt(ctx, snippet, f"makes a link to the block device {source}, which a later write would destroy")
    if name == "mv":
        for arg in sources:
            for value in arg.values:
                what = critical(resolve(value, ctx.cwd)) or runtime_critical(value, ctx.cwd)
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
    """chmod, chown, chgrp, setfacl, chattr: of / at all; recursively, of a home directory, a
    system directory or everything in one (/usr/local, /opt, /srv... excepted)."""
    name = name or posixpath.basename(argv[0].text)
    args = argv[1:]
    options, operands = split_options(args)
    if name in ("chmod", "chattr"):
        # chmod -x file, chattr -i file: "-x" is a mode, not an option
        options = [o for o in options if re.fullmatch(r"-[RcfvV]+|--.*", o)]
        modes = [a for a in args if re.fullmatch(r"-[rwxXst]+" if name == "chmod" else r"[-+=][a-zA-Z]+", a.text)]
        operands = [a for a in operands if a not in modes]
    if long_flag(options, "--no-preserve-root"):
        raise refuse(snippet, "turns off the protection of / (--no-preserve-root)")
    recursive = "R" in short_flags(options) or long_flag(options, "--recursive")
    has_reference = any(o.startswith("--reference") for o in options)
    if name in ("chmod", "chown", "chgrp") and not has_reference and not (name == "chmod" and _modes_present(args)):
        operands = operands[1:]  # the mode or the owner
    elif name == "setfacl":
        operands = [a for a in operands if not re.fullmatch(r"[ugom]:.*|[ugom]:?[^/]*:.*|default:.*", a.text)]
    change = "permissions" if name in ("chmod", "setfacl") else "attributes" if name == "chattr" else "ownership"
    for arg in operands:
        for value in arg.values:
            path = resolve(value, ctx.cwd)
            if path == "/":
                raise refuse(snippet, f"would change the {change} of /")
            if recursive:
                what = critical(path) or runtime_critical(value, ctx.cwd)
                if what and path not in _OWNABLE:
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


# --- find -------------------------------------------------------------------------------------


def _check_find(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """find's -delete and -exec (:mod:`.find_checks`), and the files -fprint and -fls write."""
    check_find(argv, ctx, snippet)
    args = argv[1:]
    for index, arg in enumerate(args[:-1]):
        if arg.text in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            for value in args[index + 1].values:
                check_written_value(value, ctx, snippet)


# --- schedules ----------------------------------------------------------------------------------


def _check_crontab(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """crontab FILE, crontab - (or no argument: stdin) installs a crontab; -l, -e, -r do not."""
    args = [a.text for a in argv[1:]]
    operands: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("-u", "-c"):
            i += 2
            continue
        if args[i] == "-" or not args[i].startswith("-"):
            operands.append(args[i])
        i += 1
    managing = any(re.fullmatch(r"-[lerivTn]+|--help|--version", a) for a in args)
    if operands or not managing:
        raise refuse(snippet, "would install a crontab, which runs commands on a schedule")


#: The check for each program name (the basename of the command word).
PROGRAM_CHECKS: Mapping[str, Check] = {
    "rm": check_rm,
    "find": _check_find,
    "dd": check_dd,
    "tee": check_writes_operands,
    "sponge": check_writes_operands,
    "truncate": check_overwrite,
    "shred": check_overwrite,
    "wipe": check_overwrite,
    "srm": check_overwrite,
    "crontab": _check_crontab,
    "killall5": check_killall5,
    "pkill": check_pkill,
    "skill": check_pkill,
    "killall": check_killall,
    "fuser": check_fuser,
    "loginctl": check_loginctl,
    "chattr": check_chmod,
    "cp": check_copy,
    "scp": check_copy,
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
    "kill": check_kill,
}
