"""Commands that build command lines from what they read: ``xargs`` and GNU ``parallel``.

The command they start is checked with what they read when that can be known (a here-string, a
here-document, a file the line wrote, what the stage before prints), else with a word that
cannot be known: ``... | xargs -I{} sh -c '{}'`` runs code nobody can read before it runs.
``parallel`` with no command runs what it reads as commands (``parallel ::: 'rm -rf ~'``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .context import MAX_CANDIDATES, Arg, Ctx, Stdin, literal
from .expansion import expand, pipeline_text
from .paths import OPAQUE
from .producers import find_items
from .scripts import contents

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
_PARALLEL_OPTS = frozenset({"-j", "--jobs", "-S", "--sshlogin", "--joblog", "--results", "-d", "--delimiter", "-a"})
# what xargs reads from input that cannot be known: chosen by whoever wrote it
_UNKNOWN_ITEM = Arg("", ("", OPAQUE), dynamic=True)


@dataclass
class Upstream:
    """The stages before this one in a pipeline (for `... | xargs`)."""

    stages: Sequence[Any]
    src: str
    ctx: Ctx

    def items(self) -> list[str] | None:
        """What the previous stage prints, as words, when it can be known."""
        if not self.stages:
            return None
        last = self.stages[-1]
        if last.kind != "command":
            return None
        text = pipeline_text(self.stages, self.src, self.ctx)
        if text is not None:
            return text.split()
        argv = [p for p in last.parts if p.kind == "word"]
        if not argv:
            return None
        name = posixpath.basename(argv[0].word)
        args = [expand(self.src[w.pos[0] : w.pos[1]], self.ctx)[0] for w in argv[1:]]
        if name == "find":
            return find_items([a.text for a in args])
        if name == "ls":
            dirs = [a.text for a in args if not a.text.startswith("-")]
            return [d.rstrip("/") + "/*" for d in dirs] or None
        return None


def _xargs_options(args: list[Arg]) -> tuple[int, str | None, str | None]:
    """(where the command starts, the replace string of -I/-i, the file of -a)."""
    replace_str: str | None = None
    arg_file: str | None = None
    i = 0
    while i < len(args):
        value = args[i].text
        if value == "--":
            return i + 1, replace_str, arg_file
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
        i += 2 if value in _XARGS_OPTS and "=" not in value else 1
    return i, replace_str, arg_file


def check_xargs(argv: list[Arg], ctx: Ctx, snippet: str, upstream: Upstream | None, stdin: Stdin | None = None) -> None:
    """xargs CMD: CMD with what xargs reads when that is known, else with an unknown word."""
    start, replace_str, arg_file = _xargs_options(argv[1:])
    command = argv[1 + start :] or [literal("echo")]
    items = _items(arg_file, ctx, upstream, stdin)
    feed = [_UNKNOWN_ITEM] if items is None else [literal(item) for item in items[:MAX_CANDIDATES]]
    _run_with(command, feed, replace_str, ctx, snippet)


def _run_with(command: list[Arg], feed: list[Arg], placeholder: str | None, ctx: Ctx, snippet: str) -> None:
    """`command` run with each item of `feed` in place of `placeholder` (every form of the item:
    one that may be anything is checked as such), or with them all appended."""
    if not placeholder:
        ctx.walk.command(list(command) + feed, ctx, snippet)
        return
    for item in feed:
        new = [
            Arg(
                a.raw, tuple(dict.fromkeys(v.replace(placeholder, w) for v in a.values for w in item.values)), a.dynamic
            )
            for a in command
        ]
        ctx.walk.command(new, ctx, snippet)


def _items(arg_file: str | None, ctx: Ctx, upstream: Upstream | None, stdin: Stdin | None) -> list[str] | None:
    """The words xargs reads, when they can be known before it runs."""
    if arg_file is not None:
        found = contents(arg_file, ctx)
        return [word for text in found for word in text.replace("\x00", " ").split()] if found else None
    text = stdin() if stdin is not None else None
    if text is not None:
        return text.replace("\x00", " ").split()
    return upstream.items() if upstream is not None else None


def check_parallel(argv: list[Arg], ctx: Ctx, snippet: str, upstream: Upstream | None, stdin: Stdin | None) -> None:
    """parallel [options] [CMD] ::: ITEMS (or items read from stdin): CMD with each item in
    place of {} (or appended); with no CMD, each item is a command line."""
    args = argv[1:]
    i = 0
    while i < len(args) and args[i].text.startswith("-") and args[i].text not in (":::", "::::"):
        i += 2 if args[i].text in _PARALLEL_OPTS else 1
    rest = args[i:]
    split = next((k for k, a in enumerate(rest) if a.text in (":::", ":::+", "::::")), len(rest))
    command, given = rest[:split], [a for a in rest[split + 1 :] if a.text not in (":::", ":::+", "::::")]
    if given:
        feed = given
    else:
        items = _items(None, ctx, upstream, stdin)
        feed = [_UNKNOWN_ITEM] if items is None else [literal(item) for item in items[:MAX_CANDIDATES]]
    if not command:
        for item in feed:
            for value in item.values:
                ctx.walk.script(value, ctx)
        return
    placeholder = "{}" if any("{}" in v for a in command for v in a.values) else None
    _run_with(command, feed, placeholder, ctx, snippet)
