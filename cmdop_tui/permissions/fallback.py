"""The floor for text bashlex could not parse: a word-by-word scan with the same checks.

Each simple command the lexer finds is expanded and checked like a parsed one. When nothing
parsed at all (`broad`), every quoted string is also checked as if it were a command, and fork
bomb shapes are looked for anywhere: an unparseable command that looks dangerous anywhere is
refused.
"""

from __future__ import annotations

import contextlib
import re

from .context import Arg, Ctx, Stdin, given, refuse
from .expansion import assign, expand, expand_words
from .parsing import RESERVED, WRITE_REDIRECTS, lex
from .paths import resolve
from .producers import transform
from .programs import check_read_target, check_written_value
from .splitting import split_args

_FORK_BOMB_TEXT = re.compile(r"(?:function\s+)?([^\s(){};|&<>'\"]+)\s*\(\s*\)\s*\{([^}]*)\}")
# a loop without end whose body only starts a command in the background
_ENDLESS_SPAWN = re.compile(
    r"(?:\bwhile\s+(?:true|:)|\buntil\s+false|\bfor\s*\(\(\s*;\s*;\s*\)\))\s*[;\n]?\s*do\s+[^;&\n]*&\s*[;\n]?\s*done"
)


def check_unparsed(text: str, ctx: Ctx, *, broad: bool) -> None:
    """Check text bashlex could not parse, one simple command at a time; with `broad`, also
    every quoted string in it as if it were a command, and fork-bomb shapes anywhere."""
    endless = _ENDLESS_SPAWN.search(text)
    if endless is not None:
        raise refuse(endless.group(0), "is a fork bomb (a loop without end that starts commands in the background)")
    if broad:
        _check_fork_bomb_text(text)
    segment: list[str] = []
    redirects: list[tuple[str, str]] = []
    previous: list[str] | None = None
    previous_op = ""
    opened = 0  # subshells open: a `)` that closes none ends a `case` pattern

    def flush(op: str) -> None:
        nonlocal segment, redirects, previous, previous_op, opened
        words = list(segment)
        # a `[[ ]]` test, a `case` subject, a `case` pattern: nothing in them runs but their
        # substitutions (still checked)
        runs = not (words[:1] in (["[["], ["case"]) or (op == ")" and opened == 0))
        opened = opened + 1 if op == "(" else max(opened - 1, 0) if op == ")" else opened
        while words and words[0] in RESERVED:
            words.pop(0)
        if words and words[0].endswith("()"):
            words = []
        _check_segment(words, redirects, ctx, previous if previous_op == "|" else None, broad, runs=runs)
        previous, previous_op = words, op
        segment, redirects = [], []

    for kind, value, target in lex(text):
        if kind == "word":
            segment.append(value)
        elif kind == "redir":
            redirects.append((value, target))
        else:
            flush(value)
    flush("")


def _check_fork_bomb_text(text: str) -> None:
    for match in _FORK_BOMB_TEXT.finditer(text):
        name, body = match.group(1), match.group(2)
        pieces = re.split(r"[\s;|&]+", body)
        if name in pieces and ("|" in body or "&" in body):
            raise refuse(match.group(0), "is a fork bomb (a function that runs itself in a pipe or in the background)")


def _check_segment(
    words: list[str],
    redirects: list[tuple[str, str]],
    ctx: Ctx,
    piped_from: list[str] | None,
    broad: bool,
    *,
    runs: bool = True,
) -> None:
    """One simple command of unparsed text: its words, its redirections, then the command
    (unless it is a test or a pattern, which `runs` says)."""
    snippet = " ".join(words + [f"{op} {target}" for op, target in redirects])
    args = _expanded_words(words, ctx, broad)
    here = _check_redirects(redirects, ctx, snippet)
    if not args or not runs:
        return
    stdin: Stdin | None = None
    if here is not None:
        stdin = given(here)
    elif piped_from:
        produced = transform([expand(w, ctx)[0].text for w in piped_from], None)
        if produced is not None:
            stdin = given(produced)
    for argv in split_args(args, ctx):
        ctx.walk.command(argv, ctx, snippet, stdin)


def _expanded_words(words: list[str], ctx: Ctx, broad: bool) -> list[Arg]:
    """The words after the leading assignments, expanded; substitutions in them checked."""
    args: list[Arg] = []
    for index, raw in enumerate(words):
        if not args and re.match(r"[A-Za-z_]\w*\+?=", raw):
            scripts: list[str] = []
            assign(raw, ctx, scripts)
            for script in scripts:
                ctx.walk.script(script, ctx)
            continue
        expanded, scripts = expand_words(raw, ctx)
        for script in scripts:
            ctx.walk.script(script, ctx)
        args.extend(expanded)
        if broad and index > 0:
            for value in (v for arg in expanded for v in arg.values):
                if re.search(r"\s", value.strip()) and value != raw:
                    with contextlib.suppress(RecursionError):
                        ctx.walk.script(value, ctx)
    return args


def _check_redirects(redirects: list[tuple[str, str]], ctx: Ctx, snippet: str) -> str | None:
    """Check the targets; return the text of a here-string, if one feeds the command."""
    here: str | None = None
    for op, target_raw in redirects:
        target, scripts = expand(target_raw, ctx)
        for script in scripts:
            ctx.walk.script(script, ctx)
        if op == "<<<":
            here = target.text
            continue
        if op in ("<<", "<<-"):
            continue
        for value in target.values:
            if op in WRITE_REDIRECTS or op.startswith("&"):
                check_written_value(value, ctx, snippet)
                ctx.facts.files.setdefault(resolve(value, ctx.cwd), None)  # content not followed here
            elif op in ("<", "<&"):
                check_read_target(resolve(value, ctx.cwd), snippet)
    return here
