"""The user's text editor: $VISUAL, else $EDITOR, else vi."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path


def editor_argv(path: Path, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The command that opens `path` in the user's editor (which may carry its own options)."""
    editor = environ.get("VISUAL") or environ.get("EDITOR") or "vi"
    return [*shlex.split(editor), str(path)]
