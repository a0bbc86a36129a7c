"""The machine picked in the machines panel becomes the session's target, and the chat says so:
the name the tools accept (`local` for this machine), and an offline machine said as such.

A machine the last probe found offline is not chosen: tool calls there would fail at once (the
fleet's `check_reachable`). The notice says why, when it was checked, and what the session keeps
working on; the panel probes again in the background, and the user picks it once it answers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cmdop_tui.machines.spec import LOCAL, MachineError
from cmdop_tui.support.figures import duration
from cmdop_tui.support.text import inert_line

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session
    from cmdop_tui.tui.widgets.chat_log import ChatLog


async def choose_target(session: Session | None, chat: ChatLog, name: str) -> None:
    """Make `name` the session's target from the next turn, or say why not."""
    if session is None or session.fleet is None:
        await chat.add_notice("The session is not open yet: pick the machine again in a moment.", "warning")
        return
    working_on = session.fleet.target_name or LOCAL
    health = session.fleet.health.get(name)
    if name != LOCAL and health is not None and health.state == "offline":
        ago = duration(time.monotonic() - health.checked_at)
        why = f": {inert_line(health.error)}" if health.error else ""
        await chat.add_notice(
            f"{name} is offline (checked {ago} ago{why}). Still working on {working_on}; "
            "pick it again once the panel shows it online.",
            "warning",
        )
        return
    try:
        target = session.set_target(name)
    except MachineError as exc:
        await chat.add_notice(f"{exc}. Still working on {working_on}.", "error")
        return
    where = target.name if target else f"{LOCAL} (this machine)"
    await chat.add_notice(f"Working on {where} now (from the next turn).")
