"""What the user chose in the app, kept for the next launch: the theme picked in the palette.

A small JSON file in the platformdirs state dir, never the settings file (the user's own, which
the app does not rewrite). A choice holds while the settings say what they said when it was made:
a theme set in the settings file afterwards wins. A file that cannot be read or written is no
choice; the app goes on as the settings say.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import platformdirs

from cmdop_tui.config.paths import APP_NAME

_log = logging.getLogger(__name__)


def choices_path() -> Path:
    return Path(platformdirs.user_state_dir(APP_NAME)) / "choices.json"


def chosen_theme(configured: str, path: Path | None = None) -> str:
    """The theme to use: the one last chosen in the app, unless the settings changed theirs since."""
    try:
        data = json.loads((path or choices_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return configured
    theme, over = (data.get("theme"), data.get("over")) if isinstance(data, dict) else (None, None)
    return theme if isinstance(theme, str) and theme and over == configured else configured


def save_theme(theme: str, configured: str, path: Path | None = None) -> None:
    """Keep `theme` as the user's choice over the settings' `configured` one (atomically)."""
    target = path or choices_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".choices-")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"theme": theme, "over": configured}, file)
        os.replace(temporary, target)
    except OSError as exc:
        _log.warning("the theme chosen could not be kept in %s: %s", target, exc)
