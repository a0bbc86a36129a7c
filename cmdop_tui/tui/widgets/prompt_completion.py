"""Completion in the prompt: `/` lists the slash commands, `@` the working tree's files.

The prompt (widgets/prompt_input.py) owns one `PromptCompletion` and tells it when its text or
cursor changed; while the list is open, Up/Down move in it, Tab and Enter accept, Esc closes it.
What is completed is the word before the cursor: a prompt that is a `/name` still being typed,
or a word starting with `@`. Accepting inserts the command (`/model `) or the reference
(`@src/app.py `, quoted when the path has a space): the session attaches the file when the
prompt is sent (session/references.py).

The commands come from the app's command registry, the one `/help` lists (`commands.usages()`).
The files come from a `PathIndex` of the session's working directory (machines/path_index.py),
listed in a worker thread on the first `@` and again at each later first `@` (kept when
nothing changed); `@NAME:` where NAME is another machine of the session lists that machine's
workspace (`RemoteIndex`, in the same module), once per session, in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import TextArea

from cmdop_tui.machines.spec import LOCAL, MachineError
from cmdop_tui.tui.widgets.completion_menu import Choice, CompletionMenu

if TYPE_CHECKING:
    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.path_index import PathIndex, RemoteIndex

LIMIT = 50  # choices listed
WAIT_POLL_S = 0.03  # how often a list still being made is looked at
ACCEPT_KEYS = frozenset({"tab", "enter"})
MENU_KEYS = ACCEPT_KEYS | {"up", "down", "escape"}
LISTING = "listing files…"


@runtime_checkable
class SlashCommands(Protocol):
    """The app's command registry, as far as completion reads it."""

    def usages(self) -> list[tuple[str, str]]: ...


class SessionView(Protocol):
    """What completion reads of an open session: where it works, its machines."""

    @property
    def working_dir(self) -> Path: ...

    fleet: Fleet | None


class Completer(Protocol):
    """A list of paths to complete from: the working tree's, a machine's."""

    def answers(self, query: str) -> bool: ...
    def search(self, query: str, *, limit: int = 50) -> list[str]: ...


@dataclass(frozen=True)
class _Source:
    """Where a word's paths come from: the list, the query in it, the machine, or why none."""

    index: Completer
    query: str
    machine: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Word:
    """The word being completed: its kind, where it starts on the cursor's row, what is typed."""

    kind: Literal["slash", "path"]
    row: int
    start: int
    query: str


def word_at(line: str, row: int, column: int) -> Word | None:
    """The completable word ending at `column` of `line` (the cursor's row), or None."""
    before = line[:column]
    if row == 0 and before.startswith("/") and not any(c.isspace() for c in before):
        return Word("slash", row, 0, before[1:])
    start = max(before.rfind(" "), before.rfind("\t")) + 1
    word = before[start:]
    if word.startswith("@") and not word.startswith('@"'):
        return Word("path", row, start, word[1:])
    return None


