"""Commands that run other commands: shells and their ``-c`` strings, ``eval``, ``trap``,
``watch``, ``su -c``, ``ssh host CMD``, ``xargs``, and wrappers such as ``sudo``, ``doas``,
``env``, ``nohup``, ``nice``, ``timeout``, ``exec``, ``command``, ``flock``, ``chroot``,
``busybox`` and ``systemd-run``.

A wrapper is unwrapped to the command it runs, which is then checked as if written alone; a
shell string is handed back to the walk (``ctx.walk``) as a script of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from .context import MAX_CANDIDATES, Arg, Ctx, Stdin, literal
from .expansion import Upstream
from .paths import UNKNOWN, resolve
from .scanning import words
from .scripts import contents, run_file

#: The command a wrapper runs, and the context it runs in.
Inner = tuple[list[Arg], Ctx]

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash", "csh", "tcsh"})

# options that take a value, per wrapper
_WRAPPER_OPTS: Mapping[str, frozenset[str]] = {
    "sudo": frozenset(
        {
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-T",
            "-U",
            "-R",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--close-from",
            "--chdir",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
            "--chroot",
        }
    ),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "unbuffer": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "busybox": frozenset(),
    "toybox": frozenset(),
    "systemd-run": frozenset(
        {
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--working-directory",
            "--description",
            "--slice",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--nice",
            "--on-calendar",
            "--on-active",
        }
    ),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-E", "-P", "-I", "-b", "-X", "-O", "-S"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-E", "-n"}),
    "firejail": frozenset(),
    "fakeroot": frozenset({"-l", "-s", "-i"}),
    "catchsegv": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "torsocks": frozenset(),
    "sg": frozenset(),
}
_SSH_OPTS = words("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")
_XARGS_OPTS = frozenset(
    {
        "-I",
        "-n",
        "-L",
        "-P",
        "-d",
        "-a",
        "-E",
        "-s",
        "-e",
        "--max-args",
        "--max-lines",
        "--max-procs",
        "--delimiter",
        "--arg-file",
        "--eof",
        "--max-chars",
        "--replace",
    }
)


def unwrap(name: str, argv: list[Arg], ctx: Ctx, stdin: Stdin | None) -> Inner | None:
    """For a command that runs another one, the inner argv (shell strings are checked here)."""
    args = argv[1:]
    if name in SHELLS:
        check_shell(args, ctx, stdin, name)
        return None
    if name in ("at", "batch"):
        files = [args[i + 1] for i, a in enumerate(args[:-1]) if a.text == "-f"]
        for value in (v for arg in files for v in arg.values):
            run_file(value, ctx, " ".join([name, *(a.text for a in args)]))
        if stdin is not None and not files:
            text = stdin()
            if text:
                ctx.walk.script(text, ctx)
        return None
    unwrapper = _UNWRAPPERS.get(name)
    if unwrapper is None and name in _WRAPPER_OPTS:
        unwrapper = _after_options
    return unwrapper(name, args, ctx) if unwrapper is not None else None


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


def _rest(args: list[Arg], start: int, ctx: Ctx) -> Inner | None:
    return (args[start:], ctx) if start < len(args) else None


# --- commands whose arguments are shell code ------------------------------------------------------


def _eval(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    ctx.walk.script(" ".join(a.text for a in args), ctx)
    return None


def _trap(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    if args and args[0].text not in ("-l", "-p"):
        ctx.walk.script(args[0].text, ctx)
    return None


def _alias(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    for arg in args:
        if "=" in arg.text:
            ctx.walk.script(arg.text.split("=", 1)[1], ctx)
    return None


def _watch(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"-n", "--interval", "-q", "--equexit", "-d"}))
    if start < len(args):
        ctx.walk.script(" ".join(a.text for a in args[start:]), ctx)
    return None


def _su(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """su -c STRING; runuser -c STRING or runuser -u USER CMD..."""
    for i, arg in enumerate(args):
        if arg.text in ("-c", "--command") and i + 1 < len(args):
            ctx.walk.script(args[i + 1].text, ctx)
        elif arg.text.startswith("--command="):
            ctx.walk.script(arg.text.split("=", 1)[1], ctx)
    if name == "runuser":
        start = skip_options(args, frozenset({"-u", "-g", "-G", "--user", "--group"}))
        if start < len(args) and "-u" in [a.text for a in args]:
            return args[start:], ctx
    return None


def _script(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    for i, arg in enumerate(args):
        if i + 1 < len(args) and (arg.text in ("-c", "--command") or re.fullmatch(r"-[a-z]*c", arg.text)):
            ctx.walk.script(args[i + 1].text, ctx)
    return None


def _ssh(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """ssh [options] host [command...]: the remote command is checked like a local one."""
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value.startswith("-") and len(value) > 1:
            letter = value[:2]
            i += 2 if (letter in _SSH_OPTS and len(value) == 2) else 1
            continue
        break
    rest = args[i + 1 :]
    if rest:
        remote = " ".join(a.text for a in rest)
        ctx.walk.script(remote, Ctx(walk=ctx.walk, depth=ctx.depth))  # nothing known there
    return None


def _flock(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}))
    rest = args[start + 1 :]
    if rest and rest[0].text in ("-c", "--command") and len(rest) > 1:
        ctx.walk.script(rest[1].text, ctx)
        return None
    return (rest, ctx) if rest else None


def check_shell(args: list[Arg], ctx: Ctx, stdin: Stdin | None, program: str = "sh") -> None:
    """bash -c STRING [NAME ARGS...] ($1... are ARGS), bash FILE (a file the line wrote), bash -s
    or bash with its script on stdin."""
    i = 0
    command: list[Arg] | None = None
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if value.startswith("-") and not value.startswith("--") and "c" in value[1:]:
            command = [a for a in args[i + 1 :] if a.text != "--"]
            break
        if value.startswith(("-", "+")) and value not in ("-", "+"):
            i += 1
            continue
        break
    else:
        i = len(args)
    snippet = " ".join([program, *(a.text for a in args)])
    if command:
        positional = tuple(a.text for a in command[2:]) if len(command) > 1 else None
        ctx.walk.script(command[0].text, replace(ctx, positional=positional))
        return
    if i < len(args) and args[i].text not in ("-s", "-"):
        for value in args[i].values:
            run_file(value, ctx, snippet, stdin=stdin)
        return
    if stdin is not None:
        text = stdin()
        if text:
            ctx.walk.script(text, ctx)


# --- wrappers: the command after their options --------------------------------------------------


def _after_options(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    return _rest(args, skip_options(args, _WRAPPER_OPTS[name]), ctx)


def _env(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """env [-u NAME] [-C DIR] [NAME=value]... CMD, or env -S STRING."""
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value in ("-u", "--unset", "-C", "--chdir", "-P"):
            if value in ("-C", "--chdir") and i + 1 < len(args):
                ctx.cwd = resolve(args[i + 1].text, ctx.cwd) if not args[i + 1].dynamic else None
            i += 2
            continue
        if (
            value in ("-S", "--split-string")
            or value.startswith("--split-string=")
            or (value.startswith("-S") and len(value) > 2)
        ):
            if value.startswith("--split-string="):
                string, i = value.split("=", 1)[1], i + 1
            elif value.startswith("-S") and len(value) > 2:
                string, i = value[2:], i + 1
            else:
                string, i = (args[i + 1].text if i + 1 < len(args) else ""), i + 2
            rest = " ".join(a.raw for a in args[i:])
            ctx.walk.script(string + " " + rest, ctx)
            return None
        if value.startswith("-") and value != "-":
            i += 1
            continue
        match = re.fullmatch(r"([A-Za-z_]\w*)=(.*)", value, re.DOTALL)
        if match:
            ctx.vars[match.group(1)] = (match.group(2),)
            i += 1
            continue
        break
    return _rest(args, i, ctx)


def _sudo(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    if any(a.text in ("-e", "--edit") for a in args):
        start = skip_options(args, _WRAPPER_OPTS["sudo"])
        return [literal("sudoedit"), *args[start:]], ctx
    if any(a.text in ("-l", "--list", "-v", "--validate", "-k", "-K") for a in args[:1]):
        return None
    return _after_options(name, args, ctx)


def _command(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    if any(a.text in ("-v", "-V") for a in args[:2]):
        return None
    return _rest(args, skip_options(args, frozenset()), ctx)


def _nice(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, _WRAPPER_OPTS["nice"])
    # nice -10 cmd
    while start < len(args) and re.fullmatch(r"-?-?\d+", args[start].text):
        start += 1
    return _rest(args, start, ctx)


def _timeout(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"-s", "--signal", "-k", "--kill-after"}))
    return _rest(args, start + 1, ctx)  # after the duration


def _scheduler(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """chrt PRIORITY CMD, taskset MASK CMD (or taskset -c LIST CMD); -p: an existing process."""
    start = skip_options(args, frozenset({"-c", "--cpu-list"} if name == "taskset" else set()))
    if any(a.text in ("-p", "--pid") for a in args):
        return None
    start += 1  # the priority or the mask
    if name == "taskset" and any(a.text in ("-c", "--cpu-list") for a in args):
        start -= 1
    return _rest(args, start, ctx)


def _chroot(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"--userspec", "--groups"}))
    rest = args[start + 1 :]
    return (rest, ctx) if rest else None


def _ionice(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    if any(a.text in ("-p", "--pid", "-P", "--pgid", "-u", "--uid") for a in args):
        return None  # an existing process
    return _after_options(name, args, ctx)


_UNWRAPPERS: Mapping[str, Callable[[str, list[Arg], Ctx], Inner | None]] = {
    "eval": _eval,
    "trap": _trap,
    "alias": _alias,
    "watch": _watch,
    "su": _su,
    "runuser": _su,
    "script": _script,
    "ssh": _ssh,
    "flock": _flock,
    "env": _env,
    "sudo": _sudo,
    "command": _command,
    "nice": _nice,
    "timeout": _timeout,
    "chrt": _scheduler,
    "taskset": _scheduler,
    "chroot": _chroot,
    "ionice": _ionice,
}


# --- xargs ----------------------------------------------------------------------------------------


def check_xargs(argv: list[Arg], ctx: Ctx, snippet: str, upstream: Upstream | None, stdin: Stdin | None = None) -> None:
    """xargs CMD: CMD with what xargs reads (a here-string, a here-document, a file the line
    wrote, what the stage before prints) when that is known, else with an unknown word."""
    args = argv[1:]
    replace_str: str | None = None
    arg_file: str | None = None
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if not value.startswith("-"):
            break
        if value in ("-I", "-a", "--arg-file") and i + 1 < len(args):
            if value == "-I":
                replace_str = args[i + 1].text
            else:
                arg_file = args[i + 1].text
            i += 2
            continue
        if value.startswith("-I") and len(value) > 2:
            replace_str = value[2:]
        elif value in ("-i", "--replace"):
            replace_str = "{}"
        elif value.startswith(("-i", "--replace=")):
            replace_str = value.split("=", 1)[1] if "=" in value else value[2:]
        elif value.startswith(("--arg-file=", "-a")):
            arg_file = value.split("=", 1)[1] if "=" in value else value[2:]
        if value in _XARGS_OPTS and "=" not in value:
            i += 2
            continue
        i += 1
    command = args[i:] or [literal("echo")]
    items = _xargs_items(arg_file, ctx, upstream, stdin)
    if items is None:
        feed: list[Arg] = [Arg("", ("", UNKNOWN), dynamic=True)]
    else:
        feed = [literal(item) for item in items[:MAX_CANDIDATES]]
    if replace_str:
        for item in feed:
            new = [Arg(a.raw, tuple(v.replace(replace_str, item.text) for v in a.values), a.dynamic) for a in command]
            ctx.walk.command(new, ctx, snippet)
    else:
        ctx.walk.command(list(command) + feed, ctx, snippet)


def _xargs_items(arg_file: str | None, ctx: Ctx, upstream: Upstream | None, stdin: Stdin | None) -> list[str] | None:
    """The words xargs reads, when they can be known before it runs."""
    if arg_file is not None:
        found = contents(arg_file, ctx)
        return [word for text in found for word in text.replace("\x00", " ").split()] if found else None
    text = stdin() if stdin is not None else None
    if text is not None:
        return text.replace("\x00", " ").split()
    return upstream.items() if upstream is not None else None
