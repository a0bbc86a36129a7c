"""The walk over a parsed command line: every simple command, wherever it hides, checked.

Pipelines, lists, subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies (fed what their
redirections or the pipe give them), functions (checked as written and again at each call),
command and process substitution, redirections and here-documents (:mod:`.redirects`). Each
simple command's words are expanded (:mod:`.expansion`) and split (:mod:`.splitting`), then
judged by its program: wrappers are unwrapped, shell strings walked again (to
:data:`MAX_DEPTH`), files the line wrote and then runs checked (:mod:`.scripts`), and the
per-program (:mod:`.programs`, :mod:`.processes`), runner (:mod:`.runners`, :mod:`.editors`),
interpreter, environment and secret-argument checks applied. ``cd DIR`` is followed, so later
relative paths resolve against it.

What cannot be resolved and could reach a protected target is a doubt (:mod:`.doubts`): shell
code with a hole, a program whose name cannot be known, text nothing parses.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .arithmetic import assigned_names
from .context import MAX_CANDIDATES, MAX_DEPTH, MAX_STEPS, Arg, Ctx, Stdin, given, refuse
from .doubts import (
    check_chosen_operands,
    check_unknown_program,
    check_unparsed_reach,
    check_unreadable_code,
)
from .editors import check_awk_program, check_editor
from .environment import check_env_print, note_sourcing
from .expansion import assign, expand, expand_words, pipeline_text
from .fallback import check_unparsed
from .interpreters import AWKS, awk_program, check_interpreters, script_operand
from .parsing import parse_full
from .paths import HOME, UNKNOWN, glob_matches, has_glob, resolve, unknowable
from .processes import endless_spawner, is_fork_bomb
from .producers import command_output
from .programs import PROGRAM_CHECKS, check_chmod, check_mkfs, check_rm, is_mkfs
from .redirects import MAX_FEEDS, Redirected, check_redirect
from .runners import RUNNER_CHECKS, check_command_options, check_make
from .scripts import note_program_writes, record, run_command_file, run_file
from .secret_args import check_secret_args
from .shell_code import check_shell
from .splitting import check_read, looks_destructive, split_args, suspicious_name
from .wrappers import unwrap
from .xargs import Upstream, check_parallel, check_xargs

# programs a glob in the command word may name (/???/r? -rf /)
_GLOB_SUSPECTS = (
    "rm",
    "dd",
    "mkfs",
    "mke2fs",
    "wipefs",
    "shred",
    "chmod",
    "chown",
    "find",
    "sh",
    "bash",
    "dash",
    "zsh",
    "tee",
    "mv",
    "cp",
    "xargs",
    "eval",
    "sudo",
    "env",
    "python3",
    "perl",
)
# builtins whose NAME=value arguments assign variables
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})


def check_script(text: str, ctx: Ctx) -> None:
    """Check a whole script (a command line, a `bash -c` string, a heredoc fed to a shell)."""
    if ctx.depth >= MAX_DEPTH:
        raise refuse(text, "nests shell code too deeply to be checked")
    if not text.strip():
        return
    if _nesting(text) > 3 * MAX_DEPTH:  # cheap, before any parsing: bashlex is slow on deep nesting
        raise refuse(text, "nests substitutions too deeply to be checked")
    check_unreadable_code(text, ctx)
    ctx = replace(ctx, depth=ctx.depth + 1)
    if "((" in text or "let" in text:  # ((x=0-1)), let x=...: these values are not followed
        ctx.facts.arithmetic_vars |= assigned_names(text)
    nodes, src, exact = parse_full(text)
    if nodes is not None:
        for node in nodes:
            _visit(node, src, ctx)
    if not exact:
        check_unparsed(text, ctx, broad=nodes is None)
    if nodes is None:
        check_unparsed_reach(text, ctx)


class FloorWalk:
    """The walk as the checks beneath it call it back (see :class:`.context.Walk`)."""

    def script(self, text: str, ctx: Ctx) -> None:
        check_script(text, ctx)

    def command(self, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None) -> None:
        check_argv(argv, ctx, snippet, stdin)


def _nesting(text: str) -> int:
    """How deeply `$(`, `(`, `{` and backticks nest in `text`, quotes ignored (so at least as deep)."""
    depth = deepest = 0
    backtick = False
    for ch in text:
        if ch in "({":
            depth += 1
            deepest = max(deepest, depth + backtick)
        elif ch in ")}":
            depth = max(depth - 1, 0)
        elif ch == "`":
            backtick = not backtick
    return deepest


# --- the tree -----------------------------------------------------------------------------------


def _visit(node: Any, src: str, ctx: Ctx, stdin: Stdin | None = None, upstream: Sequence[Any] = ()) -> None:
    """One node; `stdin` and `upstream` are what a pipe or a redirection feeds it."""
    kind = node.kind
    if kind == "command":
        _visit_command(node, src, ctx, stdin, upstream)
    elif kind == "pipeline":
        stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
        for index, stage in enumerate(stages):
            before = stages[:index]
            feed = _piped(before, src, ctx) if before else stdin
            _visit(stage, src, ctx, feed, before or upstream)
    elif kind == "compound":
        _visit_compound(node, src, ctx, stdin, upstream)
    elif kind == "for":
        _visit_for(node, src, ctx, stdin)
    elif kind in ("list", "if", "while", "until"):
        if kind in ("while", "until") and endless_spawner(node):
            raise refuse(
                src[node.pos[0] : node.pos[1]],
                "is a fork bomb (a loop without end that starts commands in the background)",
            )
        for part in node.parts:
            _visit(part, src, ctx, stdin, upstream)
    elif kind == "function":
        _visit_function(node, src, ctx)
    # reservedword, operator, pipe: nothing to check


def _piped(before: Sequence[Any], src: str, ctx: Ctx) -> Stdin:
    """What the stages `before` print into the pipe, evaluated only if asked."""
    return lambda: pipeline_text(before, src, ctx)


def _visit_compound(node: Any, src: str, ctx: Ctx, stdin: Stdin | None, upstream: Sequence[Any]) -> None:
    """( ), { }, and the loops bashlex wraps: redirections first, then the body they feed."""
    redirected = Redirected()
    snippet = src[node.pos[0] : node.pos[1]]
    for redirect in getattr(node, "redirects", None) or ():
        check_redirect(redirect, src, ctx, snippet, redirected)
    feeds: list[Stdin | None] = [given(text) for text in redirected.feeds[:MAX_FEEDS]] or [stdin]
    for feed in feeds:
        for part in node.list:
            _visit(part, src, ctx, feed, upstream)
    for value, append, _stdout in redirected.writes:
        record(value, None, ctx, append=append)


def _visit_for(node: Any, src: str, ctx: Ctx, stdin: Stdin | None) -> None:
    parts = node.parts
    words = [p for p in parts if p.kind == "word"]
    if words:
        name = words[0].word
        values: list[str] = []
        for word in words[1:]:
            arg, scripts = expand(src[word.pos[0] : word.pos[1]], ctx)
            for script in scripts:
                check_script(script, ctx)
            for value in arg.values:  # unquoted: each word of each value (IFS)
                values.extend(value.split() if arg.split and value.split() else [value])
        ctx.vars[name] = tuple(dict.fromkeys(values))[:MAX_CANDIDATES] or (UNKNOWN,)
    for part in parts:
        if part.kind in ("list", "command", "compound", "pipeline", "if", "for", "while", "until", "function"):
            _visit(part, src, ctx, stdin)


def _visit_function(node: Any, src: str, ctx: Ctx) -> None:
    name_node = getattr(node, "name", None)
    name = getattr(name_node, "word", "") if name_node is not None else ""
    body = node.body
    snippet = src[node.pos[0] : node.pos[1]]
    if name and is_fork_bomb(name, body, ctx.funcs):
        raise refuse(snippet, "is a fork bomb (a function that runs itself in a pipe or in the background)")
    ctx.funcs[name] = (body, src)
    # The body is checked once as written (arguments unknown) and again at each call.
    _visit(body, src, replace(ctx, positional=None, calls=ctx.calls + (name,)))


def _command_words(node: Any, src: str, ctx: Ctx) -> tuple[list[Arg], list[Any]]:
    """A simple command's expanded words and its redirections; its leading NAME=value
    assignments are made (an IFS given to one command only may also be the old one)."""
    words: list[Arg] = []
    redirects = []
    scripts: list[str] = []
    before_ifs = ctx.vars.get("IFS")
    prefix_ifs = False
    for part in node.parts:
        raw = src[part.pos[0] : part.pos[1]]
        if part.kind == "assignment" and not words:
            assign(raw, ctx, scripts)
            prefix_ifs = prefix_ifs or raw.startswith("IFS=")
        elif part.kind in ("word", "assignment"):  # `cmd NAME=value`: an argument
            args, found = expand_words(raw, ctx)
            scripts.extend(found)
            words.extend(args)
        elif part.kind == "redirect":
            redirects.append(part)
    if prefix_ifs and words:
        ctx.vars["IFS"] = tuple(dict.fromkeys(ctx.vars["IFS"] + (before_ifs or (" \t\n",))))
    for script in scripts:
        check_script(script, ctx)
    return words, redirects


def _visit_command(node: Any, src: str, ctx: Ctx, stdin: Stdin | None, upstream: Sequence[Any]) -> None:
    snippet = src[node.pos[0] : node.pos[1]]
    words, redirects = _command_words(node, src, ctx)
    redirected = Redirected()
    for redirect in redirects:
        check_redirect(redirect, src, ctx, snippet, redirected)
    if not words:
        for value, append, _stdout in redirected.writes:
            record(value, ("",), ctx, append=append)  # `> f`: an empty file
        return
    feeds: list[Stdin | None] = [given(text) for text in redirected.feeds[:MAX_FEEDS]] or [stdin]
    outputs: list[str] | None = []
    for argv in split_args(words, ctx):
        for feed in feeds:
            check_argv(argv, ctx, snippet, feed, Upstream(upstream, src, ctx))
            if redirected.writes and outputs is not None:
                output = _output(argv, feed, ctx)
                outputs = None if output is None else [*outputs, output]
    for value, append, stdout in redirected.writes:
        content = tuple(dict.fromkeys(outputs))[:MAX_CANDIDATES] if stdout and outputs is not None else None
        record(value, content, ctx, append=append)


def _output(argv: list[Arg], feed: Stdin | None, ctx: Ctx) -> str | None:
    """What a command prints, when it can be known (for a file it writes with `>`)."""
    if any(arg.dynamic or len(arg.values) != 1 for arg in argv):
        return None
    return command_output([arg.text for arg in argv], feed() if feed is not None else None, ctx.cwd, ctx.facts.files)


# --- one simple command -------------------------------------------------------------------------


def check_argv(
    argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None, upstream: Upstream | None = None
) -> None:
    """Check one simple command by each program its first word may name."""
    if not argv:
        return
    ctx.facts.steps += 1
    if ctx.facts.steps > MAX_STEPS:  # every value of every variable, nested: bounded, or it may never end
        raise refuse(snippet, "has too many possible forms to be checked")
    run_command_file(argv, ctx, snippet)
    names = _name_of(argv[0])
    if not names:
        # The command itself is not known ($CMD -rf /, $SHELL -c '...'): judge its arguments as
        # if it were rm, chmod or a shell; after IFS changed or from `read`, fail closed.
        if argv[0].dynamic and len(argv) > 1:
            check_rm(argv, ctx, snippet)
            check_chmod(argv, ctx, snippet, "chmod")
            check_shell(argv[1:], ctx, None)
            if suspicious_name(argv[0], ctx) and looks_destructive(argv[1:], ctx):
                raise refuse(
                    snippet,
                    "runs a command whose name cannot be known before it runs (split by a changed "
                    "IFS or read from input) with arguments that would be destructive",
                )
        if argv[0].dynamic:
            check_unknown_program(argv, ctx, snippet)
        return
    for name in list(dict.fromkeys(names)):
        if has_glob(name):  # /???/r? -rf /: a glob that may name a dangerous program
            names += [known for known in _GLOB_SUSPECTS if glob_matches(name, known)]
    for name in dict.fromkeys(names):
        _check_program(name, argv, ctx, snippet, stdin, upstream)


def _name_of(arg: Arg) -> list[str]:
    """Candidate command names of the first word (basename; `\\rm` already unquoted)."""
    names = []
    for value in arg.values[:4]:
        if value and not unknowable(value):
            names.append(posixpath.basename(value.rstrip("/")) or value)
    return names


def _check_program(
    name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None, upstream: Upstream | None
) -> None:
    args = argv[1:]
    # functions defined earlier in the same command line
    if name in ctx.funcs and name not in ctx.calls:
        body, src = ctx.funcs[name]
        call_ctx = replace(ctx, positional=tuple(a.text for a in args), calls=ctx.calls + (name,))
        _visit(body, src, call_ctx)
        return
    wrapped = unwrap(name, argv, ctx, stdin)
    if wrapped is not None:
        new_argv, new_ctx = wrapped
        check_argv(new_argv, new_ctx, snippet, stdin, upstream)
        return
    check_env_print(name, argv, ctx, snippet)
    if _builtin(name, argv, ctx, snippet, stdin):
        return
    if name == "xargs":
        check_xargs(argv, ctx, snippet, upstream, stdin)
        return
    if name == "parallel":
        check_parallel(argv, ctx, snippet, upstream, stdin)
        return
    _check_runs_and_destroys(name, argv, ctx, snippet, stdin)
    check_interpreters(name, argv, ctx, snippet, stdin)
    script = script_operand(name, argv)
    if script not in (None, "-"):
        for value in next(a for a in args if a.text == script).values:
            run_file(value, ctx, snippet, code=True, stdin=stdin)
    check_secret_args(name, argv, ctx, snippet)
    check_chosen_operands(name, argv, ctx, snippet)
    note_program_writes(name, argv, ctx, stdin)


def _check_runs_and_destroys(name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None) -> None:
    """The checks by program name: what it destroys, and the commands its options run."""
    for check in (PROGRAM_CHECKS.get(name), RUNNER_CHECKS.get(name)):
        if check is not None:
            check(argv, ctx, snippet)
    if is_mkfs(name):
        check_mkfs(argv, ctx, snippet)
    if name in ("make", "gmake", "bmake"):
        check_make(argv, ctx, snippet, stdin)
    if name in AWKS:
        check_awk_program(awk_program(argv), ctx, snippet)
    check_command_options(name, argv, ctx, snippet)
    check_editor(name, argv, ctx, snippet, stdin)


def _builtin(name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None) -> bool:
    """Shell builtins that change what the walk knows: cd, set, read, source, declare...
    True when nothing else is left to check."""
    args = argv[1:]
    values = [a.text for a in args]
    if name in ("cd", "pushd"):
        _change_directory(args, ctx)
        return True
    if name == "set":
        if "--" in values:
            ctx.positional = tuple(values[values.index("--") + 1 :])
        elif values and not values[0].startswith(("-", "+")):
            ctx.positional = tuple(values)
        return True
    if name in ("read", "mapfile", "readarray"):
        check_read(name, argv, ctx, stdin)
        return True
    if name in ("source", "."):
        note_sourcing(name, argv, ctx)
        for value in args[0].values if args else ():
            run_file(value, ctx, snippet, stdin=stdin)
    if name in _DECLARERS:
        _declare(args, ctx)
    if name == "printf" and len(values) > 2 and values[0] == "-v":
        output = command_output(["printf", *values[2:]], None, ctx.cwd, ctx.facts.files)
        ctx.vars[values[1]] = (output,) if output is not None else (UNKNOWN,)
    return False


def _declare(args: list[Arg], ctx: Ctx) -> None:
    """export/declare/local NAME=value assign; with -n, NAME=TARGET makes a nameref (NAME then
    stands for TARGET, and assigning NAME assigns TARGET)."""
    nameref = any(re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a.text) for a in args)
    for arg in args:
        if nameref and re.fullmatch(r"[A-Za-z_]\w*", arg.raw):
            ctx.refs[arg.raw] = ()  # a nameref with no target yet: its first assignment names it
            continue
        if not re.match(r"[A-Za-z_]\w*\+?=", arg.raw):
            continue
        if nameref:
            ref, _, _ = arg.raw.partition("=")
            ctx.refs[ref] = tuple(value.split("=", 1)[1] for value in arg.values if "=" in value)
        else:
            later: list[str] = []
            assign(arg.raw, ctx, [], later=later)  # its substitutions were checked as its word
            for script in later:
                check_script(script, ctx)


def _change_directory(args: list[Arg], ctx: Ctx) -> None:
    """cd/pushd: later relative paths resolve against the new directory, when it is known."""
    target = next((a for a in args if not a.text.startswith("-") or a.text == "-"), None)
    if target is None:
        ctx.cwd = HOME
    elif target.dynamic or target.text == "-":
        ctx.cwd = None
    else:
        resolved = resolve(target.text, ctx.cwd)
        ctx.cwd = resolved if resolved.startswith("/") else None
