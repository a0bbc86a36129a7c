"""Trusting a project's `.cmdop/hooks.json`: its hooks are programs that run outside the sandbox,
so they run only once the user has said yes to that file, and to the project's files its commands
name, as they are: a changed file (or script) asks again. A command in the sandbox may write the
working tree; without this, it could rewrite a hook and run outside the sandbox.

The trust is kept as the file's path and a fingerprint (hashes of the file and of the project
files its commands name) in a JSON store the session names (in the data dir, beside the
`.mcp.json` trust). The settings' hooks are the user's own and need no trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path

from cmdop_tui.hooks.shape import PROJECT_FILE, HookShapeError, HookTable, from_json

TRUST_FILE = "trusted-hooks.json"
_PROJECT_VARIABLES = ("$CMDOP_PROJECT_DIR", "${CMDOP_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}")


def named_files(table: HookTable, project: Path) -> list[Path]:
    """The files of the project the hooks' command lines name (a script, its arguments)."""
    found: list[Path] = []
    for groups in table.groups.values():
        for hook in (hook for group in groups for hook in group.hooks):
            command = hook.command
            for variable in _PROJECT_VARIABLES:
                command = command.replace(variable, str(project))
            try:
                words = shlex.split(command)
            except ValueError:
                words = command.split()
            for word in words:
                path = Path(os.path.abspath(project / word))
                if path.is_file() and path.is_relative_to(project) and path not in found:
                    found.append(path)
    return found


def fingerprint(path: Path, text: str) -> str:
    """The file's hash, then that of each project file its commands name (unreadable: fails)."""
    digest = hashlib.sha256(text.encode("utf-8"))
    project = path.resolve().parent.parent  # .cmdop/hooks.json sits in the project's .cmdop
    try:
        table = from_json(text, str(path))
    except HookShapeError:
        return digest.hexdigest()
    for file in named_files(table, project):
        digest.update(b"\0" + str(file).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def _trusted(store: Path) -> dict[str, str]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def is_trusted(store: Path, path: Path, text: str) -> bool:
    """Whether the user trusted the hooks file at `path` with exactly this content and scripts."""
    recorded = _trusted(store).get(str(path.resolve()))
    try:
        return recorded is not None and recorded == fingerprint(path, text)
    except OSError:
        return False


def trust(store: Path, project: Path) -> Path:
    """Trust `project`'s hooks file as it is now; its path. Raises OSError when it cannot be
    read or recorded."""
    path = project / PROJECT_FILE
    text = path.read_text(encoding="utf-8")
    trusted = {**_trusted(store), str(path.resolve()): fingerprint(path, text)}
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = store.with_suffix(".tmp")
    temporary.write_text(json.dumps(trusted, indent=1), encoding="utf-8")
    os.chmod(temporary, 0o600)
    temporary.replace(store)
    return path
