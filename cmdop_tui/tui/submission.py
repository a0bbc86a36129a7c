"""Where what the user submits in the prompt goes: `!command` runs on the session's machine
(session/user_commands.py), `/command` goes to the registry (tui/commands.py), anything else to
the model (the app's `send`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from cmdop_tui.tui.commands import CommandHost, parse_slash
from cmdop_tui.tui.rewinding import TURN_RUNNING

if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    from cmdop_tui.agent.events import Event
    from cmdop_tui.session.session import Session


class EventSink(Protocol):
    def deliver(self, event: Event) -> None: ...


class PromptHost(CommandHost, Protocol):
    """What submitting uses of the app: a command's host, and how prompts and turns start."""

    @property
    def event_router(self) -> EventSink: ...
    async def send(self, text: str) -> None: ...
    def start_turn(self, step: Callable[[Session], Awaitable[object]]) -> None: ...


async def submit(host: PromptHost, text: str) -> None:
    """Send `text` where it goes (see the module's docstring)."""
    from cmdop_tui.session.user_commands import user_command  # loaded with the session, not before the first paint

    command = user_command(text)
    if command is not None:
        await run_user_command(host, command)
    elif parse_slash(text) is not None:
        await host.commands.run(host, text)
    else:
        await host.send(text)


async def run_user_command(host: PromptHost, command: str) -> None:
    """`!command`: shown as the user typed it, then run like a turn (Esc stops it); its output
    streams into a tool card. No model turn follows: the model reads it with the next prompt."""
    if host.running:
        await host.chat.add_notice(TURN_RUNNING, "warning")
        return
    await host.chat.add_user_message(f"!{command}")
    if host.session_ready.is_set() and await host.ready_session() is None:
        return

    async def step(session: Session) -> None:
        outcome = await session.run_user_command(command, host.event_router.deliver)
        if outcome.refused:
            await host.chat.add_notice(
                "The sandbox refused this command, as your settings say (its card says what); "
                "to do it outside the sandbox, run it in your own shell.",
                "warning",
            )

    host.start_turn(step)
