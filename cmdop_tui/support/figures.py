"""Figures as the app writes them, one style everywhere: a number, a space, its unit.

Durations: `0.3 s`, `11.7 s`, `1:05 min`, `1:02:03 h`. Used by the tool card, the tool panel,
the fleet view, the output view, notices and dialogs, so that no surface shows a bare `11.7` or
`1m00`.
"""

from __future__ import annotations

SECONDS_WIDTH = 9  # the widest duration under ten hours: `59:59 min`, `9:59:59 h`


def duration(seconds: float) -> str:
    """`seconds` as people read it: tenths of a second under a minute, then minutes and hours."""
    tenths = round(max(seconds, 0.0), 1)
    if tenths < 60:
        return f"{tenths:.1f} s"
    whole = int(round(seconds))
    if whole < 3600:
        return f"{whole // 60}:{whole % 60:02d} min"
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d} h"


def whole_seconds(seconds: int) -> str:
    """A count of whole seconds (a countdown): `60 s`."""
    return f"{seconds} s"
