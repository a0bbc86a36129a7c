"""Custom commands (session/custom_commands.py) as slash commands: in the registry after the
built-in ones, so that /help, the palette and the `/` list show them with their descriptions.

A built-in command wins over a custom one of the same name (said in /help). Sending one shows
what was typed and where the prompt comes from (a project's file is the project's words, not
the user's), then sends the expanded prompt, with only its `allowed-tools` when it names some.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from cmdop_tui.session.custom_commands import PROJECT_DIR, CustomCommand, find_commands, user_commands_dir
from cmdop_tui.tui.commands import CommandHost, CommandRegistry, PaletteEntry
from cmdop_tui.tui.rewinding import TURN_RUNNING


def add_custom_commands(registry: CommandRegistry, cwd: Path) -> None:
    """Register the user's and the project's custom commands (a built-in's name stays its own)."""
    found = find_commands(cwd)
    found_notes = list(found.notes)
    registry.help_notes.append(
        f"Custom commands: markdown files in {cwd / PROJECT_DIR} and {user_commands_dir()} "
        "(a built-in command of the same name wins)."
    )
    for command in found.commands:
        if registry.find(command.name) is not None:
            found_notes.append(f"{command.path}: not offered, the built-in /{command.name} wins")
            continue
        registry.slash(
            f"/{command.name} {command.argument_hint}".rstrip(),
            f"{command.description} ({command.source})",
            palette=(PaletteEntry(f"/{command.name}: {command.description}", hint=f"{command.source} command"),),
        )(partial(send_custom_command, command))
    registry.help_notes += [f"  {note}" for note in found_notes]
    registry.notices += found_notes


async def send_custom_command(command: CustomCommand, app: CommandHost, argument: str) -> None:
    """Send the command's prompt, as a prompt is sent (it waits for no approval of its own:
    it is only words for the model, which the user chose to send)."""
    if app.running:
        await app.chat.add_notice(TURN_RUNNING, "warning")
        return
    await app.chat.add_user_message(f"/{command.name} {argument}".rstrip())
    tools = command.allowed_tools
    only = f"; only these tools: {', '.join(sorted(tools)) or 'none'}" if tools is not None else ""
    await app.chat.add_notice(f"The {command.source} command {command.path}: {command.description}{only}")
    if app.session_ready.is_set() and await app.ready_session() is None:
        return
    app.run_agent(command.expand(argument), tools=tools)
