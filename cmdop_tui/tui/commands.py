"""Slash commands typed in the prompt and the entries of the command palette (ctrl+p), in one registry.

`slash_commands.build_registry()` makes the registry: each slash command's usage, help and palette
entries with its handler; the app adds its own palette actions (copy, toggle a panel) and holds the
registry (`CommandHost.commands`). /help, the palette and the app's dispatcher (`CommandRegistry.run`)
all read it, in the order of registration. A handler sees the app only as a `CommandHost`: the few
things a command may use, so the commands do not depend on the app.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

from textual.binding import BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.widget import Widget

from cmdop_tui.config.settings import Settings
from cmdop_tui.tui.widgets.chat_log import ChatLog

if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    from cmdop_tui.session.session import Session


WidgetT = TypeVar("WidgetT", bound=Widget)


class LocalStarter(Protocol):
    """What `/local` uses of the session's opener (tui/session_life.py `SessionOpener`)."""

    local_starting: bool

    def start_local(self) -> None: ...


class CommandHost(Protocol):
    """What a command may use of the app it runs in (mypy holds the app to it where it runs one)."""

    BINDINGS: ClassVar[list[BindingType]]
    settings: Settings
    session_ready: asyncio.Event
    commands: CommandRegistry

    @property
    def opener(self) -> LocalStarter: ...
    @property
    def session(self) -> Session | None: ...
    @property
    def chat(self) -> ChatLog: ...
    @property
    def running(self) -> bool: ...
    async def ready_session(self) -> Session | None: ...
    async def reset_display(self) -> None: ...
    async def show_history(self) -> None: ...
    def run_compaction(self, instructions: str) -> object: ...
    def run_agent(self, prompt: str, tools: frozenset[str] | None = None) -> None: ...
    def action_stop(self) -> None: ...
    async def action_request_quit(self) -> None: ...
    def push_screen(self, screen: Any, callback: Any = None, wait_for_dismiss: bool = False) -> Any: ...
    def suspend(self) -> AbstractContextManager[None]: ...
    def query_one(self, selector: type[WidgetT]) -> WidgetT: ...
    def run_worker(
        self, work: Any, *, group: str = "default", exclusive: bool = False, exit_on_error: bool = True
    ) -> Any: ...


SlashHandler = Callable[[CommandHost, str], Awaitable[None]]
PaletteActionHandler = Callable[[], object]
SlashHandlerT = TypeVar("SlashHandlerT", bound=SlashHandler)


@dataclass(frozen=True)
class PaletteEntry:
    """A palette line that runs its slash command with `argument`.

    `hint` is shown under the title; by default it is the command as one would type it.
    """

    title: str
    argument: str = ""
    hint: str = ""


# Fixed entries, or entries made from the app when the palette opens (e.g. one per agent profile).
PaletteEntries = tuple[PaletteEntry, ...] | Callable[[CommandHost], Iterable[PaletteEntry]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str
    handler: SlashHandler
    palette: PaletteEntries = ()

    def palette_entries(self, app: CommandHost) -> Iterable[PaletteEntry]:
        return self.palette(app) if callable(self.palette) else self.palette


@dataclass(frozen=True)
class PaletteAction:
    """A palette entry that is not a slash command (copy, toggle a panel)."""

    title: str
    hint: str
    handler: PaletteActionHandler


@dataclass(frozen=True)
class PaletteCommand:
    """One line as the palette shows it, ready to run."""

    title: str
    run: Callable[[], object]
    hint: str


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    argument: str


def parse_slash(text: str) -> ParsedCommand | None:
    """`/model @fast` -> ParsedCommand("model", "@fast"); None when the text is not a command."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, argument = text[1:].strip().partition(" ")
    return ParsedCommand(name.lower(), argument.strip())


class CommandRegistry:
    def __init__(self) -> None:
        self._slash_commands: dict[str, SlashCommand] = {}
        self._palette_actions: list[PaletteAction] = []
        self.help_notes: list[str] = []  # lines /help shows after the commands (custom commands)
        self.notices: list[str] = []  # what the app says once at start (a custom command's file skipped)

    def slash(self, usage: str, help: str, *, palette: PaletteEntries = ()) -> Callable[[SlashHandlerT], SlashHandlerT]:
        """Register the decorated handler as the slash command of `usage` (`/name ARGUMENTS`)."""
        name = usage.split()[0].removeprefix("/")

        def register(handler: SlashHandlerT) -> SlashHandlerT:
            self._slash_commands[name] = SlashCommand(name, usage, help, handler, palette)
            return handler

        return register

    def palette_action(self, title: str, hint: str, handler: PaletteActionHandler) -> None:
        """Add a palette entry of its own (not a slash command) that calls `handler`."""
        self._palette_actions.append(PaletteAction(title, hint, handler))

    def usages(self) -> list[tuple[str, str]]:
        """Each slash command's usage and one-line help, in order (what completion lists)."""
        return [(command.usage, command.help) for command in self._slash_commands.values()]

    def find(self, name: str) -> SlashCommand | None:
        return self._slash_commands.get(name)

    async def run(self, host: CommandHost, text: str) -> None:
        """Run the slash command `text` ("/model @fast"), or say that there is none such."""
        command = parse_slash(text)
        if command is None:
            return
        slash_command = self.find(command.name)
        if slash_command is None:
            await host.chat.add_notice(self.unknown_command_hint(command.name), "warning")
            return
        await slash_command.handler(host, command.argument)

    def unknown_command_hint(self, name: str) -> str:
        close = [c.usage for n, c in self._slash_commands.items() if n.startswith(name[:2])] if name else []
        suggestion = f" Did you mean {', '.join(close)}?" if close else ""
        return f"Unknown command /{name}.{suggestion} Type /help for the list."

    def help_text(self, key_tables: dict[str, list[tuple[str, str]]]) -> str:
        """The commands, then each table of keys under its heading, in one column."""
        commands = [(c.usage, c.help) for c in self._slash_commands.values()]
        keys = [row for rows in key_tables.values() for row in rows]
        width = max(len(name) for name, _ in commands + keys)
        lines = ["Commands:"]
        # Two spaces at least between the columns: where a folded row's continuation hangs.
        lines += [f"  {usage:<{width}}  {help}" for usage, help in commands]
        lines += self.help_notes
        for heading, rows in key_tables.items():
            lines.append(heading)
            lines += [f"  {key:<{width}}  {description}" for key, description in rows]
        return "\n".join(lines)

    def palette_commands(self, app: CommandHost) -> list[PaletteCommand]:
        commands = [
            PaletteCommand(
                entry.title,
                partial(command.handler, app, entry.argument),
                entry.hint or f"/{command.name} {entry.argument}".rstrip(),
            )
            for command in self._slash_commands.values()
            for entry in command.palette_entries(app)
        ]
        commands += [PaletteCommand(a.title, a.handler, a.hint) for a in self._palette_actions]
        return commands


def model_alias_entries(app: CommandHost) -> Iterator[PaletteEntry]:
    for alias, model in app.settings.aliases.items():
        yield PaletteEntry(f"Model: {alias} ({model})", alias, hint="/model")


def agent_profile_entries(app: CommandHost) -> Iterator[PaletteEntry]:
    for name in app.settings.agents:
        yield PaletteEntry(f"Agent profile: {name}", name, hint="/agent")


class CmdopCommands(Provider):
    """The palette's view of the registry."""

    def _commands(self) -> list[PaletteCommand]:
        host = cast(CommandHost, self.app)  # the palette runs in our app, a CommandHost
        return host.commands.palette_commands(host)

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(command.title, command.run, help=command.hint)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.run, help=command.hint)
