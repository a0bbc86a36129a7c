"""The walk over a parsed command line: every simple command, wherever it hides, checked.

Pipelines, lists, subshells, ``{ }`` groups, ``if``/``for``/``while`` bodies, functions (checked
as written and again at each call), command and process substitution, redirections and
here-documents. Each simple command's words are expanded (:mod:`.expansion`), then judged by
its program: wrappers are unwrapped, shell strings walked again (to :data:`MAX_DEPTH`), and the
per-program, interpreter and secret-argument checks applied. ``cd DIR`` is followed, so later
relative paths resolve against it.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .context import MAX_CANDIDATES, MAX_DEPTH, Arg, Ctx, Stdin, given, refuse
from .expansion import Upstream, assign, expand, pipeline_text, split_args
from .fallback import check_unparsed
from .interpreters import check_interpreters
from .parsing import WRITE_REDIRECTS, iter_nodes, parse_full
from .paths import HOME, UNKNOWN, glob_matches, has_glob, resolve
from .programs import PROGRAM_CHECKS, check_chmod, check_mkfs, check_read_target, check_rm, check_write_target, is_mkfs
from .scanning import substitutions
from .secret_args import check_secret_args
from .wrappers import check_shell, check_xargs, unwrap

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


def check_script(text: str, ctx: Ctx) -> None:
    """Check a whole script (a command line, a `bash -c` string, a heredoc fed to a shell)."""
    if ctx.depth >= MAX_DEPTH:
        raise refuse(text, "nests shell code too deeply to be checked")
    if not text.strip():
        return
    if _nesting(text) > 3 * MAX_DEPTH:  # cheap, before any parsing: bashlex is slow on deep nesting
        raise refuse(text, "nests substitutions too deeply to be checked")
    ctx = replace(ctx, depth=ctx.depth + 1)
    nodes, src, exact = parse_full(text)
    if nodes is not None:
        for node in nodes:
            _visit(node, src, ctx)
    if not exact:
        check_unparsed(text, ctx, broad=nodes is None)


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
    kind = node.kind
    if kind == "command":
        _visit_command(node, src, ctx, stdin, upstream)
    elif kind == "list":
        for part in node.parts:
            _visit(part, src, ctx)
    elif kind == "pipeline":
        stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
        for index, stage in enumerate(stages):
            before = stages[:index]
            feed = (lambda before=before: pipeline_text(before, src, ctx)) if before else None
            _visit(stage, src, ctx, feed, before)
    elif kind == "compound":
        for part in node.list:
            _visit(part, src, ctx)
        for redirect in getattr(node, "redirects", None) or ():
            _check_redirect(redirect, src, ctx, src[node.pos[0] : node.pos[1]])
    elif kind == "for":
        _visit_for(node, src, ctx)
    elif kind in ("if", "while", "until"):
        for part in node.parts:
            _visit(part, src, ctx)
    elif kind == "function":
        _visit_function(node, src, ctx)
    # reservedword, operator, pipe: nothing to check


def _visit_for(node: Any, src: str, ctx: Ctx) -> None:
    parts = node.parts
    words = [p for p in parts if p.kind == "word"]
    if words:
        name = words[0].word
        values: list[str] = []
        for word in words[1:]:
            arg, scripts = expand(src[word.pos[0] : word.pos[1]], ctx)
            for script in scripts:
                check_script(script, ctx)
            values.extend(arg.values)
        ctx.vars[name] = tuple(dict.fromkeys(values))[:MAX_CANDIDATES] or (UNKNOWN,)
    for part in parts:
        if part.kind in ("list", "command", "compound", "pipeline", "if", "for", "while", "until", "function"):
            _visit(part, src, ctx)


def _visit_function(node: Any, src: str, ctx: Ctx) -> None:
    name_node = getattr(node, "name", None)
    name = getattr(name_node, "word", "") if name_node is not None else ""
    body = node.body
    snippet = src[node.pos[0] : node.pos[1]]
    if name and _is_fork_bomb(name, body):
        raise refuse(snippet, "is a fork bomb (a function that runs itself in a pipe or in the background)")
    ctx.funcs[name] = (body, src)
    # The body is checked once as written (arguments unknown) and again at each call.
    _visit(body, src, replace(ctx, positional=None, calls=ctx.calls + (name,)))


def _calls(node: Any, name: str) -> bool:
    """Does `node` (a command, pipeline, list...) run the command `name` somewhere in it?"""
    for current in iter_nodes(node):
        if current.kind == "command":
            first = next((p for p in current.parts if p.kind == "word"), None)
            if first is not None and first.word == name:
                return True
    return False


def _is_fork_bomb(name: str, body: Any) -> bool:
    """A function that runs itself in a pipeline or in the background: :(){ :|:& };:"""
    for node in iter_nodes(body):
        if node.kind == "pipeline":
            stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
            if len(stages) > 1 and any(_calls(stage, name) for stage in stages):
                return True
        elif node.kind == "list":
            parts = node.parts
            for part, following in itertools.pairwise(parts):
                if following.kind == "operator" and following.op == "&" and _calls(part, name):
                    return True
    return False


def _visit_command(node: Any, src: str, ctx: Ctx, stdin: Stdin | None, upstream: Sequence[Any]) -> None:
    snippet = src[node.pos[0] : node.pos[1]]
    words: list[Arg] = []
    redirects = []
    scripts: list[str] = []
    for part in node.parts:
        raw = src[part.pos[0] : part.pos[1]]
        if part.kind == "assignment":
            if not words:
                assign(raw, ctx, scripts)
            else:  # `cmd NAME=value`: an argument
                arg, found = expand(raw, ctx)
                scripts.extend(found)
                words.append(arg)
        elif part.kind == "word":
            arg, found = expand(raw, ctx)
            scripts.extend(found)
            words.append(arg)
        elif part.kind == "redirect":
            redirects.append(part)
    for script in scripts:
        check_script(script, ctx)
    here_text: str | None = None
    for redirect in redirects:
        text = _check_redirect(redirect, src, ctx, snippet)
        if text is not None:
            here_text = text
    if not words:
        return
    argv = split_args(words)
    feed = stdin
    if here_text is not None:
        feed = given(here_text)
    check_argv(argv, ctx, snippet, feed, Upstream(upstream, src, ctx))


def _check_redirect(redirect: Any, src: str, ctx: Ctx, snippet: str) -> str | None:
    """Check one redirection; return the text it feeds to stdin (heredoc, here-string)."""
    kind = redirect.type
    heredoc = getattr(redirect, "heredoc", None)
    if heredoc is not None:
        body = heredoc.value
        lines = body.split("\n")
        text = "\n".join(lines[:-1]) if len(lines) > 1 else body
        delimiter = src[redirect.output.pos[0] : redirect.output.pos[1]] if hasattr(redirect.output, "pos") else ""
        if not re.search(r"['\"\\]", delimiter):  # <<EOF: $( ) and backticks in the body run
            for script in substitutions(text):
                check_script(script, ctx)
        return text
    target = redirect.output
    if not hasattr(target, "pos"):
        return None  # 2>&1: a file descriptor
    arg, scripts = expand(src[target.pos[0] : target.pos[1]], ctx)
    for script in scripts:
        check_script(script, ctx)
    if kind == "<<<":
        return arg.text
    for value in arg.values:
        path = resolve(value, ctx.cwd)
        if kind in WRITE_REDIRECTS:
            check_write_target(path, snippet)
        elif kind in ("<", "<&"):
            check_read_target(path, snippet)
    return None


# --- one simple command -------------------------------------------------------------------------


def check_argv(
    argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None, upstream: Upstream | None = None
) -> None:
    """Check one simple command by each program its first word may name."""
    if not argv:
        return
    names = _name_of(argv[0])
    if not names:
        # The command itself is not known ($CMD -rf /, $SHELL -c '...'): judge its arguments as
        # if it were rm, chmod or a shell.
        if argv[0].dynamic and len(argv) > 1:
            check_rm(argv, ctx, snippet)
            check_chmod(argv, ctx, snippet, "chmod")
            check_shell(argv[1:], ctx, None)
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
        if value and value != UNKNOWN:
            names.append(posixpath.basename(value.rstrip("/")) or value)
    return names


def _check_program(
    name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None, upstream: Upstream | None
) -> None:
    args = argv[1:]
    values = [a.text for a in args]
    # functions defined earlier in the same command line
    if name in ctx.funcs and name not in ctx.calls:
        body, src = ctx.funcs[name]
        call_ctx = replace(ctx, positional=tuple(values), calls=ctx.calls + (name,))
        _visit(body, src, call_ctx)
        return
    wrapped = unwrap(name, argv, ctx, stdin)
    if wrapped is not None:
        new_argv, new_ctx = wrapped
        check_argv(new_argv, new_ctx, snippet, stdin, upstream)
        return
    if name in ("cd", "pushd"):
        _change_directory(args, ctx)
        return
    if name == "xargs":
        check_xargs(argv, ctx, snippet, upstream)
        return
    if name == "set":
        if "--" in values:
            ctx.positional = tuple(values[values.index("--") + 1 :])
        elif values and not values[0].startswith(("-", "+")):
            ctx.positional = tuple(values)
        return
    check = PROGRAM_CHECKS.get(name)
    if check is not None:
        check(argv, ctx, snippet)
    if is_mkfs(name):
        check_mkfs(argv, ctx, snippet)
    check_interpreters(name, argv, ctx, snippet)
    check_secret_args(name, argv, ctx, snippet)


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
