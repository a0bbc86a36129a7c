"""Trusting a project's `.mcp.json`: its servers are programs it names, so they start only once
the user has said yes to that file and to what its servers run, as they are: a changed file, or a
changed script, module or folder a server runs from inside the project, asks again.

`cmdop-tui mcp trust` (or `/mcp trust` in the app) records the file's path and a fingerprint in
the data dir: a hash of the file's content and, when its stdio servers run files of the project
(mcp/files.py: `server_files`), a hash of those files (names, sizes, modification times and
contents). Past mcp/files.py's bounds the fingerprint fails and the project is not trusted.
Settings' `[mcp.NAME]` servers are the user's own and need no trust.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from cmdop_tui.config.settings import data_dir
from cmdop_tui.mcp.files import fingerprint, server_files
from cmdop_tui.mcp.specs import project_servers

TRUST_FILE = "trusted-mcp-projects.json"
UNTRUSTED_AGAIN = (
    "its project's .mcp.json, or what its servers run, changed since the project was trusted "
    "(`cmdop-tui mcp trust` there, or /mcp trust in the app, trusts it as it is now)"
)


def _store() -> Path:
    return data_dir() / TRUST_FILE


def project_fingerprint(path: Path, text: str) -> str:
    """The fingerprint of the `.mcp.json` at `path`, whose content is `text`: the content's
    hash, then, when its servers run files of the project, theirs. Raises FingerprintLimit
    (an OSError) when what they run is past mcp/files.py's bounds."""
    content = hashlib.sha256(text.encode("utf-8")).hexdigest()
    files = _servers_fingerprint(path.parent.resolve())
    return f"{content}+{files}" if files else content


def _servers_fingerprint(base: Path) -> str | None:
    """The fingerprint of the files `base`'s project servers run from inside it; None: none."""
    servers, _ = project_servers(base)
    files = [file for spec in servers for file in server_files(spec, base)]
    return fingerprint(files, [base]) if files else None


def _trusted() -> dict[str, str]:
    try:
        data = json.loads(_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def is_trusted(path: Path, text: str) -> bool:
    """Whether the user trusted this `.mcp.json` with exactly this content, and its servers'
    files as they are now (past the bounds: not trusted)."""
    recorded = _trusted().get(str(path.resolve()))
    if recorded is None:
        return False
    try:
        return recorded == project_fingerprint(path, text)
    except OSError:
        return False


def still_trusted(path: Path) -> bool:
    """Whether the `.mcp.json` at `path` is trusted as it is now, with what its servers run (a
    crashed server is started again only then)."""
    try:
        return is_trusted(path, path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def trust(path: Path) -> None:
    """Trust this `.mcp.json`, and what its servers run, as they are now. Raises OSError when
    it cannot be read or recorded, or when what its servers run is too big to fingerprint."""
    text = path.read_text(encoding="utf-8")
    trusted = {**_trusted(), str(path.resolve()): project_fingerprint(path, text)}
    store = _store()
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = store.with_suffix(".tmp")
    temporary.write_text(json.dumps(trusted, indent=1), encoding="utf-8")
    os.chmod(temporary, 0o600)
    temporary.replace(store)
