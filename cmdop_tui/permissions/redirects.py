"""Redirections: what they write (checked, and remembered for :mod:`.scripts`) and what they
feed to a command's stdin (a here-string, a here-document, a file the line wrote).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .context import MAX_CANDIDATES, Ctx
from .environment import check_env_read
from .expansion import expand, here_document, here_document_raw
from .parsing import WRITE_REDIRECTS
from .paths import resolve
from .programs import check_read_target, check_written_value
from .scripts import contents

#: How many possible stdin texts of one command are checked, each on its own.
MAX_FEEDS = 6


@dataclass
class Redirected:
    """What a command's redirections do: `feeds` are the texts its stdin may be; `writes` the
    files it writes, as (path as expanded, appended, written with its standard output)."""

    feeds: list[str] = field(default_factory=list)
    writes: list[tuple[str, bool, bool]] = field(default_factory=list)


def check_redirect(redirect: Any, src: str, ctx: Ctx, snippet: str, out: Redirected) -> None:
    """Check one redirection's target and note what it feeds or writes in `out`."""
    kind = redirect.type
    if getattr(redirect, "heredoc", None) is not None:
        texts, scripts = here_document(redirect, src, ctx)
        for script in scripts:
            ctx.walk.script(script, ctx)
        raw = here_document_raw(redirect)
        _feed(out, [raw, *texts])
        return
    target = redirect.output
    if not hasattr(target, "pos"):
        return  # 2>&1: a file descriptor
    arg, scripts = expand(src[target.pos[0] : target.pos[1]], ctx)
    for script in scripts:
        ctx.walk.script(script, ctx)
    if kind == "<<<":
        _feed(out, [value + "\n" for value in arg.values])
        return
    fd = getattr(redirect, "input", None)
    for value in arg.values:
        path = resolve(value, ctx.cwd)
        if kind in WRITE_REDIRECTS:
            check_written_value(value, ctx, snippet)
            stdout = fd in (None, 1) or kind.startswith("&")
            out.writes.append((value, kind in (">>", "&>>"), stdout))
        elif kind in ("<", "<&"):
            check_read_target(path, snippet)
            check_env_read(path, ctx, snippet)
            _feed(out, list(contents(value, ctx) or ()))


def _feed(out: Redirected, texts: list[str]) -> None:
    for text in texts:
        if text not in out.feeds and len(out.feeds) < MAX_CANDIDATES:
            out.feeds.append(text)
