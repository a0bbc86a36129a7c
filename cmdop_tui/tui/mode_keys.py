"""Changing the permission mode from the app: Shift+Tab (the next mode of the round) and
`/mode NAME`; either way a notice says what the new mode lets the model do, and the status
line shows it (the session tells its status listeners)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from cmdop_tui.config.model import PERMISSION_MODES
from cmdop_tui.tui.commands import PaletteEntry
from cmdop_tui.tui.widgets.chat_log import ChatLog

if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    from cmdop_tui.session.session import Session

# What each mode lets the model do, as the notice says it.
MODE_NOTICES = {
    "default": "Mode: default. Changes are asked before they run.",
    "accept_edits": (
        "Mode: accept edits. File edits in the working directory go without asking; "
        "commands and everything else are still asked."
    ),
    "plan": (
        "Mode: plan. Nothing is changed: the model looks, proposes a plan and asks to go on "
        "(Shift+Tab to another mode lets it act)."
    ),
    "auto": (
        "Mode: auto. Tools run without asking; the safety floor and the sandbox still hold, "
        "and what only a person may allow is still asked."
    ),
    "strict": "Mode: strict. Changes that no rule allows are refused, not asked.",
}
MODE_HELP = "how freely the model acts: " + ", ".join(PERMISSION_MODES) + " (also Shift+Tab)"
MODE_PALETTE = tuple(PaletteEntry(f"Permission mode: {mode}", mode) for mode in PERMISSION_MODES)


class ModeHost(Protocol):
    """What changing the mode uses of the app (a `CommandHost` has it)."""

    @property
    def session(self) -> Session | None: ...
    @property
    def chat(self) -> ChatLog: ...


async def switch_mode(host: ModeHost, mode: str | None = None) -> None:
    """The session in `mode` (None: the next of the round), and a notice of what that means."""
    session = host.session
    if session is None:
        await host.chat.add_notice("No session is open yet: the mode can change once it is.", "warning")
        return
    try:
        chosen = session.set_mode(mode if mode is not None else session.next_mode())
    except ValueError:
        await host.chat.add_notice(f"Unknown mode {mode!r}: one of {', '.join(PERMISSION_MODES)}.", "error")
        return
    await host.chat.add_notice(MODE_NOTICES[chosen], "warning" if chosen == "auto" else "info")


async def slash_mode(app: ModeHost, argument: str) -> None:
    """/mode NAME: that mode; /mode alone: the mode now and the others."""
    name = argument.strip()
    if name:
        await switch_mode(app, name)
        return
    now = app.session.status().mode if app.session is not None else "default"
    await app.chat.add_notice(f"{MODE_NOTICES[now]} Modes: {', '.join(PERMISSION_MODES)}; Shift+Tab goes round.")
