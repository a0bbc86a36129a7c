"""Trusting a project's `.mcp.json`: its servers are programs it names, so they start only once
the user has said yes to that file (as it is: a changed file asks again).

`cmdop-tui mcp trust` (or `/mcp trust` in the app) records the file's path and a hash of its
content in the data dir; settings' `[mcp.NAME]` servers are the user's own and need no trust.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from cmdop_tui.config.settings import data_dir

TRUST_FILE = "trusted-mcp-projects.json"


def _store() -> Path:
    return data_dir() / TRUST_FILE


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _trusted() -> dict[str, str]:
    try:
        data = json.loads(_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def is_trusted(path: Path, text: str) -> bool:
    """Whether the user trusted this `.mcp.json` with exactly this content."""
    return _trusted().get(str(path.resolve())) == _fingerprint(text)


def trust(path: Path) -> None:
    """Trust this `.mcp.json` as it is now. Raises OSError when it cannot be read or recorded."""
    text = path.read_text(encoding="utf-8")
    trusted = {**_trusted(), str(path.resolve()): _fingerprint(text)}
    store = _store()
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = store.with_suffix(".tmp")
    temporary.write_text(json.dumps(trusted, indent=1), encoding="utf-8")
    os.chmod(temporary, 0o600)
    temporary.replace(store)
