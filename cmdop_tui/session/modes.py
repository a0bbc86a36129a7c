"""The order Shift+Tab (or any surface's one key) goes through the permission modes.

default → accept_edits → plan → default. `auto` and `strict` are not in the round unless the
session started in one (`--yes` is auto) or the user chose one by name: then it comes after
plan, so a session started with --yes can go back to auto, and nothing enters auto that the
user did not ask for once.
"""

from __future__ import annotations

CYCLE: tuple[str, ...] = ("default", "accept_edits", "plan")


def next_mode(current: str, beyond: str | None) -> str:
    """The mode after `current`; `beyond`: the mode outside the round that joins it, if any."""
    cycle = CYCLE if beyond is None or beyond in CYCLE else (*CYCLE, beyond)
    if current not in cycle:
        return cycle[0]
    return cycle[(cycle.index(current) + 1) % len(cycle)]
