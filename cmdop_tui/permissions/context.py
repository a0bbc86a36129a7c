"""What the floor carries while it walks one command line: the known state, the expanded words,
and the way back into the walk for code found inside a command.

Checks below the walk (wrappers, ``find -exec``, interpreters, the fallback) find code that runs
too: a ``bash -c`` string, the command ``xargs`` starts. They hand it to ``ctx.walk`` rather
than importing the walk, so each layer of the floor imports only the layers beneath it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .paths import FLOOR_NOTE

#: How deeply shell strings inside shell strings are followed before giving up (and refusing).
MAX_DEPTH = 12
#: How many possible values one word may stand for before the rest are dropped.
MAX_CANDIDATES = 32
#: How many simple commands (each form of each) one command line may make the floor check.
MAX_STEPS = 20_000

#: A command's stdin when it can be known before the command runs, evaluated only if needed.
Stdin = Callable[[], str | None]


class Refuse(Exception):
    """The floor's verdict, raised from wherever in the walk it is reached."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def refuse(snippet: str, what: str) -> Refuse:
    """A refusal quoting the offending command (shortened) and saying what it would do."""
    snippet = " ".join(snippet.split())
    if len(snippet) > 120:
        snippet = snippet[:117] + "..."
    return Refuse(f"refused: `{snippet}` {what} {FLOOR_NOTE}")


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
    variables `read` set from input that cannot be known. `steps`: simple commands checked.
    """

    files: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    env_loaded: bool = False
    ifs_changed: bool = False
    input_vars: set[str] = field(default_factory=set)
    steps: int = 0


@dataclass
class Ctx:
    """What is known while walking one command line (`facts` is shared with nested scripts)."""

    walk: Walk
    vars: dict[str, tuple[str, ...]] = field(default_factory=dict)
    funcs: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None
    positional: tuple[str, ...] | None = None
    depth: int = 0
    calls: tuple[str, ...] = ()
    facts: Facts = field(default_factory=Facts)
