"""What the floor carries while it walks one command line: the known state, the expanded words,
the doubts found so far, and the way back into the walk for code found inside a command.

Checks below the walk (wrappers, ``find -exec``, interpreters, the fallback) find code that runs
too: a ``bash -c`` string, the command ``xargs`` starts. They hand it to ``ctx.walk`` rather
than importing the walk, so each layer of the floor imports only the layers beneath it.

Two verdicts come out of a walk. A refusal (:class:`Refuse`, raised) is what the floor can tell
is catastrophic. A doubt (:func:`doubt`, noted and the walk goes on) is what it cannot resolve
(code built from values it cannot know, a program it cannot name, a language it does not read)
where the command could reach a protected target: only a person may allow that.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .paths import FLOOR_NOTE

#: How deeply shell strings inside shell strings are followed before giving up (and refusing).
MAX_DEPTH = 12
#: How many possible values one word may stand for before the rest are dropped.
MAX_CANDIDATES = 32
#: How many simple commands (each form of each) one command line may make the floor check.
MAX_STEPS = 20_000

#: How many doubts one command line keeps (the first is the one shown).
MAX_DOUBTS = 8
#: What every doubt ends with: who may answer it.
ASK_NOTE = (
    "(safety floor: the floor cannot tell what this does; only a person may allow it, "
    "not a rule, auto mode or an approve-everything function)"
)

#: A command's stdin when it can be known before the command runs, evaluated only if needed.
Stdin = Callable[[], str | None]


class Refuse(Exception):
    """The floor's verdict, raised from wherever in the walk it is reached."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _quoted(snippet: str) -> str:
    snippet = " ".join(snippet.replace("\x00", "…").replace("\x01", "…").replace("\x03", "…").split())
    return snippet[:117] + "..." if len(snippet) > 120 else snippet


def refuse(snippet: str, what: str) -> Refuse:
    """A refusal quoting the offending command (shortened) and saying what it would do."""
    return Refuse(f"refused: `{_quoted(snippet)}` {what} {FLOOR_NOTE}")


def doubt(ctx: Ctx, snippet: str, what: str) -> None:
    """Note that the floor cannot resolve `snippet`, which `what` says could reach a protected
    target: the command then needs a person (unless something in it is refused outright)."""
    doubts = ctx.facts.doubts
    if len(doubts) < MAX_DOUBTS:
        quoted = _quoted(snippet)
        shown = f"`{quoted}`" if quoted.strip("… ") else "the command"  # only a hole: say so
        reason = f"needs a person: {shown} {what} {ASK_NOTE}"
        if reason not in doubts:
            doubts.append(reason)


@dataclass(frozen=True)
class Arg:
    """One expanded word: its possible values (unknown parts as '' or UNKNOWN)."""

    raw: str
    values: tuple[str, ...]
    dynamic: bool = False
    split: bool = False  # an unquoted expansion: the value is split on whitespace

    @property
    def text(self) -> str:
        return self.values[0] if self.values else ""


def texts_of(args: Sequence[Arg], limit: int = 8) -> list[str]:
    """The texts `args` may make joined by spaces (a word that may be empty or unknown gives
    each of its forms): the code `eval` or `bash -c` runs is every one of them."""
    texts: list[str] = []
    for combination in itertools.product(*(arg.values or ("",) for arg in args)):
        texts.append(" ".join(combination))
        if len(texts) >= limit:
            break
    return texts or [""]


def literal(text: str) -> Arg:
    """A word whose only value is its text."""
    return Arg(text, (text,))


def given(text: str) -> Stdin:
    """A stdin that is known before the command runs (a here-string, a static pipe)."""
    return lambda: text


class Walk(Protocol):
    """The walk's entry points, as the checks beneath it call them."""

    def script(self, text: str, ctx: Ctx) -> None:
        """Check shell code: a command line, a `bash -c` string, a heredoc fed to a shell."""

    def command(self, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None) -> None:
        """Check one simple command, already split into expanded words."""


@dataclass
class Facts:
    """What earlier commands of the line did, shared by every script nested in it.

    `files`: the files written so far, by resolved path, with their possible contents (None:
    written by something whose output cannot be known). `env_loaded`: a .env file was sourced,
    so its secrets are in the environment. `ifs_changed`: IFS was assigned. `input_vars`:
    variables `read` set from input that cannot be known. `arithmetic_vars`: variables an
    arithmetic command assigns (`((x=0-1))`, `let`), whose values are not followed. `steps`:
    simple commands checked. `doubts`: what could not be resolved (see :func:`doubt`).
    """

    files: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    env_loaded: bool = False
    ifs_changed: bool = False
    input_vars: set[str] = field(default_factory=set)
    arithmetic_vars: set[str] = field(default_factory=set)
    steps: int = 0
    doubts: list[str] = field(default_factory=list)


@dataclass
class Ctx:
    """What is known while walking one command line (`facts` is shared with nested scripts).
    `refs`: the namerefs (`declare -n ref=NAME`), each with the names it may point at."""

    walk: Walk
    vars: dict[str, tuple[str, ...]] = field(default_factory=dict)
    refs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    funcs: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None
    positional: tuple[str, ...] | None = None
    depth: int = 0
    calls: tuple[str, ...] = ()
    facts: Facts = field(default_factory=Facts)
