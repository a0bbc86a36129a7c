"""Commands that run other commands: wrappers such as ``sudo``, ``doas``, ``pkexec``, ``env``
(and ``env -S``), ``nohup``, ``nice``, ``timeout``, ``exec``, ``command``, ``chroot``,
``nsenter``, ``unshare``, ``setpriv``, ``bwrap``, ``busybox`` and ``systemd-run``; ``at``;
and, through :mod:`.shell_code`, shells and the commands whose arguments are shell code.

A wrapper is unwrapped to the command it runs, which is then checked as if written alone; a
shell string is handed back to the walk (``ctx.walk``) as a script of its own. What a wrapper
sets in the environment is an assignment like any other (:mod:`.command_env`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .command_env import assignment_scripts, check_assignment
from .context import Arg, Ctx, Stdin, literal, texts_of
from .options import skip_options
from .paths import resolve
from .scripts import run_file
from .shell_code import CODE_RUNNERS, SHELLS, Inner, check_shell

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
    "pkexec": frozenset({"--user"}),
    "run0": frozenset({"-u", "--user", "-g", "--group", "-D", "--chdir", "--setenv", "--unit", "-p", "--property"}),
    "nsenter": frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-r", "--root"}),
    "unshare": frozenset(
        {"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--map-user", "--map-group"}
    ),
    "setpriv": frozenset(
        {
            "--reuid",
            "--regid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
        }
    ),
    "chpst": frozenset(
        {"-u", "-U", "-b", "-e", "-/", "-C", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-r", "-t"}
    ),
    "numactl": frozenset(
        {"-C", "-N", "-m", "-i", "-p", "--physcpubind", "--cpunodebind", "--membind", "--interleave", "--preferred"}
    ),
    "prlimit": frozenset({"-p", "--pid"}),
    "valgrind": frozenset(),
    "xvfb-run": frozenset(
        {
            "-n",
            "--server-num",
            "-s",
            "--server-args",
            "-f",
            "--auth-file",
            "-e",
            "--error-file",
            "-p",
            "--xauth-protocol",
        }
    ),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "ssh-agent": frozenset({"-a", "-E", "-t", "-P", "-O"}),
    "cgexec": frozenset({"-g"}),
    "sandbox-exec": frozenset({"-f", "-n", "-p", "-D"}),
    "perf": frozenset({"-o", "--output", "-e", "--event", "-p", "--pid", "-t", "--tid", "-c", "--count"}),
    "eatmydata": frozenset(),
    "fakechroot": frozenset(),
    "proot": frozenset(
        {"-r", "--rootfs", "-b", "--bind", "-w", "--pwd", "--cwd", "-q", "--qemu", "-k", "--kernel-release"}
    ),
}
# bwrap's options by how many values they take
_BWRAP_VALUES = {
    **dict.fromkeys(
        (
            "--bind",
            "--ro-bind",
            "--dev-bind",
            "--bind-try",
            "--ro-bind-try",
            "--dev-bind-try",
            "--symlink",
            "--setenv",
            "--file",
            "--bind-data",
            "--ro-bind-data",
            "--chmod",
        ),
        2,
    ),
    **dict.fromkeys(
        (
            "--dev",
            "--proc",
            "--tmpfs",
            "--mqueue",
            "--dir",
            "--chdir",
            "--unsetenv",
            "--lock-file",
            "--sync-fd",
            "--uid",
            "--gid",
            "--hostname",
            "--seccomp",
            "--info-fd",
            "--json-status-fd",
            "--userns",
            "--userns2",
            "--pidns",
            "--cap-add",
            "--cap-drop",
            "--args",
            "--remount-ro",
            "--exec-label",
            "--file-label",
            "--perms",
            "--size",
            "--block-fd",
            "--userns-block-fd",
            "--argv0",
        ),
        1,
    ),
}


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
            check_shell([], ctx, stdin, name)  # at reads the commands to run from its input
        return None
    unwrapper = _UNWRAPPERS.get(name) or CODE_RUNNERS.get(name)
    if unwrapper is None and name in _WRAPPER_OPTS:
        unwrapper = _after_options
    return unwrapper(name, args, ctx) if unwrapper is not None else None


def _rest(args: list[Arg], start: int, ctx: Ctx) -> Inner | None:
    return (args[start:], ctx) if start < len(args) else None


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
        if value in ("-S", "--split-string") or value.startswith(("--split-string=", "-S")) and len(value) > 2:
            _split_string(args, i, ctx)
            return None
        if value.startswith("-") and value != "-":
            i += 1
            continue
        if re.fullmatch(r"[A-Za-z_]\w*=.*", value, re.DOTALL):
            _env_assignment(args[i], ctx)
            i += 1
            continue
        break
    return _rest(args, i, ctx)


def _split_string(args: list[Arg], i: int, ctx: Ctx) -> None:
    """env -S STRING [ARGS]: STRING is split into words like a command line (every form)."""
    value = args[i].text
    if value.startswith("--split-string="):
        strings, i = [v.split("=", 1)[1] for v in args[i].values], i + 1
    elif value.startswith("-S") and len(value) > 2:
        strings, i = [v[2:] for v in args[i].values], i + 1
    else:
        strings, i = (list(args[i + 1].values) if i + 1 < len(args) else [""]), i + 2
    for string in strings:
        for rest in texts_of(args[i:]):
            ctx.walk.script(string + " " + rest, ctx)


def _env_assignment(arg: Arg, ctx: Ctx) -> None:
    """env NAME=value: the variable set for the command, and what a program makes of it."""
    name = arg.text.split("=", 1)[0]
    values = tuple(v.split("=", 1)[1] for v in arg.values if "=" in v)
    ctx.vars[name] = values
    for script in assignment_scripts(name, values):
        ctx.walk.script(script, ctx)
    check_assignment(name, values, ctx, arg.text)


def _bwrap(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """bwrap [options] CMD: each option with its values, then the command."""
    i = 0
    while i < len(args) and args[i].text.startswith("--"):
        if args[i].text == "--":
            i += 1
            break
        i += 1 + _BWRAP_VALUES.get(args[i].text, 0)
    return _rest(args, i, ctx)


def _capsh(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """capsh ... -- -c CMD (a shell's arguments after `--`)."""
    texts = [a.text for a in args]
    if "--" in texts:
        check_shell(args[texts.index("--") + 1 :], ctx, None, "bash")
    return None


def _sg(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """sg GROUP [-c] COMMAND: the command is a string for a shell."""
    rest = args[1:]
    if rest and rest[0].text == "-c":
        rest = rest[1:]
    if rest:
        for text in texts_of(rest):
            ctx.walk.script(text, ctx)
    return None


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
    "env": _env,
    "sudo": _sudo,
    "command": _command,
    "nice": _nice,
    "timeout": _timeout,
    "chrt": _scheduler,
    "taskset": _scheduler,
    "chroot": _chroot,
    "ionice": _ionice,
    "bwrap": _bwrap,
    "capsh": _capsh,
    "sg": _sg,
}
