"""Programs that run commands given to them through their options or their configuration:
``git -c alias.x='!...'`` (and every key of git's that names a command), ``git config`` of
one, ``git clone ext::...``, ``git submodule foreach``/``bisect run``/``rebase --exec``;
``tar --checkpoint-action=exec=``/``--to-command``/``-I``; ``zip -TT``, ``rsync -e``; ``gdb -ex
shell``; ``make -f`` of a makefile the line wrote, ``make --eval``, ``make VAR=command``.

The command found is handed back to the walk as shell code: one the floor refuses is refused,
one it cannot read (built from a hole) is a doubt. What names code the floor cannot read at all
(git's hooks folder, a debugger attached to a running process) is a doubt.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping

from .context import Arg, Ctx, Stdin, doubt, literal, refuse
from .paths import show
from .scripts import contents

# git config keys whose value is a shell command (alias.*: when it starts with "!")
_GIT_COMMAND_KEY = re.compile(
    r"core\.(?:pager|editor|sshcommand|fsmonitor|askpass|gitproxy)|sequence\.editor|diff\.external"
    r"|diff\..+\.(?:textconv|command)|merge\..+\.driver|filter\..+\.(?:clean|smudge|process)"
    r"|credential(?:\..+)?\.helper|gpg(?:\..+)?\.program|pager\..+|interactive\.difffilter"
    r"|uploadpack\.packobjectshook|remote\..+\.(?:uploadpack|receivepack)|(?:merge|diff)tool\..+\.cmd"
    r"|sendemail\.(?:smtpserver|tocmd|cccmd)|browser\..+\.cmd|web\.browser|alias\..+"
)
# git config keys naming files or folders of code (hooks, other config) the floor cannot read
_GIT_CODE_PLACE = re.compile(r"core\.hookspath|include\.path|includeif\..+\.path|init\.templatedir")
# per program: its options whose value is a command line
_COMMAND_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "tar": (
        "--to-command",
        "--use-compress-program",
        "-I",
        "--info-script",
        "-F",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ),
    "bsdtar": ("--use-compress-program", "-I"),
    "zip": ("-TT", "--unzip-command"),
    "rsync": ("-e", "--rsh"),
    "git": (
        "--upload-pack",
        "--receive-pack",
        "--exec",
        "--extcmd",
        "--tree-filter",
        "--index-filter",
        "--msg-filter",
        "--env-filter",
        "--commit-filter",
        "--parent-filter",
        "--tag-name-filter",
    ),
}
# git's short options that take a command, for the subcommands where they do
_GIT_SHORT_COMMANDS = {"rebase": "-x", "difftool": "-x", "fetch": "-u", "pull": "-u", "clone": "-u", "ls-remote": "-u"}
_GDB_CODE = re.compile(
    r"^\s*(?:python|py|pi|guile|gu|source|compile|define|eval)\b|^\s*(?:call|print|p|output)\b.*\(|system\s*\(|popen\s*\("
)
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


def _option_values(args: list[Arg], options: tuple[str, ...]) -> list[str]:
    """The values given to `options` (`-I CMD`, `--opt=CMD`, `-ICMD`), every form of each."""
    found: list[str] = []
    for i, arg in enumerate(args):
        for option in options:
            if arg.text == option and i + 1 < len(args):
                found.extend(args[i + 1].values)
            elif arg.text.startswith(option + "=") and option.startswith("--"):
                found.extend(v.split("=", 1)[1] for v in arg.values if "=" in v)
            elif (
                len(option) == 2 and arg.text.startswith(option) and len(arg.text) > 2 and not arg.text.startswith("--")
            ):
                found.extend(v[2:] for v in arg.values)
    return found


def check_command_options(name: str, argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """The command lines a program's options give it (tar --to-command, rsync -e...)."""
    options = _COMMAND_OPTIONS.get(name)
    if options is None:
        return
    for value in _option_values(argv[1:], options):
        ctx.walk.script(value, ctx)
    if name == "tar":
        for arg in argv[1:]:
            for value in arg.values:
                action = value.split("=", 1)[1] if value.startswith("--checkpoint-action=") else ""
                if action.startswith("exec="):
                    ctx.walk.script(action[5:], ctx)


# --- git ------------------------------------------------------------------------------------------


