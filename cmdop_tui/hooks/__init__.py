"""Hooks: the user's own programs run at points of a session (policy as code), in Claude Code's
shape so that its users' scripts work here as they are.

From the bottom up: `shape` (the settings' `[[hooks.EVENT]]` tables and a project's
`.cmdop/hooks.json` as `HookTable`), `matching` (by tool name and by machine, tag or group),
`running` (one command: the event as JSON on stdin, a timeout, no credential in its
environment, killed with its children on a Stop), `decisions` (what a hook said: allow, deny,
ask, a changed input, context; exit 2 blocks; a failure blocks with `on_failure = "block"`),
`engine` (`Hooks`: an event's matching hooks run at once, their word and their records),
`trust` and `project` (a project's hooks run only once the user trusts the file as it is).

The loop calls them at its points (agent/hook_points.py); the session builds `Hooks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmdop_tui.hooks.shape import EVENTS, PROJECT_FILE, HookCommand, HookGroup, HookShapeError, HookTable
from cmdop_tui.support.lazy import loaded_on_use

if TYPE_CHECKING:
    from cmdop_tui.hooks.decisions import HookVerdict, HookWord
    from cmdop_tui.hooks.engine import HookRecord, Hooks, SessionFacts

# The settings read `shape` before the first paint; the engine (and through it every machine's
# code) loads when a session first asks for it.
_LOADED_ON_USE = {
    "HookVerdict": "cmdop_tui.hooks.decisions",
    "HookWord": "cmdop_tui.hooks.decisions",
    "HookRecord": "cmdop_tui.hooks.engine",
    "Hooks": "cmdop_tui.hooks.engine",
    "SessionFacts": "cmdop_tui.hooks.engine",
}

__getattr__ = loaded_on_use(__name__, _LOADED_ON_USE)


__all__ = [
    "EVENTS",
    "PROJECT_FILE",
    "HookCommand",
    "HookGroup",
    "HookRecord",
    "HookShapeError",
    "HookTable",
    "HookVerdict",
    "HookWord",
    "Hooks",
    "SessionFacts",
]
