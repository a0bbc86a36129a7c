"""Commands whose arguments are shell code: shells (``bash -c``, ``bash FILE``, a script on
stdin), ``eval``, ``trap``, ``alias``, ``watch``, ``su -c``/``runuser``, ``script -c``,
``flock -c``, ``ssh host CMD`` (and the commands ``ssh -o ProxyCommand=`` runs here), and what
``tmux``/``screen`` are told to run or type.

The code is handed back to the walk (``ctx.walk.script``) as a script of its own, in every form
its words may take: ``eval "$X"`` with X unknown is code that cannot be read before it runs
(a doubt of the walk, :func:`.walk.check_script`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from .context import Arg, Ctx, Facts, Stdin, doubt, texts_of
from .options import skip_options
from .scanning import words
from .scripts import run_file

#: The command a wrapper runs, and the context it runs in.
Inner = tuple[list[Arg], Ctx]

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash", "csh", "tcsh"})
_SSH_OPTS = words("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")
# ssh options whose value is a command run on this machine
_SSH_LOCAL_COMMANDS = ("proxycommand", "localcommand", "knownhostscommand", "remotecommand")
# tmux commands whose last arguments are a shell command (send-keys: text typed into a shell)
_TMUX_RUNNERS = words(
    "new-session new new-window neww split-window splitw respawn-pane respawnp respawn-window "
    "respawnw run-shell run if-shell if display-popup popup pipe-pane pipep send-keys send"
)
_TMUX_VALUE_OPTIONS = words("-c -e -F -l -n -s -t -x -y -L -S -f -p -T -d -w -h -b")


def check_code_args(args: list[Arg], ctx: Ctx) -> None:
    """`args` joined are shell code (eval, watch): each form they may take, checked."""
    for text in texts_of(args):
        ctx.walk.script(text, ctx)


def _eval(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    check_code_args(args, ctx)
    return None


def _trap(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    if args and args[0].text not in ("-l", "-p"):
        check_code_args(args[:1], ctx)
    return None


def _alias(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    for arg in args:
        for value in arg.values:
            if "=" in value:
                ctx.walk.script(value.split("=", 1)[1], ctx)
    return None


def _watch(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"-n", "--interval", "-q", "--equexit", "-d"}))
    if start < len(args):
        check_code_args(args[start:], ctx)
    return None


def code_after(args: list[Arg], ctx: Ctx, flags: tuple[str, ...], long: str | None = None) -> None:
    """The code given after one of `flags` (`-c CODE`), or as `--long=CODE`."""
    for i, arg in enumerate(args):
        if arg.text in flags and i + 1 < len(args):
            check_code_args(args[i + 1 : i + 2], ctx)
        elif long and arg.text.startswith(long + "="):
            for value in arg.values:
                ctx.walk.script(value.split("=", 1)[1], ctx)


def _su(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """su -c STRING; runuser -c STRING or runuser -u USER CMD..."""
    code_after(args, ctx, ("-c", "--command"), "--command")
    if name == "runuser":
        start = skip_options(args, frozenset({"-u", "-g", "-G", "--user", "--group"}))
        if start < len(args) and "-u" in [a.text for a in args]:
            return args[start:], ctx
    return None


def _script(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    for i, arg in enumerate(args):
        if i + 1 < len(args) and (arg.text in ("-c", "--command") or re.fullmatch(r"-[a-z]*c", arg.text)):
            check_code_args(args[i + 1 : i + 2], ctx)
    return None


def _ssh_local_command(option: str, ctx: Ctx) -> None:
    """An `-o Key=value` of ssh or scp: the commands some keys run on this machine."""
    key, _, value = re.sub(r"^\s*([A-Za-z]+)\s*(?:=|\s)\s*", r"\1=", option, count=1).partition("=")
    if key.strip().lower() in _SSH_LOCAL_COMMANDS and value.strip().lower() != "none":
        ctx.walk.script(re.sub(r"%[%a-zA-Z]", "x", value), ctx)


def _ssh(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """ssh [options] host [command...]: the remote command is checked like a local one, the
    commands options run here (ProxyCommand) as local ones."""
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            i += 1
            break
        if value.startswith("-o"):
            for option in args[i + 1].values if value == "-o" and i + 1 < len(args) else (value[2:],):
                _ssh_local_command(option, ctx)
        if value.startswith("-") and len(value) > 1:
            letter = value[:2]
            i += 2 if (letter in _SSH_OPTS and len(value) == 2) else 1
            continue
        break
    rest = args[i + 1 :]
    if rest and name == "ssh":
        remote = Ctx(walk=ctx.walk, depth=ctx.depth, facts=Facts(doubts=ctx.facts.doubts))  # nothing known there
        check_code_args(rest, remote)
    return None


def _flock(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    start = skip_options(args, frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}))
    rest = args[start + 1 :]
    if rest and rest[0].text in ("-c", "--command") and len(rest) > 1:
        check_code_args(rest[1:2], ctx)
        return None
    return (rest, ctx) if rest else None


def _tmux(name: str, args: list[Arg], ctx: Ctx) -> Inner | None:
    """tmux new-window CMD, send-keys TEXT...; screen -X stuff TEXT, screen CMD: shell code run
    in a terminal the app does not contain."""
    texts = [a.text for a in args]
    if name == "screen":
        if "stuff" in texts:
            check_code_args(args[texts.index("stuff") + 1 :], ctx)
        return None
    for index, text in enumerate(texts):
        if text in _TMUX_RUNNERS:
            rest = args[index + 1 :]
            j = 0
            while j < len(rest) and rest[j].text.startswith("-"):
                j += 2 if rest[j].text in _TMUX_VALUE_OPTIONS else 1
            typed = [a for a in rest[j:] if a.text not in ("Enter", "C-m", "KPEnter", ";")]
            if typed:
                check_code_args(typed, ctx)
    return None


CODE_RUNNERS: Mapping[str, Callable[[str, list[Arg], Ctx], Inner | None]] = {
    "eval": _eval,
    "trap": _trap,
    "alias": _alias,
    "watch": _watch,
    "su": _su,
    "runuser": _su,
    "script": _script,
    "ssh": _ssh,
    "scp": _ssh,
    "sftp": _ssh,
    "flock": _flock,
    "tmux": _tmux,
    "screen": _tmux,
}


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
        for code in command[0].values:
            ctx.walk.script(code, replace(ctx, positional=positional))
        return
    if i < len(args) and args[i].text not in ("-s", "-"):
        for value in args[i].values:
            run_file(value, ctx, snippet, stdin=stdin)
        return
    if stdin is not None:
        text = stdin()
        if text is None:
            doubt(ctx, snippet, "runs shell code it reads from a pipe, which cannot be checked before it runs")
        elif text:
            ctx.walk.script(text, ctx)
