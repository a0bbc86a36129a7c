"""Slash commands in the editor: those that make sense without the TUI, and the user's and the
project's custom commands (session/custom_commands.py), advertised with
`available_commands_update` and run when a prompt starts with `/NAME`.

A built-in answers in a line of text (the editor shows it as the agent's message); `/compact`
and a custom command run the loop, as a prompt does. The permission mode is the editor's mode
selector (`session/set_mode`), so `/mode` is not here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from cmdop_tui.agent.budget import format_usd
from cmdop_tui.config.settings import SettingsError
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.custom_commands import CustomCommand, find_commands
from cmdop_tui.session.session import Session


@dataclass(frozen=True)
class Builtin:
    description: str
    hint: str  # what goes after the name ("" for nothing)
    run: Callable[[Session, str], Awaitable[str]]


@dataclass(frozen=True)
class Invocation:
    """What a prompt that starts with a slash command does: say `text`, or run `prompt` (with
    only `tools`, a custom command's allowed-tools), or compact (`compact` holds its instructions)."""

    text: str = ""
    prompt: str | None = None
    tools: frozenset[str] | None = None
    compact: str | None = None


async def _clear(session: Session, argument: str) -> str:
    session.new_conversation()
    return "Started a new conversation."


async def _model(session: Session, argument: str) -> str:
    if not argument:
        return f"Model: {session.model_name}. Usage: /model NAME (an id or an alias such as @fast)"
    try:
        return f"Model: {session.use_model(argument)} (from the next request)."
    except SettingsError as exc:
        return str(exc)


async def _machine(session: Session, argument: str) -> str:
    if not argument:
        return f"Working on {session.status().machine}. Usage: /machine NAME (local for this one)"
    try:
        session.set_target(argument)
    except MachineError as exc:
        return str(exc)
    return f"Working on {session.status().machine} from the next turn."


async def _budget(session: Session, argument: str) -> str:
    wanted = argument.strip().lower().lstrip("$")
    if wanted:
        try:
            budget = None if wanted == "off" else float(wanted)
        except ValueError:
            return "Usage: /budget USD (a positive amount), or /budget off"
        if budget is not None and budget <= 0:
            return "Usage: /budget USD (a positive amount), or /budget off"
        session.set_budget(budget)
    limit = session.budget_usd
    limit_text = f"the budget is {format_usd(limit)}" if limit is not None else "there is no budget"
    return f"Spent about {format_usd(session.spent_usd)} this session; {limit_text}."


async def _loop(session: Session, argument: str) -> str:
    if argument not in ("on", "off"):
        return "Usage: /loop on|off"
    session.set_loop(argument == "on")
    return f"Loop mode {argument} (from the next prompt)."


async def _context(session: Session, argument: str) -> str:
    report = await session.context_report()
    used = report.last_tokens
    said = f"{used:,} tokens in the last request" if used is not None else "no request yet"
    return f"Context window: {report.window:,} tokens; {said}."


async def _compact_said(session: Session, argument: str) -> str:
    return ""  # never run: `Commands.invoke` hands /compact to the loop


BUILTINS: Mapping[str, Builtin] = {
    "clear": Builtin("Start a new conversation (the old one stays in its transcript)", "", _clear),
    "compact": Builtin("Summarise the conversation so far to free the context", "instructions", _compact_said),
    "model": Builtin("Show or switch the model", "NAME", _model),
    "machine": Builtin("Work on another machine of the inventory", "NAME", _machine),
    "budget": Builtin("Show or set the session's spending limit", "USD|off", _budget),
    "loop": Builtin("Loop mode: re-prompt until the task is done", "on|off", _loop),
    "context": Builtin("What fills the context window", "", _context),
}


class Commands:
    """The commands of one session: the built-ins and the custom commands of its folder."""

    def __init__(self, cwd: Path) -> None:
        found = find_commands(cwd)
        self.notes = list(found.notes)
        self.custom = {c.name: c for c in found.commands if c.name not in BUILTINS}

    def available(self) -> list[AvailableCommand]:
        """What `available_commands_update` lists."""
        listed = [_available(name, b.description, b.hint) for name, b in BUILTINS.items()]
        return listed + [_custom(command) for command in self.custom.values()]

    async def invoke(self, session: Session, text: str) -> Invocation | None:
        """What `text` (a whole prompt) does when it names a command; None for a plain prompt."""
        if not text.startswith("/"):
            return None
        name, _, argument = text[1:].strip().partition(" ")
        argument = argument.strip()
        if name == "compact":
            return Invocation(compact=argument)
        if name in BUILTINS:
            return Invocation(text=await BUILTINS[name].run(session, argument))
        if name in self.custom:
            command = self.custom[name]
            return Invocation(prompt=command.expand(argument), tools=command.allowed_tools)
        return None  # an unknown /word is the model's to read


def _available(name: str, description: str, hint: str) -> AvailableCommand:
    given = AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None
    return AvailableCommand(name=name, description=description, input=given)


def _custom(command: CustomCommand) -> AvailableCommand:
    return _available(command.name, f"{command.description} ({command.source})", command.argument_hint)