class PromptCompletion:
    """The list under the prompt's cursor word, and what accepting from it inserts."""

    def __init__(self, prompt: TextArea, menu: CompletionMenu) -> None:
        self.prompt = prompt
        self.menu = menu
        self._indexes: dict[Path, PathIndex] = {}
        self._remotes: dict[tuple[int, str], RemoteIndex] = {}  # (the session's fleet, a machine)
        self._word: Word | None = None
        self._waiting: Timer | None = None

    # --- what the prompt tells it ---------------------------------------------------------------

    def handles(self, key: str) -> bool:
        """Whether `key` is the list's: it is open and the key moves in it or accepts; Esc
        closes it even while it only says that files are being listed."""
        if key == "escape":
            return self.menu.showing
        return self.menu.is_open and key in MENU_KEYS

    def press(self, key: str) -> None:
        if key == "escape":
            self.close()
        elif key in ("up", "down"):
            self.menu.move(-1 if key == "up" else 1)
        else:
            self.accept(run=key == "enter")

    def update(self) -> None:
        """The text or the cursor moved: list for the word at the cursor, or close."""
        row, column = self.prompt.cursor_location
        word = word_at(self.prompt.document.get_line(row), row, column)
        if word == self._word:
            return
        self._word = word
        if word is None:
            self.close()
        elif word.kind == "slash":
            self._show(self._commands(word.query))
        else:
            self._list_paths(word.query)

    def close(self) -> None:
        self._word = None
        self._stop_waiting()
        self.menu.hide()

    # --- choices --------------------------------------------------------------------------------

    def _commands(self, typed: str) -> list[Choice]:
        registry = getattr(self.prompt.app, "commands", None)
        if not isinstance(registry, SlashCommands):
            return []
        choices = []
        for usage, help in registry.usages():
            name, _, arguments = usage.partition(" ")
            if name[1:].startswith(typed.lower()):
                choices.append(Choice(usage, help, insert=name + (" " if arguments else ""), runs=not arguments))
        return choices

    def _list_paths(self, typed: str) -> None:
        source = self._source(typed)
        if source.error is not None or source.index.answers(source.query):
            self._stop_waiting()
            found = source.index.search(source.query, limit=LIMIT) if source.error is None else []
            self._show(
                [Choice(path, insert=_reference(path, source.machine)) for path in found], waiting=source.error or ""
            )
            return
        self._show([], waiting=LISTING if source.machine is None else f"listing files on {source.machine}…")
        if self._waiting is None:
            self._waiting = self.prompt.set_interval(WAIT_POLL_S, self._recheck)

    def _recheck(self) -> None:
        """While the files are listed: once they are, list them for the word typed by now."""
        source = self._source(self._word.query) if self._word is not None else None
        if source is None or source.error is not None or source.index.answers(source.query):
            self._stop_waiting()
            self._word = None
            self.update()

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None

    def _source(self, typed: str) -> _Source:
        """Where `typed` (what follows `@`) is completed from: `NAME:` a machine's files, when
        NAME is one of the session's other machines; else the working tree's."""
        name, colon, rest = typed.partition(":")
        remote = self._remote(name) if colon else None
        if isinstance(remote, str):
            return _Source(self._local(), rest, name, error=remote)
        if remote is not None:
            return _Source(remote, rest, name, error=remote.error)
        return _Source(self._local(), typed)

    def _local(self) -> PathIndex:
        """The index of where the session works (this process's directory before it opens)."""
        session: SessionView | None = getattr(self.prompt.app, "session", None)
        root = session.working_dir if session is not None else Path.cwd()
        if root not in self._indexes:
            from cmdop_tui.machines.path_index import PathIndex  # at the first `@`, not at start

            self._indexes[root] = PathIndex(root)
        index = self._indexes[root]
        if self._word is not None and (self._word.query == "" or not index.ready.is_set()):
            index.start()  # a new `@`: list (again, unless just done) in the background
        return index

    def _remote(self, name: str) -> RemoteIndex | str | None:
        """The files of the session's machine `name` (listed once a session), why they cannot
        be, or None when `name` is no other machine of the session."""
        session: SessionView | None = getattr(self.prompt.app, "session", None)
        fleet = session.fleet if session is not None else None
        if fleet is None or name == LOCAL or name not in fleet.inventory.names():
            return None
        key = (id(fleet), name)
        if key not in self._remotes:
            try:
                machine = fleet.remote(name)
            except MachineError as exc:
                return str(exc)  # not kept: it may be reachable at the next `@`
            if machine is None:
                return None
            from cmdop_tui.machines.path_index import RemoteIndex

            self._remotes[key] = RemoteIndex(machine)
            self.prompt.run_worker(self._remotes[key].fetch(), group="completion", exit_on_error=False)
        return self._remotes[key]

    def _show(self, choices: list[Choice], *, waiting: str = "") -> None:
        if not self.menu.is_mounted:  # at the first list, not before: nothing added to start-up
            self.prompt.screen.mount(self.menu)
        bar = self.prompt.parent  # the list floats above the prompt's bar
        self.menu.show(choices, waiting=waiting, above=bar if isinstance(bar, Widget) else self.prompt)

    # --- accepting ------------------------------------------------------------------------------

    def accept(self, *, run: bool = False) -> None:
        """Put the highlighted choice in place of the word; Enter on a bare command sends it."""
        choice, word = self.menu.current, self._word
        self.close()
        if choice is None or word is None:
            return
        row, column = self.prompt.cursor_location
        result = self.prompt.replace(choice.insert, (word.row, word.start), (row, column))
        self.prompt.move_cursor(result.end_location)
        self._word = word_at(self.prompt.document.get_line(row), *self.prompt.cursor_location)
        if run and choice.runs:
            submit = getattr(self.prompt, "submit", None)
            if callable(submit):
                submit()


def _reference(path: str, machine: str | None = None) -> str:
    """What accepting `path` inserts: `@path ` (quoted when it holds a space)."""
    where = f"{machine}:{path}" if machine else path
    return f'@"{where}" ' if " " in where else f"@{where} "
