"""The heap settled at quiet moments, so that a long-lived app does not stall mid-stream."""

from __future__ import annotations

import gc


def settle_heap(*, whole: bool = True) -> None:
    """Collect, then freeze what survives, at a quiet moment (start-up, after a turn).

    The SDK, Textual and a growing chat make a large heap of long-lived objects; a full collection
    that walks them all stalls the UI for ~50-100 ms in the middle of a stream. Frozen objects are
    never walked again, so collections during the next turn only see what that turn creates.
    At start-up (`whole=False`) only the young generations are collected: nothing is frozen yet,
    so a full collection of a resumed session's heap would itself be such a stall, and the
    garbage start-up leaves in the old generation is bounded.
    """
    gc.collect(2 if whole else 1)
    gc.freeze()