def _git_setting(key: str, values: tuple[str, ...], ctx: Ctx, snippet: str) -> None:
    """One git config key set to one of `values`: its command checked, its code place doubted."""
    key = key.strip().lower()
    if _GIT_CODE_PLACE.fullmatch(key):
        if any(v not in ("", "/dev/null") for v in values):
            doubt(ctx, snippet, f"points git's {key} at code (hooks, config) that cannot be checked before it runs")
        return
    if not _GIT_COMMAND_KEY.fullmatch(key):
        return
    for value in values:
        if key.startswith("alias.") and not value.startswith("!"):
            ctx.walk.script("git " + value, ctx)
        elif key.endswith(".helper") and not value.startswith(("!", "/")):
            ctx.walk.script("git-credential-" + value, ctx)
        else:
            ctx.walk.script(value.removeprefix("!"), ctx)


def check_git(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """git -c KEY=VALUE, --config-env, --exec-path, git config KEY VALUE, ext:: URLs, and the
    subcommands that run a command (submodule foreach, bisect run)."""
    args = argv[1:]
    texts = [a.text for a in args]
    for i, arg in enumerate(args):
        if arg.text == "-c" and i + 1 < len(args):
            for value in args[i + 1].values:
                key, _, setting = value.partition("=")
                _git_setting(key, (setting,), ctx, snippet)
        elif arg.text.startswith("--config-env="):
            key = arg.text.split("=", 2)[1]
            _git_setting(key, ("\x00",), ctx, snippet)
        elif arg.text.startswith("--exec-path="):
            doubt(ctx, snippet, "runs git's programs from a folder that cannot be checked before it runs")
        for value in arg.values:
            if value.startswith("ext::"):  # git's ext transport runs a command: words, `% ` a space
                words = [re.sub(r"%(.)", r"\1", w) for w in re.split(r"(?<!%) ", value[5:]) if w]
                ctx.walk.command([literal(w) for w in words], ctx, snippet)
    subcommand = next((t for t in texts if not t.startswith("-") and "=" not in t), None)
    if subcommand is None:
        return
    at = texts.index(subcommand)
    rest = args[at + 1 :]
    short = _GIT_SHORT_COMMANDS.get(subcommand)
    if short is not None:
        for value in _option_values(rest, (short,)):
            ctx.walk.script(value, ctx)
    if subcommand == "config":
        _git_config(rest, ctx, snippet)
    elif subcommand == "submodule" and [a.text for a in rest[:1]] == ["foreach"]:
        start = 1 + sum(1 for a in rest[1:] if a.text in ("--recursive", "-q", "--quiet"))
        ctx.walk.script(" ".join(a.text for a in rest[start:]), ctx)
    elif subcommand == "bisect" and [a.text for a in rest[:1]] == ["run"]:
        ctx.walk.command(rest[1:], ctx, snippet)


def _git_config(args: list[Arg], ctx: Ctx, snippet: str) -> None:
    """git config [--global...] [set|--add] KEY VALUE: what it saves runs later."""
    operands = [a for a in args if not a.text.startswith("-")]
    if operands and operands[0].text in ("set", "add"):
        operands = operands[1:]
    if len(operands) >= 2:
        _git_setting(operands[0].text, operands[1].values, ctx, snippet)


# --- debuggers ------------------------------------------------------------------------------------


def check_gdb(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """gdb -ex 'shell ...', lldb -o 'platform shell ...': the shell commands checked, code in
    the debugger's own languages doubted, attaching to a running process doubted; the program
    given with --args is checked as the command it runs."""
    args = argv[1:]
    name = posixpath.basename(argv[0].text)
    options = ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "-init-eval-command")
    if name == "lldb":
        options = ("-o", "--one-line", "-O", "--one-line-before-file", "-k", "--one-line-on-crash")
    for command in _option_values(args, options):
        _debugger_command(command, ctx, snippet)
    if any(a.text in ("-p", "--pid") or a.text.startswith("--pid=") or a.text == "attach" for a in args):
        doubt(ctx, snippet, "attaches a debugger to a running process, which can make it run anything")
    texts = [a.text for a in args]
    if "--args" in texts:
        ctx.walk.command(args[texts.index("--args") + 1 :], ctx, snippet)


def _debugger_command(command: str, ctx: Ctx, snippet: str) -> None:
    stripped = command.strip()
    shell = re.match(r"(?:shell|platform\s+shell|!)\s*(.*)$", stripped, re.DOTALL)
    if shell is not None:
        ctx.walk.script(shell.group(1), ctx)
    elif stripped.startswith(("pipe ", "|")):
        ctx.walk.script(stripped.rsplit("|", 1)[-1], ctx)
    elif _GDB_CODE.search(stripped) or stripped.startswith(("script", "command script")):
        doubt(ctx, snippet, "gives a debugger code in a language the floor does not read")


# --- make -----------------------------------------------------------------------------------------


def check_make(argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None) -> None:
    """make: the makefiles the line wrote (-f FILE, or Makefile where it runs), --eval text,
    and VAR=value overrides (a recipe runs `$(CC)`: `make CC='rm -rf ~'`)."""
    args = argv[1:]
    files = _option_values(args, ("-f", "--file", "--makefile"))
    folder = next(iter(_option_values(args, ("-C", "--directory"))), "")
    texts = list(_option_values(args, ("--eval", "-E")))
    for arg in args:
        for value in arg.values:
            if re.fullmatch(r"[A-Za-z_][\w.]*[:+?]?=.*", value, re.DOTALL):
                ctx.walk.script(value.split("=", 1)[1], ctx)
    for name in files or [posixpath.join(folder, default) for default in _MAKEFILES]:
        if name in ("-", "/dev/stdin"):
            text = stdin() if stdin is not None else None
            texts.extend([text] if text is not None else ["\x01"])
            continue
        found = contents(name, ctx)
        if found is None:
            raise refuse(
                snippet,
                f"runs the makefile {show(name)}, which this command line wrote with content that cannot be checked before it runs",
            )
        texts.extend(found)
    for text in texts:
        check_makefile(text, ctx)


def check_makefile(text: str, ctx: Ctx) -> None:
    """The recipes of a makefile (and its $(shell ...) calls) checked as shell code."""
    joined = re.sub(r"\\\n", " ", text)
    for shell in re.findall(r"\$[({]shell\s+([^)}]*)[)}]", joined):
        ctx.walk.script(shell, ctx)
    for line in joined.split("\n"):
        recipe = line[1:] if line.startswith("\t") else ""
        if not recipe and ";" in line and re.match(r"[^=#]*[^:=]:(?!=)[^=]*;", line):
            recipe = line.split(";", 1)[1]
        recipe = recipe.lstrip("@+- \t")
        if recipe:
            ctx.walk.script(_make_to_shell(recipe), ctx)


def _make_to_shell(recipe: str) -> str:
    """A recipe line as the shell gets it: $$ is $, $(VAR) the variable, $@ $< $^ a file;
    what make computes otherwise ($(patsubst ...)) is a value the floor does not follow."""
    recipe = recipe.replace("$$", "\x05")
    recipe = re.sub(r"\$[({]([A-Za-z_]\w*)[)}]", r"${\1}", recipe)
    recipe = re.sub(r"\$[@<^*?+|%]", "target", recipe)
    recipe = re.sub(r"\$[({][^)}]*[)}]", "\x03", recipe)
    return recipe.replace("\x05", "$")


# --- database clients -----------------------------------------------------------------------------

# a database client's own command that runs a shell command: sqlite3 .shell/.system, psql \!,
# mysql \! and system
_CLIENT_SHELL = re.compile(r"^\s*(?:\.shell|\.system|\\!|system)\s+(.*)$", re.MULTILINE)


def check_database_client(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """The shell escapes of sqlite3, psql and mysql, in their arguments (-c, -e, -cmd, SQL)."""
    for arg in argv[1:]:
        for value in arg.values:
            for command in _CLIENT_SHELL.findall(value):
                ctx.walk.script(command, ctx)


#: The check for each program that runs commands its options name (see also the walk's table).
RUNNER_CHECKS: Mapping[str, Callable[[list[Arg], Ctx, str], None]] = {
    "git": check_git,
    "gdb": check_gdb,
    "lldb": check_gdb,
    "sqlite3": check_database_client,
    "psql": check_database_client,
    "mysql": check_database_client,
    "mariadb": check_database_client,
}
