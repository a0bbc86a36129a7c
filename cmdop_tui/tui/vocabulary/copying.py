"""Copying to the clipboard with OSC 52 (so it works over SSH too), secrets masked: one helper
for every surface that copies (the app's keys, the output view)."""

from __future__ import annotations

from typing import Any

from textual.app import App

from cmdop_tui.support.secrets import mask


def copy_masked(app: App[Any], text: str, what: str) -> None:
    """`text` to the clipboard as the screen shows it (secrets masked), and a word on it."""
    if not text:
        app.notify(f"Nothing to copy: there is no {what.removeprefix('the ')} yet.", severity="warning")
        return
    app.copy_to_clipboard(mask(text))
    app.notify(f"Copied {what} ({len(text):,} characters) to the clipboard.")
