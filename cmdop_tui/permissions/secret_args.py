"""Arguments that name a secret (an SSH private key, a .env file, /etc/shadow, cloud
credentials, the sudo configuration) or a file that runs code later: refused unless the command
only *uses* it.

Commands that only use a secret pass (``ssh -i key``, ``scp -i key``, ``ssh-add``,
``ssh-keygen -y``, ``chmod 600 key``, ``ls``/``stat``/``test``/``echo`` of a path, sourcing a
.env file (what is printed afterwards is :mod:`.environment`'s), ``docker --env-file .env``,
``git rm --cached .env``); every other command naming one is refused, writes included (``cp
.env.example .env``). A directory of keys may be named, but not copied or searched
recursively. Credentials (``~/.aws/credentials``, ``~/.kube/config``...) may be the
destination of a copy (setting them up), not read. Start-up files, ``authorized_keys`` and
crontabs (``persist``) may be read, but not edited in place (``sed -i``, ``perl -i``, editors).
"""

from __future__ import annotations

from collections.abc import Mapping

from .context import Arg, Ctx, refuse
from .options import long_flag, short_flags, split_options
from .paths import path_class, resolve
from .scanning import words
from .scripts import edits_in_place

# commands that look at a path without reading what is in it
_META = words(
    "ls stat test [ [[ file echo printf basename dirname realpath readlink du wc md5sum sha1sum "
    "sha224sum sha256sum sha384sum sha512sum b2sum cksum lsattr getfacl namei which type true "
    "false : find tree exa eza lsof"
)
_KEY_USERS = _META | words("ssh ssh-add ssh-keygen ssh-copy-id ssh-agent sftp autossh chmod chown chgrp mosh sshfs")
_ENV_USERS = _META | frozenset({"source", ".", "chmod", "chown", "chgrp"})
# git subcommands that name a secret without reading it (untracking a committed .env is good)
_GIT_HARMLESS = frozenset({"check-ignore", "ls-files", "status"})
_SUDOERS_READERS = _META | words("cat less more head tail grep egrep fgrep rg diff cmp visudo view bat zcat")
_ALLOWED_USERS: Mapping[str, frozenset[str]] = {
    "key": _KEY_USERS,
    "env": _ENV_USERS,
    "shadow": _META,
    "sudoers": _SUDOERS_READERS,
    "cred": _META | words("chmod chown chgrp"),
}
# option values that use a secret without revealing it (ssh keys for scp, env files for docker)
_SKIP_OPTION_VALUES: Mapping[str, frozenset[str]] = {
    "scp": frozenset({"-i", "-F", "-S", "-o"}),
    "rsync": frozenset({"-e", "--rsh"}),
    "docker": frozenset({"--env-file"}),
    "podman": frozenset({"--env-file"}),
    "docker-compose": frozenset({"--env-file"}),
    "git": frozenset({"-c"}),
    "kubectl": frozenset({"--kubeconfig"}),
    "helm": frozenset({"--kubeconfig"}),
    "curl": frozenset({"--netrc-file"}),
}
# programs whose last operand is where they write
_COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_RECURSIVE_READERS = frozenset(
    {
        "cp",
        "scp",
        "rsync",
        "tar",
        "zip",
        "7z",
        "7za",
        "rar",
        "grep",
        "egrep",
        "rg",
        "ag",
        "rm",
        "mv",
        "cpio",
        "pax",
        "gsutil",
        "rclone",
        "aws",
    }
)
# these read whole trees whatever their options say
_ALWAYS_RECURSIVE = frozenset(
    {"tar", "rsync", "rg", "ag", "mv", "7z", "7za", "rar", "cpio", "pax", "rclone", "gsutil", "aws"}
)


def check_secret_args(name: str, argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """Arguments naming a secret: refused unless the command only uses it (ssh -i key)."""
    if name == "ssh":
        return
    if name == "git":
        subcommand = next((a.text for a in argv[1:] if not a.text.startswith("-")), None)
        if subcommand in _GIT_HARMLESS or (subcommand == "rm" and any(a.text == "--cached" for a in argv)):
            return
    skip = _SKIP_OPTION_VALUES.get(name, frozenset())
    recursive = _recursive_reader(name, argv)
    in_place = edits_in_place(name, argv[1:])
    operands = [a for a in argv[1:] if not a.text.startswith("-")]
    destination = operands[-1] if name in _COPIERS and len(operands) > 1 else None
    skip_next = False
    for arg in argv[1:]:
        if skip_next:
            skip_next = False
            continue
        if arg.text in skip:
            skip_next = True
            continue
        if any(arg.text.startswith(option + "=") for option in skip if option.startswith("--")):
            continue
        for value in arg.values:
            _check_value(name, value, (recursive, in_place, arg is destination), ctx, snippet)


def _check_value(name: str, value: str, how: tuple[bool, bool, bool], ctx: Ctx, snippet: str) -> None:
    """One possible value of an argument, and the path after its `=` or `@` (curl -d @file).
    `how`: (the command reads folders recursively, it rewrites the files it names, the argument
    is where a copy goes)."""
    recursive, in_place, written = how
    candidates = [value]
    if "=" in value:
        candidates.append(value.split("=", 1)[1])
    candidates += [c[1:] for c in candidates if c.startswith("@")]
    for candidate in candidates:
        if candidate.startswith(("ssh ", "/usr/bin/ssh ")):
            ctx.walk.script(candidate, ctx)
            continue
        found = path_class(resolve(candidate, ctx.cwd))
        if found is None:
            continue
        kind, what = found
        if kind == "keydir":
            if recursive:
                raise refuse(snippet, f"would copy or read {what}, which holds private keys")
            continue
        if kind == "persist":
            if in_place:
                raise refuse(snippet, f"would change {what}")
            continue
        if kind == "cred" and written:  # cp admin.conf ~/.kube/config: setting up, not reading
            continue
        if name in _ALLOWED_USERS[kind]:
            continue
        if kind == "sudoers":
            raise refuse(snippet, f"would change {what}")
        if kind == "env":
            raise refuse(snippet, f"would read or write {what}, which holds secrets")
        raise refuse(snippet, f"would read or write {what}")


def _recursive_reader(name: str, argv: list[Arg]) -> bool:
    if name not in _RECURSIVE_READERS:
        return False
    if name in _ALWAYS_RECURSIVE:
        return True
    options, _ = split_options(argv[1:])
    flags = short_flags(options)
    if name in ("grep", "egrep"):
        return (
            bool(flags & {"r", "R"})
            or long_flag(options, "--recursive", "--dereference-recursive")
            or any(o.startswith("--directories=rec") for o in options)
        )
    return bool(flags & {"r", "R", "a"}) or long_flag(options, "--recursive", "--archive")
