"""Slash commands typed in the prompt, and the same actions in the command palette (ctrl+p)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from cmdop_tui.tui.app import CmdopApp


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str


SLASH_COMMANDS: dict[str, SlashCommand] = {
    c.name: c
    for c in (
        SlashCommand("help", "/help", "show commands and keys"),
        SlashCommand("clear", "/clear", "start a new conversation"),
        SlashCommand("model", "/model NAME", "switch model (an id or @fast, @balanced, @smart)"),
        SlashCommand("loop", "/loop on|off", "loop mode: keep going until a breaker phrase"),
        SlashCommand("budget", "/budget [USD|off]", "the session's spending limit"),
        SlashCommand("agent", "/agent NAME", "switch agent profile"),
        SlashCommand("sessions", "/sessions", "earlier sessions; Enter resumes one"),
        SlashCommand("export", "/export [PATH]", "write this session as Markdown"),
        SlashCommand("stop", "/stop", "stop the running turn (also Esc)"),
        SlashCommand("exit", "/exit", "quit (also ctrl+q)"),
    )
}


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


def unknown_command_hint(name: str) -> str:
    close = [c.usage for n, c in SLASH_COMMANDS.items() if n.startswith(name[:2])] if name else []
    suggestion = f" Did you mean {', '.join(close)}?" if close else ""
    return f"Unknown command /{name}.{suggestion} Type /help for the list."


def help_text(bindings: list[tuple[str, str]]) -> str:
    lines = ["Commands:"]
    lines += [f"  {c.usage:<14} {c.help}" for c in SLASH_COMMANDS.values()]
    lines.append("Keys:")
    lines += [f"  {key:<14} {description}" for key, description in bindings]
    return "\n".join(lines)


class CmdopCommands(Provider):
    """The palette's view of the slash commands."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: CmdopApp = self.app  # type: ignore[assignment]
        commands: list[tuple[str, Callable[[], object], str]] = [
            ("Stop the running turn", app.action_stop, "Esc"),
            ("Clear the conversation", partial(app.run_slash, "/clear"), "/clear"),
            ("Loop mode on", partial(app.run_slash, "/loop on"), "/loop on"),
            ("Loop mode off", partial(app.run_slash, "/loop off"), "/loop off"),
            ("Show help", partial(app.run_slash, "/help"), "/help"),
            ("Resume an earlier session", partial(app.run_slash, "/sessions"), "/sessions"),
            ("Export this session as Markdown", partial(app.run_slash, "/export"), "/export"),
            ("Copy the last reply", app.action_copy_reply, "F4"),
            ("Copy the selected tool output", app.action_copy_tool_output, "c in the tool panel"),
            ("Toggle the tool-activity panel", app.action_toggle_tools, "F2"),
            ("Toggle the machines panel", app.action_toggle_machines, "F3"),
            ("Quit", app.action_request_quit, "ctrl+q"),
        ]
        for name in app.settings.agents:
            commands.append((f"Agent profile: {name}", partial(app.run_slash, f"/agent {name}"), "/agent"))
        for alias, model in app.settings.aliases.items():
            commands.append((f"Model: {alias} ({model})", partial(app.run_slash, f"/model {alias}"), "/model"))
        return commands

    async def discover(self) -> Hits:
        for name, callback, help in self._commands():
            yield DiscoveryHit(name, callback, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help)
