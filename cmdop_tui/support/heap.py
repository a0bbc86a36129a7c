"""The heap settled at quiet moments, so that a long-lived app does not stall mid-stream; and no
collections at all while the app starts (`hold_collections` to `release_collections`)."""

from __future__ import annotations

import gc

_held = False  # the collector was turned off by hold_collections, and is not on again yet


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


def hold_collections() -> None:
    """No collections until `release_collections`: from the TUI's imports to its first frame.

    Importing Textual and the app, and mounting its widgets, makes tens of thousands of objects
    that all live as long as the app, and almost no garbage (a few hundred objects); the
    collections they set off walked them again and again, a tenth of the time to the first frame."""
    global _held
    _held = gc.isenabled()
    gc.disable()


def release_collections() -> None:
    """The collector on again (when `hold_collections` turned it off), with what start-up made
    frozen first, so that no collection walks it; the little garbage among it is kept."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
